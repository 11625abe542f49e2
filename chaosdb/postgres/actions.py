"""Actions for any Patroni-managed PostgreSQL cluster: switchover, failover, wait for health."""

import time
from typing import Any, Dict

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments, number
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.core.timeutil import Stopwatch
from chaosdb.postgres.endpoints import patroni_client
from chaosdb.postgres.patroni import HEALTHY_REPLICA_STATES

__all__ = ["switchover", "failover", "wait_until_healthy"]


@action_result
def switchover(candidate: str = "", timeout_s: float = 60.0, configuration: Configuration = None,
               secrets: Secrets = None) -> Dict[str, Any]:
    """Planned switchover from the current leader to ``candidate`` (empty: Patroni picks the
    healthiest replica; in synchronous mode only a synchronous standby qualifies). Waits until
    a new leader runs and returns from/to, the new timeline and how long it took."""
    client = patroni_client(configuration, secrets)
    members = client.members()
    leader = next((m for m in members if m.is_leader), None)
    if leader is None:
        raise ChaosDBError("no leader to switch over from: use failover")
    if candidate and candidate == leader.name:
        raise ChaosDBError(f"{candidate} is already the leader")
    if candidate and candidate not in {m.name for m in members}:
        raise ChaosDBError(f"unknown candidate {candidate!r}: members are {', '.join(m.name for m in members)}")
    sync = [m.name for m in members if m.role in ("sync_standby", "quorum_standby")]
    if candidate and sync and candidate not in sync:
        raise ChaosDBError(f"in synchronous mode Patroni switches over only to a synchronous standby "
                           f"({', '.join(sync)}), not to {candidate}")
    watch = Stopwatch()
    message = client.switchover(leader.name, candidate or None)
    new = client.wait_for_leader(timeout_s, not_named=leader.name, newer_than_timeline=leader.timeline)
    return {"action": "switchover", "targets": [target_entry(leader.name, roles=["leader"])],
            "from": leader.name, "to": new.name, "message": message,
            "new_timeline": new.timeline, **watch.stop().as_dict()}


@action_result
def failover(candidate: str = "", timeout_s: float = 60.0, configuration: Configuration = None,
             secrets: Secrets = None) -> Dict[str, Any]:
    """Manual failover to ``candidate`` (empty: the streaming replica with the least lag, a
    synchronous standby first). Works without a healthy leader, unlike switchover."""
    client = patroni_client(configuration, secrets)
    members = client.members()
    leader = next((m for m in members if m.is_leader), None)
    if not candidate:
        eligible = [m for m in members if not m.is_leader and m.state in HEALTHY_REPLICA_STATES]
        if not eligible:
            raise ChaosDBError("no streaming replica to fail over to")
        eligible.sort(key=lambda m: (m.role != "sync_standby", m.lag_bytes if m.lag_bytes is not None else 1 << 62))
        candidate = eligible[0].name
    elif candidate not in {m.name for m in members}:
        raise ChaosDBError(f"unknown candidate {candidate!r}: members are {', '.join(m.name for m in members)}")
    watch = Stopwatch()
    message = client.failover(candidate)
    deadline = time.monotonic() + timeout_s
    old_timeline = leader.timeline if leader else None
    new = client.wait_for_leader(timeout_s, not_named=leader.name if leader and leader.name != candidate else None,
                                 newer_than_timeline=old_timeline)
    while new.name != candidate and time.monotonic() < deadline:
        time.sleep(0.5)
        new = client.wait_for_leader(max(1.0, deadline - time.monotonic()), newer_than_timeline=old_timeline)
    return {"action": "failover", "targets": [target_entry(new.name, roles=["leader"])],
            "from": leader.name if leader else None, "to": new.name, "message": message,
            "new_timeline": new.timeline, **watch.stop().as_dict()}


@action_result
def wait_until_healthy(timeout_s: float = 60.0, max_lag_bytes: int = 1048576, expected_members: int = 0,
                       converged: bool = False, stable_s: float = 0.0, configuration: Configuration = None,
                       secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until one leader runs and every replica streams with lag <= ``max_lag_bytes``, every member answering
    for itself (and ``expected_members`` are registered when > 0), and it stays so for ``stable_s`` seconds (a member
    that rejoins after a fault may restart once more, for pg_rewind, right after it first looked healthy). With
    ``converged``, also until every replica, on the leader's timeline, has replayed everything the leader had
    written when the cluster looked healthy (what a data comparison next needs: a replica that streams is not yet
    one that has caught up). Fails after ``timeout_s`` with what was wrong last; returns the leader and how long it
    took."""
    client = patroni_client(configuration, secrets)
    watch = Stopwatch()
    deadline = time.monotonic() + timeout_s
    last, healthy_since = "", None
    while True:
        try:
            members, problems = client.health_problems(max_lag_bytes, expected_members)
            leaders = [m for m in members if m.is_leader and m.state == "running"]
            ok, last = not problems, "; ".join(problems)
            if ok and converged:
                ok, last = _caught_up(client, leaders[0], [m for m in members if not m.is_leader], deadline)
            healthy_since = (healthy_since or time.monotonic()) if ok else None
            if healthy_since is not None and time.monotonic() - healthy_since >= stable_s:
                return {"targets": [], "leader": leaders[0].name, "members": len(members),
                        **watch.stop().as_dict()}
        except ChaosDBError as exc:
            last, healthy_since = str(exc), None
        if time.monotonic() >= deadline:
            raise ChaosDBError(f"cluster not healthy after {timeout_s:.0f}s: {last}")
        time.sleep(0.5)


def _caught_up(client: Any, leader: Any, replicas: list[Any], deadline: float) -> tuple[bool, str]:
    """Whether every replica replays, on the leader's timeline, at least up to the leader's WAL position of now
    (asked again until *deadline*)."""
    status = client.node_status(leader.api_url)
    target, timeline = int((status.get("xlog") or {}).get("location") or 0), status.get("timeline")
    behind = ""
    while True:
        behind = ""
        for m in replicas:
            st = client.node_status(m.api_url)
            replayed = int((st.get("xlog") or {}).get("replayed_location") or 0)
            if st.get("timeline") != timeline or replayed < target:
                behind = f"{m.name} replayed {replayed} of {target} (timeline {st.get('timeline')}, leader's {timeline})"
                break
        if not behind:
            return True, ""
        if time.monotonic() >= deadline:
            return False, f"not converged: {behind}"
        time.sleep(0.25)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), max_lag_bytes=number("max_lag_bytes", 0, integer=True),
                expected_members=number("expected_members", 0, integer=True))
