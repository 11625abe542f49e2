"""A game day's numbers, aggregated over its runs: what ``summary.json`` holds (written with ``report.md`` and
``report.html`` by :mod:`chaosdb.gameday.render`).

Per scenario (and per sweep value) over its finished runs:

* latency of the impact window: median and spread (min, quartiles, max) of each run's p50/p95/p99;
* recovery time distribution (each run's ``recovery.duration_s`` from the reporter; runs that never
  recovered within the run are counted apart, never averaged in as a number);
* ``manifested``: fraction of runs in which the fault showed (a disturbance of at least 0.5 s, one
  that never ended, or failed attempts);
  ``hypothesis_failed``: fraction whose journal deviated (or failed/aborted) -- together the
  "flakiness" of a setting;
* error rate, throughput (baseline, impact, drop) and unavailability medians.

Across scenarios: the thesis's Table 6.1 (``chaosdb.report.compare``: medians of mean/σ/p50/p95/p99
with the change against the median baseline, and the median recovery), sweep curves (metric vs
intensity), and for suites with ``upb`` scenarios the T[K][F] matrix and the UPB indices
(T[K][0] = median baseline throughput of the runs at K, T[K][F] = median throughput of the runs
with F failed nodes while those nodes were down: the 5 s windows between the end of the fault
action and the next action).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from chaosdb.core.errors import ChaosDBError
from chaosdb.gameday.manifest import DONE_STATES, manifested, read_manifest
from chaosdb.report.compare import compare
from chaosdb.report.upb import upb_indices

__all__ = ["aggregate", "spread", "manifested", "fault_window_tps", "METRICS", "runs_by_scenario"]

#: metric name -> (where in a run's metrics.json, True when higher is worse)
METRICS: dict[str, tuple[tuple[str, str], bool]] = {
    "p50_ms": (("impact", "p50_ms"), True),
    "p95_ms": (("impact", "p95_ms"), True),
    "p99_ms": (("impact", "p99_ms"), True),
    "mean_ms": (("impact", "mean_ms"), True),
    "error_rate": (("impact", "error_rate"), True),
    "throughput_tps": (("impact", "throughput_tps"), False),
    "recovery_s": (("recovery", "duration_s"), True),
    "unavailability_s": (("recovery", "unavailability_s"), True),
    "baseline_p99_ms": (("baseline", "p99_ms"), True),
    "baseline_tps": (("baseline", "throughput_tps"), False),
    # the load's operation history, when it recorded one (chaosdb.report.histories): anomalies found, operations of
    # unknown outcome
    "history_anomalies": (("history", "anomaly_count"), True),
    "history_info": (("history", "info"), True),
}


def spread(values: list[float | None]) -> dict[str, Any] | None:
    """Median, quartiles, min, max and n of the values that are numbers (None when there are none)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    a = np.array(vals)
    r = lambda v: round(float(v), 3)  # noqa: E731
    return {"n": len(vals), "median": r(np.median(a)), "min": r(a.min()), "q1": r(np.percentile(a, 25)),
            "q3": r(np.percentile(a, 75)), "max": r(a.max())}


def _get(m: dict[str, Any], path: tuple[str, str]) -> Any:
    return (m.get(path[0]) or {}).get(path[1])


def _load_metrics(results: Path, entry: dict[str, Any]) -> dict[str, Any] | None:
    if entry.get("status") not in DONE_STATES:
        return None
    path = results / entry.get("dir", f"runs/{entry['id']}") / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _group_stats(entries: list[dict[str, Any]], metrics: list[dict[str, Any] | None]) -> dict[str, Any]:
    done = [e for e in entries if e.get("status") in DONE_STATES]
    with_m = [m for m in metrics if m is not None]
    recs = [_get(m, ("recovery", "duration_s")) for m in with_m]
    shown = [manifested(m) for m in with_m]
    drops = [(m.get("degradation") or {}).get("throughput_pct") for m in with_m]
    out: dict[str, Any] = {
        "planned": len(entries), "finished": len(done),
        "completed": sum(1 for e in done if e["status"] == "completed"),
        "deviated": sum(1 for e in done if e["status"] == "deviated"),
        "unfinished": {s: n for s in ("pending", "running", "interrupted", "error", "unsteady")
                       if (n := sum(1 for e in entries if e.get("status") == s))},
        "hypothesis_failed": round(sum(1 for e in done if e["status"] == "deviated") / len(done), 3) if done else None,
        "manifested": round(sum(shown) / len(shown), 3) if shown else None,
        "runs": [e["id"] for e in done],
    }
    for name, (path, _worse) in METRICS.items():
        out[name] = spread([_get(m, path) for m in with_m])
    out["recovery"] = {"values": recs, "not_recovered": sum(1 for r in recs if r is None),
                       **(spread(recs) or {"n": 0})}
    out["throughput_drop_pct"] = spread(drops)
    ops = _operation_stats(with_m)
    if ops:
        out["operations"] = ops
    cycles = sorted({str(v) for e in done for p, v in (e.get("parameters") or {}).items()
                     if p == "cluster:leader" or p.endswith(".target")})
    if cycles:
        out["targets"] = cycles
    return out


