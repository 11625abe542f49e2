"""CockroachDB probes: node status (SQL, HTTP or CLI, one record shape) and cluster health."""

from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.cockroach import channels

__all__ = ["node_status", "cluster_health", "cluster_is_healthy", "node_is_ready"]


def node_status(configuration: Configuration = None, secrets: Secrets = None) -> List[Dict[str, Any]]:
    """Every node the cluster knows (dead and decommissioned ones included), through the channel the
    configuration picks (``cockroach_channel``: sql, http or cli), normalised to: id, address,
    sql_address, build, started_at, updated_at, locality, is_live, is_available, draining,
    membership, decommissioning, ranges, ranges_unavailable, ranges_underreplicated, leaseholders,
    leaders, replicas (null where the channel cannot know)."""
    return channels.node_status(configuration or {}, secrets)


def cluster_health(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Whether the cluster is healthy and why not: every node that is not decommissioned(-ing) is live
    and available, and no range is unavailable or under-replicated. Returns ``healthy``, the
    ``problems`` found (one line each) and the node records."""
    nodes = channels.node_status(configuration or {}, secrets)
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


def cluster_is_healthy(configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when :func:`cluster_health` finds nothing wrong: usable as a steady-state probe and as a
    safety gate before injecting (a degraded cluster stops the experiment first)."""
    return bool(cluster_health(configuration, secrets)["healthy"])


def node_is_ready(url: str, configuration: Configuration = None) -> Dict[str, Any]:
    """``/health?ready=1`` of one node's DB Console URL: ``ready``, the HTTP status and the server's
    reason when not ready (``node is shutting down`` while draining, ...). A refused connection is
    reported as not ready, with the reason."""
    return channels.http_health(url)
