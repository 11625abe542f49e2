"""etcd's own view of itself for a run's event log: the Raft leader, each member's health, the Raft term."""

from __future__ import annotations

from typing import Any

from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError
from chaosdb.etcd.endpoints import etcd_client

__all__ = ["etcd_view"]


def etcd_view(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> View:
    """Every configured member's status, asked at once: which member leads (as the members that answer say),
    which are healthy, the highest Raft term; :class:`ChaosDBError` when no member answers."""
    client = etcd_client(configuration, secrets)
    rows = client.overview()["members"]
    answered = [r for r in rows if r.get("reachable")]
    if not answered:
        raise ChaosDBError("no etcd member answered: " + "; ".join(str(r.get("error", "")) for r in rows)[:300])
    names = {m.id: m.name for m in client.members()}
    leader_ids = {r.get("leader_id") for r in answered if r.get("leader_id") not in (None, "", "0")}
    leader = names.get(next(iter(leader_ids))) if len(leader_ids) == 1 else None
    members: dict[str, dict[str, Any]] = {name: {"up": False, "state": "no answer"} for name in names.values()}
    for r in answered:
        name = names.get(str(r.get("member_id")), str(r.get("member_id")))
        members[name] = {"up": bool(r.get("healthy")), "state": "healthy" if r.get("healthy") else "unhealthy"}
    term = max((int(r.get("raft_term") or 0) for r in answered), default=None)
    return View("etcd", leader, members, term=term or None, term_name="raft term")
