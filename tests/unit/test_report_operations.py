"""Operator actions (rolling restart, scale-out, scale-in) measured by the reporter: what the action measured,
plus what the load saw during the operation and during each node's restart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from chaosdb.gameday.aggregate import _operation_stats
from chaosdb.gameday.render import _operation_rows
from chaosdb.report.build import build_report
from chaosdb.report.data import Samples
from chaosdb.report.journal import parse_ts
from chaosdb.report.operations import measure_operations, operations_from_journal

DATA = Path(__file__).resolve().parents[1] / "data" / "chaostoolkit"
T0 = 1_800_000_000.0


def _journal() -> dict:
    steps = [{"node": "node1", "start_ts": T0 + 0, "stop_s": 1.0, "sigkilled": [], "serving_s": 2.0,
              "healthy_s": 3.0, "end_ts": T0 + 10},
             {"node": "node2", "start_ts": T0 + 15, "switchover_to": "node1", "switchover_s": 2.5, "stop_s": 1.0,
              "sigkilled": [], "serving_s": 2.2, "healthy_s": 3.1, "end_ts": T0 + 25}]
    iso = lambda t: f"2027-01-15T08:00:{t:06.3f}+00:00"  # noqa: E731  (T0 is 2027-01-15T08:00:00Z)
    return {
        "run": [
            {"activity": {"name": "restart-all", "type": "action"}, "status": "succeeded", "start": iso(0),
             "end": iso(25.5), "output": {"action": "rolling_restart", "cluster": "c", "order": ["node1", "node2"],
                                          "steps": steps, "leader": "node1", "seconds": 25.4}},
            {"activity": {"name": "kill", "type": "action"}, "status": "succeeded", "start": iso(30), "end": iso(31),
             "output": {"action": "kill_nodes", "cluster": "c"}},
            {"activity": {"name": "add", "type": "action"}, "status": "failed", "start": iso(32), "end": iso(33),
             "output": {"action": "scale_out", "cluster": "c"}},
            {"activity": {"name": "health", "type": "probe"}, "status": "succeeded", "start": iso(33), "end": iso(34),
             "output": {"action": "scale_out"}},
        ],
        "rollbacks": [{"activity": {"name": "remove", "type": "action"}, "status": "succeeded", "start": iso(40),
                       "end": iso(43), "output": {"action": "scale_in", "node": "node4", "switched_over_to": None,
                                                  "seconds": 2.9, "nodes": 3, "password": "never-kept"}}],
    }


def test_the_epoch_of_the_synthetic_journal():
    assert parse_ts("2027-01-15T08:00:00+00:00") == T0


def test_operator_actions_are_read_from_the_journal_and_nothing_else():
    ops = operations_from_journal(_journal())
    assert [(o["activity"], o["action"], o["rollback"], o["status"]) for o in ops] == [
        ("restart-all", "rolling_restart", False, "succeeded"), ("add", "scale_out", False, "failed"),
        ("remove", "scale_in", True, "succeeded")]  # a probe is no operation
    rr = ops[0]
    assert rr["seconds"] == 25.5 and rr["order"] == ["node1", "node2"] and rr["leader"] == "node1"
    assert [s["node"] for s in rr["steps"]] == ["node1", "node2"]
    assert rr["steps"][1]["switchover_to"] == "node1" and rr["steps"][1]["start_ts"] == T0 + 15
    assert "password" not in ops[2] and ops[2]["node"] == "node4" and ops[2]["seconds"] == 3.0  # only the known fields are kept


def _trace(outage: tuple[float, float], rate: float = 100.0) -> Samples:
    """Transactions every 1/rate s from T0-30 to T0+50 taking 10 ms; those starting in *outage* fail."""
    ts = T0 - 30 + np.arange(int(80 * rate)) / rate
    lat = np.full(ts.size, 10.0)
    ok = ~((ts >= T0 + outage[0]) & (ts < T0 + outage[1]))
    return Samples(ts, lat, ok, np.zeros(ts.size, dtype=np.int16), np.where(ok, 0, 1).astype(np.int16),
                   ["new_order"], ["committed", "conn_error"], ["synthetic"])


def test_the_load_during_each_operation_and_each_node_step():
    s = _trace(outage=(18.0, 20.0))  # the primary's restart (step 2) loses 2 s of commits
    ops = measure_operations(operations_from_journal(_journal()), s, baseline_tps=100.0)
    rr = ops[0]
    step1, step2 = rr["steps"]
    assert step1["load"]["failed"] == 0 and step1["load"]["no_commit_s"] == pytest.approx(0.01, abs=0.005)
    assert step1["load"]["throughput_vs_baseline"] == pytest.approx(1.0, abs=0.01)
    assert step2["load"]["failed"] == 200 and step2["load"]["no_commit_s"] == pytest.approx(2.0, abs=0.02)
    assert step2["load"]["throughput_vs_baseline"] == pytest.approx(0.8, abs=0.01)
    assert rr["load"]["failed"] == 200 and rr["load"]["error_rate"] == pytest.approx(200 / 2550, abs=0.001)
    assert rr["load"]["p99_ms"] == 10.0
    assert "load" not in ops[1]  # a failed operation gets no load figures
    assert ops[2]["load"]["failed"] == 0 and ops[2]["rollback"]


def test_a_pause_of_the_load_is_not_an_outage_of_the_operation():
    s = _trace(outage=(0, 0))
    keep = ~((s.ts >= T0 + 3) & (s.ts < T0 + 6))  # the load paused 3 s (e.g. a replica check)
    s = s.subset(keep)
    pause = [{"start_ts": T0 + 3, "end_ts": T0 + 6}]
    without = measure_operations(operations_from_journal(_journal()), s, baseline_tps=100.0)
    with_pause = measure_operations(operations_from_journal(_journal()), s, pause, baseline_tps=100.0)
    assert without[0]["steps"][0]["load"]["no_commit_s"] == pytest.approx(3.0, abs=0.02)
    assert with_pause[0]["steps"][0]["load"]["no_commit_s"] < 0.05
    assert with_pause[0]["steps"][0]["load"]["throughput_vs_baseline"] == pytest.approx(1.0, abs=0.01)


def test_game_day_spreads_of_operations_over_runs():
    runs = []
    for outage in ((18.0, 19.0), (18.0, 20.0), (18.0, 23.0)):
        runs.append({"operations": measure_operations(operations_from_journal(_journal()), _trace(outage),
                                                      baseline_tps=100.0)})
    stats = _operation_stats(runs)
    assert set(stats) == {"rolling_restart"}  # the failed scale-out and the rollback scale-in are left out
    rr = stats["rolling_restart"]
    assert rr["n"] == 3 and rr["took_s"]["median"] == 25.5
    assert rr["worst_step_no_commit_s"]["min"] == pytest.approx(1.0, abs=0.02)
    assert rr["worst_step_no_commit_s"]["median"] == pytest.approx(2.0, abs=0.02)
    assert rr["worst_step_no_commit_s"]["max"] == pytest.approx(5.0, abs=0.02)
    assert rr["step_serving_s"]["n"] == 6 and rr["step_serving_s"]["max"] == 2.2
    assert rr["failed"]["median"] == 200
    rows = _operation_rows({"scenarios": [{"scenario": "rr", "operations": stats}]})
    assert rows[0][:3] == ["rr", "rolling_restart (per node)", "3"]


def test_report_of_a_real_rolling_restart_journal(tmp_path):
    journal = tmp_path / "journal.json"
    shutil.copy(DATA / "journal-rolling-restart.json", journal)
    raw = json.loads(journal.read_text())
    out = raw["run"][0]["output"]
    primary = out["steps"][-1]  # restarted last, after a switchover
    rng = np.random.default_rng(5)
    start = parse_ts(raw["run"][0]["start"]) - 30
    ts = np.arange(start, start + 120, 0.01)
    failed = (ts >= primary["start_ts"] + 3) & (ts < primary["start_ts"] + 4.5)
    lines = ["start_ts,latency_ms,name,outcome"] + [
        f"{t:.6f},{1.0 if bad else rng.normal(10, 1):.3f},new_order,{'error' if bad else 'ok'}"
        for t, bad in zip(ts, failed, strict=False)]
    samples = tmp_path / "samples.csv"
    samples.write_text("\n".join(lines) + "\n")
    res = build_report(journal, samples=samples, out_dir=tmp_path / "out")
    ops = res["metrics"]["operations"]
    assert [o["action"] for o in ops] == ["rolling_restart"]
    steps = ops[0]["steps"]
    assert [s["node"] for s in steps] == out["order"]
    assert steps[-1]["load"]["no_commit_s"] == pytest.approx(1.5, abs=0.05)
    assert all(s["load"]["failed"] == 0 for s in steps[:-1]) and steps[-1]["load"]["failed"] == 150
    # the 1.5 s of failures is the disturbance, and it falls in the primary's step only
    assert steps[-1]["load"]["disturbed_s"] == pytest.approx(1.5, abs=0.1)
    assert all(s["load"]["disturbed_s"] == 0 for s in steps[:-1])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Operations under load" in md and f"restart after switchover to {primary['switchover_to']}" in md
    assert "Operations under load" in (tmp_path / "out" / "report.html").read_text()


def test_disturbed_seconds_are_attributed_to_the_node_step_they_fall_in():
    s = _trace(outage=(0, 0))
    dist = [{"onset_ts": T0 + 1, "end_ts": T0 + 1.5}, {"onset_ts": T0 + 17, "end_ts": T0 + 21},
            {"onset_ts": T0 + 42, "end_ts": None}]  # the last one not recovered: until the run's end
    ops = measure_operations(operations_from_journal(_journal()), s, baseline_tps=100.0, disturbances=dist,
                             run_end=T0 + 50)
    step1, step2 = ops[0]["steps"]
    assert step1["load"]["disturbed_s"] == 0.5 and step2["load"]["disturbed_s"] == 4.0
    assert ops[0]["load"]["disturbed_s"] == 4.5
    assert ops[2]["load"]["disturbed_s"] == 1.0  # scale-in from +40 to +43, disturbed from +42 on
    stats = _operation_stats([{"operations": ops}])
    assert stats["rolling_restart"]["worst_step_disturbed_s"]["median"] == 4.0
    without = _operation_stats([{"operations": measure_operations(operations_from_journal(_journal()), s)}])
    assert without["rolling_restart"]["worst_step_disturbed_s"] is None  # not measured is not zero
