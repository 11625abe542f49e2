"""Which CockroachDB node an action hits, decided when it runs.

``node`` selectors: a node id (``3`` or ``"3"``), ``"leaseholder"`` / ``"not-leaseholder"`` of the
range holding ``row`` of ``table`` (the leaseholder, or a live replica of that range that is not the
leaseholder), ``"any"`` (the live node with the lowest id) or ``"random"``. Decommissioned nodes are
never chosen; the chosen node must be live unless the action says otherwise.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from chaosdb.cockroach import channels, ranges
from chaosdb.core.errors import ChaosDBError

__all__ = ["resolve_node", "SELECTORS", "check_selector"]

SELECTORS = ("leaseholder", "not-leaseholder", "any", "random")


def check_selector(node: Any, table: Any, row: Any) -> None:
    """The ``node`` selector's grammar, before anything asks the cluster (see the module's documentation)."""
    if isinstance(node, bool) or node is None:
        raise ChaosDBError(f"node must be a node id or one of {', '.join(SELECTORS)}; got {node!r}")
    if isinstance(node, str) and not node.isdigit() and node not in SELECTORS:
        raise ChaosDBError(f"unknown node selector {node!r}: a node id or one of {', '.join(SELECTORS)}")
    if node in ("leaseholder", "not-leaseholder") and (table is None or row is None):
        raise ChaosDBError(f"node {node!r} needs table and row (the primary key values of a row of that table)")


def resolve_node(configuration: dict[str, Any], secrets: dict[str, Any] | None, node: Any,
                 table: str | Sequence[str] | None = None, row: Any = None, require_live: bool = True,
                 nodes: list[dict[str, Any]] | None = None, allow_decommissioned: bool = False) -> dict[str, Any]:
    """The node record (plus ``pod`` and, for leaseholder selectors, ``range``) an action targets."""
    check_selector(node, table, row)
    nodes = nodes if nodes is not None else channels.node_status(configuration, secrets)
    by_id = {n["id"]: n for n in nodes}
    chosen: dict[str, Any] | None
    range_info = None
    if isinstance(node, int) or (isinstance(node, str) and node.isdigit()):
        chosen = by_id.get(int(node))
        if chosen is None:
            raise ChaosDBError(f"node {node} is not in the cluster (nodes: {', '.join(map(str, sorted(by_id)))})")
    elif node in ("leaseholder", "not-leaseholder"):
        assert table is not None  # check_selector refused a leaseholder selector without table and row
        range_info = ranges.leaseholder_of_row(configuration, secrets, table, row)
        if node == "leaseholder":
            chosen = by_id.get(range_info["lease_holder"])
        else:
            others = [by_id[r] for r in range_info["replicas"]
                      if r != range_info["lease_holder"] and r in by_id and by_id[r]["is_live"]]
            if not others:
                raise ChaosDBError(f"range r{range_info['range_id']} has no live replica besides its leaseholder "
                                   f"n{range_info['lease_holder']}")
            chosen = others[0]
    else:
        live = [n for n in nodes if n["is_live"] and n.get("membership") in (None, "active")]
        if not live:
            raise ChaosDBError("no live, active node to choose from")
        chosen = random.choice(live) if node == "random" else live[0]
    if chosen is None:
        raise ChaosDBError(f"the {node} is not in the node list")
    if chosen.get("membership") == "decommissioned" and not allow_decommissioned:
        raise ChaosDBError(f"n{chosen['id']} is decommissioned")
    if require_live and not chosen["is_live"]:
        raise ChaosDBError(f"n{chosen['id']} is not live: nothing to inject into (check cluster health first)")
    out = dict(chosen)
    out["pod"] = ranges.pod_of(chosen, configuration)
    if range_info is not None:
        out["range"] = {k: range_info[k] for k in ("range_id", "lease_holder", "replicas", "statement")}
    return out
