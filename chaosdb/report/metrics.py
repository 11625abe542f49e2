"""Degradation and recovery metrics from samples and fault windows (``metrics.json``).

Windows
-------
* **baseline**: transactions that started after the load's warm-up (or at the first sample)
  and completed before the first fault started;
* **impact**: transactions that completed at or after the start of the first fault, up to
  the end of the measured run (the load's stop, or the last sample): a transaction in
  flight when the fault hits counts for the impact. Pauses of the load (e.g. the replica
  convergence check) are left out of both.

Statistics of a window use the *successful* transactions' latencies (mean, population σ,
nearest-rank p50/p95/p99, max); ``count`` is every attempt, ``error_rate`` failed / all
attempts, ``throughput_tps`` successes per second of the window.

Recovery (thesis, section 6: "the starting time [is] the moment where 5 subsequent
transactions have a latency of two standard deviations above the baseline mean ... the
system [has] recovered when all transactions are within two standard deviations from the
baseline mean for 5 seconds. The recovery duration then is the time between the first and
last transaction that fall outside the interval.")

A transaction is *outside* when its latency exceeds ``baseline mean + 2 σ`` or it failed.
Transactions are taken in the order they completed (were observed): a stall (a hung primary)
holds back one transaction per client and releases them together, which start order would
interleave with transactions that finished before the stall.

* ``run_length`` is 5 (the thesis), raised only when in the healthy baseline itself runs of 5 chained within
  ``quiet_s`` span more than 2 x ``quiet_s`` (``calibrated_run_length``: the rule must not call the healthy
  system disturbed; this happens for key-value stores at ~1,000 operations/s, not for TPC-C);
* onset: the first run of ``run_length`` consecutive outside transactions that completes
  at or after the first fault's start, or, if earlier, the first moment when at least
  max(5, half the clients) outside transactions are in flight at once for at least 0.25 s (a stall: every client's
  transaction is held and the released clients' fast transactions interleave with the held
  ones' completions, so no run forms); clients are estimated by Little's law from the baseline;
* ``rule="literal"`` (the thesis's wording, meant for its ~5 NewOrders/s): the disturbance ends
  with the last outside transaction that is followed by ``quiet_s`` (5 s) with no outside one;
* ``rule="runs"`` (default; for high rates): at hundreds of transactions per second a few
  percent of transactions lie above mean + 2 σ in any healthy second (heavy tails), so the
  literal rule would never see 5 clean seconds. The same 5-in-a-row criterion that marks the
  onset is used for the end: the disturbance is the onset run and every following run of
  ``run_length`` that starts less than ``quiet_s`` after the previous one ended. Isolated
  outliers neither start nor prolong it.
* quiet needs healthy completions: when inside the ``quiet_s`` after the last disturbed transaction there
  is a gap between healthy completions longer than ``max_healthy_gap_s`` (twice the longest gap of the
  baseline, at least 1 s), the disturbance goes on to the completion that ends that gap (every client
  blocked in connect records nothing: that is an outage, not quiet);
* the disturbance's transactions are every outside transaction in flight during those runs
  (completions of slow and fast transactions interleave at its edges);
* ``duration_s`` = completion of its last outside transaction - start of its first, but not
  before the first fault ("the time between the first and last transaction that fall
  outside"): a clean outage of T seconds gives T, a hang of T seconds gives T, a latency
  plateau of T seconds gives T plus the plateau's latency (users saw slowness until the last
  slow transaction ended). ``null`` with ``reason`` when no
  disturbance is found or the run ends before ``quiet_s`` of quiet (then ``lower_bound_s``).

Recovery is split in two (:func:`split_recovery`): *from the fault* (the thesis's rule from the first fault up to
the first restoring action, e.g. the restart of a killed node; over the whole run when the disturbance lasted
through it) and *after the restore* (the same rule from the restoring action on: the dip when the node came back).

Availability (``availability``, ``degradation.availability``) is time-based: the share of the impact window's
slices (1 s; longer when the baseline commits fewer than 20 transactions a second) in which the database committed at
least half the baseline's rate; ``baseline_ratio`` is the same measure over the baseline (about 1 on a healthy
system). The share of attempts that succeeded is ``degradation.success_ratio``: closed-loop clients stalled by the
database send few attempts, so that share can be 100 % through an outage.

``unavailability_s`` is the longest span of the impact window in which no transaction
committed (completion times); ``time_to_baseline_throughput_s`` is from the first fault's
start to the start of the first 5 s window (sliding by 1 s) after the impact's worst window
whose throughput is >= 95 % of the baseline's (0 when no window fell below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chaosdb.report.data import Samples

__all__ = ["SampleSets", "sample_sets", "in_completion_order", "window_stats", "recovery", "split_recovery", "first_restore", "disturbances", "calibrated_run_length",
           "max_healthy_gap", "compute_metrics", "windows", "unavailability", "time_to_throughput", "overlap_s",
           "availability", "AVAILABLE_FRACTION", "measured_end", "SILENT_END_S",
           "pause_spans"]


def _pct(sorted_vals: np.ndarray, p: float) -> float:
    rank = max(1, int(np.ceil(p / 100.0 * sorted_vals.size)))
    return float(sorted_vals[rank - 1])


def window_stats(s: Samples, seconds: float) -> dict[str, Any]:
    """Count, successes, mean, σ, p50/p95/p99, max and throughput of the samples of a window *seconds* long."""
    ok = np.sort(s.lat[s.ok])
    out: dict[str, Any] = {"count": int(len(s)), "successes": int(ok.size), "seconds": round(seconds, 3)}
    if ok.size:
        out.update(mean_ms=round(float(ok.mean()), 3), std_ms=round(float(ok.std()), 3),
                   p50_ms=round(_pct(ok, 50), 3), p95_ms=round(_pct(ok, 95), 3), p99_ms=round(_pct(ok, 99), 3),
                   max_ms=round(float(ok[-1]), 3))
    else:
        out.update(mean_ms=None, std_ms=None, p50_ms=None, p95_ms=None, p99_ms=None, max_ms=None)
    out["throughput_tps"] = round(ok.size / seconds, 3) if seconds > 0 else None
    out["error_rate"] = round(float((~s.ok).sum()) / len(s), 6) if len(s) else None
    return out


def _runs(mask: np.ndarray, min_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (inclusive) indices of runs of True of at least *min_len*."""
    padded = np.concatenate(([0], mask.astype(np.int8), [0]))
    d = np.diff(padded)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1) - 1
    keep = (ends - starts + 1) >= min_len
    return starts[keep], ends[keep]


