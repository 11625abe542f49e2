"""Probes of the embedded cluster: status, health, roles, processes.

These read the embedded cluster's own files and processes; for any Patroni
cluster use :mod:`chaosdb.postgres.probes`, for etcd :mod:`chaosdb.etcd.probes`.
"""

from typing import Any, Dict, List

from chaoslib.types import Configuration

from chaosdb.core.arguments import check_arguments, choice, one_of_or_names
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.nodes import is_node_name, open_cluster, status_of, targets_of
from chaosdb.embedded.processes import node_processes

__all__ = ["cluster_status", "cluster_is_healthy", "nodes_with_role", "node_process_count"]


def cluster_status(cluster: str = "", cluster_dir: str = "",
                   configuration: Configuration = None) -> Dict[str, Any]:
    """Every node of the embedded cluster: Patroni role/state/lag/timeline, etcd health and
    leadership, pids of etcd/Patroni/postmaster, whether it is suspended; plus the
    leader, the etcd leader and an overall ``healthy`` flag. The DSN names the
    pgpass file and carries no password."""
    return status_of(open_cluster(cluster, cluster_dir, configuration))


def cluster_is_healthy(cluster: str = "", cluster_dir: str = "",
                       configuration: Configuration = None) -> bool:
    """True when there is one leader and every node runs (replicas streaming), its etcd member is
    healthy and none of its processes is suspended."""
    return bool(cluster_status(cluster, cluster_dir, configuration)["healthy"])


def nodes_with_role(role: str = "leader", cluster: str = "", cluster_dir: str = "",
                    configuration: Configuration = None) -> List[str]:
    """Names of the nodes that have ``role`` now: leader, replica, etcd-leader, etcd-follower
    (an empty list when none has it)."""
    wanted = {"primary": "leader", "follower": "replica"}.get(role, role)
    if wanted not in ("leader", "replica", "etcd-leader", "etcd-follower"):
        raise ChaosDBError(f"unknown role {role!r}: use leader, replica, etcd-leader or etcd-follower")
    nodes = targets_of(cluster_status(cluster, cluster_dir, configuration))
    return [n.name for n in nodes if wanted in n.roles]


def node_process_count(node: str = "all", cluster: str = "", cluster_dir: str = "",
                       configuration: Configuration = None) -> int:
    """How many live processes belong to ``node`` (or to every node with ``all``).
    0 after ``cluster_down`` is the proof that nothing was left behind."""

    layout = open_cluster(cluster, cluster_dir, configuration)
    names = [n.name for n in layout.nodes] if node == "all" else [layout.node(node).name]
    return sum(len(node_processes(layout.node(n).path, layout.node(n).data_dir)) for n in names)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), role=choice("role", "leader", "primary", "replica", "follower", "etcd-leader",
                                       "etcd-follower"),
                node=one_of_or_names("node", ("all",), is_node_name, "node1, node2, ..."))
