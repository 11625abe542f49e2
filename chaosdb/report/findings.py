"""What a run's report says first, worked out once from its metrics so that no two places of the report can say
different things: the outage beside the verdict, whether throughput came back, availability with what stands
next to it, and the restore's dip beside the later disturbances.

Pure: metrics in (``metrics.json`` as :func:`chaosdb.report.build.build_report` makes it), sentences out.
"""

from __future__ import annotations

from typing import Any

__all__ = ["throughput_recovery", "outage_sentence", "not_recovered_flag", "availability_line", "restore_lines",
           "RECOVERED_FRACTION"]

#: throughput has recovered when a 5 s window reaches this share of the baseline's (``time_to_baseline_throughput_s``)
RECOVERED_FRACTION = 0.95


def _zero(m: dict[str, Any]) -> float:
    return float(m.get("first_fault_ts") or m.get("first_ts") or 0.0)


def throughput_recovery(m: dict[str, Any]) -> dict[str, Any] | None:
    """Whether throughput came back to :data:`RECOVERED_FRACTION` of the baseline's (``recovered``), and what it was
    after every fault had ended and the recovery from the first was over (``after_s`` from the first fault: ``min_tps``, ``median_tps``, ``max_tps`` of the
    timeline's full windows from then on, pauses of the load left out; ``windows`` how many). None without an
    impact (no fault was injected) or without a baseline throughput."""
    base = (m.get("baseline") or {}).get("throughput_tps")
    if m.get("impact") is None or not base:
        return None
    r = m.get("recovery") or {}
    zero = _zero(m)
    ttb = r.get("time_to_baseline_throughput_s")
    # after every fault ended and the disturbance it caused was over (a node restarted mid-outage still fails
    # until the outage ends: that is not the throughput it came back to)
    after = max([float(sp["end_ts"]) for sp in m.get("fault_spans") or []] + [zero]
                + ([float(r["end_ts"])] if r.get("end_ts") is not None else []))
    width = float(m.get("window_s") or 5.0)
    full = [w for w in m.get("windows") or [] if w.get("tps") is not None and w.get("seconds", width) >= 0.8 * width]
    wins = [w for w in full if w["start_ts"] >= after - 1e-9]
    if not wins:  # the run ended with a fault in effect: what it was after the first fault
        after = zero
        wins = [w for w in full if w["start_ts"] >= zero - 1e-9]
    tps = sorted(float(w["tps"]) for w in wins)
    out: dict[str, Any] = {"recovered": ttb is not None, "time_to_baseline_throughput_s": ttb,
                           "baseline_tps": base, "target_tps": round(RECOVERED_FRACTION * base, 3),
                           "after_s": round(after - zero, 3), "windows": len(tps),
                           "min_tps": None, "median_tps": None, "max_tps": None}
    if tps:
        out.update(min_tps=tps[0], median_tps=tps[len(tps) // 2], max_tps=tps[-1])
    return out


def _tps(v: float) -> str:
    return f"{v:,.0f}"


def not_recovered_flag(m: dict[str, Any]) -> str | None:
    """The warning said beside the verdict when throughput never came back to 95 % of the baseline's (None when
    it did, or when there is nothing to say it of)."""
    t = m.get("throughput_recovery") or throughput_recovery(m)
    if not t or t["recovered"]:
        return None
    when = "after the faults and the recovery ended" if t["after_s"] > 0 else "after the first fault"
    if t["windows"]:
        spread = (f"; {_tps(t['min_tps'])}–{_tps(t['max_tps'])} tx/s" if t["max_tps"] - t["min_tps"] >= 1 else "")
        windows = "its one window of 5 s" if t["windows"] == 1 else f"the median of {t['windows']} windows of 5 s"
        seen = (f"{when} (from {t['after_s']:.1f} s) it ran at {_tps(t['median_tps'])} tx/s ({windows}{spread}) "
                f"against a baseline of {_tps(t['baseline_tps'])} tx/s")
    else:
        seen = f"no full window of the timeline followed {when.removeprefix('after ')}"
    return (f"Throughput did not recover: {seen}; {RECOVERED_FRACTION * 100:.0f} % of the baseline "
            f"({_tps(t['target_tps'])} tx/s) was never reached for 5 s during the run")


def outage_sentence(m: dict[str, Any]) -> str | None:
    """The outage in one sentence, said right after the verdict: how long users were disturbed, the longest span
    without a commit, the throughput against the baseline and the availability (None when no fault was injected)."""
    if m.get("impact") is None:
        return None
    r = m.get("recovery") or {}
    d = m.get("degradation") or {}
    parts = []
    gap, healthy_gap = r.get("unavailability_s"), r.get("max_healthy_gap_s")
    # a silence longer than the healthy system ever shows is an outage, whatever the completed transactions say
    silent = gap is not None and healthy_gap is not None and gap > healthy_gap
    disturbed = r.get("duration_s") is not None or r.get("lower_bound_s") is not None or silent
    if r.get("duration_s") is not None:
        parts.append(f"users disturbed for {r['duration_s']:.1f} s")
    elif r.get("lower_bound_s") is not None:
        bound = r["lower_bound_s"]
        parts.append("users still disturbed when the run ended" + (f" (at least {bound:.1f} s)" if bound >= 0.05
                                                                    else ""))
    elif silent:
        parts.append("the recovery rule found no disturbance among the transactions that completed (those held "
                     "until the run ended are not in the samples)")
    else:
        parts.append("no disturbance by the recovery rule")
    if r.get("unavailability_s") is not None:
        parts.append(f"no commit for {r['unavailability_s']:.1f} s at the longest")
    if d.get("throughput_pct") is not None:
        drop = d["throughput_pct"]
        parts.append(f"throughput {abs(drop):.0f} % {'below' if drop >= 0 else 'above'} the baseline's from the "
                     "first fault to the end")
    if d.get("availability") is not None:
        parts.append(f"availability {d['availability'] * 100:.1f} %")
    return ("Outage: " if disturbed else "No outage: ") + "; ".join(parts)


def availability_line(m: dict[str, Any]) -> str | None:
    """Availability with its definition, and beside it the throughput drop and the share of attempts that
    succeeded (the numbers a reader would otherwise set against it)."""
    a = m.get("availability") or {}
    d = m.get("degradation") or {}
    if not d:
        return None
    if a.get("ratio") is None:
        head = f"Availability: not measured ({a.get('reason', 'no baseline throughput')})"
    else:
        base = (f"; the baseline itself: {a['baseline_ratio'] * 100:.1f} %" if a.get("baseline_ratio") is not None
                else "")
        head = (f"Availability **{a['ratio'] * 100:.1f} %**: the share of the {a['slices']} slices of "
                f"{a['slice_s']:g} s from the first fault to the end in which the database committed at least "
                f"{a['fraction'] * 100:.0f} % of the baseline's rate ({a['threshold_tps']:,.0f} tx/s){base}")
    side = []
    drop = d.get("throughput_pct")
    if drop is not None:
        side.append(f"throughput {abs(drop):.1f} % {'below' if drop >= 0 else 'above'} the baseline's")
    if d.get("p99_increase_pct") is not None:
        side.append(f"p99 {d['p99_increase_pct']:+.0f} %")
    if d.get("success_ratio") is not None:
        side.append(f"{d['success_ratio'] * 100:.2f} % of the attempts succeeded (clients held by a stalled "
                    "database send few attempts, so this share can stay high through an outage)")
    return head + (". Beside it: " + ", ".join(side) if side else "")


def _restore_words(m: dict[str, Any], restore_ts: float | None, restore_by: str | None) -> str:
    """The restore that divides the recovery in words: "the restoring action 'x' at 30.2 s", "the rollback 'y' at
    5.3 s", "the fault's timed revert at 40.1 s"."""
    if restore_ts is None:
        return "the restore"
    at = f" at {restore_ts - _zero(m):.1f} s"
    if restore_by == "its timed revert":
        return "the fault's timed revert" + at
    if restore_by:
        return f"the {restore_by}{at}"
    names = [f for f in m.get("faults") or [] if f.get("start_ts") is not None
             and abs(float(f["start_ts"]) - float(restore_ts)) < 1e-6]
    if names:
        return f"the {'rollback' if names[0].get('rollback') else 'restoring action'} '{names[0]['name']}'{at}"
    return "the restoring action" + at


def restore_lines(m: dict[str, Any]) -> list[str]:
    """What followed the restoring action, and the disturbances after the first, in words that agree: a restore
    that came while the fault's disturbance went on is part of it, and any later disturbance is said to come after
    that disturbance had ended."""
    r = m.get("recovery") or {}
    after = r.get("after_restore") or {}
    zero = _zero(m)
    lines = []
    what = _restore_words(m, after.get("restore_ts"), r.get("restore_by"))
    if after.get("duration_s") is not None:
        lines.append(f"Disturbance after the restore: **{after['duration_s']:.1f} s** (the same rule from {what} "
                     "on: the cost of bringing the node back)")
    elif r.get("spans_restore"):
        lines.append(f"{what[0].upper()}{what[1:]} came while the fault's disturbance was still going on: the dip "
                     "after it is part of the fault's disturbance above, not a disturbance of its own")
    elif after.get("onset_ts") is not None:
        lines.append(f"Disturbance after {what}: not measured: {after.get('reason')}")
    elif after.get("restore_ts") is not None:
        left = float(m.get("end_ts") or after["restore_ts"]) - float(after["restore_ts"])
        quiet = float(after.get("quiet_s") or r.get("quiet_s") or 5.0)
        lines.append(f"After {what}: no disturbance" if left >= quiet else
                     f"After {what}: the run ended {max(left, 0.0):.1f} s later, too soon to say whether it disturbed")
    said = after.get("onset_ts")
    more = [d for d in (r.get("disturbances") or [])[1:] if d.get("duration_s") is not None
            and not (said is not None and abs(d["onset_ts"] - said) < 1e-3)]
    if more:
        ended = r.get("end_ts")
        since = f" (the recovery above ended at {ended - zero:.1f} s)" if ended is not None else ""
        lines.append(f"Later disturbances, each after the one before had ended{since}: " + "; ".join(
            f"one lasting {d['duration_s']:.1f} s from {d['onset_ts'] - zero:.1f} s, after '{d['after_fault']}'"
            for d in more))
    return lines
