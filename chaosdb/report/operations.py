"""Operator actions measured under load: rolling restarts, scale-out and scale-in (``metrics.json`` ``operations``).

An operator fault is an action of :mod:`chaosdb.clusters.postgres_ha.operations` whose journal output says what it did
(``"action": "rolling_restart" | "scale_out" | "scale_in"``); ``seconds`` is the activity's duration in
the journal. The action itself measures the cluster side
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
from chaosdb.report.journal import activities_of
from chaosdb.report.metrics import overlap_s, pause_spans, unavailability, window_stats

__all__ = ["operation_spans", "OPERATOR_ACTIONS", "operations_from_journal", "measure_operations"]

OPERATOR_ACTIONS = ("rolling_restart", "scale_out", "scale_in")
#: where they live (every action's result names it, ``action``: CockroachDB's Kubernetes rolling restart is
#: another action of the same name)
OPERATOR_MODULES = ("chaosdb.clusters.postgres_ha.operations", "")  # "": an activity whose provider names no module

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
    for a in activities_of(journal):
        out = a.output
        if a.kind != "action" or not isinstance(out, dict) or out.get("action") not in OPERATOR_ACTIONS \
                or a.module not in OPERATOR_MODULES:
            continue
        action = out["action"]
        op: dict[str, Any] = {"activity": a.name, "action": action, "rollback": a.rollback, "status": a.status,
                              "start_ts": a.start, "end_ts": a.end,
                              "seconds": round(a.end - a.start, 3) if a.start is not None and a.end is not None
                              else None}
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


def operation_spans(ops: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """The spans :func:`measure_operations` looks at: each succeeded operation's and each of its steps'."""
    spans = []
    for op in ops:
        if op["status"] == "succeeded" and op.get("start_ts") is not None and op.get("end_ts") is not None:
            spans.append((float(op["start_ts"]), float(op["end_ts"])))
            spans += [(float(st["start_ts"]), float(st["end_ts"])) for st in op.get("steps") or []
                      if st.get("start_ts") is not None and st.get("end_ts") is not None]
    return spans


def _load_during(s: Samples, done_at: np.ndarray, start: float, end: float, pauses: list[dict[str, Any]],
                 baseline_tps: float | None) -> dict[str, Any]:
    seconds = max(end - start - overlap_s(start, end, pause_spans(pauses)), 0.0)
    st = window_stats(s.subset((done_at >= start) & (done_at <= end)), seconds)
    tps = st["throughput_tps"]
    return {"attempts": st["count"], "failed": st["count"] - st["successes"], "error_rate": st["error_rate"],
            "p99_ms": st["p99_ms"], "throughput_tps": tps,
            "throughput_vs_baseline": round(tps / baseline_tps, 3) if tps is not None and baseline_tps else None,
            "no_commit_s": unavailability(s, start, end, pauses) if end > start else 0.0}


def _disturbed(disturbances: list[dict[str, Any]], start: float, end: float, run_end: float | None) -> float:
    """Seconds of [start, end] inside a disturbance (one not recovered lasts until the run's end)."""
    spans = [(d.get("onset_ts"), d["end_ts"] if d.get("end_ts") is not None else run_end) for d in disturbances]
    return round(overlap_s(start, end, [(a, b) for a, b in spans if a is not None and b is not None]), 3)


def measure_operations(ops: list[dict[str, Any]], s: Samples, pauses: list[dict[str, Any]] | None = None,
                       baseline_tps: float | None = None, disturbances: list[dict[str, Any]] | None = None,
                       run_end: float | None = None) -> list[dict[str, Any]]:
    """Add what the load saw (``load``) to each succeeded operation and to each step of a rolling restart.

    With the run's *disturbances* (the recovery rule's, ``metrics.json`` ``recovery.disturbances``), ``load``
    also says how many seconds of the window were disturbed (``disturbed_s``): a rolling restart disturbs
    the clients several times, and the first disturbance (``recovery.duration_s``) is rarely the primary's."""
    pauses = pauses or []
    if not ops:
        return []
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
