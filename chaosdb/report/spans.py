"""How long each fault was in effect, and what the database did after the first one.

Fault spans (``metrics.json`` ``fault_spans``): a fault is in effect from its injection until whatever ended it
first, and ``ended_by`` names it:

* a rollback or restoring action that says it undid this fault: its output lists the fault's record among those it
  ``reverted`` (not as already ended by the timer; at that record's ``reverted_at``), or names the fault's node among
  the nodes it acted on (``targets``, the nodes ``resume_nodes`` resumed; at the action's start). An interrupted run
  whose rollback resumed a suspended node at 5.3 s ends that fault at 5.3 s, not when its timer was due;
* for a timed fault (``duration_s``), its timer: when the timer reverted it (the ``reverted_at`` a later
  ``revert_faults`` reports for it with ``reverted_by: timer``), else when its revert was due;
* for a fault without a timer, the first restoring action or rollback (not a wait such as ``wait_until_healthy``)
  that starts after the fault's action returned and whose output does not say it acted on other nodes only (a node
  killed at 0 s and restarted at 30 s was down for 30 s, not for the 0.2 s the kill took; a rollback that resumed
  no node did not restart the killed one);
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

from chaosdb.core.dbevents import label_of
from chaosdb.report.data import Samples

__all__ = ["fault_spans", "effects", "events_from", "timeline_events", "SHOWN_EVENTS", "MAX_SHOWN"]


def _undoers(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rollbacks and restoring actions that can end a fault (not the waits), in the order they started."""
    return sorted((f for f in faults if f.get("start_ts") is not None and (f.get("restores") or f.get("rollback"))
                   and not f.get("waits") and f.get("status") != "failed"), key=lambda f: f["start_ts"])


def _kind_of(undo: dict[str, Any]) -> str:
    return "rollback" if undo.get("rollback") else "restoring action"


def _ends(fault: dict[str, Any], undoers: list[dict[str, Any]], returned: float) -> list[tuple[float, str]]:
    """Every time something ended *fault*, with what it was (see the module)."""
    ends: list[tuple[float, str]] = []
    fid, nodes = fault.get("fault_id"), set(fault.get("targets") or [])
    timed = bool(fault.get("timed"))
    if timed:
        due = fault.get("reverts_at") or fault.get("end_ts") or returned
        by_timer = [r.get("at") for u in undoers for r in u.get("reverted") or []
                    if fid and r.get("id") == fid and r.get("by") == "timer" and r.get("at") is not None]
        ends.append((min(by_timer) if by_timer else float(due), "its timed revert"))
    for undo in undoers:
        if undo["start_ts"] < returned - 1e-6:
            continue
        label = f"{_kind_of(undo)} '{undo['name']}'"
        mine = [r for r in undo.get("reverted") or [] if fid and r.get("id") == fid]
        if mine:
            if any(r.get("by") != "timer" for r in mine):
                at = [r["at"] for r in mine if r.get("by") != "timer" and r.get("at") is not None]
                ends.append((min(at) if at else undo["start_ts"], label))
            continue
        acted_on = undo.get("targets")
        if acted_on is not None and nodes:
            if nodes & set(acted_on):
                ends.append((undo["start_ts"], label))
        elif not timed and (acted_on is None or acted_on):
            # nothing says which fault it undid: the first restoring action after a fault without a timer ends it
            # (an action that acted on no node at all restored nothing)
            ends.append((undo["start_ts"], label))
    return ends


def fault_spans(faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One span per injected fault: ``name``, ``start_ts``, ``end_ts``, ``seconds`` and ``ended_by`` (see the
    module)."""
    undoers = _undoers(faults)
    spans = []
    for f in faults:
        if f.get("start_ts") is None or f.get("restores") or f.get("rollback") or f.get("operator") \
                or f.get("status") == "failed":
            continue
        returned = f.get("returned_ts")
        if returned is None:  # an older record: a timed fault's end is its timer, the call returned before it
            returned = f["start_ts"] if f.get("timed") else (f.get("end_ts") or f["start_ts"])
        ends = _ends(f, undoers, float(returned))
        end, by = min(ends, key=lambda e: e[0]) if ends else (f.get("end_ts") or f["start_ts"], "the action's end")
        end = max(end, f["start_ts"])
        spans.append({"name": f["name"], "start_ts": f["start_ts"], "end_ts": end, "ended_by": by,
                      "seconds": round(end - f["start_ts"], 3)})
    return spans


#: the events the timeline draws and the report's table of events lists (all are in metrics.json ``events``)
SHOWN_EVENTS = ("leader_lost", "leader_elected", "term_changed", "member_left", "member_rejoined",
                "replicas_converged", "unreachable")
#: at most how many lines of events the timeline draws (the table says how many more there were)
MAX_SHOWN = 40
#: events of one answer of the observer (seen within this many seconds of each other) share one line, one number
#: and one label: its time is every one of its events' time
GROUP_S = 0.05


def timeline_events(events: list[dict[str, Any]], limit: int = MAX_SHOWN) -> list[dict[str, Any]]:
    """The database's events as the timeline draws them and the table "Database events" lists them: one entry
    per line on the timeline, numbered from 1 in time order, with ``at_s`` (its first event's, seconds from the
    first fault), ``resolution_s``, ``label`` (its events' labels, each once, joined by "; ") and ``events`` (the
    kinds it groups). Events seen within :data:`GROUP_S` of a group's first share it (one answer of Patroni says
    several things at once). At most *limit* entries (the first ones); *events* as :func:`events_from` returns them."""
    shown = sorted((e for e in events if e.get("event") in SHOWN_EVENTS and e.get("at_s") is not None),
                   key=lambda e: e["at_s"])
    groups: list[list[dict[str, Any]]] = []
    for e in shown:
        if groups and e["at_s"] - groups[-1][0]["at_s"] <= GROUP_S:
            groups[-1].append(e)
        else:
            groups.append([e])
    out = []
    highest: dict[tuple[str, str], Any] = {}  # the highest term each source said, by the term's name
    for e in events:
        if e.get("event") == "observed" and e.get("term") is not None:
            highest[(str(e.get("source")), str(e.get("term_name") or "term"))] = e["term"]
    for n, group in enumerate(groups[:limit], start=1):
        first = group[0]
        out.append({"n": n, "at_s": first["at_s"], "resolution_s": first.get("resolution_s"),
                    "sources": list(dict.fromkeys(str(e.get("source") or "") for e in group)),
                    "events": [e["event"] for e in group],
                    "label": "; ".join(dict.fromkeys(_label(e, highest) for e in group))})
    return out


def _label(event: dict[str, Any], highest: dict[tuple[str, str], Any]) -> str:
    """The event's words; a term that went back (a timeline or Raft term never does) is said to be a stale answer."""
    words = label_of(event)
    if event.get("event") != "term_changed":
        return words
    key = (str(event.get("source")), str(event.get("term") or "term"))
    seen, to = highest.get(key), event.get("to")
    try:
        older = seen is not None and to is not None and to < seen
    except TypeError:
        return words
    if older:
        return f"{words} (older than {key[1]} {seen}: a stale answer)"
    if to is not None:
        highest[key] = to
    return words


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
