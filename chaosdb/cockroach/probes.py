"""CockroachDB probes: node status (SQL, HTTP or CLI, one record shape) and cluster health."""

from typing import Any, Dict, List, Optional, Sequence, Union

from chaoslib.types import Configuration, Secrets

from chaosdb.cockroach import channels, ranges
from chaosdb.core.arguments import check_arguments, choice
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.health import healthy_within

__all__ = ["node_status", "cluster_health", "cluster_is_healthy", "node_is_ready", "leaseholder_of_row",
           "table_leaseholders", "ranges_per_node", "ranges_per_node_over_time"]


def node_status(configuration: Configuration = None, secrets: Secrets = None) -> List[Dict[str, Any]]:
    """Every node the cluster knows (dead and decommissioned ones included), through the channel the
    configuration picks (``cockroach_channel``: sql, http or cli), normalised to: id, address,
    sql_address, build, started_at, updated_at, locality, is_live, is_available, draining,
    membership, decommissioning, replicas (replicas held), ranges (ranges the node counts for the cluster;
    the CLI cannot tell), leaseholders, leaders, ranges_unavailable, ranges_underreplicated,
    gossiped_replicas (null where the channel cannot know; the same meaning on every channel)."""
    return channels.node_status(channels.settings(configuration, secrets), secrets)


def cluster_health(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Whether the cluster is healthy and why not: every node that is not decommissioned(-ing) is live
    and available, and no range is unavailable or under-replicated. Returns ``healthy``, the
    ``problems`` found (one line each) and the node records."""
    nodes = channels.node_status(channels.settings(configuration, secrets), secrets)
    problems = []
    for n in nodes:
        if n["membership"] in ("decommissioned", "decommissioning"):
            continue
        if not n["is_live"]:
            problems.append(f"n{n['id']} is not live")
        elif not n["is_available"]:
            problems.append(f"n{n['id']} is live but not available (its liveness record is not fresh)")
        if n.get("draining"):
            problems.append(f"n{n['id']} is draining")
        for key, what in (("ranges_unavailable", "unavailable"), ("ranges_underreplicated", "under-replicated")):
            if n.get(key):
                problems.append(f"n{n['id']} reports {n[key]} {what} range(s)")
    if not nodes:
        problems.append("the cluster reported no node")
    return {"healthy": not problems, "problems": problems, "nodes": nodes}


def cluster_is_healthy(within_s: float = 0, configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when :func:`cluster_health` finds nothing wrong: usable as a steady-state probe and as a
    safety gate before injecting (a degraded cluster stops the experiment first). With ``within_s`` it asks
    again every second until healthy or that many seconds have passed. A False logs the problems it found
    last."""
    return healthy_within(lambda: cluster_health(configuration, secrets), "the CockroachDB cluster", within_s)


def node_is_ready(url: str, configuration: Configuration = None) -> Dict[str, Any]:
    """``/health?ready=1`` of one node's DB Console URL: ``ready``, the HTTP status and the server's
    reason when not ready (``node is shutting down`` while draining, ...). A refused connection is
    reported as not ready, with the reason."""
    return channels.http_health(url, configuration=channels.settings(configuration))


def leaseholder_of_row(table: Union[str, Sequence[str]], row: Any, index: Optional[str] = None,
                       configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """The range holding one row (``row``: the primary key values in order; ``index`` for a secondary
    index) and its leaseholder: ``range_id``, ``lease_holder`` (node id), ``node`` (id, address, SQL
    address, pod on Kubernetes, live), ``followers`` (the other replicas, same shape) and the keys.
    Runs ``SHOW RANGE FROM TABLE t FOR ROW (...)`` over SQL or the CLI."""
    return ranges.leaseholder_of_row(channels.settings(configuration, secrets), secrets, table, row, index)


def table_leaseholders(table: Union[str, Sequence[str]], configuration: Configuration = None,
                       secrets: Secrets = None) -> Dict[str, Any]:
    """Where a table's range leases are: ``ranges`` (id, leaseholder, replicas each) and
    ``leases_by_node`` (node id -> count). Version-aware: ``SHOW RANGES FROM TABLE`` before v23.1,
    ``... WITH DETAILS`` from v23.2 (v23.1: whichever the cluster's setting allows)."""
    rows = ranges.table_ranges(channels.settings(configuration, secrets), table)
    by_node: Dict[str, int] = {}
    for r in rows:
        if r["lease_holder"] is not None:
            by_node[str(r["lease_holder"])] = by_node.get(str(r["lease_holder"]), 0) + 1
    return {"table": table if isinstance(table, str) else ".".join(table), "ranges": rows,
            "leases_by_node": dict(sorted(by_node.items(), key=lambda kv: int(kv[0])))}


#: what ranges_per_node_over_time can balance on
KEYS = ("replicas", "ranges", "leaseholders", "leaders")


def ranges_per_node(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Replica, range, leaseholder and Raft leader counts per node now (decommissioned nodes left out), with
    a timestamp: sampled before and after a change to see the rebalancing."""
    return ranges.ranges_per_node(channels.node_status(channels.settings(configuration, secrets), secrets))


def ranges_per_node_over_time(duration_s: float = 300, interval_s: float = 10, key: str = "replicas",
                              tolerance: float = 0.1, stop_when_balanced: bool = False,
                              configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Sample replicas per node (``key``: replicas, ranges, leaseholders or leaders) every ``interval_s`` for
    ``duration_s`` (the Kubernetes evaluation's rebalancing after a scale-out): every sample, each sample's ``spread`` (largest deviation of a live
    node from the mean of ``key``, as a fraction), whether the cluster ended ``balanced`` (within
    ``tolerance``) and ``balanced_after_s`` (from which sample on it stayed so). Read errors during
    the window (a node restarting) are listed, not fatal."""
    if key not in KEYS:
        raise ChaosDBError(f"key must be one of {', '.join(KEYS)}, got {key!r}")
    return ranges.sample_ranges_per_node(channels.settings(configuration, secrets), secrets, duration_s, interval_s,
                                         key, tolerance,
                                         stop_when_balanced)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), key=choice("key", *KEYS))
