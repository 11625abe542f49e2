"""What both checkers share once they have their data edges: the order edges the model needs, the cycle search,
the empty-graph case, the cycles as examples, the single-transaction anomalies they have in common (lost update)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from chaosdb.history.cycles import SEARCH_ORDER, Explainer, describe_cycle, search_components
from chaosdb.history.graph import (
    PROCESS,
    REALTIME,
    Edges,
    add_process_edges,
    add_realtime_edges,
    orders_needed,
    strongly_connected_components,
)
from chaosdb.history.transactions import Transactions

__all__ = ["add_orders", "cycle_anomalies", "order_explanation", "lost_update_cases", "show_read"]


def add_orders(consistency_model: str, txns: Transactions, edges: Edges) -> int:
    """Adds the real-time or process edges the model needs (none for most); returns which (REALTIME, PROCESS, 0)."""
    orders = orders_needed(consistency_model)
    if orders == REALTIME:
        add_realtime_edges(txns, edges)
    elif orders == PROCESS:
        add_process_edges(txns, edges)
    return orders


def order_explanation(txns: Transactions, a: int, b: int, kind: int) -> tuple[Any, Any, str]:
    """Why ``a`` precedes ``b`` in real time or in its process's order, in plain words."""
    if kind == REALTIME:
        invoked = txns.invoked_at[b]
        gap = ""
        completed_ns, invoked_ns = txns.ops[a].get("time"), txns.invocation_time(b)
        if isinstance(completed_ns, int) and isinstance(invoked_ns, int) and invoked_ns > completed_ns:
            gap = f", {(invoked_ns - completed_ns) / 1e9:.3f} s earlier"
        return None, None, (f"{{a}} completed (index {txns.index(a)}{gap}) before {{b}} was invoked "
                            f"(index {txns.invocation_index(b) if invoked >= 0 else '?'}) (realtime)")
    return None, None, f"process {txns.ops[a].get('process')!r} ran {{a}} before {{b}} (process)"


def cycle_anomalies(txns: Transactions, edges: Edges, orders: int, explain: Explainer,
                    max_examples: int) -> dict[str, list[Any]]:
    """The cycles of the graph, named and explained, plus ``empty-transaction-graph`` if no edge exists at all."""
    if not len(edges):
        return {"empty-transaction-graph": [{
            "explanation": "No transaction depends on another, so there is no order to check."}]}
    suffix = "-realtime" if orders == REALTIME else "-process" if orders == PROCESS else ""
    wanted = tuple(n for n in SEARCH_ORDER if not n.endswith(("-realtime", "-process")) or n.endswith(suffix or "!"))
    components = strongly_connected_components(len(txns), edges)
    found, timeouts = search_components(components, edges, wanted)
    anomalies: dict[str, list[Any]] = {}
    for name, cycles in found.items():
        examples = []
        for cycle in cycles[:max_examples]:
            example = describe_cycle(name, cycle, explain, txns.short, txns.index)
            example["transactions"] = [txns.describe(a) for a, _b, _k in cycle]
            examples.append(example)
        anomalies[name] = examples
    if timeouts:
        anomalies["cycle-search-timeout"] = timeouts
    return anomalies


def show_read(value: Iterable[Any] | None) -> str:
    """A list read, as in ``[1 2 3]`` (``[]`` for the empty initial state)."""
    return "[" + " ".join(repr(e) for e in (value or ())) + "]"


def lost_update_cases(txns: Transactions, ok_ids: Iterable[int], write: str,
                      read_state: Callable[[Any], Any], show: Callable[[Any], str]) -> list[dict[str, Any]]:
    """Committed transactions that read the same state of a key and then both wrote that key (lost update).

    ``read_state`` turns a read's value into a hashable state; ``show`` prints it.
    """
    groups: dict[tuple[Any, Any], list[int]] = {}
    for t in ok_ids:
        first_read: dict[Any, Any] = {}
        written: set[Any] = set()
        for mop in txns.mops[t]:
            f, k = mop[0], mop[1]
            if f == write:
                if k not in written and k in first_read:
                    written.add(k)
                    groups.setdefault((k, first_read[k]), []).append(t)
            elif k not in first_read and k not in written:
                first_read[k] = read_state(mop[2] if len(mop) > 2 else None)
    cases = []
    for (k, state), group in groups.items():
        if len(group) > 1:
            names = ", ".join(f"index {txns.index(t)}" for t in group)
            cases.append({"key": k, "value": state if not isinstance(state, tuple) else list(state),
                          "transactions": [txns.describe(t) for t in group],
                          "explanation": f"The committed transactions at {names} all read key {k!r} = "
                                         f"{show(state)} and then wrote it: each overwrote a state the others "
                                         "also based their write on, so one update is lost."})
    return cases
