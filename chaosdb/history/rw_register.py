"""Checks a read-write register history (writes of unique values, reads of single values) for anomalies, as Elle.

A read of ``v`` follows the one transaction that wrote ``v`` (wr). Versions are only partly ordered: every value
comes after the initial nil state, and optionally (``wfr_keys``) a transaction's own read precedes its write of the
same key, (``sequential_keys``) values follow each process's order of transactions, (``linearizable_keys``) they
follow the real-time order. For each pair of consecutive versions v1 -> v2 a writer of v1 precedes a writer of v2
(ww) and a reader of v1 precedes a writer of v2 (rw). Only a transaction's external reads (before it writes the key)
and final writes count. A source of versions that would make a key's versions cyclic is left out and reported as
``cyclic-versions``. Outside the graph: ``G1a`` (a read of a failed write), ``G1b`` (a read of a value its writer
overwrote in the same transaction), ``internal`` (a read disagreeing with the transaction's own earlier
operations) and ``lost-update``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import rustworkx

from chaosdb.core.errors import ChaosDBError
from chaosdb.history.analysis import add_orders, cycle_anomalies, lost_update_cases, order_explanation
from chaosdb.history.consistency import canonical_model
from chaosdb.history.graph import RW, WR, WW, Edges, add_process_edges, add_realtime_edges
from chaosdb.history.results import result
from chaosdb.history.transactions import FAIL, INFO, OK, Transactions, parse_transactions

__all__ = ["check_rw_register"]

_MICRO_OPS = frozenset({"r", "w"})
_NONE: Any = object()  # no value for this key in this transaction


def _external(mops: list[Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """(external reads: key -> first value read before any own write of it, final writes: key -> value)."""
    reads: dict[Any, Any] = {}
    writes: dict[Any, Any] = {}
    for mop in mops:
        k = mop[1]
        if mop[0] == "w":
            writes[k] = mop[2]
        elif k not in writes and k not in reads:
            reads[k] = mop[2] if len(mop) > 2 else None
    return reads, writes


class _Registers:
    """The transactions' external reads and writes, who wrote and read which value, and the version graphs."""

    def __init__(self, txns: Transactions) -> None:
        self.txns = txns
        self.ext: list[tuple[dict[Any, Any], dict[Any, Any]]] = [_external(m) for m in txns.mops]
        self.writer: dict[Any, dict[Any, int]] = {}         # key -> value -> the ok txn that finally wrote it
        self.readers: dict[Any, dict[Any, list[int]]] = {}  # key -> value -> ok txns that read it externally
        self.versions: dict[Any, set[tuple[Any, Any]]] = {}  # key -> edges v1 -> v2
        self.cyclic: list[dict[str, Any]] = []
        for t, (reads, writes) in enumerate(self.ext):
            if txns.outcome[t] != OK:
                continue
            for k, v in writes.items():
                other = self.writer.setdefault(k, {}).setdefault(v, t)
                if other != t:
                    raise ChaosDBError(f"Key {k!r} was set to {v!r} by two transactions (at index "
                                       f"{txns.index(other)} and {txns.index(t)}); rw-register checking needs every "
                                       "written value to be unique per key.")
            for k, v in reads.items():
                self.readers.setdefault(k, {}).setdefault(v, []).append(t)

    def value_for(self, t: int, k: Any, prefer_write: bool) -> Any:
        """The value transaction ``t`` knowingly had for ``k`` (its final write or its external read), or _NONE."""
        outcome = self.txns.outcome[t]
        reads, writes = self.ext[t]
        if outcome == OK:
            first, second = (writes, reads) if prefer_write else (reads, writes)
            return first.get(k, second.get(k, _NONE))
        if outcome == INFO:
            return writes.get(k, _NONE)
        return _NONE

    def initial_state_versions(self) -> dict[Any, set[tuple[Any, Any]]]:
        """nil precedes every value written (ok or info) or read (ok)."""
        graphs: dict[Any, set[tuple[Any, Any]]] = {}
        for t, (reads, writes) in enumerate(self.ext):
            outcome = self.txns.outcome[t]
            if outcome == FAIL:
                continue
            pairs = list(writes.items()) + (list(reads.items()) if outcome == OK else [])
            for k, v in pairs:
                if v is not None:
                    graphs.setdefault(k, set()).add((None, v))
        return graphs

    def writes_follow_reads_versions(self) -> dict[Any, set[tuple[Any, Any]]]:
        """A committed transaction's external read of a key precedes its write of it."""
        graphs: dict[Any, set[tuple[Any, Any]]] = {}
        for t, (reads, writes) in enumerate(self.ext):
            if self.txns.outcome[t] != OK:
                continue
            for k, v in reads.items():
                if v is not None and k in writes:
                    graphs.setdefault(k, set()).add((v, writes[k]))
        return graphs

    def _keys_of(self, t: int) -> Iterable[Any]:
        reads, writes = self.ext[t]
        outcome = self.txns.outcome[t]
        if outcome == OK:
            return reads.keys() | writes.keys()
        return writes.keys() if outcome == INFO else ()

    def order_versions(self, order: Edges) -> dict[Any, set[tuple[Any, Any]]]:
        """Versions from an order of transactions: what one had for a key precedes what the next ones to touch it
        had (the next along the order, looking past transactions that did not touch the key)."""
        successors: dict[int, list[int]] = {}
        for a, b in zip(order.sources, order.targets, strict=True):
            successors.setdefault(a, []).append(b)
        downstream: dict[int, dict[Any, set[int]]] = {}
        graphs: dict[Any, set[tuple[Any, Any]]] = {}
        for a in sorted(range(len(self.txns)), key=self.txns.completed_at.__getitem__, reverse=True):
            down: dict[Any, set[int]] = {}
            for b in successors.get(a, ()):
                touched = set(self._keys_of(b))
                for k in touched:
                    down.setdefault(k, set()).add(b)
                for k, bs in downstream.get(b, {}).items():
                    if k not in touched:
                        down.setdefault(k, set()).update(bs)
            downstream[a] = down
            for k, bs in down.items():
                v1 = self.value_for(a, k, prefer_write=True)
                if v1 is _NONE:
                    continue
                for b in bs:
                    v2 = self.value_for(b, k, prefer_write=False)
                    if v2 is not _NONE and v2 != v1:
                        graphs.setdefault(k, set()).add((v1, v2))
        return graphs

    def merge_versions(self, name: str, sources: list[str], graphs: dict[Any, set[tuple[Any, Any]]]) -> None:
        """Adds a source's version edges unless they make some key's versions cyclic (then: cyclic-versions)."""
        merged = {k: self.versions.get(k, set()) | graphs.get(k, set()) for k in self.versions.keys() | graphs}
        cycles = []
        for k in graphs:
            for component in _cyclic_components(merged[k]):
                cycles.append({"key": k, "values": component, "sources": sources + [name],
                               "explanation": f"Assuming {', '.join(sources + [name])}, the versions of key {k!r} "
                                              f"{component} would each have to come before the other."})
        if cycles:
            self.cyclic.extend(cycles)
        else:
            self.versions = merged
            sources.append(name)


