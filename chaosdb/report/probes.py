"""Probes that bound the outage while the run goes on, so that a steady-state hypothesis can say "no commit gap
over 25 s" or "recovered within 60 s" and fail the run when the database did worse.

They read what the report reads, at the moment they run: the samples of the load started by
:mod:`chaosdb.load.control` in this ``chaos run`` (or ``samples`` / configuration ``chaosdb_samples_dir``), the
actions the load control saw start (the first one is the fault; restoring actions end its recovery, as in the
report, :func:`chaosdb.report.metrics.split_recovery`) and the database's events (``events.jsonl``,
:mod:`chaosdb.load.observer`). Put them in the hypothesis; before the method they measure the baseline (no fault
yet), after it the fault's effect, e.g.::

    {"type": "probe", "name": "no-commit-gap-over-25s", "tolerance": {"type": "range", "range": [0, 25]},
     "provider": {"type": "python", "module": "chaosdb.report.probes", "func": "longest_commit_gap_s"}}
"""

import time
from typing import Any

from chaoslib.types import Configuration

from chaosdb.core.arguments import check_arguments, choice
from chaosdb.core.errors import ChaosDBError
from chaosdb.load import state as load_state
from chaosdb.load.observer import read_events
from chaosdb.load.state import samples_dir_for
from chaosdb.report.journal import RESTORING, WAITS

__all__ = ["longest_commit_gap_s", "recovery_s", "time_to_new_leader_s"]

#: the most recent seconds are incomplete (samples are written when a transaction ends, flushed every second)
LAG_S = 2.0


def _run(samples: str, configuration: Any) -> tuple[Any, dict[str, Any], float, float | None, list[dict]]:
    """The samples, the load's record, the end of what can be measured now, the first action's start and the
    actions that restore (as the report classifies them)."""
    # numpy: imported when a probe runs, so that 'chaos discover' lists these probes without the report extra
    from chaosdb.report.data import load_samples  # noqa: PLC0415 - needs the report extra

    record = load_state.current()
    location = samples_dir_for(samples, configuration)
    try:
        data = load_samples(location)
    except ChaosDBError as exc:
        raise ChaosDBError(f"no load samples to measure the outage with ({exc}): is the load control running?") \
            from None
    actions = record.get("actions") or []
    first = float(actions[0]["start_ts"]) if actions else None
    restores = [{"name": a["name"], "start_ts": float(a["start_ts"]), "restores": a.get("func") in RESTORING,
                 "waits": a.get("func") in WAITS} for a in actions[1:]]
    end = min(time.time() - LAG_S, float(record.get("stop_ts") or float("inf")))
    return data, record, end, first, restores


def longest_commit_gap_s(samples: str = "", configuration: Configuration = None) -> float:
    """The longest span in seconds without a commit since the first action of the method (before the method:
    since the warm-up ended), up to 2 s ago; time the load was paused for an integrity check is not counted."""
    from chaosdb.report.metrics import unavailability  # noqa: PLC0415 - needs the report extra

    data, record, end, first, _ = _run(samples, configuration)
    start = first if first is not None else float(record.get("warmup_end_ts") or data.ts[0])
    if end <= start:
        return 0.0
    return unavailability(data, start, end, record.get("pauses") or [])


def recovery_s(samples: str = "", configuration: Configuration = None) -> float:
    """Recovery from the fault in seconds, by the report's rule (the thesis's: from the first disturbed
    transaction after the first action of the method until transactions are served within baseline mean + 2σ
    again), 0 when the fault disturbed nothing. Fails while the disturbance goes on (not recovered yet, with how
    long it has lasted) and when there is no baseline to compare with."""
    from chaosdb.report.metrics import (  # noqa: PLC0415 - needs the report extra
        calibrated_run_length,
        max_healthy_gap,
        sample_sets,
        split_recovery,
        window_stats,
    )

    data, record, end, first, restores = _run(samples, configuration)
    if first is None:
        return 0.0
    faults = [{"name": "first action", "start_ts": first}, *restores]
    pauses = record.get("pauses") or []
    sets = sample_sets(data, faults, record.get("warmup_end_ts"), end, pauses)
    base = window_stats(sets.baseline, max(1e-9, sets.baseline_end - sets.baseline_start))
    if base["mean_ms"] is None or sets.baseline.ok.sum() < 2:
        raise ChaosDBError("no baseline to compare with: the load control measures one before the method "
                           "(baseline_s > 0)")
    threshold = base["mean_ms"] + 2 * base["std_ms"]
    measured = sets.samples.between(sets.baseline_start, end + 1e-9)
    rec = split_recovery(measured, threshold, first, end, next((r["start_ts"] for r in restores
                                                                if r["restores"] and not r["waits"]), None),
                         concurrency=(base["throughput_tps"] or 0) * base["mean_ms"] / 1000.0,
                         run_length=calibrated_run_length(sets.baseline, threshold),
                         max_gap_s=max_healthy_gap(sets.baseline, threshold))
    if rec.get("duration_s") is not None:
        return float(rec["duration_s"])
    if rec.get("onset_ts") is None:
        return 0.0
    raise ChaosDBError(f"not recovered yet: disturbed for at least {rec.get('lower_bound_s') or 0:.1f} s "
                       f"({rec.get('reason')})")


def time_to_new_leader_s(source: str = "", samples: str = "", configuration: Configuration = None) -> float:
    """Seconds from the first action of the method until the database reported a new leader (the observer's
    ``leader_elected`` event; ``source`` narrows it to one source: ``patroni``, ``etcd``, ``pd``). Fails when no
    new leader was elected since then, so use it where the fault takes the leader away; 0 before the method."""
    _, record, _, first, _ = _run(samples, configuration)
    if first is None:  # before the method: no fault took a leader away yet
        return 0.0
    events = read_events(samples_dir_for(samples, configuration))
    if not events:
        raise ChaosDBError("the run recorded no database events: the load control watches the database when "
                           "its configuration names one (observe: auto)")
    for e in events:
        if e["ts"] >= first and e.get("event") == "leader_elected" and (not source or e.get("source") == source):
            return round(float(e["ts"]) - first, 3)
    raise ChaosDBError(f"no new leader{' in ' + source if source else ''} since the first action "
                       f"({time.time() - first:.0f} s ago)")


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), extras=("report",), source=choice("source", "", "patroni", "etcd", "pd", "tikv"))
