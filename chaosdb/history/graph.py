"""The dependency graph between transactions: typed edges in flat integer arrays, the real-time and process orders,
and its strongly connected components (computed by rustworkx).

Edge types are bits, so one pair of transactions may carry several: ``WW`` (write-write), ``WR`` (write-read),
``RW`` (read-write anti-dependency), ``PROCESS`` (the same process ran one and then the other) and ``REALTIME`` (one
completed before the other was invoked).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import rustworkx

from chaosdb.history.consistency import prohibited_anomalies
from chaosdb.history.transactions import OK, Transactions

__all__ = ["WW", "WR", "RW", "PROCESS", "REALTIME", "EDGE_NAMES", "Edges", "orders_needed", "add_process_edges",
           "add_realtime_edges", "strongly_connected_components"]

WW, WR, RW, PROCESS, REALTIME = 1, 2, 4, 8, 16
EDGE_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}


class Edges:
    """Typed directed edges between transaction ids, kept as three parallel arrays (cheap for millions)."""

    def __init__(self) -> None:
        self.sources = array("i")
        self.targets = array("i")
        self.kinds = array("B")

    def __len__(self) -> int:
        return len(self.sources)

    def add(self, source: int, target: int, kind: int) -> None:
        """Adds the edge source -> target of type ``kind`` (an edge from a transaction to itself is dropped)."""
        if source != target:
            self.sources.append(source)
            self.targets.append(target)
            self.kinds.append(kind)

    def add_from_all(self, sources: Iterable[int], target: int, kind: int) -> None:
        """Adds an edge of type ``kind`` from each of ``sources`` to ``target``."""
        for source in sources:
            if source != target:
                self.sources.append(source)
                self.targets.append(target)
                self.kinds.append(kind)

    def add_from_all_to(self, source: int, targets: Iterable[int], kind: int) -> None:
        """Adds an edge of type ``kind`` from ``source`` to each of ``targets``."""
        for target in targets:
            if source != target:
                self.sources.append(source)
                self.targets.append(target)
                self.kinds.append(kind)


def orders_needed(consistency_model: str) -> int:
    """Which orders besides the data dependencies the model's anomalies need: REALTIME, PROCESS or 0.

    As Elle does: the real-time order when the model forbids a ``-realtime`` anomaly (it covers each process's
    order too), else the process order when it forbids a ``-process`` one, else neither.
    """
    prohibited = prohibited_anomalies(consistency_model)
    if any(a.endswith("-realtime") for a in prohibited):
        return REALTIME
    if any(a.endswith("-process") for a in prohibited):
        return PROCESS
    return 0


def add_process_edges(txns: Transactions, edges: Edges) -> None:
    """Links each ok transaction to the next ok transaction of the same process."""
    last: dict[object, int] = {}
    order = sorted(range(len(txns)), key=txns.completed_at.__getitem__)
    for t in order:
        if txns.outcome[t] != OK:
            continue
        process = txns.ops[t].get("process")
        previous = last.get(process)
        if previous is not None:
            edges.add(previous, t, PROCESS)
        last[process] = t


def add_realtime_edges(txns: Transactions, edges: Edges) -> None:
    """Links every ok transaction to each transaction invoked after it completed, keeping only a transitive reduction.

    Walking the events in order, the frontier holds the ok transactions completed so far that no later completed
    one follows; an invocation is linked from the whole frontier. When a transaction completes ok, the frontier
    members it already follows leave it and it joins.
    """
    events: list[tuple[int, int, int]] = []  # (position, 0 invoke / 1 complete, txn)
    for t in range(len(txns)):
        if txns.invoked_at[t] >= 0:
            events.append((txns.invoked_at[t], 0, t))
            events.append((txns.completed_at[t], 1, t))
    events.sort()
    frontier: set[int] = set()
    preceded_by: dict[int, tuple[int, ...]] = {}
    ok = txns.outcome
    for _position, completes, t in events:
        if not completes:
            before = tuple(frontier)
            preceded_by[t] = before
            edges.add_from_all(before, t, REALTIME)
        else:
            before = preceded_by.pop(t, ())
            if ok[t] == OK:
                frontier.difference_update(before)
                frontier.add(t)


def strongly_connected_components(count: int, edges: Edges) -> list[list[int]]:
    """The components of more than one transaction (no edge goes from a transaction to itself), each sorted."""
    if not len(edges):
        return []
    graph = rustworkx.PyDiGraph(multigraph=False)
    graph.add_nodes_from(range(count))
    graph.add_edges_from_no_data(list(zip(edges.sources, edges.targets, strict=True)))
    components = [sorted(c) for c in rustworkx.strongly_connected_components(graph) if len(c) > 1]
    return sorted(components)
