"""Reading Chaos Toolkit journals: status, fault windows, rollbacks, the load record.

* Timestamps: chaostoolkit-lib >= 1.43.1 writes ISO 8601 with ``+00:00``; older
  versions write naive UTC (``datetime.utcnow().isoformat()``). Both become epoch
  seconds; a naive timestamp is read as UTC.
* Fault windows: every *action* of the method (start -> end), in order; probes of
  the method are not faults. A timed local fault (output ``reverts_at``) ends when
  its detached revert is due. Actions of the rollbacks are kept apart and marked.
* Operator actions (:data:`OPERATOR`: switchover, rolling restart, scaling, leader transfer) are marked
  ``operator``: reports draw them as markers; they still start the impact window like any action.
* Restoring actions: an action of the method that brings the system back (``restart_nodes``, ``revert_faults``,
  ... in :data:`RESTORING`) is marked ``restores``: reports draw it as a marker, like a rollback, never as a
  fault window, though a later disturbance may still be attributed to it.
* Statuses: completed, failed, aborted, interrupted, plus ``deviated``.
* ``chaosdb_load`` (written by :mod:`chaosdb.load.control`) gives the samples
  location, warm-up end, stop time and pause windows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import referenced_value, secret_environment_values

__all__ = ["Activity", "JournalInfo", "read_journal", "parse_ts", "secret_values_of", "activities_of", "RESTORING",
           "OPERATOR", "WAITS", "fault_facts"]

#: activities of this pack that restore rather than inject (by function name)
RESTORING = frozenset({
    "restart_nodes", "resume_nodes", "scale_in", "revert_faults", "cleanup_faults", "wait_until_healthy",
    "restart_node", "restart_killed_nodes", "recommission_nodes", "wait_for_node", "remove_leader_eviction",
    "wait_until_recovered", "delete_chaos", "delete_all_chaos", "resume_chaos", "stop_chaos_engine",
    "delete_chaos_engine", "wait_for_statefulset_ready",
})


def parse_ts(value: Any) -> float | None:
    """A journal time (ISO 8601 text, epoch seconds, or nothing) as epoch seconds, or None."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()

#: operator actions (by function name): things people do to a healthy cluster, drawn as markers, not fault spans
OPERATOR = frozenset({"switchover", "failover", "rolling_restart", "scale_out", "scale_in", "transfer_region_leader",
                      "move_leader"})

#: restoring activities that only wait for the database to heal itself: they end no fault
WAITS = frozenset({"wait_until_healthy", "wait_for_node", "wait_until_recovered", "wait_for_statefulset_ready"})


@dataclass
class Activity:
    name: str
    kind: str  # action | probe
    start: float | None
    end: float | None
    status: str
    rollback: bool = False
    background: bool = False
    output: Any = None
    func: str = ""
    module: str = ""
    #: when the action's call returned (``end`` is later for a timed fault: its revert was due then)
    returned: float | None = None

    @property
    def restores(self) -> bool:
        """Whether the activity restores what a fault took (a rollback, or an action that restarts or resumes)."""
        return self.rollback or self.func in RESTORING

    @property
    def timed(self) -> bool:
        """A fault that reverts itself at a set time (its end is that time)."""
        return isinstance(self.output, dict) and isinstance(self.output.get("reverts_at"), (int, float))

    def as_dict(self) -> dict[str, Any]:
        """The activity as the report's metrics list it; what its output says it did to which fault is in
        :func:`fault_facts`."""
        return {"name": self.name, "type": self.kind, "start_ts": self.start, "end_ts": self.end,
                "status": self.status, "rollback": self.rollback, "restores": self.restores,
                "timed": self.timed, "operator": self.func in OPERATOR, "waits": self.func in WAITS,
                "returned_ts": self.returned, **fault_facts(self.output)}


def _names(targets: Any) -> list[str] | None:
    """The node names of an output's ``targets`` (entries or plain names); None when it has no such list."""
    if not isinstance(targets, list):
        return None
    names = [t.get("name") if isinstance(t, dict) else t for t in targets]
    return [str(n) for n in names if isinstance(n, (str, int)) and not isinstance(n, bool)]


def fault_facts(output: Any) -> dict[str, Any]:
    """What an action's output says about faults (the pack's actions; other outputs say nothing):

    * ``fault_id``, ``reverts_at``: the fault it injected and when its timer was due to revert it;
    * ``targets``: the nodes it acted on (an empty list: it acted on none; absent: its output does not say);
    * ``reverted``: the faults it reverted (``revert_faults`` and the rollbacks built on it), each ``id``,
      ``targets``, ``by`` (``timer`` when a timer had already reverted it and the action only reports it) and
      ``at`` (when it was reverted)."""
    if not isinstance(output, dict):
        return {}
    facts: dict[str, Any] = {}
    if isinstance(output.get("fault_id"), str):
        facts["fault_id"] = output["fault_id"]
    if isinstance(output.get("reverts_at"), (int, float)) and not isinstance(output.get("reverts_at"), bool):
        facts["reverts_at"] = float(output["reverts_at"])
    names = _names(output.get("targets"))
    if isinstance(output.get("resumed"), dict):  # resume_nodes names the nodes it resumed
        names = sorted(set(names or []) | {str(n) for n in output["resumed"]})
    if names is not None:
        facts["targets"] = names
    reverted = output.get("reverted")
    if isinstance(reverted, list):
        facts["reverted"] = [{"id": r.get("id"), "targets": _names(r.get("targets")) or [],
                              "by": r.get("reverted_by") or "action",
                              "at": r.get("reverted_at") if isinstance(r.get("reverted_at"), (int, float)) else None}
                             for r in reverted if isinstance(r, dict)]
    return facts


