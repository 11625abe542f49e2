"""Regression gate: compare a game day's results with a stored baseline and fail when a metric got worse.

``chaosdb gameday gate RESULTS --baseline BASELINE --check p99_ms:+20% --check recovery_s:+5``

RESULTS and BASELINE are results directories (their ``summary.json`` is built when missing) or
``summary.json`` files. Each check is ``METRIC:LIMIT``: ``+20%`` allows the scenario's median to get
up to 20 % worse, ``+5`` up to 5 units worse (seconds, ms, a fraction...). "Worse" follows the
metric: higher latency, recovery, errors, unavailability, hypothesis failures; lower throughput.
A scenario of the baseline missing from the results fails the gate (``--allow-missing`` to skip it),
and so does a value that disappeared (e.g. a recovery time when the runs no longer recover).

Exit status: 0 all checks pass, 1 a regression (the table says which), 2 bad input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.gameday.aggregate import METRICS
from chaosdb.gameday.render import write_report

__all__ = ["parse_check", "gate", "load_summary", "GATE_METRICS", "DEFAULT_CHECKS", "render_gate"]

#: metric -> higher is worse
GATE_METRICS: dict[str, bool] = {**{k: worse for k, (_p, worse) in METRICS.items()},
                                 "hypothesis_failed": True, "not_recovered": True}
DEFAULT_CHECKS = ("p99_ms:+25%", "recovery_s:+25%", "error_rate:+0.01", "hypothesis_failed:+0")
CHECK_RE = re.compile(r"^(?P<metric>[a-z0-9_]+):(?P<sign>[+]?)(?P<amount>\d+(\.\d+)?)(?P<pct>%?)$")


def parse_check(text: str) -> dict[str, Any]:
    """``METRIC:+N%`` (relative) or ``METRIC:+N`` (absolute) as a check; anything else is refused with the forms it
    takes."""
    m = CHECK_RE.match(text.strip())
    if not m:
        raise ChaosDBError(f"--check {text!r}: write METRIC:+N% (relative) or METRIC:+N (absolute), e.g. "
                           "p99_ms:+20% or recovery_s:+5")
    metric = m["metric"]
    if metric not in GATE_METRICS:
        raise ChaosDBError(f"--check {text!r}: unknown metric {metric!r} (known: {', '.join(sorted(GATE_METRICS))})")
    return {"metric": metric, "amount": float(m["amount"]), "relative": bool(m["pct"]), "text": text.strip(),
            "higher_is_worse": GATE_METRICS[metric]}


def load_summary(path: Path | str) -> dict[str, Any]:
    """The ``summary.json`` of a results folder (built when missing) or the file given."""
    path = Path(path)
    if path.is_dir():
        if not (path / "summary.json").is_file():
            write_report(path)
        path = path / "summary.json"
    if not path.is_file():
        raise ChaosDBError(f"{path}: no game-day results (a results directory or its summary.json)")
    data = json.loads(path.read_text())
    if not str(data.get("format", "")).startswith("chaosdb-gameday-summary/"):
        raise ChaosDBError(f"{path} is not a game-day summary.json")
    return data


def _value(scenario: dict[str, Any], metric: str) -> float | None:
    if metric == "hypothesis_failed":
        return scenario.get("hypothesis_failed")
    if metric == "not_recovered":
        rec = scenario.get("recovery") or {}
        finished = scenario.get("finished") or 0
        return round(rec.get("not_recovered", 0) / finished, 3) if finished else None
    if metric == "recovery_s":
        rec = scenario.get("recovery") or {}
        return rec.get("median") if rec.get("n") else None
    s = scenario.get(metric)
    return s.get("median") if s else None


def gate(current: dict[str, Any], baseline: dict[str, Any], checks: list[dict[str, Any]],
         scenarios: list[str] | None = None, allow_missing: bool = False) -> dict[str, Any]:
    """Compare each scenario of *current* with *baseline* under *checks*: a row per scenario and metric, and whether all
    passed."""
    cur = {s["scenario"]: s for s in current["scenarios"]}
    rows = []
    for b in baseline["scenarios"]:
        name = b["scenario"]
        if scenarios and name not in scenarios:
            continue
        c = cur.get(name)
        if c is None or not c.get("finished"):
            rows.append({"scenario": name, "metric": "*", "verdict": "skipped" if allow_missing else "missing",
                         "detail": "no finished run of this scenario in the results"})
            continue
        for chk in checks:
            old, new = _value(b, chk["metric"]), _value(c, chk["metric"])
            row = {"scenario": name, "metric": chk["metric"], "baseline": old, "current": new, "limit": chk["text"]}
            if old is None and new is None:
                row.update(verdict="ok", detail="no value in either")
            elif new is None:
                row.update(verdict="worse", detail="the value disappeared (e.g. runs no longer recover)")
            elif old is None:
                row.update(verdict="ok", detail="new value (none in the baseline)")
            else:
                worse_by = (new - old) if chk["higher_is_worse"] else (old - new)
                allowed = abs(old) * chk["amount"] / 100.0 if chk["relative"] else chk["amount"]
                row["worse_by"] = round(worse_by, 6)
                row["change_pct"] = round((new / old - 1) * 100, 1) if old else None
                ok = worse_by <= allowed + 1e-12
                row.update(verdict="ok" if ok else "worse",
                           detail=f"allowed {allowed:.6g} worse, got {worse_by:.6g}")
            rows.append(row)
    failed = [r for r in rows if r["verdict"] in ("worse", "missing")]
    if scenarios:
        unknown = [s for s in scenarios if s not in {b["scenario"] for b in baseline["scenarios"]}]
        if unknown:
            raise ChaosDBError(f"--scenario {', '.join(unknown)}: not in the baseline")
    return {"passed": not failed, "failed": len(failed), "checks": [c["text"] for c in checks], "rows": rows}


def render_gate(result: dict[str, Any]) -> str:
    """The gate's rows as a text table, with the verdict."""
    lines = [f"{'scenario':<32}{'metric':<18}{'baseline':>12}{'current':>12}  {'limit':<20}verdict"]
    for r in result["rows"]:
        fmt = lambda v: "–" if v is None else f"{v:.4g}"  # noqa: E731
        lines.append(f"{r['scenario']:<32}{r['metric']:<18}{fmt(r.get('baseline')):>12}{fmt(r.get('current')):>12}  "
                     f"{r.get('limit', ''):<20}{r['verdict'].upper()}  {r.get('detail', '')}")
    lines.append("gate: " + ("PASSED" if result["passed"] else f"FAILED ({result['failed']} regression(s))"))
    return "\n".join(lines)