def _worst_step(steps: list[dict[str, Any]], key: str) -> float | None:
    vals = [float(v) for v in ((st.get("load") or {}).get(key) for st in steps) if v is not None]
    return max(vals) if vals else None


def _operation_stats(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Per operator action (rolling_restart, scale_out, ...) of the method: spreads over the runs of what the
    action measured (took, serving/healthy after) and of what the load saw (no commit, failed, tx/s ratio);
    for a rolling restart also the worst node step of each run."""
    by_action: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        for op in m.get("operations") or []:
            if not op.get("rollback") and op.get("status") == "succeeded":
                by_action.setdefault(op["action"], []).append(op)
    out: dict[str, Any] = {}
    for action, ops in by_action.items():
        load = [op.get("load") or {} for op in ops]
        entry = {"n": len(ops), "took_s": spread([op.get("total_s", op.get("seconds")) for op in ops]),
                 "serving_s": spread([op.get("serving_s") for op in ops]),
                 "healthy_s": spread([op.get("healthy_s") for op in ops]),
                 "no_commit_s": spread([x.get("no_commit_s") for x in load]),
                 "disturbed_s": spread([x.get("disturbed_s") for x in load]),
                 "failed": spread([x.get("failed") for x in load]),
                 "throughput_vs_baseline": spread([x.get("throughput_vs_baseline") for x in load])}
        steps = [op.get("steps") or [] for op in ops]
        if any(steps):
            entry["worst_step_no_commit_s"] = spread([_worst_step(ss, "no_commit_s") for ss in steps])
            entry["worst_step_disturbed_s"] = spread([_worst_step(ss, "disturbed_s") for ss in steps])
            entry["step_serving_s"] = spread([st.get("serving_s") for ss in steps for st in ss])
            entry["step_healthy_s"] = spread([st.get("healthy_s") for ss in steps for st in ss])
        out[action] = entry
    return out


def fault_window_tps(m: dict[str, Any]) -> float | None:
    """Throughput while the first fault holds: the 5 s windows between the end of the first fault action
    and the start of the next action (its rollback/restart), weighted by their length; else the impact
    window's throughput."""
    actions = sorted((f for f in m.get("faults") or [] if f.get("start_ts")), key=lambda f: f["start_ts"])
    if not actions or not actions[0].get("end_ts"):
        return _get(m, ("impact", "throughput_tps"))
    lo = float(actions[0]["end_ts"])
    later = [float(f["start_ts"]) for f in actions[1:] if float(f["start_ts"]) >= lo]
    hi = min(later) if later else float(m.get("end_ts") or lo)
    inside = [w for w in m.get("windows") or [] if w["start_ts"] >= lo and w["start_ts"] + w["seconds"] <= hi
              and w.get("tps") is not None]  # a window the load was paused throughout has no rate
    seconds = sum(w["seconds"] - w.get("paused_s", 0.0) for w in inside)
    if not seconds:
        return _get(m, ("impact", "throughput_tps"))
    return round(sum(w["tps"] * (w["seconds"] - w.get("paused_s", 0.0)) for w in inside) / seconds, 3)


def _upb(results: Path, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    cells: dict[int, dict[int, list[float]]] = {}
    base: dict[int, list[float]] = {}
    for e in entries:
        upb = e.get("upb")
        m = _load_metrics(results, e)
        if not upb or m is None:
            continue
        k, f = int(upb["K"]), int(upb["F"])
        if _get(m, ("baseline", "throughput_tps")) is not None:
            base.setdefault(k, []).append(_get(m, ("baseline", "throughput_tps")))
        held = fault_window_tps(m) if f > 0 else None
        if held is not None:
            cells.setdefault(k, {}).setdefault(f, []).append(held)
    if not base and not cells:
        return None
    table: dict[str, dict[str, float]] = {}
    for k in sorted(set(base) | set(cells)):
        row: dict[str, float] = {}
        if base.get(k):
            row["0"] = round(statistics.median(base[k]), 3)
        for f, vals in sorted(cells.get(k, {}).items()):
            row[str(f)] = round(statistics.median(vals), 3)
        table[str(k)] = row
    out: dict[str, Any] = {"T": table, "rule": "T[K][0]: median baseline throughput of the runs at K; "
                           "T[K][F]: median throughput of the runs with F failed nodes while they were down "
                           "(5 s windows from the end of the fault action to the next action)"}
    try:
        out["indices"] = upb_indices({"T": table})
    except ChaosDBError as exc:
        out["indices"] = None
        out["incomplete"] = str(exc)
    return out


def runs_by_scenario(results: Path | str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Each scenario's finished runs with their metrics (run id, metrics.json), in the manifest's order."""
    results = Path(results)
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for e in read_manifest(results)["runs"]:
        m = _load_metrics(results, e)
        if m is not None:
            out.setdefault(e["scenario"], []).append((e["id"], m))
    return out


def aggregate(results: Path | str) -> dict[str, Any]:
    """The numbers of a game day's results folder: per scenario the median and range of every metric over its runs, and
    the runs' states."""
    results = Path(results)
    manifest = read_manifest(results)
    entries = manifest["runs"]
    suite = manifest["suite"]
    loaded = {e["id"]: _load_metrics(results, e) for e in entries}
    scenarios = []
    sweeps = []
    pairs: list[tuple[str, dict[str, Any]]] = []
    for sc in suite["scenarios"]:
        mine = [e for e in entries if e["scenario"] == sc["name"]]
        stats = _group_stats(mine, [loaded[e["id"]] for e in mine])
        scenarios.append({"scenario": sc["name"], "description": sc.get("description", ""),
                          "experiment": sc["experiment"], "upb": sc.get("upb"), **stats})
        for e in mine:
            run_metrics = loaded[e["id"]]
            if run_metrics is not None and run_metrics.get("impact") is not None:
                pairs.append((sc["name"], run_metrics))
        if sc.get("sweep"):
            points = []
            for value in sc["sweep"]["values"]:
                at = [e for e in mine if (e.get("sweep") or {}).get("value") == value]
                st = _group_stats(at, [loaded[e["id"]] for e in at])
                points.append({"value": value, "finished": st["finished"], "hypothesis_failed": st["hypothesis_failed"],
                               "manifested": st["manifested"], "p99_ms": st["p99_ms"], "recovery": st["recovery"],
                               "error_rate": st["error_rate"], "throughput_tps": st["throughput_tps"]})
            sweeps.append({"scenario": sc["name"], "parameter": sc["sweep"]["parameter"], "points": points})
    table = compare(pairs) if pairs else None
    run_rows = []
    for e in entries:
        m = loaded[e["id"]] or {}
        run_rows.append({"id": e["id"], "scenario": e["scenario"], "status": e["status"],
                         "attempts": e.get("attempts", 0), "dir": e.get("dir"),
                         "parameters": {k: v for k, v in (e.get("parameters") or {}).items()
                                        if not k.startswith(("configuration:", "control:"))},
                         "p99_ms": _get(m, ("impact", "p99_ms")), "recovery_s": _get(m, ("recovery", "duration_s")),
                         "error_rate": _get(m, ("impact", "error_rate"))})
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return {"format": "chaosdb-gameday-summary/1", "suite": suite["name"], "description": suite.get("description"),
            "runs": counts, "run_list": run_rows, "scenarios": scenarios, "table_6_1": table, "sweeps": sweeps,
            "upb": _upb(results, entries),
            "definitions": {"hypothesis_failed": "fraction of finished runs whose journal deviated, failed or aborted",
                            "manifested": "fraction of runs with metrics in which the fault showed: a "
                                          "disturbance of >= 0.5 s (or one that never ended), or failed attempts",
                            "spread": "median, quartiles (linear), min and max over the runs",
                            "recovery": "each run's recovery.duration_s (thesis rule); not_recovered runs "
                                        "are counted apart"}}
