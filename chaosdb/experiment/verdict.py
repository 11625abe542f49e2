"""What a run's journal says happened, in one plain sentence, and the status the run must end with.

Chaos Toolkit ends a run whose steady-state hypothesis failed *before* the method with status
``completed`` and exit code 0 when the probes themselves ran (only their tolerance failed), and it goes on
with the method after an action failed. Both look like success to a person and to a scheduler. The verdict
reads the journal and says:

=========================  ==============================================  ==============
situation                  sentence starts                                 status
=========================  ==============================================  ==============
interrupted                "The run was interrupted ..."                   interrupted
input refused              "Nothing was started: <why>"                    refused
a control could not start  "Refused: <why>. The run stopped there; ..."    refused
hypothesis before failed   "The steady-state hypothesis did not hold       failed
                           before the method, so no fault was injected"
a method action failed     "Action 'x' failed, so ..."                     failed
hypothesis after failed    "The steady-state hypothesis did not hold       (deviated,
                           after the method"                                as chaoslib)
aborted otherwise          "The run was aborted ..."                       aborted
all held                   "The steady-state hypothesis held before and    completed
                           after the method"
=========================  ==============================================  ==============

Pure: no I/O, the journal is a dict.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Verdict", "verdict_of", "hypothesis_rows"]


@dataclass
class Verdict:
    ok: bool
    status: str  # the status the run must end with
    sentence: str
    deviated: bool = False
    failed_actions: list[dict[str, Any]] = field(default_factory=list)
    hypothesis: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The verdict as JSON."""
        return asdict(self)


def _error_of(run: dict[str, Any]) -> str:
    exc = run.get("exception")
    if isinstance(exc, list) and exc:
        text = str(exc[-1]).strip()
    else:
        text = str(exc or "").strip()
    for prefix in ("chaoslib.exceptions.ActivityFailed: ", "chaosdb.core.errors.ChaosDBError: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text.splitlines()[0] if text else "no error message"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit - 1] + "…"


def hypothesis_rows(state: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per probe of a hypothesis check: name, output, tolerance, whether it held, and its error."""
    rows = []
    for run in (state or {}).get("probes") or []:
        act = run.get("activity") or {}
        failed = run.get("status") != "succeeded"
        rows.append({"name": act.get("name", "?"), "output": run.get("output"), "tolerance": act.get("tolerance"),
                     "met": bool(run.get("tolerance_met")) and not failed,
                     "error": _error_of(run) if failed else None})
    for checked in (state or {}).get("chaosdb_skipped_probes") or []:  # run by the verdict control afterwards
        rows.append({"name": checked.get("name", "?"), "output": checked.get("output"), "tolerance": None,
                     "met": bool(checked.get("tolerance_met")), "error": checked.get("error"),
                     "skipped_then_run": True})
    return rows


def _first_broken(rows: list[dict[str, Any]]) -> str:
    row = next((r for r in rows if not r["met"]), None)
    if row is None:
        return "no probe result was recorded"
    if row["error"]:
        return f"probe '{row['name']}' failed: {row['error']}"
    return f"probe '{row['name']}' returned {_short(row['output'])}, outside its tolerance {_short(row['tolerance'])}"


def _skipped(state: dict[str, Any]) -> str:
    """What the probes the hypothesis skipped said when the verdict control ran them anyway."""
    checked = state.get("chaosdb_skipped_probes") or []
    if not checked:
        return ""
    broken = [c["name"] for c in checked if not c.get("tolerance_met")]
    if not broken:
        return f" (the {len(checked)} probe(s) it skipped were run anyway and held)"
    return f" (of the probes it skipped, these did not hold either: {', '.join(broken)})"


def verdict_of(journal: dict[str, Any]) -> Verdict:
    """The verdict of a run from its journal (see the module's table)."""
    status = str(journal.get("status") or "")
    states = journal.get("steady_states") or {}
    before, after = states.get("before"), states.get("after")
    hypothesis = {"before": hypothesis_rows(before), "after": hypothesis_rows(after)}
    failed = [{"name": (r.get("activity") or {}).get("name", "?"), "error": _error_of(r)}
              for r in journal.get("run") or []
              if (r.get("activity") or {}).get("type") == "action" and r.get("status") == "failed"]
    succeeded = [r for r in journal.get("run") or []
                 if (r.get("activity") or {}).get("type") == "action" and r.get("status") == "succeeded"]

    def verdict(ok: bool, end_status: str, sentence: str, deviated: bool = False) -> Verdict:
        return Verdict(ok, end_status, sentence, deviated, failed, hypothesis)

    refused = journal.get("chaosdb_refused")
    if refused and status in ("interrupted", "refused"):
        if journal.get("chaosdb_nothing_started") or "nothing was started" in str(refused):
            return verdict(False, "refused", f"Nothing was started: {refused}")
        return verdict(False, "refused", f"Refused: {refused}. The run stopped there; what it had started was "
                                         "stopped again.")
    if status == "interrupted":
        return verdict(False, "interrupted", "The run was interrupted before it finished (Ctrl-C, a signal or a "
                                             "control), so its results are incomplete.")
    if isinstance(before, dict) and not before.get("steady_state_met", True):
        return verdict(False, "failed", "The steady-state hypothesis did not hold before the method, so no fault "
                                        f"was injected: {_first_broken(hypothesis['before'])}{_skipped(before)}.")
    if failed:
        first = failed[0]
        consequence = ("no fault was injected" if not succeeded
                       else "the method stopped there (the actions before it did run)")
        return verdict(False, "failed", f"Action '{first['name']}' failed, so {consequence}: {first['error']}.")
    if status == "aborted":
        return verdict(False, "aborted", "The run was aborted by an unexpected error; see the log.")
    if isinstance(after, dict) and not after.get("steady_state_met", True):
        return verdict(False, status or "completed", "The steady-state hypothesis did not hold after the method: "
                       f"{_first_broken(hypothesis['after'])}{_skipped(after)}.", deviated=True)
    if status == "failed":
        return verdict(False, "failed", "The run failed; see the journal.")
    if before is None and after is None:
        return verdict(True, status or "completed", f"The method ran ({len(succeeded)} action(s) succeeded); the "
                                                    "experiment has no steady-state hypothesis.")
    return verdict(True, status or "completed", "The steady-state hypothesis held before and after the method "
                                                f"({len(succeeded)} action(s) succeeded).")
