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

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rustworkx

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


# bits of an edge -> the single types in it
_SINGLE: tuple[tuple[int, ...], ...] = tuple(
    tuple(b for b in (WW, WR, RW, PROCESS, REALTIME) if bits & b) for bits in range(32))


class _Budget:
    """How many more edge steps the searches of one spec in one component may take."""

    def __init__(self, steps: int) -> None:
        self.remaining = steps
        self.exhausted = False


class _Search:
    """One breadth-first search for a cycle of one spec within one component's adjacency."""

    def __init__(self, adjacency: dict[int, dict[int, int]], spec: CycleSpec, budget: _Budget) -> None:
        self.adjacency = adjacency
        self.spec = spec
        self.budget = budget

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
        budget = self.budget
        while queue:
            if budget.remaining <= 0:
                budget.exhausted = True
                return None
            state = queue.popleft()
            vertex, flags = state
            for target, bits in self.adjacency[vertex].items():
                for kind in _SINGLE[bits & allowed]:
                    budget.remaining -= 1
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
            kind = _SINGLE[bits][0]
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


def _nontrivial_components(adjacency: dict[int, dict[int, int]]) -> list[set[int]]:
    """The strongly connected components (of two or more vertices) of a small adjacency, by rustworkx."""
    vertices = list(adjacency)
    place = {v: i for i, v in enumerate(vertices)}
    graph = rustworkx.PyDiGraph(multigraph=False)
    graph.add_nodes_from(vertices)
    graph.add_edges_from_no_data([(place[u], place[v]) for u, out in adjacency.items() for v in out])
    return sorted(({vertices[i] for i in c} for c in rustworkx.strongly_connected_components(graph) if len(c) > 1),
                  key=min)


def _within(adjacency: dict[int, dict[int, int]], members: set[int], drop: int = 0) -> dict[int, dict[int, int]]:
    """The adjacency restricted to ``members``, without the edge types in ``drop``."""
    keep = ~drop
    return {u: {v: b & keep for v, b in adjacency[u].items() if v in members and b & keep} for u in members}


def _path_between(adjacency: dict[int, dict[int, int]], source: int, target: int, required: tuple[int, ...],
                  budget: _Budget, rank: dict[int, int]) -> list[tuple[int, int, int]] | None:
    """A shortest simple path source -> target using at least one edge of each type in ``required`` (never
    stepping to a vertex ranked past the target: no path comes back from there)."""
    full = (1 << len(required)) - 1
    limit = rank[target]
    start = (source, 0)
    parents: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    queue = deque([start])
    while queue:
        if budget.remaining <= 0:
            budget.exhausted = True
            return None
        state = queue.popleft()
        vertex, mask = state
        for nxt, bits in adjacency[vertex].items():
            if rank[nxt] > limit:
                continue
            for kind in _SINGLE[bits]:
                budget.remaining -= 1
                seen = mask
                for i, bit in enumerate(required):
                    if kind == bit:
                        seen |= 1 << i
                if nxt == target and seen == full:
                    path = _Search._path(parents, state) + [(vertex, nxt, kind)]
                    if len({step[0] for step in path}) == len(path):
                        return path
                    continue
                after = (nxt, seen)
                if after not in parents:
                    parents[after] = (state, kind)
                    queue.append(after)
    return None


def _ranks(adjacency: dict[int, dict[int, int]]) -> dict[int, int]:
    """Each vertex's place in a topological order of the adjacency's components: a path can only go from a vertex
    to one of equal or higher rank."""
    vertices = list(adjacency)
    place = {v: i for i, v in enumerate(vertices)}
    graph = rustworkx.PyDiGraph(multigraph=False)
    graph.add_nodes_from(vertices)
    graph.add_edges_from_no_data([(place[u], place[v]) for u, out in adjacency.items() for v in out])
    condensed = rustworkx.condensation(graph)
    assert isinstance(condensed, rustworkx.PyDiGraph)
    return {v: rank for rank, node in enumerate(rustworkx.topological_sort(condensed)) for v in condensed[node]}


