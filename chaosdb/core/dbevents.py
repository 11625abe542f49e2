"""What a database says about itself during a run, and the events between two of its answers.

An adapter (:mod:`chaosdb.core.adapters`) answers :meth:`~chaosdb.core.adapters.DatabaseAdapter.views` with one
:class:`View` per source it asks (Patroni and its etcd; PD and its TiKV stores): the leader, each member and whether
it is up, the term (Patroni's timeline, etcd's Raft term) and whether the replicas have caught up. The observer of a
run (:mod:`chaosdb.load.observer`) asks every half second and writes the :func:`changes` between two answers into
the samples folder (``events.jsonl``); the report draws and measures them.

Events (``event``), each with the source, its time ``ts`` (when the answer that showed it came back) and
``since_ts`` (the previous answer: the change happened in between):

* ``observed``: the first answer (the state the run started from);
* ``leader_lost`` (``from``): no member leads any more; ``leader_elected`` (``to``, ``from`` when another led
  before): a member leads;
* ``term_changed`` (``from``, ``to``; ``term`` names it: ``timeline``, ``raft term``);
* ``member_left`` / ``member_rejoined`` (``member``, ``state``);
* ``replicas_behind`` / ``replicas_converged``: every replica up and caught up with the leader, or no longer;
* ``unreachable`` (``error``) / ``reachable``: the source did not answer, then answered again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["View", "carry", "changes", "EVENTS_FILE", "LEADER_EVENTS", "label_of"]

#: the events file in a run's samples folder (one JSON object per line)
EVENTS_FILE = "events.jsonl"
#: the events that say the database changed its leader
LEADER_EVENTS = ("leader_lost", "leader_elected")


@dataclass
class View:
    """One source's answer: who leads, who is up, the term, whether the replicas caught up (None: not known)."""

    source: str
    leader: str | None
    members: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {"up": bool, "state": str, ...}
    term: int | None = None
    term_name: str = "term"
    converged: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        """The view as JSON: source, leader, members, term and its name, whether the replicas converged."""
        return {"source": self.source, "leader": self.leader, "members": self.members, "term": self.term,
                "term_name": self.term_name, "converged": self.converged}


def carry(previous: View | None, current: View) -> View:
    """*current* with every member *previous* knew and *current* no longer lists (Patroni drops a dead member's
    key after its TTL) kept as down, the replicas counted as caught up only while every member is up (a cluster
    that lost a node has not converged because the survivors agree), and the last term known while none is said."""
    if previous is None:
        return current
    members = dict(current.members)
    for name, m in previous.members.items():
        if name not in members:
            members[name] = {**m, "up": False, "state": "gone from the member list"}
    converged = current.converged
    if converged and not all(m.get("up") for m in members.values()):
        converged = False
    # a leader that has not reported its timeline yet (promoting) keeps the last one known: the change is said
    # when the new one shows, not lost between two unknowns
    term = current.term if current.term is not None else previous.term
    return View(current.source, current.leader, members, term, current.term_name, converged)


def _event(kind: str, view: View, since_ts: float | None, ts: float, **fields: Any) -> dict[str, Any]:
    return {"ts": round(ts, 3), "since_ts": round(since_ts, 3) if since_ts is not None else None,
            "source": view.source, "event": kind, **fields}


def changes(previous: View | None, current: View, since_ts: float | None, ts: float) -> list[dict[str, Any]]:
    """The events between *previous* (None: this is the first answer) and *current*, taken at *ts*."""
    if previous is None:
        return [_event("observed", current, since_ts, ts, leader=current.leader, term=current.term,
                       term_name=current.term_name, members={n: m.get("state") for n, m in current.members.items()})]
    out: list[dict[str, Any]] = []
    if previous.leader != current.leader:
        if current.leader is None:
            out.append(_event("leader_lost", current, since_ts, ts, **{"from": previous.leader}))
        else:
            out.append(_event("leader_elected", current, since_ts, ts, to=current.leader,
                              **{"from": previous.leader}))
    if previous.term is not None and current.term is not None and previous.term != current.term:
        out.append(_event("term_changed", current, since_ts, ts, term=current.term_name,
                          **{"from": previous.term, "to": current.term}))
    for name in sorted(set(previous.members) | set(current.members)):
        was = bool((previous.members.get(name) or {}).get("up"))
        now = current.members.get(name)
        is_up = bool((now or {}).get("up"))
        if was and not is_up:
            out.append(_event("member_left", current, since_ts, ts, member=name,
                              state=(now or {}).get("state", "gone from the member list")))
        elif is_up and not was:
            out.append(_event("member_rejoined", current, since_ts, ts, member=name, state=(now or {}).get("state")))
    if previous.converged is not None and current.converged is not None and previous.converged != current.converged:
        out.append(_event("replicas_converged" if current.converged else "replicas_behind", current, since_ts, ts))
    return out


#: a timeline annotation per event, filled from the event's fields
_LABELS = {
    "leader_elected": "{source}: {to} leads",
    "leader_lost": "{source}: no leader",
    "term_changed": "{source}: {term} {to}",
    "member_left": "{member} left",
    "member_rejoined": "{member} rejoined",
    "replicas_converged": "{source}: replicas caught up",
    "replicas_behind": "{source}: replicas behind",
}


def label_of(event: dict[str, Any]) -> str:
    """A few words for a timeline annotation."""
    fields = {"source": "", "to": "?", "term": "term", "member": "?", **event}
    return _LABELS.get(str(event.get("event")), "{source}: {event}").format(**fields)
