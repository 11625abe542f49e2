"""The embedded cluster's nodes as fault targets (roles resolved from Patroni and etcd right now)."""

from __future__ import annotations

import re
from typing import Any

from chaosdb.core.arguments import one_of_or_names
from chaosdb.core.targets import ROLE_SELECTORS, Target, check_quorum, select_targets
from chaosdb.embedded import health as cluster_health
from chaosdb.embedded.state import ClusterLayout, load_layout, resolve_cluster_dir

__all__ = ["open_cluster", "targets_of", "status_of", "choose", "is_node_name", "check_target"]


def is_node_name(name: str) -> bool:
    """The embedded cluster names its nodes ``node1``, ``node2``, ... (``scale_out`` continues the series)."""
    return re.fullmatch(r"node[1-9][0-9]*", name) is not None


#: the ``target`` argument of the embedded cluster's actions, checked before anything runs
check_target = one_of_or_names("target", ROLE_SELECTORS, is_node_name, "node1, node2, ...")


def open_cluster(cluster: str = "", cluster_dir: str = "",
                 configuration: dict[str, Any] | None = None) -> ClusterLayout:
    """The layout of the embedded cluster named by the arguments, the configuration or the environment."""
    return load_layout(resolve_cluster_dir(cluster, cluster_dir, configuration))


def status_of(layout: ClusterLayout) -> dict[str, Any]:
    """The cluster's status now (members, roles, lag, processes)."""
    return cluster_health.status(layout)


def targets_of(status: dict[str, Any]) -> list[Target]:
    """Targets with roles: leader / replica (Patroni) and etcd-leader / etcd-follower."""
    targets = []
    for n in status["nodes"]:
        roles: set[str] = set()
        if n["role"] in ("leader", "standby_leader"):
            roles.add("leader")
        elif n["role"]:
            roles.add("replica")
        if n["etcd"]["healthy"]:
            roles.add("etcd-leader" if n["etcd"]["leader"] else "etcd-follower")
        up = (n["state"] in ("running", "streaming") and n["etcd"]["healthy"] and not n["suspended"])
        targets.append(Target(
            name=n["name"], roles=roles, up=up,
            details={"host": n["host"], "pg_port": n["pg_port"], "patroni_role": n["role"], "state": n["state"]},
        ))
    return targets


def choose(layout: ClusterLayout, target: Any, count: Any, allow_quorum_loss: bool = False, what: str = "",
           ) -> tuple[list[Target], dict[str, Any], dict[str, Any]]:
    """The nodes a fault hits, chosen from the cluster as it is now; with *what* (``"kill"``, ...) the
    majority rule is checked too. Returns (chosen targets, quorum verdict, cluster status)."""
    status = status_of(layout)
    nodes = targets_of(status)
    chosen = select_targets(nodes, target, count)
    verdict = check_quorum(nodes, chosen, allow_quorum_loss, what) if what else {}
    return chosen, verdict, status
