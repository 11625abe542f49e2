"""PD's JSON, normalised (PD's HTTP API, server/api in tikv/pd; recorded replies in the repository's tests/data/tikv).

PD omits zero values (``state`` 0 = Up, ``role`` 0 = Voter, counts of 0), so every field has a default.
Store state: ``state_name`` when PD sends it; else from ``state`` (0 Up, 1 Offline, 2 Tombstone), with
an Up store whose last heartbeat is older than 20 s reported ``Disconnected`` and older than
``max-store-down-time`` (30 min by default) ``Down``, as PD itself computes it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.timeutil import parse_go_duration as go_duration_s

__all__ = ["normalise_store", "normalise_stores", "normalise_region", "normalise_member", "parse_size",
           "parse_go_duration", "normalise_health", "STORE_STATES", "NODE_STATES", "pd_error_text", "DISCONNECTED_S", "DOWN_S"]

STORE_STATES = {0: "Up", 1: "Offline", 2: "Tombstone"}
NODE_STATES = {0: "Preparing", 1: "Serving", 2: "Removing", 3: "Removed"}
ROLES = {0: "Voter", 1: "Learner", 2: "IncomingVoter", 3: "DemotingVoter"}
DISCONNECTED_S = 20.0
DOWN_S = 30 * 60.0

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2,
          "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3, "t": 1024 ** 4, "tb": 1024 ** 4, "tib": 1024 ** 4,
          "p": 1024 ** 5, "pb": 1024 ** 5, "pib": 1024 ** 5}


def parse_size(text: Any) -> int | None:
    """PD's human sizes (``"3.125TiB"``, ``"20 GiB"``, ``"83.58GiB"``, ``"0B"``) -> bytes (PD's ByteSize is binary)."""
    if text is None or text == "":
        return None
    if isinstance(text, (int, float)):
        return int(text)
    m = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ChaosDBError(f"not a size: {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_go_duration(text: Any) -> float | None:
    """``"22h5m55.232345375s"`` / ``"4m50.96s"`` / ``"150ms"`` -> seconds (None when absent)."""
    if not text:
        return None
    secs = go_duration_s(str(text))
    if secs is None:
        raise ChaosDBError(f"not a Go duration: {text!r}")
    return secs


def _ts(text: Any) -> float | None:
    if not text:
        return None
    s = str(text)
    m = re.match(r"(.*?\.\d{6})\d*(.*)$", s)  # Python takes microseconds; PD prints nanoseconds
    if m:
        s = m.group(1) + m.group(2)
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat()


def normalise_store(item: dict[str, Any], now: float | None = None, down_after_s: float = DOWN_S) -> dict[str, Any]:
    """One ``{"store": ..., "status": ...}`` of ``/stores`` or ``/store/{id}``."""
    if not isinstance(item, dict) or "store" not in item:
        raise ChaosDBError(f"not a PD store record: {str(item)[:120]}")
    st, status = item.get("store") or {}, item.get("status") or {}
    if "id" not in st:
        raise ChaosDBError("PD store record without an id")
    heartbeat = None
    if st.get("last_heartbeat"):
        heartbeat = int(st["last_heartbeat"]) / 1e9
    elif status.get("last_heartbeat_ts"):
        heartbeat = _ts(status["last_heartbeat_ts"])
    now = datetime.now(timezone.utc).timestamp() if now is None else now
    age = None if heartbeat is None else max(0.0, now - heartbeat)
    state = st.get("state_name")
    if not state:
        state = STORE_STATES.get(int(st.get("state", 0)), "Unknown")
        if state == "Up" and age is not None:
            state = "Down" if age > down_after_s else "Disconnected" if age > DISCONNECTED_S else "Up"
    started = _ts(status.get("start_ts")) or (st.get("start_timestamp") or None)
    # a store that never reported its start (pd-simulator's mock stores) shows the epoch, and an uptime
    # counted from 1970: unknown, not 56 years
    known_start = started is not None and float(started) > 0
    return {
        "id": int(st["id"]), "address": st.get("address"), "peer_address": st.get("peer_address"),
        "status_address": st.get("status_address"), "version": st.get("version"),
        "state": state, "node_state": NODE_STATES.get(int(st.get("node_state", 0)), "Unknown")
        if "node_state" in st else None,
        "labels": {lb.get("key"): lb.get("value") for lb in st.get("labels") or []},
        "leader_count": int(status.get("leader_count", 0)), "region_count": int(status.get("region_count", 0)),
        "leader_weight": float(status.get("leader_weight", 0)), "region_weight": float(status.get("region_weight", 0)),
        "leader_size": int(status.get("leader_size", 0)), "region_size": int(status.get("region_size", 0)),
        "pending_peer_count": int(status.get("pending_peer_count", 0)),
        "learner_count": int(status.get("learner_count", 0)),
        "slow_score": status.get("slow_score"), "is_busy": bool(status.get("is_busy", False)),
        "capacity_bytes": parse_size(status.get("capacity")), "available_bytes": parse_size(status.get("available")),
        "used_bytes": parse_size(status.get("used_size")),
        "started_at": _iso(started) if known_start else None,
        "last_heartbeat": _iso(heartbeat), "heartbeat_age_s": None if age is None else round(age, 3),
        "uptime_s": parse_go_duration(status.get("uptime")) if known_start else None,
    }


def normalise_stores(body: Any, now: float | None = None) -> list[dict[str, Any]]:
    """PD's ``/stores`` answer as store records sorted by id; refused when it is not a store list."""
    if not isinstance(body, dict) or "stores" not in body:
        raise ChaosDBError(f"PD /stores did not return a store list: {str(body)[:120]}")
    return sorted((normalise_store(s, now) for s in body.get("stores") or []), key=lambda s: s["id"])


