"""Probes for any Patroni-managed PostgreSQL cluster.

Endpoints come from configuration ``patroni_urls`` (and secrets
``patroni_username``/``patroni_password``, ``postgres_dsn``), or from the
embedded cluster named by ``chaosdb_cluster``; see :mod:`chaosdb.postgres.endpoints`.
"""

from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.health import healthy_or_say_why
from chaosdb.postgres.endpoints import patroni_client, postgres_dsn, secret_values
from chaosdb.postgres.sql import query_primary

__all__ = [
    "current_primary",
    "has_primary",
    "cluster_members",
    "replication_lag",
    "max_replication_lag_bytes",
    "cluster_is_healthy",
    "current_timeline",
]


def current_primary(configuration: Configuration = None, secrets: Secrets = None) -> str:
    """Name of the current Patroni leader (the primary). Fails when the cluster has no leader."""
    leader = patroni_client(configuration, secrets).leader()
    if leader is None:
        raise ChaosDBError("the Patroni cluster has no leader right now")
    return leader.name


def has_primary(configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when Patroni names a leader and that leader answers for itself as a running primary; False while there is
    none (a failover under way) and while the leader Patroni names is gone (``/cluster`` keeps a killed leader's key
    until its TTL expires); fails when Patroni cannot be asked at all."""
    client = patroni_client(configuration, secrets)
    leader = client.leader()
    if leader is None:
        return False
    try:
        status = client.node_status(leader.api_url)
    except ChaosDBError:
        return False
    return status.get("role") in ("master", "primary") and status.get("state") == "running"


def cluster_members(configuration: Configuration = None,
                    secrets: Secrets = None) -> List[dict[str, Any]]:
    """Every member: name, role (leader/replica/sync_standby/...), state, host, port, api_url,
    timeline, lag_bytes (null for the leader or when Patroni does not know), pending_restart."""
    return [m.as_dict() for m in patroni_client(configuration, secrets).members()]


def replication_lag(configuration: Configuration = None,
                    secrets: Secrets = None) -> Dict[str, Any]:
    """Replication lag of every replica in bytes (Patroni) and seconds (``pg_stat_replication``
    on the primary: write/flush/replay lag), plus the maxima. A replica that does not stream
    has ``streaming: false`` and null seconds."""
    members = patroni_client(configuration, secrets).members()
    dsn = postgres_dsn(configuration, secrets)
    rows = query_primary(
        dsn,
        "SELECT application_name, state, pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint,"
        " EXTRACT(EPOCH FROM write_lag)::float8, EXTRACT(EPOCH FROM flush_lag)::float8,"
        " EXTRACT(EPOCH FROM replay_lag)::float8, sync_state FROM pg_stat_replication",
        secrets=secret_values(secrets),
    )
    by_name = {r[0]: r for r in rows}
    out = []
    for m in members:
        if m.is_leader:
            continue
        r = by_name.get(m.name)
        out.append({
            "name": m.name,
            "role": m.role,
            "state": m.state,
            "streaming": bool(r and r[1] == "streaming"),
            "lag_bytes": m.lag_bytes if m.lag_bytes is not None else (int(r[2]) if r and r[2] is not None else None),
            "write_lag_s": r[3] if r else None,
            "flush_lag_s": r[4] if r else None,
            "replay_lag_s": (r[5] or 0.0) if r else None,
            "sync_state": r[6] if r else None,
        })
    lags = [x["lag_bytes"] for x in out if x["lag_bytes"] is not None]
    secs = [x["replay_lag_s"] for x in out if x["replay_lag_s"] is not None]
    return {"replicas": out, "max_lag_bytes": max(lags) if lags else 0,
            "max_replay_lag_s": max(secs) if secs else 0.0}


def max_replication_lag_bytes(configuration: Configuration = None,
                              secrets: Secrets = None) -> int:
    """Largest lag in bytes of any replica as Patroni reports it (use with a ``range`` tolerance).
    Fails when a replica's lag is unknown (it is not replicating)."""
    members = [m for m in patroni_client(configuration, secrets).members() if not m.is_leader]
    unknown = [m.name for m in members if m.lag_bytes is None]
    if unknown:
        raise ChaosDBError(f"replication lag unknown for {', '.join(unknown)} (not replicating)")
    return max((m.lag_bytes or 0 for m in members), default=0)


def cluster_is_healthy(max_lag_bytes: int = 1048576, expected_members: int = 0,
                       configuration: Configuration = None,
                       secrets: Secrets = None) -> bool:
    """True when exactly one leader runs, every replica streams with lag <= ``max_lag_bytes``, every member answers
    for itself, and (when ``expected_members`` > 0) that many members are registered; a False says why in the log."""
    _, problems = patroni_client(configuration, secrets).health_problems(max_lag_bytes, expected_members)
    return healthy_or_say_why({"healthy": not problems, "problems": problems}, "the Patroni cluster")


def current_timeline(configuration: Configuration = None,
                     secrets: Secrets = None) -> int:
    """Timeline of the leader; it grows by one at every promotion (failover or switchover)."""
    client = patroni_client(configuration, secrets)
    leader = client.leader()
    if leader is None:
        raise ChaosDBError("no leader timeline available: the cluster has no leader")
    # the leader's own answer is current; /cluster lags one Patroni loop behind a promotion
    live = client.node_status(leader.api_url).get("timeline")
    timeline = live if isinstance(live, int) else leader.timeline
    if timeline is None:
        raise ChaosDBError(f"leader {leader.name} reports no timeline")
    return int(timeline)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
# replication lag is read from the primary over SQL (psycopg: the postgres extra); the rest is Patroni's REST API
check_arguments(globals(), extras={"replication_lag": ("postgres",)})
