"""Checks a list-append history (appends to lists and reads of whole lists) for transactional anomalies, as Elle.

Every read of a key shows the order its appends took effect in, so the longest read of each key is its version
order (every other read must be a prefix of it, else ``incompatible-order``). From it: ww edges from each appender
to the next, wr from the appender of a read's last element to the reader, rw from a reader to the appender of the
element after the last one it saw. An append no read shows comes after everything read (it gets edges from the last
known appender and its readers). Outside the graph: ``G1a`` (a read shows a failed transaction's append), ``G1b``
(a read ends with an append its transaction followed with another to the same key), ``dirty-update`` (a committed
append right after a failed one), ``duplicate-elements``, ``internal`` and ``future-read`` (a transaction disagrees
with itself), ``lost-update`` (two committed transactions read one state of a key and both appended to it).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.history.analysis import add_orders, cycle_anomalies, lost_update_cases, order_explanation, show_read
from chaosdb.history.consistency import canonical_model
from chaosdb.history.graph import REALTIME, RW, WR, WW, Edges
from chaosdb.history.lost_appends import name_lost_appends
from chaosdb.history.results import result
from chaosdb.history.transactions import FAIL, INFO, OK, Transactions, parse_transactions

__all__ = ["check_list_append"]

_MICRO_OPS = frozenset({"r", "append"})


class _Initial:
    """The state of a key before any append (shown as ``[]``)."""

    def __repr__(self) -> str:
        return "the empty initial state"


_INIT: Any = _Initial()


class _Indexes:
    """Who appended what, who read which state, and each key's version order."""

    def __init__(self, txns: Transactions) -> None:
        self.txns = txns
        self.appender: dict[Any, dict[Any, int]] = {}        # key -> element -> ok/info transaction
        self.failed_appender: dict[Any, dict[Any, int]] = {}  # key -> element -> failed transaction
        self.intermediate: dict[Any, dict[Any, int]] = {}    # key -> element a txn appended before another
        self.readers: dict[Any, dict[Any, list[int]]] = {}   # key -> last element read (or _INIT) -> readers
        self.reads: dict[Any, dict[tuple[Any, ...], int]] = {}  # key -> distinct non-empty read -> first reader
        self.order: dict[Any, list[Any]] = {}                # key -> version order
        self.position: dict[Any, dict[Any, int]] = {}        # key -> element -> place in the version order

    def build(self) -> None:
        """Fills the indexes in one pass over the transactions; raises ChaosDBError for an element appended twice."""
        txns = self.txns
        for t, mops in enumerate(txns.mops):
            outcome = txns.outcome[t]
            last_append: dict[Any, Any] = {}
            for mop in mops:
                f, k = mop[0], mop[1]
                v = mop[2] if len(mop) > 2 else None
                if f == "append":
                    other = self.appender.get(k, {}).get(v)
                    if other is None:
                        other = self.failed_appender.get(k, {}).get(v)
                    if other is not None and other != t:
                        raise ChaosDBError(
                            f"The history appends {v!r} to key {k!r} twice (transactions at index "
                            f"{txns.index(other)} and {txns.index(t)}); list-append checking needs every appended "
                            "value to be unique per key.")
                    (self.failed_appender if outcome == FAIL else self.appender).setdefault(k, {})[v] = t
                    if k in last_append:
                        self.intermediate.setdefault(k, {})[last_append[k]] = t
                    last_append[k] = v
                elif outcome == OK or (outcome == INFO and v is not None):
                    last = v[-1] if v else _INIT
                    self.readers.setdefault(k, {}).setdefault(last, []).append(t)
                    if v:
                        self.reads.setdefault(k, {}).setdefault(tuple(v), t)
        self._version_orders()

    def _version_orders(self) -> None:
        for k, reads in self.reads.items():
            longest = max(reads, key=len)
            order = list(dict.fromkeys(longest))
            self.order[k] = order
            self.position[k] = {e: i for i, e in enumerate(order)}
        for k, by_value in self.appender.items():  # one append and no read: it is the whole order
            if k not in self.order and len(by_value) == 1 and not self.failed_appender.get(k):
                (v,) = by_value
                self.order[k] = [v]
                self.position[k] = {v: 0}

    def previous(self, k: Any, v: Any) -> Any:
        """The element appended to ``k`` just before ``v`` (after everything read, if no read shows ``v``)."""
        order = self.order.get(k)
        if not order:
            return _INIT
        i = self.position[k].get(v)
        if i is None:
            return order[-1]
        return order[i - 1] if i else _INIT


def _edges(ix: _Indexes) -> Edges:
    txns = ix.txns
    edges = Edges()
    appender, readers = ix.appender, ix.readers
    for t, mops in enumerate(txns.mops):
        outcome = txns.outcome[t]
        if outcome == FAIL:
            continue
        for mop in mops:
            f, k = mop[0], mop[1]
            v = mop[2] if len(mop) > 2 else None
            if f == "append":
                prev = ix.previous(k, v)
                if prev is not _INIT:
                    writer = appender[k].get(prev)
                    if writer is not None:
                        edges.add(writer, t, WW)
                seen = readers.get(k)
                if seen:
                    before = seen.get(prev)
                    if before:
                        edges.add_from_all(before, t, RW)
            elif v:
                writer = appender.get(k, {}).get(v[-1])
                if writer is not None:
                    edges.add(writer, t, WR)
    return edges


