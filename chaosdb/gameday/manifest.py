"""A game day's results directory as the runner keeps it: ``manifest.json`` (one entry per planned run, with its
status) and the rule for whether a run's fault showed at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["MANIFEST", "RERUN_STATES", "DONE_STATES", "MANIFEST_MIN_S", "read_manifest", "manifested"]

MANIFEST = "manifest.json"
#: run states a resumed game day runs again, and the states of a run that is done
RERUN_STATES = ("pending", "running", "interrupted", "error", "unsteady")
DONE_STATES = ("completed", "deviated")


def read_manifest(results: Path) -> dict[str, Any]:
    """The manifest of a results directory; an error naming the directory when it holds none."""
    path = Path(results) / MANIFEST
    if not path.is_file():
        raise ChaosDBError(f"{results} holds no game-day results (no {MANIFEST})")
    return json.loads(path.read_text())


MANIFEST_MIN_S = 0.5


def manifested(m: dict[str, Any]) -> bool:
    """Did the fault show? A disturbance of at least 0.5 s after the first fault (or one that never
    ended), or failed attempts in the impact window. Five slow transactions in a row at 1,000/s are a
    disturbance of milliseconds: that is not a fault showing."""
    rec = m.get("recovery") or {}
    if (m.get("impact") or {}).get("error_rate"):
        return True
    if rec.get("onset_ts") is not None and rec.get("duration_s") is None:
        return True
    # disturbances after later actions (a restart, a rollback) are not the fault showing
    faults = sorted((f for f in m.get("faults") or [] if f.get("start_ts") and not f.get("rollback")),
                    key=lambda f: f["start_ts"])
    first = faults[0].get("name") if faults else None
    durations = [rec.get("duration_s")] + [d.get("duration_s") for d in rec.get("disturbances") or []
                                           if first is None or d.get("after_fault") in (None, first)]
    return any(d is not None and d >= MANIFEST_MIN_S for d in durations)
