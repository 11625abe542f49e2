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

import json
import logging
from typing import Any

from chaoslib.activity import run_activity
from chaoslib.hypothesis import within_tolerance
from chaoslib.run import RunEventHandler

from chaosdb.experiment import refusals
from chaosdb.experiment.checks import refuse_bad_arguments, size_problems
from chaosdb.experiment.context import closes_run_context, end_run, run_context
from chaosdb.experiment.secrets import LogMask, inline_secrets, make_journal_private, mask_journal, secret_values
from chaosdb.experiment.verdict import verdict_of

__all__ = ["configure_control", "before_experiment_control", "before_method_control", "after_method_control",
           "after_activity_control", "after_hypothesis_control", "after_experiment_control", "cleanup_control"]

logger = logging.getLogger("chaostoolkit")


class _Run:
    """What this control knows of the run in progress, from its configure hook to its cleanup hook (the log mask and
    the verdict's sentence outlive the run context, which ends at the last after-experiment hook)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new run."""
        self.journal: dict[str, Any] | None = None
        self.in_method = False
        self.stopped_at = ""
        self.sentence = ""
        self.ok = True
        self.secrets: list[str] = []  # the run's secret values, masked in its log and its journal
        self.log_mask: LogMask | None = None
        self.has_secrets = False


_run = _Run()


class _JournalHandle(RunEventHandler):
    def running(self, experiment: Any, journal: Any, configuration: Any, secrets: Any, schedule: Any,
                settings: Any) -> None:
        _run.journal = journal


def configure_control(experiment: dict[str, Any] | None = None, event_registry: Any = None,
                      secrets: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """A new run: its run context (:mod:`chaosdb.experiment.context`, the last run's ended), this control's state
    afresh, the run's secrets masked in its log from now on (and said once that inline secrets belong in the
    environment)."""
    _remove_log_mask()
    _run.reset()
    run_context(experiment)
    refusals.forget()
    if event_registry is not None:
        event_registry.register(_JournalHandle())
    _run.secrets = secret_values(experiment, secrets)
    _run.has_secrets = bool(_run.secrets) or bool(isinstance(experiment, dict) and experiment.get("secrets"))
    if _run.secrets:
        _run.log_mask = LogMask(_run.secrets)
        for handler in _log_handlers():
            handler.addFilter(_run.log_mask)
    inline = inline_secrets(experiment)
    if inline:
        logger.warning("chaosdb: the experiment holds secrets inline (%s): they are masked in the journal and the "
                       "log, but belong in the environment, e.g. {\"type\": \"env\", \"key\": \"CHAOSDB_LOAD_DSN\"}",
                       ", ".join(inline))


def _log_handlers() -> list[logging.Handler]:
    """The handlers the run's log lines pass through (Chaos Toolkit's console and file, and the root's)."""
    found: list[logging.Handler] = []
    for name in ("chaostoolkit", ""):
        for handler in logging.getLogger(name).handlers:
            if handler not in found:
                found.append(handler)
    return found


def _remove_log_mask() -> None:
    if _run.log_mask is not None:
        for handler in _log_handlers():
            handler.removeFilter(_run.log_mask)


@refusals.stops_the_run("chaosdb input check")
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


@closes_run_context
def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """The verdict: the run's status and one sentence in the journal (said in the log once, as the run's last line,
    by :func:`cleanup_control`). A run refused for the experiment's size keeps only its title in the journal."""
    if not isinstance(state, dict):
        return
    if refusals.reason():
        refusals.record_in(state)
        _trim_oversized(state)
    verdict = verdict_of(state)
    state["status"] = verdict.status
    state["chaosdb_verdict"] = {**verdict.as_dict(), "method_stopped_at": _run.stopped_at or None}
    _run.sentence, _run.ok = verdict.sentence, verdict.ok
    _run.journal = state


def _trim_oversized(state: dict[str, Any]) -> None:
    """A refused experiment over the size limit is not copied into the journal (its title and size are)."""
    experiment = state.get("experiment")
    if isinstance(experiment, dict) and size_problems(experiment):
        size = len(json.dumps(experiment, default=str))
        state["experiment"] = {"title": str(experiment.get("title", ""))[:200],
                               "chaosdb_omitted": f"the experiment ({size / 1e6:.1f} MB) was refused for its size; "
                                                  "it is not copied into the journal"}


def cleanup_control() -> None:
    """Runs after every other control's after-experiment hook, just before Chaos Toolkit writes the journal: the
    run's secret values masked in it (and its file private), then the verdict, the run's last word. The run context
    has ended (if an after-experiment hook did not end it, it ends now)."""
    end_run()
    try:
        if _run.journal is not None and _run.secrets:
            mask_journal(_run.journal, _run.secrets)
        if _run.has_secrets:
            make_journal_private()
    finally:
        if _run.sentence:
            (logger.info if _run.ok else logger.error)("chaosdb verdict: %s", _run.sentence)
        _remove_log_mask()