def _peer(p: dict[str, Any]) -> dict[str, Any]:
    role = p.get("role_name") or ROLES.get(int(p.get("role", 0)), "Voter")
    return {"id": int(p["id"]), "store_id": int(p["store_id"]), "role": role,
            "is_learner": bool(p.get("is_learner") or role == "Learner"), "is_witness": bool(p.get("is_witness"))}


def normalise_region(body: Any) -> dict[str, Any]:
    """A RegionInfo (or the historical ``{"region": {...}}`` wrapper) -> id, keys, peers, leader, followers."""
    if isinstance(body, dict) and "region" in body and "id" not in body:
        body = body["region"]
    if not isinstance(body, dict) or "id" not in body:
        raise ChaosDBError(f"not a PD region record: {str(body)[:120]}")
    peers = [_peer(p) for p in body.get("peers") or []]
    leader = body.get("leader") or {}
    leader_store = int(leader["store_id"]) if leader.get("store_id") else None
    down = [int((d.get("peer") or {}).get("store_id", 0)) for d in body.get("down_peers") or []]
    return {
        "id": int(body["id"]), "start_key": body.get("start_key", ""), "end_key": body.get("end_key", ""),
        "epoch": {"conf_ver": int((body.get("epoch") or {}).get("conf_ver", 0)),
                  "version": int((body.get("epoch") or {}).get("version", 0))},
        "peers": peers, "leader_store_id": leader_store,
        "leader_peer_id": int(leader["id"]) if leader.get("id") else None,
        "follower_store_ids": [p["store_id"] for p in peers if p["store_id"] != leader_store and not p["is_learner"]],
        "learner_store_ids": [p["store_id"] for p in peers if p["is_learner"]],
        "down_store_ids": down,
        "pending_store_ids": [int(p.get("store_id", 0)) for p in body.get("pending_peers") or []],
        "approximate_size_mib": int(body.get("approximate_size", 0)),
        "approximate_keys": int(body.get("approximate_keys", 0)),
    }


def normalise_member(m: dict[str, Any]) -> dict[str, Any]:
    """A PD member as name, id, URLs, version and leader priority."""
    return {"name": m.get("name"), "member_id": m.get("member_id"), "client_urls": list(m.get("client_urls") or []),
            "peer_urls": list(m.get("peer_urls") or []), "binary_version": m.get("binary_version"),
            "leader_priority": int(m.get("leader_priority", 0))}


def normalise_health(body: Any) -> list[dict[str, Any]]:
    """``/pd/api/v1/health``: ``[{"name", "member_id", "client_urls", "health"}]``."""
    if not isinstance(body, list):
        raise ChaosDBError(f"PD /health did not return a list: {str(body)[:120]}")
    return [{"name": m.get("name"), "member_id": m.get("member_id"), "client_urls": list(m.get("client_urls") or []),
             "healthy": bool(m.get("health"))} for m in body]


def pd_error_text(body: str) -> str:
    """PD's error bodies are usually a JSON string: ``"[PD:region:ErrRegionNotFound]region ... not found"``."""

    try:
        value = json.loads(body)
    except ValueError:
        return body.strip()
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return str(value.get("message") or value.get("error") or value)
    return body.strip()
