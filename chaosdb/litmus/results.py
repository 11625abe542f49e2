"""ChaosResult records (``<engine>-<experiment>``; ``probeSuccessPercentage`` is a string: "Awaited" while
running, else a number)."""

from __future__ import annotations

from typing import Any

__all__ = ["GROUP", "VERSION", "FINAL_VERDICTS", "result_name", "summarise_result"]

GROUP, VERSION = "litmuschaos.io", "v1alpha1"
FINAL_VERDICTS = ("Pass", "Fail", "Stopped", "Error")


def result_name(engine: str, experiment: str) -> str:
    """The name Litmus gives the ChaosResult of *experiment* run by *engine*."""
    return f"{engine}-{experiment}"


def summarise_result(obj: dict[str, Any]) -> dict[str, Any]:
    """A ChaosResult as verdict, phase, probe success percentage, each probe's verdict and description (why it
    failed), and the error Litmus recorded."""
    status = obj.get("status") or {}
    exp = status.get("experimentStatus") or {}
    raw = exp.get("probeSuccessPercentage")
    try:
        pct: float | None = float(raw)  # type: ignore[arg-type]  # None and junk land in except
    except (TypeError, ValueError):
        pct = None
    verdict = exp.get("verdict") or "Awaited"
    err = exp.get("errorOutput") or {}
    return {
        "name": (obj.get("metadata") or {}).get("name"),
        "engine": (obj.get("spec") or {}).get("engine"),
        "experiment": (obj.get("spec") or {}).get("experiment"),
        "phase": exp.get("phase"), "verdict": verdict, "final": verdict in FINAL_VERDICTS,
        "probe_success_percentage": pct,
        "probes": [{"name": p.get("name"), "type": p.get("type"), "mode": p.get("mode"),
                    "verdict": (p.get("status") or {}).get("verdict"),
                    "description": (p.get("status") or {}).get("description") or ""}
                   for p in status.get("probeStatuses") or []],
        "error": {"code": err.get("errorCode"), "reason": err.get("reason")} if err else None,
        "history": status.get("history") or {},
    }
