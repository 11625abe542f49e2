"""Finds the cycles of a dependency graph inside its strongly connected components, and names them as Elle does.

A cycle's name comes from its edges: exactly one rw edge is G-single-item; two or more rw edges none of which
follow each other (counting the last edge as followed by the first) is G-nonadjacent-item; two or more with some
adjacent pair is G2-item; otherwise a wr edge makes it G1c and ww edges alone G0. A real-time edge adds
``-realtime`` to the name, else a process edge adds ``-process``.

Each component is searched for the worst anomalies first (Elle's order), skipping those that an anomaly already
found there implies; every search is a breadth-first search over (transaction, what the path has used so far), so
the cycles found are short, and it has a budget of visited states: a search that exhausts it is reported as a
``cycle-search-timeout``. A component in which no named search found a cycle still gets one (any shortest cycle).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaosdb.history.consistency import implied_anomalies
from chaosdb.history.graph import EDGE_NAMES, PROCESS, REALTIME, RW, WR, WW, Edges

__all__ = ["CycleSpec", "SEARCH_ORDER", "classify", "search_components", "Explainer"]

# What the path's rw edges must look like.
_NO_RW, _ONE_RW, _NONADJACENT_RW, _ADJACENT_RW = range(4)

# (a, b, edge type) -> (key, value, plain words saying why a precedes b, with {a} and {b} for their names)
Explainer = Callable[[int, int, int], tuple[Any, Any, str]]


@dataclass(frozen=True)
class CycleSpec:
    """The edges a named cycle may use, the edge types it must include, and its rule on rw edges."""

    name: str
    allowed: int
    required: tuple[int, ...]
    rw_rule: int


def _specs() -> dict[str, CycleSpec]:
    data = WW | WR
    base = [CycleSpec("G0", WW, (), _NO_RW), CycleSpec("G1c", data, (WR,), _NO_RW),
            CycleSpec("G-single-item", data | RW, (), _ONE_RW),
            CycleSpec("G-nonadjacent-item", data | RW, (), _NONADJACENT_RW),
            CycleSpec("G2-item", data | RW, (), _ADJACENT_RW)]
    specs = {s.name: s for s in base}
    for suffix, bit in (("-process", PROCESS), ("-realtime", REALTIME)):
        for s in base:
            specs[s.name + suffix] = CycleSpec(s.name + suffix, s.allowed | bit, s.required + (bit,), s.rw_rule)
    return specs


_SPECS = _specs()

#: The order of the searches: Elle's order of anomaly depth (the worst, implied by none, first).
SEARCH_ORDER = ("G-single-item", "G0", "G-nonadjacent-item", "G-single-item-process", "G1c",
                "G-nonadjacent-item-process", "G-single-item-realtime", "G2-item", "G-nonadjacent-item-realtime",
                "G0-process", "G1c-process", "G2-item-process", "G0-realtime", "G1c-realtime", "G2-item-realtime")


def classify(kinds: list[int]) -> str:
    """The anomaly name of a cycle whose edges (in order) have these single types."""
    rw = sum(1 for k in kinds if k == RW)
    if rw == 1:
        name = "G-single-item"
    elif rw > 1:
        adjacent = any(kinds[i] == RW and kinds[i - 1] == RW for i in range(len(kinds)))
        name = "G2-item" if adjacent else "G-nonadjacent-item"
    elif WR in kinds:
        name = "G1c"
    else:
        name = "G0"
    if REALTIME in kinds:
        return name + "-realtime"
    if PROCESS in kinds:
        return name + "-process"
    return name


def _single_bits(bits: int) -> list[int]:
    return [b for b in (WW, WR, RW, PROCESS, REALTIME) if bits & b]


class _Search:
    """One breadth-first search for a cycle of one spec within one component's adjacency."""

    def __init__(self, adjacency: dict[int, dict[int, int]], spec: CycleSpec, budget: int) -> None:
        self.adjacency = adjacency
        self.spec = spec
        self.budget = budget
        self.exhausted = False

    def _step(self, flags: int, kind: int) -> int:
        """The flags after taking an edge of ``kind``, or -1 if the spec forbids it. Flags: bits 0-1 rw count
        (capped at 2), 2 last edge rw, 3 first edge rw, 4 two adjacent rw seen, 5-6 required types seen,
        7 at least one edge taken."""
        spec = self.spec
        started = flags & 128
        rw_count = flags & 3
        last_rw = flags & 4
        if kind == RW:
            if spec.rw_rule == _NO_RW or (spec.rw_rule == _ONE_RW and rw_count):
                return -1
            if last_rw and spec.rw_rule == _NONADJACENT_RW:
                return -1
            flags = (flags & ~3) | min(rw_count + 1, 2)
            if last_rw:
                flags |= 16
            flags |= 4
            if not started:
                flags |= 8
        else:
            flags &= ~4
        for i, bit in enumerate(spec.required):
            if kind == bit:
                flags |= 32 << i
        return flags | 128

    def _closes(self, flags: int) -> bool:
        spec = self.spec
        rw_count = flags & 3
        wrap = (flags & 4) and (flags & 8)
        for i in range(len(spec.required)):
            if not flags & (32 << i):
                return False
        if spec.rw_rule == _NO_RW:
            return rw_count == 0
        if spec.rw_rule == _ONE_RW:
            return rw_count == 1
        if spec.rw_rule == _NONADJACENT_RW:
            return rw_count == 2 and not wrap
        return rw_count == 2 and bool((flags & 16) or wrap)

    def from_start(self, start: int) -> list[tuple[int, int, int]] | None:
        """The shortest simple cycle through ``start`` matching the spec, as (from, to, type) steps, or None."""
        allowed = self.spec.allowed
        parents: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {(start, 0): None}
        queue = deque([(start, 0)])
        while queue:
            if self.budget <= 0:
                self.exhausted = True
                return None
            state = queue.popleft()
            vertex, flags = state
            for target, bits in self.adjacency[vertex].items():
                for kind in _single_bits(bits & allowed):
                    self.budget -= 1
                    after = self._step(flags, kind)
                    if after < 0:
                        continue
                    if target == start:
                        if self._closes(after):
                            path = self._path(parents, state) + [(vertex, target, kind)]
                            if len({step[0] for step in path}) == len(path):
                                return path
                        continue
                    nxt = (target, after)
                    if nxt not in parents:
                        parents[nxt] = (state, kind)
                        queue.append(nxt)
        return None

    @staticmethod
    def _path(parents: dict[tuple[int, int], tuple[tuple[int, int], int] | None],
              state: tuple[int, int]) -> list[tuple[int, int, int]]:
        steps: list[tuple[int, int, int]] = []
        link = parents[state]
        while link is not None:
            previous, kind = link
            steps.append((previous[0], state[0], kind))
            state = previous
            link = parents[state]
        steps.reverse()
        return steps


