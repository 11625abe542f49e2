"""Chaos Toolkit control: bad input refused before anything starts, the method stopped at the first failed
action, and every run ended with a verdict that tells the truth. Declare it **first** among the controls::

    {"name": "verdict", "provider": {"type": "python", "module": "chaosdb.experiment.control"}}

* before the experiment: every activity's argument values, with configuration and secrets substituted,
  are checked (:mod:`chaosdb.experiment.checks`); a problem interrupts the run before any other control
  starts a cluster or a load, naming every problem.
* during the method: when an action fails, the method stops there (Chaos Toolkit would go on with the next
  activity); the after-method hypothesis is skipped and the rollbacks still run.
* after a hypothesis that failed: Chaos Toolkit stops at the first probe out of tolerance, so a latency probe
  that failed would hide whether anything acknowledged was lost. The probes it skipped still run, and their
  results go into that hypothesis's record as ``chaosdb_skipped_probes`` (and into the verdict).
* after the experiment: the verdict (:mod:`chaosdb.experiment.verdict`) goes into the journal as
  ``chaosdb_verdict``; a hypothesis that failed before the method, or a failed action, ends the run with
  status ``failed`` (so ``chaos run`` exits 1); the verdict's sentence is the last line of the run's log.

Stopping the method needs the journal while the method runs, which Chaos Toolkit hands only to run event
handlers: the control registers one when it is configured, and only uses it to read the journal.
"""

from __future__ import annotations

import logging
from typing import Any

from chaoslib.activity import run_activity
from chaoslib.hypothesis import within_tolerance
from chaoslib.run import RunEventHandler

from chaosdb.core.deprecation import warn_deprecated
from chaosdb.core.settings import applied_old_names
from chaosdb.experiment import refusals
from chaosdb.experiment.checks import refuse_bad_arguments
from chaosdb.experiment.verdict import verdict_of

__all__ = ["configure_control", "before_experiment_control", "before_method_control", "after_method_control",
           "after_activity_control", "after_hypothesis_control", "after_experiment_control", "cleanup_control"]

logger = logging.getLogger("chaostoolkit")


class _Run:
    """What this control knows of the run in progress."""

    def __init__(self) -> None:
        self.journal: dict[str, Any] | None = None
        self.in_method = False
        self.stopped_at = ""
        self.sentence = ""
        self.ok = True


_run = _Run()


class _JournalHandle(RunEventHandler):
    def running(self, experiment: Any, journal: Any, configuration: Any, secrets: Any, schedule: Any,
                settings: Any) -> None:
        _run.journal = journal


def configure_control(experiment: dict[str, Any] | None = None, event_registry: Any = None, **kwargs: Any) -> None:
    """A new run: forget the last one's refusal and state, say the environment variables used by their old names."""
    global _run
    _run = _Run()
    refusals.forget()
    for old, new in applied_old_names():  # said on stderr when chaos started; said again in the run's log
        warn_deprecated(f"the environment variable {old}", new)
    if event_registry is not None:
        event_registry.register(_JournalHandle())


def before_experiment_control(context: dict[str, Any], configuration: dict[str, Any] | None = None,
                              secrets: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """Refuse the run before anything starts when an activity's arguments cannot work (the refusal is kept for the
    verdict)."""
    refuse_bad_arguments(context, configuration, secrets)  # a refusal is kept by chaosdb.experiment.refusals


def before_method_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The method starts: a failed action from now on stops it."""
    _run.in_method = True


def after_method_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The method is over."""
    _run.in_method = False


def after_activity_control(context: dict[str, Any], state: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """A failed action of the method (not a background one) stops the method; the rollbacks still run."""
    if not (_run.in_method and isinstance(context, dict) and context.get("type") == "action"):
        return
    if not isinstance(state, dict) or state.get("status") != "failed" or context.get("background"):
        return
    _run.stopped_at = str(context.get("name", "?"))
    if _run.journal is None:
        logger.error("chaosdb: action '%s' failed; this Chaos Toolkit does not let the control stop the method",
                     _run.stopped_at)
        return
    # chaoslib leaves the method at an aborted status, skips the after-method hypothesis, plays the rollbacks
    _run.journal["status"] = "aborted"
    logger.error("chaosdb: action '%s' failed: the method stops here; the rollbacks will run", _run.stopped_at)


def after_hypothesis_control(context: dict[str, Any], state: dict[str, Any] | None = None,
                             configuration: dict[str, Any] | None = None, secrets: dict[str, Any] | None = None,
                             **kwargs: Any) -> None:
    """A hypothesis that stopped at a failing probe: run the probes it skipped and record what they said."""
    if not isinstance(state, dict) or state.get("steady_state_met") is not False or not isinstance(context, dict):
        return
    probes = [p for p in context.get("probes") or [] if isinstance(p, dict)]
    skipped = probes[len(state.get("probes") or []):]
    if not skipped:
        return
    checked = []
    for probe in skipped:
        name = str(probe.get("name", "?"))
        try:
            output = run_activity(probe, configuration or {}, secrets or {})
            met = bool(within_tolerance(probe.get("tolerance"), output, configuration=configuration,
                                        secrets=secrets))
            checked.append({"name": name, "output": output, "tolerance_met": met, "error": None})
        except Exception as exc:  # a probe that cannot run says so; it never hides the others
            checked.append({"name": name, "output": None, "tolerance_met": False, "error": str(exc)})
    state["chaosdb_skipped_probes"] = checked
    held = [c["name"] for c in checked if c["tolerance_met"]]
    broken = [c["name"] for c in checked if not c["tolerance_met"]]
    logger.warning("chaosdb: the probes the hypothesis skipped still ran: %s",
                   "; ".join(filter(None, [f"held: {', '.join(held)}" if held else "",
                                           f"NOT held: {', '.join(broken)}" if broken else ""])))


def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """The verdict: the run's status and one sentence, in the journal and the log."""
    if not isinstance(state, dict):
        return
    if refusals.reason():
        state["chaosdb_refused"] = refusals.reason()
    verdict = verdict_of(state)
    state["status"] = verdict.status
    state["chaosdb_verdict"] = {**verdict.as_dict(), "method_stopped_at": _run.stopped_at or None}
    _run.sentence, _run.ok = verdict.sentence, verdict.ok
    (logger.info if verdict.ok else logger.error)("chaosdb verdict: %s", verdict.sentence)


def cleanup_control() -> None:
    """Runs after every other control's after-experiment hook: the verdict is the run's last word."""
    if _run.sentence:
        (logger.info if _run.ok else logger.error)("chaosdb verdict: %s", _run.sentence)
