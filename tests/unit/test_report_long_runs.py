"""Reports of long runs: the reader and the recovery rule look at a part of the samples at a time, and must give
exactly what reading and ruling over all of them at once gives.

* the samples reader parses a file in blocks: any block size reads the same rows (tiny blocks cut every line);
* the recovery rule looks only at transactions completed from shortly before the fault on, reaching further
  back when the disturbance may have begun earlier: on traces whose disturbance starts minutes before the fault,
  with many faults, and with failures right at the point it starts looking, the answer is the one over everything;
* a timeline of thousands of windows draws the failed attempts as one outline, not thousands of bars.
"""

from __future__ import annotations

import numpy as np
import pytest

from chaosdb.report import data as data_module
from chaosdb.report import metrics as M
from chaosdb.report.data import Samples, load_samples


def _write(path, rows):
    path.write_text("start_ts,latency_ms,name,outcome,sqlstate,retries,terminal,key\n" + "".join(rows))


def _rows(n, seed):
    rng = np.random.default_rng(seed)
    names = ["new_order", "payment", "delivery"]
    out = []
    for i in range(n):
        t = 1_800_000_000 + i * 0.002 + rng.uniform(0, 0.01)
        good = rng.random() > 0.05
        out.append(f"{t:.6f},{rng.lognormal(2, 0.5):.3f},{names[i % 3]},"
                   f"{'committed' if good else 'conn_error'},,0,{i % 8},\n")
    return out


@pytest.mark.parametrize("block", [64, 1000, 1 << 22])
def test_any_block_size_reads_the_same_rows(tmp_path, monkeypatch, block):
    d = tmp_path / "samples"
    d.mkdir()
    _write(d / "samples-w0-1.csv", _rows(3000, 1))
    _write(d / "samples-w1-1.csv", _rows(2000, 2) + ["1800000009.5,3.0,new_or"])  # a row still being written
    whole = load_samples(d)
    monkeypatch.setattr(data_module, "BLOCK_BYTES", block)
    parts = load_samples(d)
    assert len(whole) == len(parts) == 5000
    for column in ("ts", "lat", "ok"):
        assert (getattr(whole, column) == getattr(parts, column)).all(), column
    # codes follow the order labels were met in; the labels each row has are the same
    assert (np.array(whole.names)[whole.name] == np.array(parts.names)[parts.name]).all()
    assert (np.array(whole.outcomes)[whole.outcome] == np.array(parts.outcomes)[parts.outcome]).all()
    assert whole.name.dtype == np.int8 and bool(np.all(np.diff(whole.ts) >= 0))


def test_a_block_with_a_bad_row_reads_the_good_rows_of_that_block(tmp_path, monkeypatch):
    d = tmp_path / "samples"
    d.mkdir()
    rows = _rows(1000, 3)
    _write(d / "samples-w0-1.csv", rows[:500] + ["1800000000.5,not-a-number,x,committed,,0,1,\n"] + rows[500:])
    monkeypatch.setattr(data_module, "BLOCK_BYTES", 4096)
    s = load_samples(d)
    assert len(s) == 1000 and "x" not in s.names


def _trace(seed: int, fault: float, degraded_from: float, faults: int) -> Samples:
    """20 minutes at 200 tx/s, heavy tails; from *degraded_from* every transaction is slow or fails until
    *faults* outages (one every 90 s from *fault*) are over."""
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.uniform(0, 1200, 240_000))
    lat = rng.lognormal(np.log(8), 0.4, ts.size)
    ok = np.ones(ts.size, dtype=bool)
    slow = (ts >= degraded_from) & (ts < fault)
    lat[slow] = rng.uniform(80, 200, int(slow.sum()))
    for k in range(faults):
        down = (ts >= fault + 90 * k) & (ts < fault + 90 * k + 10 + 5 * k)
        ok[down] = False
        lat[down] = rng.uniform(1, 1000, int(down.sum()))
    codes = (~ok).astype(np.int8)
    return Samples(ts, lat, ok, np.zeros(ts.size, dtype=np.int8), codes, ["new_order"],
                   ["committed", "conn_error"], ["synthetic"])


def _everything(s: Samples, threshold: float, fault: float, end: float, **rule) -> dict:
    """The rule over every transaction (what it gave before it looked at a part)."""
    base = {"rule": rule.get("rule", "runs"), "run_length": rule.get("run_length", 5), "quiet_s": 5.0,
            "threshold_ms": round(threshold, 3), "order": "completion", "clock": "start"}
    return M._recovery_from(M._completed(Samples(s.ts, s.lat, s.ok, s.name, s.outcome, s.names, s.outcomes,
                                                 s.sources), threshold, -np.inf),
                            base, threshold, fault, end, rule.get("rule", "runs"), rule.get("run_length", 5), 5.0,
                            rule.get("concurrency", 0.0), rule.get("max_gap_s"))