def _first_crowd(start_o: np.ndarray, done_o: np.ndarray, outside: np.ndarray, need: int,
                 after_ts: float, persist_s: float) -> tuple[float, np.ndarray] | None:
    """First moment after *after_ts* when at least *need* outside transactions are in flight at once,
    and which they are (a stall: every client's transaction is held)."""
    idx = np.flatnonzero(outside & (done_o >= after_ts))
    if idx.size < need:
        return None
    times = np.concatenate((start_o[idx], done_o[idx]))
    steps = np.concatenate((np.ones(idx.size), -np.ones(idx.size)))
    order = np.lexsort((steps, times))  # at equal times, ends before starts
    level = np.cumsum(steps[order])
    t_sorted = times[order]
    # intervals where the level stays >= need: [t_sorted[i], t_sorted[i + 1]) for i with level[i] >= need
    above = level[:-1] >= need
    # a stall holds transactions for a while; overlapping noise outliers only brush against the level
    i = 0
    while i < above.size:
        if above[i] and t_sorted[i] >= after_ts - 60:
            j = i
            while j < above.size and above[j]:
                j += 1
            if t_sorted[j] - t_sorted[i] >= persist_s:
                t = float(t_sorted[i] + 1e-9)
                return t, idx[(start_o[idx] <= t) & (done_o[idx] > t)]
            i = j
        i += 1
    return None


def _longest_chain(done_o: np.ndarray, outside: np.ndarray, length: int, quiet_s: float) -> float:
    """The longest span that runs of *length* chained within *quiet_s* of each other cover (completion times)."""
    st, en = _runs(outside, length)
    if not st.size:
        return 0.0
    longest, lo, hi = 0.0, float(done_o[st[0]]), float(done_o[en[0]])
    for a, b in zip(st[1:], en[1:], strict=False):
        if float(done_o[a]) - hi < quiet_s:
            hi = float(done_o[b])
        else:
            longest, lo, hi = max(longest, hi - lo), float(done_o[a]), float(done_o[b])
    return max(longest, hi - lo)


