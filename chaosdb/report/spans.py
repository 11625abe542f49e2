"""How long each fault was in effect, and what the database did after the first one.

Fault spans (``metrics.json`` ``fault_spans``): a fault is in effect from its injection until

* the time its detached revert was due, for a timed fault (its journal end already is that time);
* else the start of the first restoring action or rollback (not a wait such as ``wait_until_healthy``) that
  starts after the fault's action ended (a node
  killed at 0 s and restarted at 30 s was down for 30 s, not for the 0.2 s the kill took);
* else the end of the fault's own action (nothing in the journal restored it: the fault was one moment, or the
  database healed by itself).

Operator actions (switchover, rolling restart, scaling, leader transfers) and failed actions are no fault spans.

Time to effect (``metrics.json`` ``effects``): from the first fault, the first of each of these in the events the
run's observer recorded (:mod:`chaosdb.core.dbevents`), each at its ``ts`` with its resolution
(``ts - since_ts``): a member left, the leader was lost, a new leader was elected, the first commit after that
election (from the samples: the first successful transaction that completed after the election was seen), the
member that left rejoined, the replicas caught up after it rejoined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chaosdb.report.data import Samples

__all__ = ["fault_spans", "effects", "events_from"]


def fault_spans(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One span per injected fault: ``name``, ``start_ts``, ``end_ts`` and ``ended_by`` (see the module)."""
    restores = sorted((f["start_ts"], f["name"]) for f in faults
                      if f.get("start_ts") is not None and (f.get("restores") or f.get("rollback"))
                      and not f.get("waits"))
    spans = []
    for f in faults:
        if f.get("start_ts") is None or f.get("restores") or f.get("rollback") or f.get("operator") \
                or f.get("status") == "failed":
            continue
        own_end = f.get("end_ts") or f["start_ts"]
        if f.get("timed"):
            end, by = own_end, "its timed revert"
        else:
            later = [(ts, name) for ts, name in restores if ts >= own_end - 1e-6]
            end, by = (later[0][0], f"restoring action '{later[0][1]}'") if later else (own_end, "the action's end")
        spans.append({"name": f["name"], "start_ts": f["start_ts"], "end_ts": end, "ended_by": by,
                      "seconds": round(end - f["start_ts"], 3)})
    return spans


def events_from(events: list[dict[str, Any]], zero: float | None) -> list[dict[str, Any]]:
    """The observer's events with ``at_s`` (seconds from *zero*, the first fault) and ``resolution_s``."""
    out = []
    for e in events:
        item = dict(e)
        if zero is not None:
            item["at_s"] = round(float(e["ts"]) - zero, 3)
        if e.get("since_ts") is not None:
            item["resolution_s"] = round(float(e["ts"]) - float(e["since_ts"]), 3)
        out.append(item)
    return out


def _first(events: list[dict[str, Any]], after: float, kinds: tuple[str, ...], **match: Any) -> dict[str, Any] | None:
    for e in events:
        if e["ts"] >= after and e.get("event") in kinds and all(e.get(k) == v for k, v in match.items()):
            return e
    return None


def _step(step: str, e: dict[str, Any], zero: float, **more: Any) -> dict[str, Any]:
    return {"step": step, "source": e.get("source"), "at_s": round(e["ts"] - zero, 3),
            "resolution_s": round(e["ts"] - e["since_ts"], 3) if e.get("since_ts") is not None else None, **more}


def effects(events: list[dict[str, Any]], fault_start: float | None, samples: Samples | None,
            primary: str | None = None) -> list[dict[str, Any]]:
    """The chain of effects of the first fault (see the module), in the order they happened. Leader changes are
    listed per source (Patroni and its etcd elect apart); the first commit is counted after the election of
    *primary* (the database's own source, the first one watched; default: the first source that reported)."""
    if fault_start is None or not events:
        return []
    primary = primary or events[0].get("source")
    steps: list[dict[str, Any]] = []
    left = _first(events, fault_start, ("member_left",))
    if left:
        steps.append(_step("member left", left, fault_start, member=left.get("member"), state=left.get("state")))
    for source in dict.fromkeys(e.get("source") for e in events):
        lost = _first(events, fault_start, ("leader_lost",), source=source)
        if lost:
            steps.append(_step("leader lost", lost, fault_start, leader=lost.get("from")))
        elected = _first(events, fault_start, ("leader_elected",), source=source)
        if not elected:
            continue
        steps.append(_step("new leader elected", elected, fault_start, leader=elected.get("to"),
                           previous=elected.get("from")))
        if source == primary and samples is not None and len(samples):
            done = samples.ts[samples.ok] + samples.lat[samples.ok] / 1000.0
            after = done[done >= elected["ts"]]
            if after.size:
                steps.append({"step": "first commit after the election", "source": "samples",
                              "at_s": round(float(np.min(after)) - fault_start, 3), "resolution_s": None,
                              "leader": elected.get("to")})
    if left:
        back = _first(events, left["ts"], ("member_rejoined",), member=left.get("member"), source=left.get("source"))
        if back:
            steps.append(_step("member rejoined", back, fault_start, member=back.get("member"), state=back.get("state")))
        caught = _first(events, back["ts"] if back else left["ts"], ("replicas_converged",), source=primary)
        if caught:
            steps.append(_step("replicas caught up", caught, fault_start))
    return sorted(steps, key=lambda s: s["at_s"])