@pytest.mark.parametrize("degraded_from", [600.0, 420.0, 200.0])  # at the fault, 3 and 6.7 minutes before it
@pytest.mark.parametrize("rule", ["runs", "literal"])
def test_looking_from_shortly_before_the_fault_gives_the_answer_over_everything(degraded_from, rule):
    s = _trace(7, 600.0, degraded_from, faults=4)
    for t in (600.0, 599.99, 690.0, 780.5):
        for run_length, gap in ((5, None), (9, 2.0)):
            got = M.recovery(s, 40.0, t, 1200.0, rule=rule, run_length=run_length, max_gap_s=gap, concurrency=2.0)
            want = _everything(s, 40.0, t, 1200.0, rule=rule, run_length=run_length, max_gap_s=gap,
                               concurrency=2.0)
            assert got == want, (t, run_length, gap)


def test_every_disturbance_of_a_long_run_is_found_from_one_completion_order():
    s = _trace(3, 300.0, 300.0, faults=8)
    faults = [{"name": f"kill {k}", "start_ts": 300.0 + 90 * k} for k in range(8)]
    found = M.disturbances(s, 40.0, faults, 1200.0)
    assert [round(d["onset_ts"]) for d in found] == [300 + 90 * k for k in range(8)]
    assert all(abs(d["duration_s"] - (10 + 5 * k)) < 1.0 for k, d in enumerate(found))
    # one completion order was worked out for all of them, from shortly before the first fault
    kept = s.cache["completed"]
    assert kept.since == pytest.approx(240.0) and kept.done.size < len(s)


def test_the_metrics_of_a_run_do_not_depend_on_where_the_rule_starts_looking(monkeypatch):
    s = _trace(11, 600.0, 500.0, faults=3)
    faults = [{"name": "kill", "start_ts": 600.0}]
    looked = M.compute_metrics(s, faults, baseline_start=60.0)

    def from_the_start(samples, threshold_ms, since):
        return real(samples, threshold_ms, -np.inf).after(since) if since > -np.inf else real(samples,
                                                                                                  threshold_ms, since)

    real = M._completed
    monkeypatch.setattr(M, "_completed", from_the_start)
    assert M.compute_metrics(s, faults, baseline_start=60.0) == looked


def test_a_timeline_of_thousands_of_windows_draws_one_outline(tmp_path):
    from chaosdb.report.plots import MAX_BARS, timeline_png

    wins = [{"start_ts": 1000.0 + 5 * i, "seconds": 5.0, "count": 10, "paused_s": 0.0, "tps": 2.0,
             "errors": i % 3, "p50_ms": 5.0, "p95_ms": 8.0, "p99_ms": 9.0} for i in range(MAX_BARS * 3)]
    metrics = {"first_ts": 1000.0, "first_fault_ts": 2000.0, "windows": wins, "window_s": 5.0,
               "baseline": {"throughput_tps": 2.0}, "recovery": {}, "fault_spans": [], "events": [],
               "excluded_pauses": []}
    drawn = timeline_png(metrics, [], tmp_path / "t.png", "long run")
    assert drawn["windows"] == MAX_BARS * 3 and (tmp_path / "t.png").stat().st_size > 5000


@pytest.mark.parametrize("pauses", [
    [(300.0, 310.0)],
    [(300.0, 310.0), (310.5, 340.0), (900.0, 905.0)],  # two pauses closer than a long latency: one group
    [(900.0, 905.0), (100.0, 130.0)],  # not in time order
    [(0.0, 5.0), (1195.0, 1300.0)],  # at the edges of the run
])
def test_pauses_are_taken_out_where_they_touch_exactly_as_over_every_row(pauses):
    s = _trace(5, 600.0, 550.0, faults=2)
    s.lat[::997] = 30_000.0  # a few 30 s transactions reach across pauses
    given = [{"start_ts": a, "end_ts": b} for a, b in pauses]
    got, want = M._without_pauses(s, given), M._without_pauses_everywhere(s, given)
    assert len(got) == len(want) < len(s)
    for column in ("ts", "lat", "ok", "name", "outcome"):
        assert (getattr(got, column) == getattr(want, column)).all(), column


def test_a_file_that_grows_while_it_is_read_gives_the_rows_it_had_when_counted(tmp_path, monkeypatch):
    """A probe reads the samples of a running load: the writer appends between the count and the parse."""
    d = tmp_path / "samples"
    d.mkdir()
    path = d / "samples-w0-1.csv"
    _write(path, _rows(500, 4))
    counted = data_module._rows

    def count_then_grow(f, size):
        n = counted(f, size)
        with open(f, "a") as fh:
            fh.writelines(_rows(300, 5))
        return n

    monkeypatch.setattr(data_module, "_rows", count_then_grow)
    monkeypatch.setattr(data_module, "BLOCK_BYTES", 1000)
    assert len(load_samples(d)) == 500
    monkeypatch.setattr(data_module, "_rows", counted)
    assert len(load_samples(d)) == 800
