"""TPC-C load on the real embedded cluster: Locust headless, the control in `chaos run`, integrity after chaos."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from chaosdb.embedded.processes import pid_alive
from chaosdb.load import integrity, probes
from chaosdb.workloads.samples import read_samples
from chaosdb.workloads.tpcc.rand import DECK_CARDS, DECK_SIZE
from tests.chaosrun import ChaosRun

pytestmark = pytest.mark.integration

CHAOS = str(Path(sys.executable).parent / "chaos")


def test_loader_is_idempotent_and_resumable(tpcc_db):
    from chaosdb.workloads.tpcc import loader
    from chaosdb.workloads.tpcc.rand import Scale

    again = loader.load(tpcc_db.dsn(), Scale.reduced(2, 10))
    assert again["loaded"] == [] and "warehouse:2" in again["already_loaded"]
    with psycopg.connect(tpcc_db.dsn()) as conn:
        # simulate an interrupted load of a third warehouse: nothing of it is there, then it is loaded
        assert conn.execute("SELECT count(*) FROM warehouse WHERE w_id = 3").fetchone()[0] == 0
    grown = loader.load(tpcc_db.dsn(), Scale.reduced(3, 10))
    assert grown["loaded"] == ["warehouse:3"]
    with psycopg.connect(tpcc_db.dsn()) as conn:
        assert conn.execute("SELECT count(*) FROM district WHERE d_w_id = 3").fetchone()[0] == 10
        assert conn.execute("SELECT count(*) FROM customer WHERE c_w_id = 3").fetchone()[0] == 3000
        assert conn.execute("SELECT count(*) FROM new_order WHERE no_w_id = 3").fetchone()[0] == 900
        # put the session database back to 2 warehouses for the other tests
        for table, col in (("order_line", "ol_w_id"), ("new_order", "no_w_id"), ("orders", "o_w_id"),
                           ("history", "h_w_id"), ("customer", "c_w_id"), ("district", "d_w_id"),
                           ("stock", "s_w_id"), ("warehouse", "w_id")):
            conn.execute(f"DELETE FROM {table} WHERE {col} = 3")
        conn.execute("DELETE FROM tpcc_load_progress WHERE part = 'warehouse:3'")
        conn.execute("UPDATE tpcc_meta SET v = '2' WHERE k = 'warehouses'")
    with pytest.raises(Exception, match="same scale"):
        loader.load(tpcc_db.dsn(), Scale.reduced(2, 5))
    assert integrity.tpcc_is_consistent(dsn=tpcc_db.dsn())


def _consistent_with(count: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    """Is *count* out of *n* consistent with a probability *p* (normal approximation of the binomial, with a
    continuity margin of one)? The tolerance follows from how many transactions the run managed, so a busy
    machine's shorter sample widens it instead of failing the test."""
    mean, sd = n * p, (n * p * (1 - p)) ** 0.5
    return abs(count - mean) <= sigmas * sd + 1