def _cyclic_components(edges: set[tuple[Any, Any]]) -> list[list[Any]]:
    graph = rustworkx.PyDiGraph()
    node: dict[Any, int] = {}
    for pair in edges:
        for v in pair:
            if v not in node:
                node[v] = graph.add_node(v)
    graph.add_edges_from_no_data([(node[a], node[b]) for a, b in edges])
    return [sorted((graph[i] for i in c), key=repr) for c in rustworkx.strongly_connected_components(graph)
            if len(c) > 1]


def _edges(reg: _Registers) -> Edges:
    edges = Edges()
    for k, by_value in reg.readers.items():  # wr
        writers = reg.writer.get(k, {})
        for v, value_readers in by_value.items():
            writer = writers.get(v)
            if writer is not None:
                edges.add_from_all_to(writer, value_readers, WR)
    for k, pairs in reg.versions.items():  # ww, rw
        writers = reg.writer.get(k, {})
        readers = reg.readers.get(k, {})
        for v1, v2 in pairs:
            later = writers.get(v2)
            if later is None:
                continue
            earlier = writers.get(v1) if v1 is not None else None
            if earlier is not None:
                edges.add(earlier, later, WW)
            edges.add_from_all(readers.get(v1, ()), later, RW)
    return edges


def _explainer(reg: _Registers) -> Any:
    txns = reg.txns

    def explain(a: int, b: int, kind: int) -> tuple[Any, Any, str]:
        (a_reads, a_writes), (b_reads, b_writes) = reg.ext[a], reg.ext[b]
        if kind == WR:
            for k, v in a_writes.items():
                if k in b_reads and b_reads[k] == v:
                    return k, v, f"{{a}} set key {k!r} to {v!r} and {{b}} read that value (wr)"
        elif kind in (WW, RW):
            source = a_writes if kind == WW else a_reads
            for k, v1 in source.items():
                if k in b_writes and (v1, b_writes[k]) in reg.versions.get(k, ()):
                    did = "set key" if kind == WW else "read key"
                    shown = "nil" if v1 is None else repr(v1)
                    return k, b_writes[k], (f"{{a}} {did} {k!r} {'to' if kind == WW else '='} {shown} and {{b}} "
                                            f"set it to {b_writes[k]!r}, a later version ({'ww' if kind == WW else 'rw'})")
        else:
            return order_explanation(txns, a, b, kind)
        raise AssertionError(f"no {kind} dependency between transactions {a} and {b}")

    return explain


