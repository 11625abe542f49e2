"""Chaos Toolkit control that writes the report when the experiment ends.

Declare it beside the load control (in any order: it stops the load itself first, which is
idempotent, so the samples are complete and the load's record is in the journal)::

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

__all__ = ["after_experiment_control"]

logger = logging.getLogger("chaostoolkit")


def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None,
                             out_dir: str = "", rule: str = "runs", **kwargs: Any) -> None:
    if state is None:
        return
    from chaosdb.load.control import stop_load
    from chaosdb.report.build import build_report

    record = stop_load()  # idempotent: normally the load control already stopped it
    if record and "chaosdb_load" not in state:
        state["chaosdb_load"] = {k: v for k, v in record.items() if k != "running"}
    target = Path(out_dir or Path((state.get("chaosdb_load") or {}).get("samples_dir", ".")).parent / "report")
    with tempfile.TemporaryDirectory() as tmp:
        journal_path = Path(tmp) / "journal.json"
        journal_path.write_text(json.dumps(state, default=str))
        try:
            result = build_report(journal_path, out_dir=target, rule=rule)
        except Exception as exc:  # a report must never break the experiment
            logger.error("chaosdb report: could not build the report: %s", exc)
            state["chaosdb_report"] = {"error": str(exc)}
            return
    m = result["metrics"]
    state["chaosdb_report"] = {"out_dir": str(target), "html": str(target / "report.html"),
                               "recovery_s": (m.get("recovery") or {}).get("duration_s"),
                               "degradation": m.get("degradation")}
    logger.info("chaosdb report: %s", target / "report.html")