def _explainer(ix: _Indexes) -> Any:
    txns = ix.txns

    def explain(a: int, b: int, kind: int) -> tuple[Any, Any, str]:
        if kind == WW:
            for mop in txns.mops[b]:
                if mop[0] == "append":
                    prev = ix.previous(mop[1], mop[2])
                    if prev is not _INIT and ix.appender.get(mop[1], {}).get(prev) == a:
                        return mop[1], mop[2], (f"{{a}} appended {prev!r} to key {mop[1]!r} and {{b}} appended "
                                                f"{mop[2]!r} right after it (ww)")
        elif kind == WR:
            for mop in txns.mops[b]:
                if mop[0] == "r" and mop[2] and ix.appender.get(mop[1], {}).get(mop[2][-1]) == a:
                    return mop[1], mop[2][-1], (f"{{b}} read key {mop[1]!r} = {show_read(mop[2])}, which ends with "
                                                f"{{a}}'s append of {mop[2][-1]!r} (wr)")
        elif kind == RW:
            for mop in txns.mops[b]:
                if mop[0] != "append":
                    continue
                prev = ix.previous(mop[1], mop[2])
                for read in txns.mops[a]:
                    value = read[2] if len(read) > 2 else None
                    if read[0] == "r" and read[1] == mop[1] and (value is not None or txns.outcome[a] == OK) \
                            and (value[-1] if value else _INIT) == prev:
                        return mop[1], mop[2], (f"{{a}} read key {mop[1]!r} = {show_read(value)} and did not see "
                                                f"{{b}}'s append of {mop[2]!r}, the next one (rw)")
        else:
            return order_explanation(txns, a, b, kind)
        raise AssertionError(f"no {kind} dependency between transactions {a} and {b}")

    return explain


def _read_cases(ix: _Indexes) -> dict[str, list[dict[str, Any]]]:
    """G1a, G1b and duplicate elements: what committed reads show."""
    txns = ix.txns
    g1a: list[dict[str, Any]] = []
    g1b: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    for t, mops in enumerate(txns.mops):
        outcome = txns.outcome[t]
        if outcome == FAIL:
            continue
        for mop in mops:
            if mop[0] != "r" or len(mop) < 3 or not mop[2]:
                continue
            k, v = mop[1], mop[2]
            if outcome == OK:
                failed = ix.failed_appender.get(k)
                if failed and not failed.keys().isdisjoint(v):
                    for e in v:
                        writer = failed.get(e)
                        if writer is not None:
                            g1a.append({"transactions": [txns.describe(t), txns.describe(writer)], "key": k,
                                        "element": e, "explanation": (
                                            f"The committed transaction {txns.short(t)} read key {k!r} = "
                                            f"{show_read(v)}, which includes {e!r}, appended by the failed "
                                            f"transaction {txns.short(writer)}.")})
                writer = ix.intermediate.get(k, {}).get(v[-1])
                if writer is not None and writer != t:
                    g1b.append({"transactions": [txns.describe(t), txns.describe(writer)], "key": k,
                                "element": v[-1], "explanation": (
                                    f"{txns.short(t)} read key {k!r} = {show_read(v)}, ending with {v[-1]!r}, which "
                                    f"{txns.short(writer)} appended and then followed with another append to the "
                                    "same key: an intermediate state.")})
    for k, reads in ix.reads.items():
        for read, t in reads.items():
            if len(set(read)) != len(read):
                counts: dict[Any, int] = {}
                for e in read:
                    counts[e] = counts.get(e, 0) + 1
                twice = {repr(e): n for e, n in counts.items() if n > 1}
                duplicates.append({"transactions": [txns.describe(t)], "key": k, "duplicates": twice,
                                   "explanation": f"{txns.short(t)} read key {k!r} = {show_read(read)}, which holds "
                                                  f"an element more than once ({', '.join(twice)})."})
    return {"G1a": g1a, "G1b": g1b, "duplicate-elements": duplicates}


def _incompatible_orders(ix: _Indexes) -> list[dict[str, Any]]:
    txns = ix.txns
    cases = []
    for k, reads in ix.reads.items():
        ordered = sorted(reads, key=len)
        for shorter, longer in pairwise(ordered):
            if longer[:len(shorter)] != shorter:
                a, b = reads[shorter], reads[longer]
                cases.append({"key": k, "values": [list(shorter), list(longer)],
                              "transactions": [txns.describe(a), txns.describe(b)],
                              "explanation": f"{txns.short(a)} read key {k!r} = {show_read(shorter)} and "
                                             f"{txns.short(b)} read {show_read(longer)}: the first is not a prefix of "
                                             "the second, so no single order of appends explains both."})
                break
    return cases