def test_locust_headless_30s_mix_samples_and_live_probes(tpcc_db, tmp_path, healthy):
    samples = tmp_path / "samples"
    env = dict(os.environ, CHAOSDB_LOAD_DSN=tpcc_db.dsn())
    proc = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", str(Path(__file__).parents[2] / "load" / "tpcc.py"), "--headless",
         "-u", "8", "-r", "8", "-t", "30s", "--csv", str(tmp_path / "locust"), "--only-summary",
         "--json-file", str(tmp_path / "locust"),
         "--chaosdb-samples-dir", str(samples)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        config = {"chaosdb_samples_dir": str(samples)}
        deadline = time.monotonic() + 60  # Locust starts its users, then 10 s of samples for the probes
        while time.monotonic() < deadline and not any(True for _ in read_samples(samples)):
            time.sleep(0.5)
        time.sleep(14)
        p99 = probes.latency_percentile(99, window_s=10, configuration=config)
        p50 = probes.latency_percentile(50, window_s=10, configuration=config)
        assert 0 < p50 <= p99
        assert probes.error_rate(window_s=10, configuration=config) == 0.0
        tps = probes.throughput_tps(window_s=10, configuration=config)
        assert tps > 10
        assert probes.tpmc(window_s=20, configuration=config) > 0
        assert probes.throughput_tps(window_s=10, transaction="payment", configuration=config) < tps
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-2000:]
    rows = list(read_samples(samples))
    mix = collections.Counter(s.name for s in rows)
    assert set(mix) == {"new_order", "payment", "order_status", "delivery", "stock_level"}
    # the shuffled 100-card deck (45/43/4/4/4): the spec's minimum shares, New-Order the rest
    for name, cards in DECK_CARDS.items():
        assert _consistent_with(mix[name], len(rows), cards / DECK_SIZE), (name, mix)
    # every transaction Locust counted is a sample row, and every sample is complete (Locust's final
    # stats CSV is written before the last requests are counted; its JSON report is complete)
    locust_counts = {e["name"]: e["num_requests"] for e in json.loads((tmp_path / "locust.json").read_text())}
    assert dict(mix) == locust_counts
    assert all(s.start_ts > 1e9 and s.latency_ms > 0 and s.outcome in ("committed", "rollback") for s in rows)
    rollbacks = sum(1 for s in rows if s.outcome == "rollback")
    assert _consistent_with(rollbacks, mix["new_order"], 0.01), f"{rollbacks} of {mix['new_order']}: not about 1 %"
    assert all(s.key.count(":") == 2 for s in rows if s.name == "new_order" and s.outcome == "committed")
    assert integrity.tpcc_is_consistent(dsn=tpcc_db.dsn())
    time.sleep(8)  # the load has stopped: a 5 s window ending 2 s ago is empty now
    with pytest.raises(Exception, match="no transaction started"):
        probes.latency_percentile(99, window_s=5, configuration={"chaosdb_samples_dir": str(samples)})


def _experiment(tmp_path: Path, cluster_dir: str, method: list, control_args: dict, hypothesis: bool = True) -> Path:
    exp = {
        "version": "1.0.0",
        "title": "test",
        "description": "test",
        "configuration": {"chaosdb_cluster_dir": cluster_dir},
        "controls": [{"name": "load", "provider": {"type": "python", "module": "chaosdb.load.control",
                                                    "arguments": control_args}}],
        "method": method,
        "rollbacks": [{"type": "action", "name": "restart", "provider": {
            "type": "python", "module": "chaosdb.embedded.actions", "func": "restart_nodes",
            "arguments": {"wait_healthy_s": 90}}}],
    }
    if hypothesis:
        exp["steady-state-hypothesis"] = {"title": "fast and correct", "probes": [
            {"type": "probe", "name": "p99", "tolerance": {"type": "range", "range": [0, 2000]},
             "provider": {"type": "python", "module": "chaosdb.load.probes", "func": "latency_percentile",
                          "arguments": {"percentile": 99, "window_s": 5}}}]}
    path = tmp_path / "experiment.json"
    path.write_text(json.dumps(exp))
    return path


# A chaos run with the load control that kills the primary, then the integrity checks and the reporter on its
# real journal: tests/integration/test_quickstart.py (the quickstart experiment does exactly that).


def test_integrity_checks_detect_damage(tpcc_db, tmp_path):
    """The checks can fail: break an invariant and remove an acknowledged order, then repair."""
    config = {"chaosdb_cluster_dir": tpcc_db.dir}
    with psycopg.connect(tpcc_db.dsn()) as conn:
        conn.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 1")
        row = conn.execute("SELECT o_w_id, o_d_id, o_id, o_ol_cnt FROM orders ORDER BY o_id DESC LIMIT 1").fetchone()
        saved = conn.execute("SELECT * FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
                             row[:3]).fetchone()
        conn.execute("DELETE FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s", row[:3])
    try:
        result = integrity.tpcc_consistency(configuration=config)
        assert not result["ok"] and not result["conditions"]["1"]["ok"]
        assert result["conditions"]["1"]["examples"][0]["warehouse"] == 1 and "1" in result["failed"]
        samples = tmp_path / "s"
        samples.mkdir()
        (samples / "samples-w0-1.csv").write_text(
            "start_ts,latency_ms,name,outcome,sqlstate,retries,terminal,key\n"
            f"1.0,1.0,new_order,committed,,0,0,{row[0]}:{row[1]}:{row[2]}\n"
            f"2.0,1.0,new_order,ambiguous,OperationalError,0,0,{row[0]}:{row[1]}:999999\n")
        ledger = integrity.acknowledged_writes(samples=str(samples), configuration=config)
        assert ledger["missing"] == 1 and ledger["missing_examples"] == [f"{row[0]}:{row[1]}:{row[2]}"]
        assert ledger["ambiguous"] == 1 and ledger["ambiguous_present"] == 0
    finally:
        with psycopg.connect(tpcc_db.dsn()) as conn:
            conn.execute("UPDATE district SET d_ytd = d_ytd - 1 WHERE d_w_id = 1 AND d_id = 1")
            conn.execute("INSERT INTO orders VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", saved)
    assert integrity.tpcc_is_consistent(configuration=config)