def in_completion_order(ts: np.ndarray, lat: np.ndarray, ok: np.ndarray,
                        threshold_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Completion times in the order the transactions completed, and which of them were outside *threshold_ms*
    (failed or slower)."""
    done = ts + lat / 1000.0
    order = np.argsort(done, kind="stable")
    outside = ((~ok) | (lat > threshold_ms))[order]
    del order
    done.sort(kind="stable")  # in place: the same values as done[order], without a second copy
    return done, outside


def max_healthy_gap(baseline: Samples, threshold_ms: float, floor_s: float = 1.0,
                    completed: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """How long the healthy system may go without a healthy completion: twice the longest gap between
    healthy completions in the baseline, at least *floor_s* (longer silences inside the quiet time are not quiet).
    *completed*: the baseline :func:`in_completion_order` when the caller has it."""
    done_o, outside = completed or in_completion_order(baseline.ts, baseline.lat, baseline.ok, threshold_ms)
    done = done_o[~outside]
    longest = float(np.diff(done).max()) if done.size > 1 else 0.0
    return max(floor_s, 2 * longest)


def calibrated_run_length(baseline: Samples, threshold_ms: float, quiet_s: float = 5.0, start: int = 5,
                          limit: int = 400, completed: tuple[np.ndarray, np.ndarray] | None = None) -> int:
    """The run length the recovery rule uses: the thesis's 5 unless, in the healthy baseline, runs of 5
    chained within *quiet_s* already span more than 2 x *quiet_s* (the rule would call the healthy system
    disturbed); then the shortest longer run whose chains in the baseline stay within 2 x *quiet_s*. A
    key-value store at a thousand operations per second with fsync stalls that delay every client at once
    needs this; TPC-C at tens of transactions per second does not, and keeps 5. *completed*: the baseline
    :func:`in_completion_order` when the caller has it."""
    if len(baseline) < 2:
        return start
    done_o, outside = completed or in_completion_order(baseline.ts, baseline.lat, baseline.ok, threshold_ms)
    for length in range(start, limit + 1):
        if _longest_chain(done_o, outside, length, quiet_s) <= 2 * quiet_s:
            return length
    return limit


def _first_healthy(outside: np.ndarray, start: int) -> int | None:
    """Index of the first transaction at or after *start* (completion order) that is not outside, None when none is."""
    step = 4096
    while start < outside.size:
        part = outside[start:start + step]
        if not part.all():
            return start + int(np.argmin(part))
        start += part.size
        step *= 4
    return None


def _silence_within(done_o: np.ndarray, outside: np.ndarray, after: float, quiet_s: float,
                    max_gap_s: float) -> float | None:
    """The completion that ends the first gap longer than *max_gap_s* between healthy completions in the
    *quiet_s* after *after* (None when there is none, or when nothing healthy completes any more)."""
    i = int(np.searchsorted(done_o, after, side="right"))
    j = int(np.searchsorted(done_o, after + quiet_s, side="right"))
    times = done_o[i:j][~outside[i:j]]
    beyond = _first_healthy(outside, j)  # the first healthy completion after the quiet time closes the last gap
    if beyond is not None:
        times = np.append(times, done_o[beyond])
    if not times.size:
        return None
    gaps = np.diff(np.concatenate(([after], times)))
    long = np.flatnonzero(gaps > max_gap_s)
    if not long.size or times[long[0]] - gaps[long[0]] >= after + quiet_s:
        return None
    return float(times[long[0]])


@dataclass
class _Completed:
    """Transactions in the order they completed (were observed), from the first that completed at or after
    *since*: completion and start times, and which were outside the threshold (failed or slower)."""

    since: float
    threshold_ms: float
    done: np.ndarray
    start: np.ndarray
    outside: np.ndarray

    def after(self, since: float) -> "_Completed":
        """The same from a later *since* on (views, no copy)."""
        i = int(np.searchsorted(self.done, since, side="left"))
        return _Completed(since, self.threshold_ms, self.done[i:], self.start[i:], self.outside[i:])


def _completed(s: Samples, threshold_ms: float, since: float) -> _Completed:
    """*s*'s transactions that completed at or after *since*, in completion order; worked out once per samples and
    threshold and reused by every later question from a later time (a long run's disturbances)."""
    have: _Completed | None = s.cache.get("completed")
    if have is not None and have.threshold_ms == threshold_ms and have.since <= since:
        return have.after(since)
    s.cache.pop("completed", None)  # let the old one go before the new one is built
    rows = s.ending_after(since) if since > -np.inf else slice(0, len(s))
    done = s.ts[rows] + s.lat[rows] / 1000.0
    order = np.argsort(done, kind="stable")
    order = order[int(np.count_nonzero(done < since)):]  # those completed before since come first
    done_o = done[order]
    del done
    outside = ((~s.ok[rows]) | (s.lat[rows] > threshold_ms))[order]
    start_o = s.ts[rows][order]
    del order
    s.cache["completed"] = got = _Completed(since, threshold_ms, done_o, start_o, outside)
    return got


class _EarlierNeeded(Exception):
    """The transactions from *since* on do not decide the disturbance alone: it may reach further back."""


def recovery(s: Samples, threshold_ms: float, fault_start: float, end_ts: float, rule: str = "runs",
             run_length: int = 5, quiet_s: float = 5.0, concurrency: float = 0.0,
             max_gap_s: float | None = None) -> dict[str, Any]:
    """When the transactions recovered after *fault_start*, by *rule* (``runs``: the thesis's rule, *run_length* healthy
    transactions in a row and no disturbance for *quiet_s*; ``literal``: the first healthy one), with its onset and how
    it was measured."""
    if rule not in ("runs", "literal"):
        raise ValueError("rule must be 'runs' or 'literal'")
    base = {"rule": rule, "run_length": run_length, "quiet_s": quiet_s, "threshold_ms": round(threshold_ms, 3),
            "order": "completion", "clock": "start"}
    # transactions in the order they were *observed* (completed): a stall holds back every client's
    # transaction and releases them together, which start order would interleave with older ones. Only those
    # completed from a little before the fault on are looked at (a long run's earlier hours cannot change the
    # answer); when the disturbance may reach further back, from earlier, until it cannot (or from the start).
    lookback = 60.0
    while True:
        since = fault_start - lookback if len(s) and fault_start - lookback > float(s.ts[0]) else -np.inf
        try:
            return _recovery_from(_completed(s, threshold_ms, since), base, threshold_ms, fault_start, end_ts,
                                  rule, run_length, quiet_s, concurrency, max_gap_s)
        except _EarlierNeeded:
            lookback *= 4


def _recovery_from(c: _Completed, base: dict[str, Any], threshold_ms: float, fault_start: float, end_ts: float,
                   rule: str, run_length: int, quiet_s: float, concurrency: float,
                   max_gap_s: float | None) -> dict[str, Any]:
    """:func:`recovery` over the transactions completed from ``c.since`` on; raises :class:`_EarlierNeeded` when
    those alone might not give the same answer as all of them."""
    done_o, start_o, outside = c.done, c.start, c.outside
    if c.since > -np.inf and outside.size and outside[0]:
        raise _EarlierNeeded  # a run of outside transactions may have begun before: it would be cut
    starts, ends = _runs(outside, run_length)
    after = done_o[ends] >= fault_start if ends.size else np.array([], dtype=bool)
    # a stall shows as many outside transactions in flight at once rather than as a run: released clients
    # start fast transactions between the held ones' completions
    need = max(min(run_length, 5), int(np.ceil(0.5 * concurrency)))
    crowd = _first_crowd(start_o, done_o, outside, need, fault_start, max(0.25, threshold_ms / 1000.0))
    if not after.any() and crowd is None:
        return {**base, "duration_s": None, "reason": f"no run of {run_length} consecutive transactions above "
                f"{threshold_ms:.1f} ms or failed, and never {need} of them in flight at once, after the first "
                "fault", "onset_ts": None, "end_ts": None}
    # runs that can prolong the disturbance: runs of run_length ("runs") or any outside transaction ("literal")
    c_starts, c_ends = (starts, ends) if rule == "runs" else _runs(outside, 1)
    margin = threshold_ms / 1000.0  # completions reorder by up to about one healthy latency
    # earliest start of each candidate run's transactions (runs are disjoint index ranges)
    if c_starts.size:
        bounds = np.ravel(np.column_stack((c_starts, c_ends + 1)))
        if bounds[-1] == start_o.size:  # the last run ends with the samples: its reduction runs to the end
            bounds = bounds[:-1]
        run_first_start = np.minimum.reduceat(start_o, bounds)[::2]
    else:
        run_first_start = np.array([])
    first = int(np.flatnonzero(after)[0]) if after.any() else None
    if first is not None and (crowd is None or done_o[ends[first]] <= crowd[0]):
        lo_runs = float(start_o[starts[first]:ends[first] + 1].min())
        hi_runs = float(done_o[ends[first]])
    else:
        assert crowd is not None  # no run after the fault and no crowd returned above
        lo_runs = float(start_o[crowd[1]].min())
        hi_runs = float(done_o[crowd[1]].max())
        base["onset_by"] = f"{need} transactions in flight at once"
    if lo_runs - margin < c.since:
        raise _EarlierNeeded  # transactions completed before c.since may overlap the disturbance
    floor = -np.inf
    while True:
        # every outside transaction in flight during the runs belongs to the disturbance (a stall keeps writes in
        # flight while reads still complete: that is not quiet); only runs extend it, so noise cannot chain it on
        overlapping = outside & (start_o < hi_runs) & (done_o > lo_runs - margin)
        hi = max(float(done_o[overlapping].max()), floor)
        # a later run continues the disturbance when it completes within quiet_s, or when its transactions
        # were already in flight then (clients held for longer than quiet_s: no completion is not quiet)
        nxt = np.flatnonzero((done_o[c_ends] > hi_runs)
                             & ((done_o[c_starts] - hi < quiet_s) | (run_first_start - hi < quiet_s)))
        if nxt.size:
            hi_runs = max(hi_runs, float(done_o[c_ends[nxt]].max()))
            continue
        # quiet needs healthy completions: a silence longer than the healthy system ever shows inside the
        # quiet_s that would end the disturbance (clients blocked in connect, nothing served) continues it
        gap_end = _silence_within(done_o, outside, hi, quiet_s, max_gap_s) if max_gap_s else None
        if gap_end is None:
            break
        floor = gap_end
        hi_runs = max(hi_runs, gap_end)
    if hi == floor:
        base["end_by"] = "first healthy completion after a silence"
    lo = float(start_o[overlapping].min())
    members = int(np.count_nonzero(overlapping))
    onset_ts = max(float(fault_start), lo)
    last_done = hi
    # nothing completing is not recovery: clients backing off or blocked in connect record no transaction,
    # so when the first healthy completion after the last disturbed one comes later than about one healthy
    # latency, the silence belongs to the disturbance and it ends with that completion
    k = _first_healthy(outside, int(np.searchsorted(done_o, hi, side="right")))
    if k is None:
        last_done = max(hi, end_ts)  # never served again within the run
        base["end_by"] = "no healthy completion after the last disturbed transaction"
    elif float(start_o[k]) - hi > margin:  # nothing started (and succeeded) for a while: a silence
        last_done = float(done_o[k])
        base["end_by"] = "first healthy completion after a silence"
    # One clock for onset and end: start times, as OLTP-Bench stamps the thesis's transactions. The disturbance
    # began with the first disturbed transaction's start and ends where transactions start being served well
    # again: the start of the first healthy transaction that started after the last disturbed one (and after
    # a silence that belongs to the disturbance). Completion times give the client-visible span apart.
    # the last disturbed start is the end of the last run of disturbed transactions in *start* order: a lone
    # outlier that started while the failing requests were still coming back is noise, not the disturbance
    window = np.flatnonzero((start_o >= lo) & (start_o <= hi))
    by_start = window[np.argsort(start_o[window], kind="stable")]
    _, s_ends = _runs(outside[by_start], run_length if rule == "runs" else 1)
    last_start = float(start_o[by_start[s_ends[-1]]]) if s_ends.size else float(start_o[overlapping].max())
    later_ok = ~outside & (start_o > last_start)
    end_start = float(start_o[later_ok].min()) if later_ok.any() else None
    del later_ok
    if end_start is not None and base.get("end_by") == "first healthy completion after a silence":
        end_start = max(end_start, float(start_o[k]) if k is not None else end_start)
    if end_ts - last_done < quiet_s or end_start is None:
        return {**base, "duration_s": None, "onset_ts": onset_ts, "end_ts": None, "client_end_ts": None,
                "lower_bound_s": round(max(last_start, onset_ts) - onset_ts, 3),
                "reason": f"not recovered: the run ended {max(0.0, end_ts - last_done):.1f} s after the last disturbed "
                          f"transaction, before {quiet_s:g} s of quiet"}
    # the true end lies between the last disturbed start and end_start: when clients are held (slow or failing
    # requests) no transaction starts in between, and that gap is the measurement's resolution
    return {**base, "duration_s": round(end_start - onset_ts, 3), "onset_ts": onset_ts, "end_ts": end_start,
            "end_resolution_s": round(end_start - max(last_start, onset_ts), 3),
            "client_visible_s": round(last_done - onset_ts, 3), "client_end_ts": last_done,
            "disturbed_transactions": members, "reason": None}


def first_restore(faults: list[dict[str, Any]], fault_start: float) -> float | None:
    """When the first restoring action or rollback after the first fault started (None: there was none)."""
    starts = [f["start_ts"] for f in faults if f.get("start_ts") is not None and f["start_ts"] > fault_start
              and (f.get("restores") or f.get("rollback")) and not f.get("waits")]
    return min(starts) if starts else None


def split_recovery(s: Samples, threshold_ms: float, fault_start: float, end_ts: float, restore_ts: float | None,
                   **rule: Any) -> dict[str, Any]:
    """Recovery *from the fault* (the result's own fields) and *after the restore* (``after_restore``).

    From the fault: the rule applied from the first fault up to the first restoring action; when the disturbance
    had not ended (with its quiet) by then, or there is no restoring action, the rule over the whole run (the
    disturbance lasted through the restore: ``spans_restore``). After the restore: the rule applied again from the
    restoring action's start (the dip when a node came back), only when the first disturbance ended before it."""
    whole = recovery(s, threshold_ms, fault_start, end_ts, **rule)
    if restore_ts is None:
        return {**whole, "scope": "from the first fault to the end of the run",
                "after_restore": {"duration_s": None, "reason": "no restoring action after the first fault"}}
    if whole.get("onset_ts") is None or (whole.get("end_ts") is not None and whole["end_ts"] <= restore_ts):
        # nothing disturbed, or the disturbance ended before the restoring action: what follows is the restore's
        start = max(restore_ts, (whole.get("client_end_ts") or restore_ts) + 1e-6)
        after = recovery(s, threshold_ms, start, end_ts, **rule)
        return {**whole, "scope": "from the first fault to the restore", "restore_ts": restore_ts,
                "after_restore": {**after, "restore_ts": restore_ts}}
    before = recovery(s, threshold_ms, fault_start, restore_ts, **rule)
    if before.get("duration_s") is not None:
        # the whole-run rule chained the restore's dip onto the fault's disturbance: the restore divides them
        after = recovery(s, threshold_ms, restore_ts, end_ts, **rule)
        return {**before, "scope": "from the first fault to the restore", "restore_ts": restore_ts,
                "after_restore": {**after, "restore_ts": restore_ts}}
    return {**whole, "scope": "from the first fault through the restore", "spans_restore": True,
            "restore_ts": restore_ts,
            "after_restore": {"duration_s": None, "restore_ts": restore_ts, "reason": "the disturbance from the "
                              "fault had not ended when the restoring action began: it is one disturbance"}}


def disturbances(s: Samples, threshold_ms: float, faults: list[dict[str, Any]], end_ts: float,
                 rule: str = "runs", limit: int = 50, concurrency: float = 0.0,
                 run_length: int = 5, max_gap_s: float | None = None) -> list[dict[str, Any]]:
    """Every disturbance after the first fault (the recovery rule applied again after each one ends),
    each with the last fault that started before it. ``recovery`` itself is the first one."""
    starts = sorted((f["start_ts"], f["name"]) for f in faults if f.get("start_ts") and not f.get("rollback"))
    if not starts:
        return []
    out: list[dict[str, Any]] = []
    t = starts[0][0]
    while len(out) < limit:
        r = recovery(s, threshold_ms, t, end_ts, rule=rule, concurrency=concurrency, run_length=run_length,
                     max_gap_s=max_gap_s)
        if r.get("onset_ts") is None:
            break
        cause = [name for ts, name in starts if ts <= r["onset_ts"] + 1e-6]
        out.append({"onset_ts": r["onset_ts"], "end_ts": r.get("end_ts"), "duration_s": r.get("duration_s"),
                    "after_fault": cause[-1] if cause else None, "reason": r.get("reason")})
        if r.get("end_ts") is None:
            break
        t = r["client_end_ts"] + 1e-6  # after the last disturbed transaction was seen to complete
    return out


def overlap_s(start: float, end: float, spans: list[tuple[float, float]]) -> float:
    """Seconds of [start, end] covered by the (non-overlapping) *spans*."""
    return sum(max(0.0, min(float(b), end) - max(float(a), start)) for a, b in spans)


def pause_spans(pauses: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """The load's pauses (integrity checks) as (start, end) pairs."""
    return [(float(p["start_ts"]), float(p["end_ts"])) for p in pauses]


def _paused_within(a: np.ndarray, b: np.ndarray, pauses: list[dict[str, Any]]) -> np.ndarray:
    """Seconds of each interval [a, b] during which the load was paused (nobody asked the database)."""
    total = np.zeros(a.shape)
    for p in pauses:
        ps, pe = float(p["start_ts"]), float(p["end_ts"])
        total += np.clip(np.minimum(b, pe) - np.maximum(a, ps), 0.0, None)
    return total


def unavailability(s: Samples, start: float, end: float, pauses: list[dict[str, Any]] | None = None) -> float:
    """The longest span without a commit, not counting time when the load was paused."""
    done = s.completions(start, end)
    edges = np.concatenate(([start], done, [end]))
    gaps = np.diff(edges) - _paused_within(edges[:-1], edges[1:], pauses or [])
    return round(float(gaps.max()), 3) if gaps.size else round(end - start, 3)


#: a slice of time counts as available when the database committed at least this share of the baseline's rate in it
AVAILABLE_FRACTION = 0.5
#: slices are long enough for the baseline to expect at least this many commits in one (at least 1 s)
SLICE_COMMITS = 20.0


def availability(s: Samples, start: float, end: float, baseline_tps: float, pauses: list[dict[str, Any]] | None = None,
                 fraction: float = AVAILABLE_FRACTION, min_commits: float = SLICE_COMMITS) -> dict[str, Any]:
    """Time-based availability of [*start*, *end*]: the share of its slices (1 s, longer when the baseline commits
    fewer than *min_commits* a second) in which the database committed at least *fraction* of the baseline's rate,
    *baseline_tps* (commits counted when they completed). Slices that overlap a pause of the load are left out.

    Closed-loop clients send fewer attempts while the database stalls, so the share of attempts that succeeded
    can read 100 % through an outage; this cannot: a throughput drop of D over the window leaves at most
    (1 - D) / *fraction* of its slices available."""
    out: dict[str, Any] = {"fraction": fraction, "threshold_tps": None, "slice_s": None, "slices": 0,
                           "available_slices": 0, "unavailable_s": None, "ratio": None}
    if not baseline_tps or baseline_tps <= 0 or end <= start:
        out["reason"] = "no baseline throughput" if not baseline_tps or baseline_tps <= 0 else "no time to measure"
        return out
    slice_s = max(1.0, float(np.ceil(min_commits / baseline_tps)))
    n = int((end - start) // slice_s)
    out.update(threshold_tps=round(fraction * baseline_tps, 3), slice_s=slice_s)
    if n <= 0:
        out["reason"] = f"shorter than one {slice_s:g} s slice"
        return out
    starts = start + np.arange(n) * slice_s
    kept = starts[_paused_within(starts, starts + slice_s, pauses or []) == 0]
    if not kept.size:
        out["reason"] = "the load was paused throughout"
        return out
    done = s.completions(start, start + n * slice_s)
    counts = np.searchsorted(done, kept + slice_s, side="left") - np.searchsorted(done, kept, side="left")
    up = int(np.count_nonzero(counts >= fraction * baseline_tps * slice_s))
    out.update(slices=int(kept.size), available_slices=up, unavailable_s=round((kept.size - up) * slice_s, 3),
               ratio=round(up / kept.size, 6))
    return out


def time_to_throughput(s: Samples, fault_start: float, end: float, baseline_tps: float, width: float = 5.0,
                       step: float = 1.0, fraction: float = 0.95,
                       pauses: list[dict[str, Any]] | None = None) -> float | None:
    """Seconds from *fault_start* until a *width*-second window's throughput is back to *fraction* of the baseline, None
    when it never was."""
    if baseline_tps <= 0 or end - fault_start < width:
        return None
    starts = np.arange(fault_start, end - width + 1e-9, step)
    # windows that overlap a pause of the load say nothing about the database's throughput
    starts = starts[_paused_within(starts, starts + width, pauses or []) == 0]
    if not starts.size:
        return None
    rows = slice(int(np.searchsorted(s.ts, starts[0], side="left")), None)  # the windows' samples onwards
    ok_ts = s.ts[rows][s.ok[rows]]
    counts = np.searchsorted(ok_ts, starts + width) - np.searchsorted(ok_ts, starts)
    tps = counts / width
    target = fraction * baseline_tps
    worst = int(np.argmin(tps))
    if tps[worst] >= target:
        return 0.0
    back = np.flatnonzero(tps[worst:] >= target)
    if not back.size:
        return None
    return round(float(starts[worst + back[0]] - fault_start), 3)


def windows(s: Samples, start: float, end: float, width: float = 5.0,
            pauses: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per window: attempts, committed tx/s over the time the load ran in it (a pause of the load is not a
    throughput dip: a window paused throughout has no rate), errors and percentiles."""
    out = []
    spans = pause_spans(pauses or [])
    t = start
    while t < end:
        w = s.between(t, t + width)
        ok = np.sort(w.lat[w.ok])
        covered = min(width, end - t)  # the last window is partial: its rate is over the time it covers
        paused = overlap_s(t, t + covered, spans)
        running = covered - paused
        out.append({"start_ts": round(t, 3), "seconds": round(covered, 3), "count": int(len(w)),
                    "paused_s": round(paused, 3),
                    "tps": round(ok.size / running, 3) if running > 0.05 * covered else None,
                    "errors": int((~w.ok).sum()),
                    "p50_ms": round(_pct(ok, 50), 3) if ok.size else None,
                    "p95_ms": round(_pct(ok, 95), 3) if ok.size else None,
                    "p99_ms": round(_pct(ok, 99), 3) if ok.size else None})
        t += width
    return out


def _without_pauses(s: Samples, pauses: list[dict[str, Any]]) -> Samples:
    """Leave out transactions that started during a pause of the load, and take the pause's overlap
    out of the latency of those in flight across it (a paused client waits for the pause, not the
    database); whatever else delayed them (a fault right after the pause) stays in their latency.

    Only the rows a pause can touch are worked on (from one longest latency before it to its end), re-sorted
    there by their new start; every other row is copied as it is (its start and latency do not change, and
    no moved row passes it)."""
    if not len(s) or bool((s.lat < 0).any()):
        return _without_pauses_everywhere(s, pauses)
    reach = s.longest_s + 1e-6
    spans = [(float(p["start_ts"]), float(p["end_ts"])) for p in pauses]  # in the order their shifts add up
    groups: list[list[int]] = []  # [first row, end row) a group of pauses can touch
    for ps, pe in sorted(spans):
        lo = int(np.searchsorted(s.ts, ps - reach, side="left"))
        hi = int(np.searchsorted(s.ts, pe, side="left"))
        if groups and lo <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
        else:
            groups.append([lo, hi])
    # rows kept as they are (a slice), or worked on (which rows, in their new order, with their new start/latency)
    parts: list[slice | tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    at = 0
    for lo, hi in groups:
        parts.append(slice(at, lo))
        w = s.rows(slice(lo, hi))
        keep = np.ones(len(w), dtype=bool)
        shift = np.zeros(len(w))
        done = w.ts + w.lat / 1000.0
        for ps, pe in spans:
            keep &= ~((w.ts >= ps) & (w.ts < pe))
            shift += np.clip(np.minimum(done, pe) - np.maximum(w.ts, ps), 0.0, None)
        # the waiting is taken off the front: the transaction keeps its real completion time
        ts = w.ts + shift
        lat = np.maximum(w.lat - shift * 1000.0, 0.0)
        order = np.argsort(ts, kind="stable")
        order = order[keep[order]]
        parts.append((order + lo, ts[order], lat[order]))
        at = hi
    parts.append(slice(at, len(s)))
    size = sum(part.stop - part.start if isinstance(part, slice) else part[0].size for part in parts)
    out = Samples(np.empty(size), np.empty(size), np.empty(size, dtype=bool), np.empty(size, dtype=s.name.dtype),
                  np.empty(size, dtype=s.outcome.dtype), s.names, s.outcomes, s.sources)
    i = 0
    for part in parts:
        if isinstance(part, slice):
            n = part.stop - part.start
            for column in ("ts", "lat", "ok", "name", "outcome"):
                getattr(out, column)[i:i + n] = getattr(s, column)[part]
        else:
            rows, ts, lat = part
            n = rows.size
            out.ts[i:i + n], out.lat[i:i + n] = ts, lat
            for column in ("ok", "name", "outcome"):
                getattr(out, column)[i:i + n] = getattr(s, column)[rows]
        i += n
    return out


def _without_pauses_everywhere(s: Samples, pauses: list[dict[str, Any]]) -> Samples:
    """:func:`_without_pauses` over every row at once (for samples whose latencies are not all >= 0)."""
    keep = np.ones(len(s), dtype=bool)
    shift = np.zeros(len(s))
    done = s.ts + s.lat / 1000.0
    for p in pauses:
        ps, pe = float(p["start_ts"]), float(p["end_ts"])
        keep &= ~((s.ts >= ps) & (s.ts < pe))
        shift += np.clip(np.minimum(done, pe) - np.maximum(s.ts, ps), 0.0, None)
    ts = s.ts + shift
    lat = np.maximum(s.lat - shift * 1000.0, 0.0)
    order = np.argsort(ts, kind="stable")
    adjusted = Samples(ts[order], lat[order], s.ok[order], s.name[order], s.outcome[order], s.names, s.outcomes,
                       s.sources)
    return adjusted.subset(keep[order])


@dataclass
class SampleSets:
    """The samples every table and figure of a run is drawn from: pauses of the load taken out, the baseline
    (steady load before the first fault) and the impact (from the first fault to the end). The baseline and the
    impact are copies of their rows made when asked for (not kept: a long run's would double its memory)."""

    samples: Samples
    baseline_start: float
    baseline_end: float
    end: float
    fault_start: float | None

    def _started(self) -> Samples:
        """The samples that started in [baseline start, end] (a view)."""
        ts = self.samples.ts
        lo = int(np.searchsorted(ts, self.baseline_start, side="left"))
        hi = int(np.searchsorted(ts, self.end, side="right"))
        return self.samples.rows(slice(lo, hi))

    def _baseline_rows(self) -> tuple[Samples, np.ndarray | None]:
        """The rows that started in the baseline (a view) and which of them completed before the first fault (None:
        all, there is no fault). A transaction in flight when the first fault starts belongs to the impact."""
        s = self._started().between(-np.inf, self.baseline_end)
        return s, None if self.fault_start is None else s.ts + s.lat / 1000.0 < self.baseline_end

    def _impact_rows(self) -> tuple[Samples, np.ndarray]:
        """The rows that may have completed at or after the first fault (a view) and which of them did."""
        assert self.fault_start is not None
        s = self._started()
        s = s.rows(s.ending_after(self.fault_start))
        return s, s.ts + s.lat / 1000.0 >= self.fault_start

    @property
    def baseline(self) -> Samples:
        """Transactions that started after the baseline's start and completed before the first fault."""
        s, keep = self._baseline_rows()
        return s if keep is None else s.subset(keep)

    def baseline_in_completion_order(self, threshold_ms: float) -> tuple[Samples, tuple[np.ndarray, np.ndarray]]:
        """The baseline's rows as a view that may hold a few more (those in flight at the first fault), and the
        baseline alone :func:`in_completion_order` (without copying its rows)."""
        s, keep = self._baseline_rows()
        if keep is None:
            return s, in_completion_order(s.ts, s.lat, s.ok, threshold_ms)
        return s, in_completion_order(s.ts[keep], s.lat[keep], s.ok[keep], threshold_ms)

    def successful_ms(self, window: str) -> np.ndarray | None:
        """The successful latencies of the ``baseline`` or the ``impact`` (None without a fault), without copying
        the window's rows."""
        if window == "impact":
            if self.fault_start is None:
                return None
            s, keep = self._impact_rows()
            return s.lat[s.ok & keep]
        s, maybe = self._baseline_rows()
        return s.lat[s.ok if maybe is None else s.ok & maybe]

    @property
    def impact(self) -> Samples | None:
        """Transactions that completed at or after the first fault's start (None without a fault)."""
        if self.fault_start is None:
            return None
        s, keep = self._impact_rows()
        return s.subset(keep)


#: samples that end longer than this before the load stopped end in a silence: the run is measured to the load's stop
SILENT_END_S = 1.0


def measured_end(last_ts: float, stop_ts: float | None) -> float:
    """Where the measured run ends: at the last transaction's start, or at the load's stop (*stop_ts*) when that came
    more than :data:`SILENT_END_S` later. Clients held by a hung or cut-off database record nothing (a transaction is
    written when it completes), and a run interrupted then ends with seconds in which nothing committed: those are
    part of the run, not after it."""
    if stop_ts is None:
        return last_ts
    return float(stop_ts) if float(stop_ts) - last_ts > SILENT_END_S else min(float(stop_ts), last_ts)


def sample_sets(s: Samples, faults: list[dict[str, Any]], baseline_start: float | None = None,
                end_ts: float | None = None, pauses: list[dict[str, Any]] | None = None) -> SampleSets:
    """The samples split into baseline (up to the first fault) and impact (from it), pauses left out."""
    if pauses:
        s = _without_pauses(s, pauses)
    first_ts, last_ts = float(s.ts[0]), float(s.ts[-1])
    b_start = max(baseline_start or first_ts, first_ts)
    end = measured_end(last_ts, end_ts)
    # restoring actions (a restart, a revert) are not faults: they never start the impact
    fault_starts = [f["start_ts"] for f in faults if f.get("start_ts") is not None and not f.get("rollback")
                    and not f.get("restores")]
    fault_start = min(fault_starts) if fault_starts else None
    b_end = fault_start if fault_start is not None else end
    return SampleSets(s, b_start, b_end, end, fault_start)


def _by_transaction_stats(w: Samples, seconds: float) -> dict[int, dict[str, Any]]:
    """Each transaction type's statistics within a window (codes of the types present in *w*)."""
    return {int(code): window_stats(w.subset(w.name == code), seconds) for code in np.unique(w.name)}


def compute_metrics(s: Samples, faults: list[dict[str, Any]], baseline_start: float | None = None,
                    end_ts: float | None = None, pauses: list[dict[str, Any]] | None = None,
                    rule: str = "runs", window_s: float = 5.0, sets: SampleSets | None = None,
                    restore: tuple[float | None, str] | None = None) -> dict[str, Any]:
    """The run's metrics; *sets* when the caller already split the samples with the same arguments; *restore*: when
    the first fault was ended and by what (its fault span: a restoring action, a rollback or its timer), which
    divides the recovery from the fault from the one after the restore; ``(None, "")``: nothing ended it (default:
    the first restoring action or rollback after the first fault, :func:`first_restore`).

    The baseline's and the impact's rows are copied one after the other and let go before the recovery is
    measured, so a long run needs about its samples' own memory plus one window's."""
    pauses = pauses or []
    sets = sets or sample_sets(s, faults, baseline_start, end_ts, pauses)
    s = sets.samples
    b_start, b_end, end, fault_start = sets.baseline_start, sets.baseline_end, sets.end, sets.fault_start
    first_ts, last_ts = float(s.ts[0]), float(s.ts[-1])
    result: dict[str, Any] = {"samples": int(len(s)), "first_ts": first_ts, "last_ts": last_ts,
                              "baseline_start_ts": b_start, "first_fault_ts": fault_start, "end_ts": end,
                              "excluded_pauses": pauses}
    base_paused = overlap_s(b_start, b_end, pause_spans(pauses))
    baseline = sets.baseline
    result["baseline"] = window_stats(baseline, b_end - b_start - base_paused)
    has_impact = fault_start is not None and int(baseline.ok.sum()) >= 2
    base_by_tx = _by_transaction_stats(baseline, b_end - b_start)
    baseline_size = len(baseline)
    del baseline
    if has_impact:
        mean, std = result["baseline"]["mean_ms"], result["baseline"]["std_ms"]
        view, completed = sets.baseline_in_completion_order(mean + 2 * std)
        length = (calibrated_run_length(view, mean + 2 * std, completed=completed)
                  if rule == "runs" and baseline_size >= 2 else 5)
        gap = max_healthy_gap(view, mean + 2 * std, completed=completed)
        del view, completed
    impact_by_tx: dict[int, dict[str, Any]] = {}
    if not has_impact:
        why = "no fault in the journal" if fault_start is None else "the baseline has fewer than 2 successes"
        result.update(impact=None, recovery={"duration_s": None, "reason": why}, degradation=None)
    else:
        assert fault_start is not None
        impact = sets.impact
        assert impact is not None  # there is a fault, so there is an impact window
        impact_paused = overlap_s(fault_start, end, pause_spans(pauses))
        result["impact"] = window_stats(impact, end - fault_start - impact_paused)
        impact_by_tx = _by_transaction_stats(impact, result["impact"]["seconds"])
        del impact
        measured = s.between(b_start, end + 1e-9)
        # Little's law: clients in flight on average = throughput x mean latency (closed-loop load)
        clients = (result["baseline"]["throughput_tps"] or 0) * mean / 1000.0
        restore_ts = restore[0] if restore is not None else first_restore(faults, fault_start)
        rec = split_recovery(measured, mean + 2 * std, fault_start, end, restore_ts,
                             rule=rule, concurrency=clients, run_length=length, max_gap_s=gap)
        if restore is not None and rec.get("restore_ts") is not None:
            rec["restore_by"] = restore[1]
        rec["clients_estimate"] = round(clients, 1)
        rec["disturbances"] = disturbances(measured, mean + 2 * std, faults, end, rule=rule, concurrency=clients,
                                           run_length=length, max_gap_s=gap)
        del measured  # and the completion order it kept
        rec["max_healthy_gap_s"] = round(gap, 3)
        rec["unavailability_s"] = unavailability(s, fault_start, end, pauses)
        rec["time_to_baseline_throughput_s"] = time_to_throughput(s, fault_start, end,
                                                                  result["baseline"]["throughput_tps"] or 0,
                                                                  pauses=pauses)
        result["recovery"] = rec
        bt, it = result["baseline"]["throughput_tps"], result["impact"]["throughput_tps"]
        b99, i99 = result["baseline"]["p99_ms"], result["impact"]["p99_ms"]
        avail = availability(s, fault_start, end, bt or 0.0, pauses)
        avail["baseline_ratio"] = availability(s, b_start, b_end, bt or 0.0, pauses)["ratio"]
        result["availability"] = avail
        result["degradation"] = {
            "throughput_pct": round((1 - it / bt) * 100, 3) if bt else None,
            "p99_increase_pct": round((i99 / b99 - 1) * 100, 3) if b99 and i99 is not None else None,
            # one definition of availability: time-based (``availability``); the share of attempts that succeeded
            # is ``success_ratio``
            "availability": avail["ratio"],
            "success_ratio": round(result["impact"]["successes"] / result["impact"]["count"], 6)
            if result["impact"]["count"] else None,
        }
    empty = window_stats(s.rows(slice(0, 0)), b_end - b_start)
    by_tx = {}
    for code, name in enumerate(s.names):
        mask = s.name == code
        if not mask.any():
            continue
        entry: dict[str, Any] = {"baseline": base_by_tx.get(code, empty)}
        if result.get("impact") is not None:
            entry["impact"] = impact_by_tx.get(code) or window_stats(s.rows(slice(0, 0)), result["impact"]["seconds"])
        attempts = int(np.count_nonzero(mask))
        outcomes = s.outcome[mask]
        entry["attempts"] = attempts
        entry["failure_rate"] = round(float(np.count_nonzero(~s.ok[mask])) / attempts, 6)
        entry["outcomes"] = {s.outcomes[o]: int(n) for o, n in enumerate(np.bincount(outcomes.astype(np.intp)))
                             if n}
        by_tx[name] = entry
    result["by_transaction"] = by_tx
    result["windows"] = windows(s, np.floor(first_ts), max(last_ts, end) + 1e-9, window_s, pauses)
    return result