def _restricted(adjacency: dict[int, dict[int, int]], allowed: int) -> dict[int, dict[int, int]]:
    return {u: {v: b & allowed for v, b in out.items() if b & allowed} for u, out in adjacency.items()}


def _starts(adjacency: dict[int, dict[int, int]], spec: CycleSpec) -> list[int]:
    """Where a matching cycle must pass: the targets of its rarest obligatory edge type (all vertices if none)."""
    wanted = RW if spec.rw_rule != _NO_RW else (spec.required[-1] if spec.required else 0)
    if not wanted:
        return sorted(adjacency)
    return sorted({v for out in adjacency.values() for v, b in out.items() if b & wanted})


def _any_cycle(adjacency: dict[int, dict[int, int]]) -> list[tuple[int, int, int]]:
    """A shortest cycle through the component's first vertex, preferring data edges to order edges."""
    start = min(adjacency)
    parents: dict[int, tuple[int, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        vertex = queue.popleft()
        for target, bits in adjacency[vertex].items():
            kind = _single_bits(bits)[0]
            if target == start:
                steps = [(vertex, target, kind)]
                node = vertex
                while parents[node] is not None:
                    previous, k = parents[node]  # type: ignore[misc]
                    steps.append((previous, node, k))
                    node = previous
                return steps[::-1]
            if target not in parents:
                parents[target] = (vertex, kind)
                queue.append(target)
    raise AssertionError("a strongly connected component has a cycle")


def _components_adjacency(components: list[list[int]], edges: Edges) -> list[dict[int, dict[int, int]]]:
    """Each component's adjacency (edges inside it only), from one pass over all edges."""
    owner: dict[int, int] = {v: i for i, c in enumerate(components) for v in c}
    adjacencies: list[dict[int, dict[int, int]]] = [{v: {} for v in c} for c in components]
    get = owner.get
    for source, target, kind in zip(edges.sources, edges.targets, edges.kinds, strict=True):
        i = get(source)
        if i is not None and get(target) == i:
            out = adjacencies[i][source]
            out[target] = out.get(target, 0) | kind
    return adjacencies


def search_components(components: list[list[int]], edges: Edges, search_types: tuple[str, ...],
                      budget: int = 200_000) -> tuple[dict[str, list[list[tuple[int, int, int]]]],
                                                       list[dict[str, Any]]]:
    """Finds named cycles in each component: ({anomaly: [cycle steps, ...]}, [search timeouts]).

    ``search_types`` are the names to search for (those of the orders the graph has); ``budget`` bounds the
    states one search of one component may visit.
    """
    found: dict[str, list[list[tuple[int, int, int]]]] = {}
    timeouts: list[dict[str, Any]] = []
    for adjacency in _components_adjacency(components, edges):
        skip: set[str] = set()
        found_here = False
        for name in SEARCH_ORDER:
            if name not in search_types or name in skip:
                continue
            spec = _SPECS[name]
            restricted = _restricted(adjacency, spec.allowed)
            search = _Search(restricted, spec, budget)
            cycle = None
            for start in _starts(restricted, spec):
                cycle = search.from_start(start)
                if cycle is not None or search.exhausted:
                    break
            if search.exhausted:
                timeouts.append({"anomaly": name, "component_size": len(adjacency)})
            if cycle is not None:
                found.setdefault(name, []).append(cycle)
                skip |= implied_anomalies([name])
                found_here = True
        if not found_here:
            cycle = _any_cycle(adjacency)
            found.setdefault(classify([k for _a, _b, k in cycle]), []).append(cycle)
    return found, timeouts


def describe_cycle(name: str, cycle: list[tuple[int, int, int]], explain: Explainer,
                   short: Callable[[int], str], index: Callable[[int], Any]) -> dict[str, Any]:
    """A cycle as an example of its anomaly: its steps (with key and value), and its story in plain words."""
    names = {t: f"T{i + 1}" for i, (t, _b, _k) in enumerate(cycle)}
    steps = []
    because = []
    for a, b, kind in cycle:
        key, value, why = explain(a, b, kind)
        steps.append({"from": index(a), "to": index(b), "type": EDGE_NAMES[kind], "key": key, "value": value})
        because.append(f"{names[a]} < {names[b]} because " + why.format(a=names[a], b=names[b]))
    binding = ", ".join(f"{names[t]} = {short(t)}" for t, _b, _k in cycle)
    text = f"Let {binding}. " + "; ".join(because) + f". This is a cycle: {name}."
    return {"cycle": steps, "explanation": text}