def test_interrupted_chaos_run_still_stops_the_load(tpcc_db, tmp_path, healthy):
    samples = tmp_path / "samples"
    method = [{"type": "action", "name": "wait", "provider": {"type": "python", "module": "chaosdb.embedded.probes",
                                                             "func": "cluster_is_healthy", "arguments": {}},
               "pauses": {"after": 120}}]
    exp = _experiment(tmp_path, tpcc_db.dir, method, {"users": 2, "warmup_s": 1, "baseline_s": 0,
                                                            "samples_dir": str(samples)},
                      hypothesis=False)
    run = ChaosRun(["--no-log-file", "run", str(exp), "--journal-path", str(tmp_path / "journal.json")],
                   cwd=tmp_path)
    try:  # the phase under test: the load runs and the method sleeps in its pause
        assert run.wait_for("Pausing after activity"), run.output[-2000:]
    finally:
        run.interrupt()
    out = run.output
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert journal["status"] == "interrupted", out[-2000:]
    load = journal["chaosdb_load"]
    assert load["stop_ts"] and not pid_alive(load["pid"])
    assert load["transactions"] > 0


def test_load_that_cannot_start_interrupts_before_the_method(tmp_path, pg_cluster):
    method = [{"type": "action", "name": "must-not-run", "provider": {
        "type": "python", "module": "chaosdb.embedded.actions", "func": "kill_node", "arguments": {"target": "leader"}}}]
    exp = _experiment(tmp_path, pg_cluster.dir, method,
                      {"users": 1, "warmup_s": 1, "samples_dir": str(tmp_path / "s"), "start_timeout_s": 15,
                       "dsn": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1"})
    before = pg_cluster.node("node1")
    run = subprocess.run([CHAOS, "--no-log-file", "run", str(exp), "--journal-path", str(tmp_path / "journal.json")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert journal["status"] == "refused"
    assert journal["run"] == []
    assert "chaosdb load control" in run.stdout + run.stderr
    assert before.path.exists()


def test_ycsb_workload_a_on_sql(pg_cluster, tmp_path, healthy):
    from chaosdb.workloads import ycsb

    assert ycsb.load(pg_cluster.dsn(), 2000)["records"] == 2000
    assert ycsb.load(pg_cluster.dsn(), 2000)["inserted"] == 0
    samples = tmp_path / "samples"
    env = dict(os.environ, CHAOSDB_LOAD_DSN=pg_cluster.dsn())
    run = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(Path(__file__).parents[2] / "load" / "ycsb.py"), "--headless",
         "-u", "4", "-r", "4", "-t", "10s", "--only-summary", "--ycsb-records", "2000",
         "--chaosdb-samples-dir", str(samples)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = list(read_samples(samples))
    kinds = collections.Counter(s.name for s in rows)
    assert set(kinds) == {"read", "update"} and 0.4 < kinds["read"] / len(rows) < 0.6
    assert all(s.outcome == "committed" for s in rows)
    assert all(s.key.startswith("user") for s in rows if s.name == "update")


def test_calibration_finds_a_sustainable_rate(tpcc_db, tmp_path, healthy):
    from chaosdb.load.calibrate import calibrate

    result = calibrate(tpcc_db.dsn(), tmp_path / "cal", users=4, step_s=3, settle_s=2, max_steps=2, step_pct=10)
    assert result["probe"]["throughput_tps"] > 0
    assert len(result["steps"]) >= 1
    first = result["steps"][0]
    assert abs(first["offered_tps"] - result["probe"]["throughput_tps"] / 2) < 0.01
    if result["sustainable_tps"] is not None:
        assert result["sustainable_tps"] >= first["offered_tps"]
        assert first["ratio"] >= 0.95
