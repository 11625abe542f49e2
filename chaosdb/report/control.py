"""Chaos Toolkit control that writes the report when the experiment ends.

Declare it beside the load control (in any order: it asks the run context for the teardown steps before the
report, the load's stop among them, which run once, so the samples are complete and the load's record is in the
journal)::

    {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                    "arguments": {"out_dir": "reports/run1"}}}

A report that cannot be built (no samples, a crashed load) is logged and recorded in the
journal under ``chaosdb_report.error``; it never changes the experiment's outcome.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from chaosdb.core.arguments import with_argument_checks
from chaosdb.core.claims import OutputFolder, claim, release
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import control_validator
from chaosdb.core.redact import redact
from chaosdb.experiment import refusals
from chaosdb.experiment.context import active_run, closes_run_context, run_context
from chaosdb.experiment.refusals import refused, stops_the_run
from chaosdb.report.journal import secret_values_of

__all__ = ["validate_control", "after_experiment_control"]

#: ``chaos validate`` refuses this control when its extra is not installed
validate_control = control_validator("chaosdb.report.control", ("report",))

logger = logging.getLogger("chaostoolkit")


#: the folder this control writes, claimed by one run (:mod:`chaosdb.core.claims`)
OUTPUT_FOLDER = OutputFolder("out_dir", "the report folder", "out_dir, e.g. CHAOSDB_REPORT_DIR")


@stops_the_run("chaosdb report control")
def before_experiment_control(context: dict[str, Any], out_dir: str = "", **kwargs: Any) -> None:
    """The report folder is this run's for the whole run: another run writing it is refused now, not at the end."""
    if out_dir:
        try:
            claim(out_dir, *OUTPUT_FOLDER[1:])
        except ChaosDBError as exc:
            raise refused(f"chaosdb report control: {exc}") from None
        run_context(context).output_folders["report"] = str(out_dir)


@closes_run_context
def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None,
                             out_dir: str = "", rule: str = "runs", window_s: float = 5.0, **kwargs: Any) -> None:
    """Write the run's report (``window_s``: width of the timeline's windows in seconds)."""
    if state is None:
        return
    try:
        if refusals.reason():  # a refused run writes nothing but its sentence (the verdict)
            refusals.record_in(state)
            logger.info("chaosdb report: none for a refused run")
            return
        _write_report(state, out_dir, rule, float(window_s))
    finally:
        if out_dir:
            release(out_dir)


def _write_report(state: dict[str, Any], out_dir: str, rule: str, window_s: float = 5.0) -> None:
    from chaosdb.report.build import build_report  # noqa: PLC0415 - needs the report extra

    ctx = active_run()
    if ctx is not None:  # the load is over (and in the journal) before its samples are read: normally it already is
        ctx.run_teardown(before="report", state=state)
    target = Path(out_dir or Path((state.get("chaosdb_load") or {}).get("samples_dir", ".")).parent / "report")
    # the journal as it is now, beside the report (secret values masked), so that `chaosdb report` can rebuild
    # the report from the folder; the report itself is built from the unmasked state (paths in the
    # configuration may look like secrets to the masking)
    target.mkdir(parents=True, exist_ok=True)
    copy = json.loads(json.dumps(state, default=str))
    (target / "journal.json").write_text(json.dumps(redact(copy, secret_values_of(copy)), indent=2) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        journal_path = Path(tmp) / "journal.json"
        journal_path.write_text(json.dumps(state, default=str))
        try:
            result = build_report(journal_path, out_dir=target, rule=rule, journal_name="journal.json",
                                  window_s=window_s)
        except Exception as exc:  # a report must never break the experiment
            logger.error("chaosdb report: could not build the report: %s", exc)
            state["chaosdb_report"] = {"error": str(exc)}
            return
    m = result["metrics"]
    _log_summary(m, target)
    state["chaosdb_report"] = {"out_dir": str(target), "html": str(target / "report.html"),
                               "recovery_s": (m.get("recovery") or {}).get("duration_s"),
                               "degradation": m.get("degradation")}
    logger.info("chaosdb report: %s", target / "report.html")


def _log_summary(m: dict[str, Any], target: Path) -> None:
    b, i = m.get("baseline") or {}, m.get("impact") or {}
    r = m.get("recovery") or {}

    def f(v: Any, unit: str = "") -> str:
        return "-" if v is None else (f"{v:,.1f}{unit}" if isinstance(v, float) else f"{v}{unit}")

    rows = [("", "baseline", "impact"), ("p50 (ms)", f(b.get("p50_ms")), f(i.get("p50_ms"))),
            ("p99 (ms)", f(b.get("p99_ms")), f(i.get("p99_ms"))),
            ("tx/s", f(b.get("throughput_tps")), f(i.get("throughput_tps"))),
            ("errors (%)", f((b.get("error_rate") or 0) * 100), f((i.get("error_rate") or 0) * 100))]
    logger.info("chaosdb summary:")
    for a, x, y in rows:
        logger.info("  %-12s %12s %12s", a, x, y)
    logger.info("  recovery: %s   no commit for: %s", f(r.get("duration_s"), " s") if r.get("duration_s") is not None
                else f"- ({r.get('reason')})", f(r.get("unavailability_s"), " s"))


#: ``chaos validate`` also refuses arguments this control does not take
validate_control = with_argument_checks(validate_control, __name__)