@dataclass
class JournalInfo:
    path: str
    title: str
    status: str
    deviated: bool
    start: float | None
    end: float | None
    activities: list[Activity] = field(default_factory=list)
    rollbacks: list[Activity] = field(default_factory=list)
    load: dict[str, Any] = field(default_factory=dict)
    chaoslib_version: str = ""
    secrets: list[str] = field(default_factory=list)

    @property
    def faults(self) -> list[Activity]:
        """The method's actions that ran."""
        return [a for a in self.activities if a.kind == "action" and a.start is not None]

    @property
    def first_fault_start(self) -> float | None:
        """When the first action started, None when none ran."""
        starts = [a.start for a in self.faults if a.start is not None]
        return min(starts) if starts else None


def _activities(runs: list[dict[str, Any]], rollback: bool) -> list[Activity]:
    out = []
    for r in runs or []:
        act = r.get("activity", {}) or {}
        end = parse_ts(r.get("end"))
        output = r.get("output")
        if isinstance(output, dict) and isinstance(output.get("reverts_at"), (int, float)) and end is not None:
            # a timed fault (chaosdb.faults) lasts until its detached revert, not until the action returns
            end = max(end, float(output["reverts_at"]))
        out.append(Activity(
            name=str(act.get("name", "?")), kind=str(act.get("type", "action")), start=parse_ts(r.get("start")),
            end=end, status=str(r.get("status", "")), rollback=rollback,
            background=bool(act.get("background", False)), output=output,
            func=str((act.get("provider") or {}).get("func", "")),
            module=str((act.get("provider") or {}).get("module", "")), returned=parse_ts(r.get("end"))))
    return out


def activities_of(journal: dict[str, Any]) -> list[Activity]:
    """The method's activities, then the rollbacks' (marked ``rollback``), in order."""
    return _activities(journal.get("run", []), False) + _activities(journal.get("rollbacks", []), True)


def secret_values_of(journal: dict[str, Any]) -> list[str]:
    """Inline secret and configuration values found in the journal's copy of the experiment; the values of the
    environment variables its secrets name, when this process has them; and the passwords the pack reads from the
    environment (``CHAOSDB_<SERVICE>_PASSWORD``, the secret settings such as ``CHAOSDB_COCKROACH_URL``)."""
    found: list[str] = list(secret_environment_values())

    def walk(v: Any, in_secrets: bool = False) -> None:
        if isinstance(v, dict):
            if v.get("type") in ("env", "vault") and "key" in v:
                if in_secrets and v.get("type") == "env" and len(referenced_value(str(v["key"]), "")) >= 4:
                    found.append(referenced_value(str(v["key"])))
                return  # a reference, not a value
            for x in v.values():
                walk(x, in_secrets)
        elif isinstance(v, list):
            for x in v:
                walk(x, in_secrets)
        elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
            s = str(v)
            if len(s) >= 4:
                found.append(s)

    exp = journal.get("experiment", {}) or {}
    walk(exp.get("secrets", {}), True)
    walk(exp.get("configuration", {}))
    return found


def read_journal(path: Path | str) -> tuple[JournalInfo, dict[str, Any]]:
    """A Chaos Toolkit journal file and what the report needs of it; refused with the reason when it is missing or not a
    journal."""
    p = Path(path)
    try:
        journal = json.loads(p.read_text())
    except FileNotFoundError:
        raise ChaosDBError(f"journal {p} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ChaosDBError(f"{p} is not a JSON journal (a truncated journal from a crashed run?): {exc}") from None
    if not isinstance(journal, dict) or "run" not in journal:
        raise ChaosDBError(f"{p} is not a Chaos Toolkit journal (no 'run' list)")
    info = JournalInfo(
        path=str(p),
        title=str((journal.get("experiment") or {}).get("title", p.stem)),
        status=str(journal.get("status", "unknown")),
        deviated=bool(journal.get("deviated", False)),
        start=parse_ts(journal.get("start")),
        end=parse_ts(journal.get("end")),
        activities=_activities(journal.get("run", []), False),
        rollbacks=_activities(journal.get("rollbacks", []), True),
        load=dict(journal.get("chaosdb_load") or {}),
        chaoslib_version=str(journal.get("chaoslib-version", "")),
        secrets=secret_values_of(journal),
    )
    return info, journal