def _read_cases(reg: _Registers) -> dict[str, list[dict[str, Any]]]:
    """G1a (reads of failed writes), G1b (reads of overwritten writes) and internal inconsistencies."""
    txns = reg.txns
    failed: dict[Any, dict[Any, int]] = {}
    intermediate: dict[Any, dict[Any, int]] = {}
    for t, mops in enumerate(txns.mops):
        last: dict[Any, Any] = {}
        for mop in mops:
            if mop[0] == "w":
                if txns.outcome[t] == FAIL:
                    failed.setdefault(mop[1], {})[mop[2]] = t
                if mop[1] in last:
                    intermediate.setdefault(mop[1], {})[last[mop[1]]] = t
                last[mop[1]] = mop[2]
    g1a: list[dict[str, Any]] = []
    g1b: list[dict[str, Any]] = []
    internal: list[dict[str, Any]] = []
    for t, mops in enumerate(txns.mops):
        if txns.outcome[t] != OK:
            continue
        state: dict[Any, Any] = {}
        flagged = False
        for mop in mops:
            k = mop[1]
            v = mop[2] if len(mop) > 2 else None
            if mop[0] == "w":
                state[k] = v
                continue
            writer = failed.get(k, {}).get(v)
            if writer is not None:
                g1a.append({"transactions": [txns.describe(t), txns.describe(writer)], "key": k, "value": v,
                            "explanation": f"The committed {txns.short(t)} read key {k!r} = {v!r}, written by the "
                                           f"failed {txns.short(writer)}."})
            writer = intermediate.get(k, {}).get(v)
            if writer is not None and writer != t:
                g1b.append({"transactions": [txns.describe(t), txns.describe(writer)], "key": k, "value": v,
                            "explanation": f"{txns.short(t)} read key {k!r} = {v!r}, which {txns.short(writer)} "
                                           "wrote and then overwrote in the same transaction."})
            if k in state and state[k] != v and not flagged:
                flagged = True
                internal.append({"transactions": [txns.describe(t)], "key": k, "expected": state[k],
                                 "explanation": f"{txns.short(t)} read key {k!r} = {v!r}, but its own earlier "
                                                f"operations on it imply {state[k]!r}."})
            state[k] = v
    return {"G1a": g1a, "G1b": g1b, "internal": internal}


def check_rw_register(history: Sequence[dict[str, Any]], consistency_model: str = "serializable", *,
                      max_examples: int = 8, sequential_keys: bool = False, linearizable_keys: bool = False,
                      wfr_keys: bool = False) -> dict[str, Any]:
    """Checks a read-write register history under ``consistency_model``; returns the verdict and the anomalies.

    ``sequential_keys`` assumes each key is sequentially consistent (versions follow each process's order),
    ``linearizable_keys`` that each key is linearizable (versions follow real time), ``wfr_keys`` that within a
    transaction writes follow reads; all off by default, as in Elle. Raises ValueError for an unknown model,
    ChaosDBError for a malformed history or one that writes a value twice to a key.
    """
    canonical_model(consistency_model)
    txns = parse_transactions(history, _MICRO_OPS)
    reg = _Registers(txns)
    sources: list[str] = []
    reg.merge_versions("initial-state", sources, reg.initial_state_versions())
    if wfr_keys:
        reg.merge_versions("wfr-keys", sources, reg.writes_follow_reads_versions())
    if sequential_keys:
        order = Edges()
        add_process_edges(txns, order)
        reg.merge_versions("sequential-keys", sources, reg.order_versions(order))
    if linearizable_keys:
        order = Edges()
        add_realtime_edges(txns, order)
        reg.merge_versions("linearizable-keys", sources, reg.order_versions(order))
    anomalies: dict[str, list[Any]] = dict(_read_cases(reg))
    anomalies["cyclic-versions"] = reg.cyclic
    anomalies["lost-update"] = lost_update_cases(
        txns, (t for t in range(len(txns)) if txns.outcome[t] == OK), "w", lambda v: v,
        lambda v: "nil" if v is None else repr(v))
    edges = _edges(reg)
    orders = add_orders(consistency_model, txns, edges)
    anomalies.update(cycle_anomalies(txns, edges, orders, _explainer(reg), max_examples))
    return result("rw-register", consistency_model, txns, anomalies, max_examples)
