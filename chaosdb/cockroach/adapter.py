"""CockroachDB's answer to "which node has this role": the leaseholder of a row's range, a replica that does not
hold the lease, or a node by id (see :mod:`chaosdb.core.adapters`)."""

from __future__ import annotations

from typing import Any, Union

from chaosdb.cockroach import channels
from chaosdb.cockroach.node_processes import find_node_process
from chaosdb.cockroach.targets import check_selector, resolve_node
from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.target_model import Name

__all__ = ["ADAPTER", "CockroachAdapter"]


def _selector(role: str, target: dict[str, Any]) -> Any:
    return target.get("node") if role == "node" else role


class CockroachAdapter(DatabaseAdapter):
    """``cockroach-leaseholder`` / ``cockroach-not-leaseholder`` (with ``table`` and ``row``),
    ``cockroach-node`` (with ``node``: an id). Locally a node is the ``cockroach start`` process serving its
    address."""

    name = "cockroach"
    roles = ("leaseholder", "not-leaseholder", "node")
    target_keys = {"table": Name, "row": Union[list[Union[int, float, Name]], int, Name], "node": Union[int, Name]}

    def check(self, role: str, target: dict[str, Any]) -> None:
        """A leaseholder role needs ``table`` and ``row``; ``cockroach-node`` needs ``node``."""
        check_selector(_selector(role, target), target.get("table"), target.get("row"))

    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        """The node that has the role now: the leaseholder of the row's range, a live replica without the lease, or the
        node by id."""
        node = resolve_node(configuration, secrets, _selector(role, target), table=target.get("table"),
                            row=target.get("row"))
        return ResolvedNode(name=f"CockroachDB node n{node['id']}", pod=node.get("pod"), address=node.get("address"),
                            detail={"node_id": node["id"], "address": node.get("address"),
                                    "range": node.get("range")})

    def sources(self, configuration: dict[str, Any]) -> tuple[str, ...]:
        """The cluster's node status, when ``cockroach_url`` or ``cockroach_http_url(s)`` is configured."""
        keys = ("cockroach_url", "cockroach_http_url", "cockroach_http_urls")
        return ("cockroach",) if any(configuration.get(k) for k in keys) else ()

    def view(self, source: str, configuration: dict[str, Any], secrets: dict[str, Any] | None) -> View:
        """Each node's liveness as the cluster reports it (over the configured channel: SQL, HTTP or the CLI); no
        single leader (leases are per range); caught up: every node live and no range under-replicated."""
        if source != "cockroach":
            return super().view(source, configuration, secrets)
        nodes = channels.node_status(channels.settings(configuration, secrets), secrets)
        under = [n.get("ranges_underreplicated") for n in nodes]
        converged = all(n.get("is_live") for n in nodes) and None not in under and not any(under)
        return View("cockroach", None, {f"n{n['id']}": {"up": bool(n.get("is_live")),
                                                        "state": n.get("liveness_status") or n.get("membership")
                                                        or ("live" if n.get("is_live") else "not live"),
                                                        "leaseholders": n.get("leaseholders")}
                                        for n in nodes}, converged=converged if nodes else None)

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        """The ``cockroach start`` process on this machine serving the node's address."""
        pid = find_node_process(str(node.address or ""))
        if pid is None:
            raise ChaosDBError(f"no local cockroach start serves {node.name} ({node.address})")
        return [pid]


ADAPTER = CockroachAdapter()
