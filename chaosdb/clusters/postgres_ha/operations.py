"""The embedded cluster's lifecycle and the changes an operator makes to it, as actions.

=====================  ==================================================================  ==================
action                 what happens                                                        rollback
=====================  ==================================================================  ==================
``cluster_up``         create (or restart) the cluster and wait until it is healthy        ``cluster_down``
``cluster_down``       stop every process; with ``purge`` delete its data as well
``rolling_restart``    operator fault: every node restarted one at a time, leader last     (none: ends
                       after a switchover                                                  healthy)
``scale_out``          operator fault: one node added; reports the time until it serves    ``scale_in``
``scale_in``           the rollback of ``scale_out``: the node added removed for good
=====================  ==================================================================  ==================

The cluster is found as for :mod:`chaosdb.embedded.actions`.
"""

import logging
from typing import Any, Dict

from chaoslib.types import Configuration

from chaosdb.clusters.postgres_ha import cluster as _cluster
from chaosdb.core.arguments import check_arguments, number, one_of_or_names
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.embedded import scale
from chaosdb.embedded.nodes import is_node_name, open_cluster
from chaosdb.embedded.state import resolve_cluster_dir

__all__ = ["cluster_up", "cluster_down", "rolling_restart", "scale_out", "scale_in"]

logger = logging.getLogger("chaostoolkit")


@action_result
def cluster_up(cluster: str = "", cluster_dir: str = "", nodes: int = 3, timeout_s: float = 120.0,
               configuration: Configuration = None) -> Dict[str, Any]:
    """Start the embedded postgres-ha cluster (create it on first use) and wait until it is healthy.

    A no-op on a healthy running cluster; on a stopped one it restarts with the
    existing data. Returns the leader, DSN (password in the pgpass file, never
    in the DSN), Patroni and etcd URLs and how long it took.
    """

    directory = resolve_cluster_dir(cluster, cluster_dir, configuration)
    return {"targets": [], **_cluster.up(directory, cluster or directory.name, nodes=nodes, timeout=timeout_s)}


@action_result
def cluster_down(cluster: str = "", cluster_dir: str = "", purge: bool = False,
                 configuration: Configuration = None) -> Dict[str, Any]:
    """Stop every process of the embedded cluster; with ``purge`` also delete its data."""
    layout = open_cluster(cluster, cluster_dir, configuration)
    return {"targets": [], **_cluster.down(layout, purge=purge)}


@action_result
def rolling_restart(wait_healthy_s: float = 120.0, pause_s: float = 0.0, switchover: bool = True,
                    cluster: str = "", cluster_dir: str = "",
                    configuration: Configuration = None) -> Dict[str, Any]:
    """Operator fault: restart Patroni and PostgreSQL on every node, one node at a time.

    Replicas go first and the leader last; with ``switchover`` the leader hands over to a
    replica before it restarts (what an operator does for a configuration change or a minor
    upgrade), without it the leader's clean stop releases the leader key instead. After each
    node the action waits until that node serves queries and the whole cluster is healthy
    (``wait_healthy_s``), then ``pause_s``. Returns per node the switchover, stop, serving and
    healthy times.
    """

    if wait_healthy_s <= 0 or pause_s < 0:
        raise ChaosDBError("wait_healthy_s must be > 0 and pause_s >= 0")
    layout = open_cluster(cluster, cluster_dir, configuration)
    result = scale.rolling_restart(layout, wait_healthy_s=wait_healthy_s, pause_s=pause_s, switchover=switchover)
    logger.info("chaosdb: rolling restart of %s done in %.1fs, leader %s", ", ".join(result["order"]),
                result["seconds"], result["leader"])
    return {"action": "rolling_restart", "targets": [target_entry(name) for name in result["order"]],
            "cluster": layout.name, **result}


@action_result
def scale_out(timeout_s: float = 180.0, cluster: str = "", cluster_dir: str = "",
              configuration: Configuration = None) -> Dict[str, Any]:
    """Operator fault: add one node to the running cluster (etcd member, then Patroni, which takes a
    base backup from the primary and streams).

    Returns the new node and ``serving_s``, the time from Patroni's start until the new node's
    PostgreSQL answers queries, ``healthy_s`` until the whole cluster is healthy again, and
    ``etcd_join_s``. A node that does not come up within ``timeout_s`` is removed again before the
    action fails. Roll back with ``scale_in``.
    """

    if timeout_s <= 0:
        raise ChaosDBError("timeout_s must be > 0")
    layout = open_cluster(cluster, cluster_dir, configuration)
    result = scale.add_node(layout, timeout=timeout_s)
    logger.info("chaosdb: %s joined and served after %.1fs", result["node"], result["serving_s"])
    return {"action": "scale_out", "targets": [target_entry(result["node"])], "cluster": layout.name, **result}


@action_result
def scale_in(node: str = "", keep_nodes: int = 3, cluster: str = "", cluster_dir: str = "",
             configuration: Configuration = None) -> Dict[str, Any]:
    """Rollback of ``scale_out``: remove a node for good (default: the highest-numbered one) while the
    cluster has more than ``keep_nodes`` nodes; a no-op otherwise (so it is safe as a rollback that
    runs whether or not the scale-out happened). A leader is switched over first; its etcd member is
    removed and its directory deleted."""

    layout = open_cluster(cluster, cluster_dir, configuration)
    if len(layout.nodes) <= max(3, keep_nodes):
        return {"action": "scale_in", "targets": [], "cluster": layout.name, "node": None, "nodes": len(layout.nodes),
                "reason": f"the cluster has {len(layout.nodes)} nodes: nothing to remove"}
    result = scale.remove_node(layout, node)
    _cluster.wait_healthy(layout, timeout=120.0)
    return {"action": "scale_in", "targets": [target_entry(result["node"])], "cluster": layout.name, **result}


def _rolling_restart_rule(args: Dict[str, Any]) -> None:
    if float(args["wait_healthy_s"]) <= 0:
        raise ChaosDBError("wait_healthy_s must be > 0 and pause_s >= 0")


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), {"rolling_restart": _rolling_restart_rule},
                {"cluster_up": {"nodes": number("nodes", 1, integer=True)}}, extras=("local",),
                node=one_of_or_names("node", ("",), is_node_name, "node1, node2, ..."),
                keep_nodes=number("keep_nodes", 1, integer=True))