def _dirty_updates(ix: _Indexes) -> list[dict[str, Any]]:
    txns = ix.txns
    cases = []
    for k, order in ix.order.items():
        previous_t = -1  # the initial state, committed
        previous_outcome = OK
        values: list[Any] = []
        for v in order:
            t = ix.appender.get(k, {}).get(v)
            if t is None:
                t = ix.failed_appender.get(k, {}).get(v)
            if t is None:
                raise ChaosDBError(f"A read of key {k!r} shows {v!r}, which no transaction of the history appended; "
                                   "list-append checking cannot place such an element (Elle refuses it too).")
            outcome = txns.outcome[t]
            values.append(v)
            if outcome == OK:
                if previous_outcome == FAIL:
                    cases.append({"key": k, "values": list(values),
                                  "transactions": [txns.describe(previous_t), txns.describe(t)],
                                  "explanation": f"Key {k!r} went through {show_read(values)}: the failed "
                                                 f"{txns.short(previous_t)} appended first and the committed "
                                                 f"{txns.short(t)} appended on top of its state."})
                previous_t, previous_outcome, values = t, OK, [v]
            elif outcome == FAIL:
                if previous_outcome != FAIL:
                    previous_t, previous_outcome, values = t, FAIL, [v]
            # info: unknown, keep the range going
    return cases


def _internal_cases(ix: _Indexes) -> dict[str, list[dict[str, Any]]]:
    """internal (a read disagrees with the txn's own earlier ops) and future-read (it shows a later own append)."""
    txns = ix.txns
    internal: list[dict[str, Any]] = []
    future: list[dict[str, Any]] = []
    for t, mops in enumerate(txns.mops):
        if txns.outcome[t] != OK or len(mops) < 2:
            continue
        expected: dict[Any, tuple[bool, list[Any]]] = {}  # key -> (prefix unknown, the list or its known end)
        reads: dict[Any, list[Any]] = {}
        flagged_internal = flagged_future = False
        for mop in mops:
            f, k = mop[0], mop[1]
            v = mop[2] if len(mop) > 2 else None
            if f == "append":
                if not flagged_future and k in reads and v in reads[k]:
                    flagged_future = True
                    future.append({"transactions": [txns.describe(t)], "key": k, "element": v,
                                   "explanation": f"{txns.short(t)} read key {k!r} = {show_read(reads[k])}, which "
                                                  f"already includes {v!r}, an element it appends only later."})
                unknown, known = expected.get(k, (True, []))
                expected[k] = (unknown, known + [v])
            else:
                seen = v or []
                if k in expected and not flagged_internal:
                    unknown, known = expected[k]
                    if unknown:
                        start = len(seen) - len(known)
                        bad = start < 0 or seen[start:] != known
                    else:
                        bad = seen != known
                    if bad:
                        flagged_internal = True
                        shown = ("[... " if unknown else "[") + " ".join(repr(e) for e in known) + "]"
                        internal.append({"transactions": [txns.describe(t)], "key": k, "expected": shown,
                                         "explanation": f"{txns.short(t)} read key {k!r} = {show_read(seen)}, but "
                                                        f"its own earlier operations on it imply {shown}."})
                expected[k] = (False, list(seen))
                reads.setdefault(k, []).extend(seen)
    return {"internal": internal, "future-read": future}


def check_list_append(history: Sequence[dict[str, Any]], consistency_model: str = "serializable", *,
                      max_examples: int = 8, lost_appends: bool = False) -> dict[str, Any]:
    """Checks a list-append history under ``consistency_model``; returns the verdict and the anomalies found.
    With *lost_appends*, a model with real-time order also names each acknowledged append a later read misses
    (:mod:`chaosdb.history.lost_appends`, this pack's own finding beside Elle's).

    Raises ValueError for an unknown model, ChaosDBError for a malformed history, one that appends a value twice
    to a key, or one whose reads show an element nothing appended.
    """
    canonical_model(consistency_model)
    txns = parse_transactions(history, _MICRO_OPS)
    ix = _Indexes(txns)
    ix.build()
    anomalies: dict[str, list[Any]] = {}
    anomalies.update(_read_cases(ix))
    anomalies.update(_internal_cases(ix))
    anomalies["incompatible-order"] = _incompatible_orders(ix)
    anomalies["dirty-update"] = _dirty_updates(ix)
    anomalies["lost-update"] = lost_update_cases(
        txns, (t for t in range(len(txns)) if txns.outcome[t] == OK), "append",
        lambda v: tuple(v) if v else (), show_read)
    edges = _edges(ix)
    orders = add_orders(consistency_model, txns, edges)
    anomalies.update(cycle_anomalies(txns, edges, orders, _explainer(ix), max_examples))
    out = result("list-append", consistency_model, txns, anomalies, max_examples)
    if lost_appends and orders == REALTIME:
        name_lost_appends(out, txns, max_examples)
    return out
