"""Operator actions measured under load: rolling restarts, scale-out and scale-in (``metrics.json`` ``operations``).

``seconds`` is the activity's duration in the journal. An operator fault is an action of :mod:`chaosdb.local.actions` whose journal output says what it did
(``"action": "rolling_restart" | "scale_out" | "scale_in"``). The action itself measures the cluster side
(time until a restarted or added node serves SQL, until the cluster is healthy again, switchover time);
the reporter adds what the clients saw during it, from the load samples:

* for the whole operation (the activity's start to end) and for each step of a rolling restart (one node:
  stop, start, serve, healthy) the transactions that *completed* in that window: attempts, failed ones,
  error rate, successes per second and their ratio to the baseline's, p99 of the successful ones, and the
  longest span without a commit (``no_commit_s``; time the load was paused is not counted), and the seconds
  of the window inside a disturbance of the recovery rule (``disturbed_s``).

Operations that failed are listed without load figures (their output says nothing about what happened).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chaosdb.report.data import Samples
from chaosdb.report.journal import parse_ts
from chaosdb.report.metrics import unavailability, window_stats

__all__ = ["OPERATOR_ACTIONS", "operations_from_journal", "measure_operations"]

OPERATOR_ACTIONS = ("rolling_restart", "scale_out", "scale_in")

# fields of the action's output that are kept (the cluster side of the measurement)
_KEEP = {
    "rolling_restart": ("order", "leader"),
    "scale_out": ("node", "etcd_join_s", "serving_s", "healthy_s", "total_s", "nodes", "leader"),
    "scale_in": ("node", "switched_over_to", "nodes"),
}
_STEP_KEEP = ("node", "switchover_to", "switchover_s", "stop_s", "sigkilled", "serving_s", "healthy_s")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def operations_from_journal(journal: dict[str, Any]) -> list[dict[str, Any]]:
    """The operator actions of a journal's method and rollbacks, in order, with their own measurements."""
    ops: list[dict[str, Any]] = []
    for section, rollback in (("run", False), ("rollbacks", True)):
        for r in journal.get(section) or []:
            out = r.get("output")
            kind = (r.get("activity") or {}).get("type", "action")
            if kind != "action" or not isinstance(out, dict) or out.get("action") not in OPERATOR_ACTIONS:
                continue
            action = out["action"]
            start, end = parse_ts(r.get("start")), parse_ts(r.get("end"))
            op: dict[str, Any] = {"activity": str((r.get("activity") or {}).get("name", "?")), "action": action,
                                  "rollback": rollback, "status": str(r.get("status", "")),
                                  "start_ts": start, "end_ts": end,
                                  "seconds": round(end - start, 3) if start is not None and end is not None else None}
            op.update({k: out[k] for k in _KEEP[action] if k in out})
            if action == "rolling_restart":
                steps = []
                for s in out.get("steps") or []:
                    if not isinstance(s, dict):
                        continue
                    step = {k: s[k] for k in _STEP_KEEP if k in s}
                    step["start_ts"], step["end_ts"] = _num(s.get("start_ts")), _num(s.get("end_ts"))
                    steps.append(step)
                op["steps"] = steps
            ops.append(op)
    return ops


def _load_during(s: Samples, done_at: np.ndarray, start: float, end: float, pauses: list[dict[str, Any]],
                 baseline_tps: float | None) -> dict[str, Any]:
    paused = sum(max(0.0, min(float(p["end_ts"]), end) - max(float(p["start_ts"]), start)) for p in pauses)
    seconds = max(end - start - paused, 0.0)
    inside = s.subset((done_at >= start) & (done_at <= end))
    st = window_stats(inside, seconds) if len(inside) else {"count": 0, "successes": 0, "p99_ms": None,
                                                           "throughput_tps": 0.0 if seconds > 0 else None,
                                                           "error_rate": None}
    tps = st.get("throughput_tps")
    return {"attempts": st["count"], "failed": st["count"] - st["successes"], "error_rate": st.get("error_rate"),
            "p99_ms": st.get("p99_ms"), "throughput_tps": tps,
            "throughput_vs_baseline": round(tps / baseline_tps, 3) if tps is not None and baseline_tps else None,
            "no_commit_s": unavailability(s, start, end, pauses) if end > start else 0.0}


def _disturbed(disturbances: list[dict[str, Any]], start: float, end: float, run_end: float | None) -> float:
    """Seconds of [start, end] inside a disturbance (one not recovered lasts until the run's end)."""
    total = 0.0
    for d in disturbances:
        a = d.get("onset_ts")
        b = d.get("end_ts") if d.get("end_ts") is not None else run_end
        if a is not None and b is not None:
            total += max(0.0, min(b, end) - max(a, start))
    return round(total, 3)


def measure_operations(ops: list[dict[str, Any]], s: Samples, pauses: list[dict[str, Any]] | None = None,
                       baseline_tps: float | None = None, disturbances: list[dict[str, Any]] | None = None,
                       run_end: float | None = None) -> list[dict[str, Any]]:
    """Add what the load saw (``load``) to each succeeded operation and to each step of a rolling restart.

    With the run's *disturbances* (the recovery rule's, ``metrics.json`` ``recovery.disturbances``), ``load``
    also says how many seconds of the window were disturbed (``disturbed_s``): a rolling restart disturbs
    the clients several times, and the first disturbance (``recovery.duration_s``) is rarely the primary's."""
    pauses = pauses or []
    done_at = s.ts + s.lat / 1000.0

    def during(a: float, b: float) -> dict[str, Any]:
        load = _load_during(s, done_at, a, b, pauses, baseline_tps)
        if disturbances is not None:
            load["disturbed_s"] = _disturbed(disturbances, a, b, run_end)
        return load

    measured = []
    for op in ops:
        op = dict(op)
        if op["status"] == "succeeded" and op.get("start_ts") is not None and op.get("end_ts") is not None:
            op["load"] = during(op["start_ts"], op["end_ts"])
            steps = []
            for step in op.get("steps") or []:
                step = dict(step)
                if step.get("start_ts") is not None and step.get("end_ts") is not None:
                    step["load"] = during(step["start_ts"], step["end_ts"])
                steps.append(step)
            if "steps" in op:
                op["steps"] = steps
        measured.append(op)
    return measured