def _closing_search(sub: dict[int, dict[int, int]], spec: CycleSpec,
                    budget: _Budget) -> list[tuple[int, int, int]] | None:
    """A cycle made of one pivot edge u -> v (the rw edge, else an edge of a required type) and a path back v -> u
    without rw edges: the search for specs with at most one rw edge. Pivots whose way back is impossible by the
    topological order of the way-back graph are skipped; the nearest are tried first."""
    if spec.rw_rule == _ONE_RW:
        pivot, rest, back = RW, spec.required, _within(sub, set(sub), drop=RW)
    else:
        pivot = spec.required[0] if spec.required else 0
        rest, back = spec.required[1:], sub
    rank = _ranks(back)
    pivots = [(rank[u] - rank[v], u, v, pivot or _SINGLE[bits][0]) for u in sub for v, bits in sub[u].items()
              if (not pivot or bits & pivot) and rank[v] <= rank[u]]
    pivots.sort()
    for _distance, u, v, kind in pivots:
        path = _path_between(back, v, u, rest, budget, rank)
        if path is not None and u not in {step[0] for step in path}:
            return [(u, v, kind)] + path
        if budget.exhausted:
            return None
    return None


def _search_spec(adjacency: dict[int, dict[int, int]], spec: CycleSpec,
                 budget: _Budget) -> list[tuple[int, int, int]] | None:
    """A cycle of the spec in one component, or None (``budget.exhausted`` tells a search that gave up)."""
    restricted = _restricted(adjacency, spec.allowed)
    for members in _nontrivial_components(restricted):
        sub = _within(restricted, members)
        if spec.rw_rule in (_NO_RW, _ONE_RW):
            cycle = _closing_search(sub, spec, budget)
        else:
            search = _Search(sub, spec, budget)
            cycle = None
            for start in _starts(sub, spec):
                cycle = search.from_start(start)
                if cycle is not None or budget.exhausted:
                    break
        if cycle is not None or budget.exhausted:
            return cycle
    return None


def search_components(components: list[list[int]], edges: Edges, search_types: tuple[str, ...],
                      budget: int = 100_000, time_limit_s: float = 10.0) -> tuple[
                          dict[str, list[list[tuple[int, int, int]]]], list[dict[str, Any]]]:
    """Finds named cycles in each component: ({anomaly: [cycle steps, ...]}, [searches that gave up]).

    ``search_types`` are the names to search for (those of the orders the graph has); ``budget`` bounds the edge
    steps one search of one component may take; past ``time_limit_s`` the remaining components only get their
    fallback cycle.
    """
    found: dict[str, list[list[tuple[int, int, int]]]] = {}
    timeouts: list[dict[str, Any]] = []
    started = time.monotonic()
    unsearched = 0
    for adjacency in _components_adjacency(components, edges):
        skip: set[str] = set()
        found_here = False
        searching = time.monotonic() - started < time_limit_s
        unsearched += not searching
        for name in SEARCH_ORDER if searching else ():
            if name not in search_types or name in skip:
                continue
            allowance = _Budget(budget)
            cycle = _search_spec(adjacency, _SPECS[name], allowance)
            if allowance.exhausted:
                timeouts.append({"anomaly": name, "component_size": len(adjacency),
                                 "explanation": f"The search for a {name} cycle among {len(adjacency)} mutually "
                                                "dependent transactions gave up; one may exist."})
            if cycle is not None:
                found.setdefault(name, []).append(cycle)
                skip |= implied_anomalies([name])
                found_here = True
        if not found_here:
            cycle = _any_cycle(adjacency)
            found.setdefault(classify([k for _a, _b, k in cycle]), []).append(cycle)
    if unsearched:
        timeouts.append({"anomaly": None, "components": unsearched,
                         "explanation": f"The cycle search ran out of its {time_limit_s:g} s: {unsearched} groups of "
                                        "mutually dependent transactions were only given one cycle each, not searched "
                                        "for every anomaly."})
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
