"""Acknowledged appends that a later read does not show: what a failover that lost committed data looks like in a
list-append history, said in one sentence per lost element.

Under a consistency model with real-time order (strict-serializable and the ``strong-*`` models) such a read is
already part of a cycle the checker names (a real-time edge from the append's transaction to the read's, an
anti-dependency back, e.g. ``G-single-item-realtime``); the cycle can be long and its explanation hard to follow.
This analysis names each element instead: which transaction appended it and was acknowledged (its completion, and
the server that answered when the history says so), and the first transaction invoked after that acknowledgement
whose read of the key misses it. It adds no verdict of its own: the result keeps the checker's.
"""

from __future__ import annotations

from typing import Any, Sequence

from chaosdb.history.transactions import OK, Transactions, parse_transactions

__all__ = ["lost_appends", "lost_appends_of", "name_lost_appends", "LOST_APPEND"]

#: the name of the finding in a result's anomalies
LOST_APPEND = "lost-append"


def _where(op: dict[str, Any]) -> str:
    node = op.get("node")
    return f" (served by {node})" if node else ""


def lost_appends(history: Sequence[dict[str, Any]], max_examples: int = 8) -> tuple[int, list[dict[str, Any]]]:
    """``(count, examples)``: every acknowledged append missing from a read invoked after its acknowledgement (one
    per element; a few examples kept, each explained)."""
    return lost_appends_of(parse_transactions(history, frozenset({"append", "r"})), max_examples)


def name_lost_appends(result: dict[str, Any], txns: Transactions, max_examples: int) -> None:
    """Add the lost appends of *txns* to a checker's *result* (``lost_appends``, the ``lost-append`` anomaly with
    its count and examples); the verdict stays the checker's."""
    count, examples = lost_appends_of(txns, max_examples)
    result["lost_appends"] = count
    if count:
        result["anomalies"][LOST_APPEND] = examples
        result["counts"][LOST_APPEND] = count
        result["anomaly_types"] = sorted({*result["anomaly_types"], LOST_APPEND})


def lost_appends_of(txns: Transactions, max_examples: int = 8) -> tuple[int, list[dict[str, Any]]]:
    """:func:`lost_appends` of a history already paired into transactions."""
    acknowledged: dict[Any, list[tuple[int, Any, int]]] = {}  # key -> [(completed_at, element, txn)]
    reads: dict[Any, list[tuple[int, list[Any], int]]] = {}  # key -> [(invoked_at, elements, txn)]
    for t in range(len(txns)):
        if txns.outcome[t] != OK:
            continue
        for f, key, value in txns.mops[t]:
            if f == "append":
                acknowledged.setdefault(key, []).append((txns.completed_at[t], value, t))
            elif f == "r" and isinstance(value, list) and txns.invoked_at[t] >= 0:
                reads.setdefault(key, []).append((txns.invoked_at[t], value, t))
    count = 0
    examples: list[dict[str, Any]] = []
    for key, appended in acknowledged.items():
        later = sorted(reads.get(key, ()), key=lambda r: r[0])
        if not later:
            continue
        for completed, element, writer in appended:
            for invoked, seen, reader in later:
                if invoked > completed and element not in seen:
                    count += 1
                    if len(examples) < max_examples:
                        examples.append(_example(txns, key, element, writer, reader, seen))
                    break
    return count, examples


def _example(txns: Any, key: Any, element: Any, writer: int, reader: int, seen: list[Any]) -> dict[str, Any]:
    shown = seen if len(seen) <= 8 else [*seen[:3], "...", *seen[-3:]]
    text = (f"T1 = {txns.short(writer)} appended {element} to key {key} and was acknowledged at index "
            f"{txns.index(writer)}{_where(txns.ops[writer])}; T2 = {txns.short(reader)}, invoked after that "
            f"(index {txns.invocation_index(reader)}), read key {key} = {shown}{_where(txns.ops[reader])}: the "
            f"acknowledged append of {element} is not there.")
    return {"key": key, "element": element, "transactions": [txns.describe(writer), txns.describe(reader)],
            "explanation": text}
