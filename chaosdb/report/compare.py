"""Compare runs in the style of the thesis's Table 6.1.

One row per scenario (baseline first), columns mean, σ, p50, p95, p99 with the change
against the baseline, and recovery seconds. Runs are grouped by scenario (the
experiment title, or the name given as ``NAME=DIR``); repeated runs of a scenario are
combined by the median of each statistic, as the thesis combines repetitions. The
baseline row is the median of every run's baseline window.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["load_runs", "compare", "render_compare_markdown"]

COLUMNS = ("mean_ms", "std_ms", "p50_ms", "p95_ms", "p99_ms")


def _metrics_file(p: Path) -> Path:
    if p.is_file() and p.name == "metrics.json":
        return p
    for candidate in (p / "metrics.json", p / "report" / "metrics.json"):
        if candidate.is_file():
            return candidate
    raise ChaosDBError(f"no metrics.json in {p}: run 'chaosdb report JOURNAL' for it first")


def load_runs(inputs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The metrics of each input (a run folder or a metrics.json, optionally ``NAME=PATH``) with its name."""
    runs = []
    for item in inputs:
        name, _, path = item.rpartition("=") if "=" in item else ("", "", item)
        m = json.loads(_metrics_file(Path(path)).read_text())
        runs.append((name or (m.get("run") or {}).get("title") or Path(path).name, m))
    return runs


def _median(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(statistics.median(vals), 3) if vals else None


def compare(runs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The runs side by side: the median baseline, and per scenario each metric with its change from the baseline."""
    if not runs:
        raise ChaosDBError("nothing to compare: give run directories or metrics.json files")
    baseline = {c: _median([m["baseline"].get(c) for _, m in runs]) for c in COLUMNS}
    baseline["runs"] = len(runs)
    scenarios: dict[str, list[dict[str, Any]]] = {}
    for name, m in runs:
        scenarios.setdefault(name, []).append(m)
    rows = []
    for name, ms in scenarios.items():
        impacts = [m.get("impact") or {} for m in ms]
        row: dict[str, Any] = {"scenario": name, "runs": len(ms)}
        for c in COLUMNS:
            row[c] = _median([i.get(c) for i in impacts])
            row[c.replace("_ms", "_change_pct")] = (round((row[c] / baseline[c] - 1) * 100, 1)
                                                    if row[c] is not None and baseline[c] else None)
        recs = [(m.get("recovery") or {}).get("duration_s") for m in ms]
        row["recovery_s"] = _median(recs)
        row["recovered_runs"] = sum(1 for r in recs if r is not None)
        rows.append(row)
    return {"baseline": baseline, "scenarios": rows, "combine": "median of each statistic over the runs"}


def render_compare_markdown(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table."""
    def cell(v: Any, ch: Any = None) -> str:
        if v is None:
            return "–"
        return f"{v:.1f}" + (f" ({ch:+.0f} %)" if ch is not None else "")

    b = result["baseline"]
    lines = ["| scenario | runs | μ (ms) | σ (ms) | p50 (ms) | p95 (ms) | p99 (ms) | recovery (s) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
             f"| baseline | {b['runs']} | " + " | ".join(cell(b[c]) for c in COLUMNS) + " | – |"]
    for r in result["scenarios"]:
        lines.append(f"| {r['scenario']} | {r['runs']} | "
                     + " | ".join(cell(r[c], r[c.replace('_ms', '_change_pct')]) for c in COLUMNS)
                     + f" | {cell(r['recovery_s'])} |")
    return "\n".join(lines) + "\n"
