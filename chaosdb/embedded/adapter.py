"""The embedded cluster as a database adapter: which of its nodes a role names now, the majority rule, and the
processes, ports and user of each node on this machine.

A fault's ``target`` may name these roles with the prefix (``{"role": "embedded-leader", "cluster": "second"}``)
or, as shorthand, by the selector alone (``"leader"``, ``"replica"``, ``"etcd-leader"``, ``"node2,node3"``):
the host engine turns the shorthand into this adapter's role and acts only on the nodes it resolves.
"""

from __future__ import annotations

from typing import Any, Union

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.target_model import ClusterName, Name
from chaosdb.core.targets import ROLE_SELECTORS, SINGULAR_SELECTORS, Target
from chaosdb.embedded.nodes import check_target, choose, open_cluster
from chaosdb.embedded.processes import node_processes
from chaosdb.embedded.state import ClusterLayout, load_layout

__all__ = ["ADAPTER", "EmbeddedAdapter", "node_names"]


def node_names(target: dict[str, Any]) -> list[str]:
    """The node names of an ``embedded-node`` target (``"names"``: a list or a comma-separated string)."""
    names = target.get("names", target.get("name", ""))
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    return [str(n) for n in names or []]


class EmbeddedAdapter(DatabaseAdapter):
    """``embedded-<selector>`` for every selector of :data:`chaosdb.core.targets.ROLE_SELECTORS` (leader, replica,
    etcd-leader, etcd-follower, any, random and their synonyms) and ``embedded-node`` with ``names``; ``cluster`` or
    ``cluster_dir`` choose the cluster (else the configuration's, else ``CHAOSDB_CLUSTER_DIR``)."""

    name = "embedded"
    roles = (*ROLE_SELECTORS, "node")
    components = {"etcd": frozenset({"etcd"}), "patroni": frozenset({"patroni"}),
                  "postgres": frozenset({"postmaster", "postgres"})}
    target_keys = {"names": Union[Name, list[Name]], "name": Name, "cluster": ClusterName, "cluster_dir": Name}

    def max_count(self, role: str) -> int | None:
        """One for a role only one node has at a time (the leader, the etcd leader); else as many as there are."""
        return 1 if role in SINGULAR_SELECTORS else None

    def check(self, role: str, target: dict[str, Any]) -> None:
        """``embedded-node`` needs node names (``node1, node2, ...``); a selector role takes none."""
        if role == "node":
            check_target(node_names(target) or "")
        elif "names" in target:
            raise ChaosDBError(f"target {target!r}: 'names' goes with the role embedded-node, not embedded-{role}")

    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        """The first node that has *role* now."""
        return self.resolve_nodes(role, target, configuration, secrets)[0][0]

    def resolve_nodes(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                      secrets: dict[str, Any] | None, count: int | str = 1, quorum_what: str = "",
                      allow_quorum_loss: bool = False) -> tuple[list[ResolvedNode], dict[str, Any]]:
        """Roles from Patroni and etcd now (:func:`chaosdb.embedded.nodes.choose`), then the majority rule."""
        layout = _layout(target, configuration)
        selector: Any = node_names(target) if role == "node" else role
        chosen, verdict, _ = choose(layout, selector, count, allow_quorum_loss, quorum_what)
        return [_resolved(layout, t) for t in chosen], verdict

    def members(self, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> list[ResolvedNode]:
        """Every node of the cluster in its layout's order (no I/O beyond its folder)."""
        layout = _layout(target, configuration)
        return [_resolved(layout, Target(name=n.name)) for n in layout.nodes]

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        """The node's processes now, those of ``target["components"]`` only when given (none when it is down)."""
        kinds: set[str] | None = None
        if target.get("components"):
            kinds = set().union(*(self.components[c] for c in target["components"]))
        n = load_layout(node.cluster_dir).node(node.name)
        return [p.pid for p in node_processes(n.path, n.data_dir) if kinds is None or p.kind in kinds]


def _layout(target: dict[str, Any], configuration: dict[str, Any]) -> ClusterLayout:
    return open_cluster(str(target.get("cluster") or ""), str(target.get("cluster_dir") or ""), configuration)


def _resolved(layout: ClusterLayout, target: Target) -> ResolvedNode:
    n = layout.node(target.name)
    _, uid, _ = layout.node_user(n)
    return ResolvedNode(name=target.name, address=n.host, detail=target.as_dict(), cluster_dir=layout.dir,
                        ports={"postgres": n.pg_port, "patroni": n.api_port, "etcd": n.etcd_client_port,
                               "etcd-peer": n.etcd_peer_port}, user_id=uid)


ADAPTER = EmbeddedAdapter()
