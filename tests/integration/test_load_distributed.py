"""The load control in Locust's master/worker mode on the real embedded cluster: workers it starts and a worker
started elsewhere (here: by the test, as a user would on another machine), samples merged at the master, a
worker lost mid-run reported."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from chaosdb.embedded.processes import pid_alive
from chaosdb.load import control
from chaosdb.load.distributed import lost_workers, read_workers
from chaosdb.load.distributed_control import master_address
from chaosdb.workloads.samples import read_samples, sample_files
from tests.chaosrun import CHAOSDB
from tests.polling import poll

pytestmark = pytest.mark.integration



def test_master_and_workers_merge_samples_and_a_lost_worker_is_reported(tpcc_db, tmp_path, healthy, caplog):
    samples = tmp_path / "samples"
    port = master_address("127.0.0.1").port
    # the "remote" worker: what a user runs on another machine, with that machine's DSN
    with open(tmp_path / "remote.log", "ab") as log:
        remote = subprocess.Popen([CHAOSDB, "load", "worker", "--master", f"127.0.0.1:{port}"],
                                  env=dict(os.environ, CHAOSDB_LOAD_DSN=tpcc_db.dsn()), stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    record: dict = {}
    try:
        with caplog.at_level(logging.INFO, logger="chaostoolkit"):
            started = control.start_load(users=6, warmup_s=2, baseline_s=3, samples_dir=str(samples), workers=2,
                                         remote_workers=1, master_port=port, progress_s=1.0,
                                         configuration={"chaosdb_cluster_dir": tpcc_db.dir})
            master_env = Path(f"/proc/{started['pid']}/environ").read_bytes()
            assert b"CHAOSDB_LOAD_DSN" not in master_env  # the master sends its options to every worker
            assert started["master"]["connect"] == f"127.0.0.1:{port}" and len(started["worker_pids"]) == 2
            # every worker's samples reach the master's directory
            seen = poll(lambda: (ws := read_workers(samples)) and len(ws) == 3 and all(w["samples"] > 0 for w in ws)
                        and ws, timeout=120, every=0.5)
            assert seen, read_workers(samples)
            os.killpg(remote.pid, signal.SIGKILL)
            killed = time.time()
            remote.wait(timeout=10)
            gone = poll(lambda: lost_workers(read_workers(samples)), timeout=120, every=0.5)
            assert gone and len(gone) == 1, read_workers(samples)
            # the load goes on with the other two
            poll(lambda: any(s.start_ts > gone[0]["gone_ts"] + 1 for s in read_samples(samples)), timeout=60)
            time.sleep(2)
            record = control.stop_load()
    finally:
        if remote.poll() is None:
            os.killpg(remote.pid, signal.SIGKILL)
        control.stop_load()
    lost = record["workers_lost"]
    assert len(lost) == 1 and lost[0]["gone"] == "lost" and lost[0]["mid_run"], record["workers"]
    assert lost[0]["gone_ts"] >= killed - 1 and lost[0]["last_batch_ts"] <= lost[0]["gone_ts"] + 0.5
    # the two started here stayed until the load stopped (then they quit, which is not a loss)
    stayed = [w for w in record["workers"] if w["gone"] != "lost"]
    assert len(stayed) == 2 and not any(w.get("mid_run") for w in stayed), record["workers"]
    assert "was lost (no heartbeat)" in caplog.text
    # one samples file per worker, written by the master; terminals of different workers never overlap
    files = sample_files(samples)
    assert len(files) == 3 and all(f.name.startswith("samples-m") for f in files)
    terminals = [{s.terminal for s in read_samples(f)} for f in files]
    assert all(terminals) and not (terminals[0] & terminals[1] or terminals[0] & terminals[2]
                                   or terminals[1] & terminals[2]), terminals
    counted = sum(1 for _ in read_samples(samples))
    assert counted == record["transactions"] == sum(w["samples"] for w in record["workers"])
    assert record["by_outcome"].get("committed", 0) > 50
    # nothing of the load is left
    assert not pid_alive(record["pid"]) and not any(pid_alive(p) for p in record["worker_pids"])


def test_ycsb_in_master_worker_mode_merges_every_workers_samples(pg_cluster, tmp_path, healthy):
    from chaosdb.workloads import ycsb

    ycsb.load(pg_cluster.dsn(), 2000)
    samples = tmp_path / "samples"
    try:
        control.start_load(workload="ycsb", records=2000, users=4, warmup_s=1, baseline_s=3,
                           samples_dir=str(samples), workers=2, progress_s=0,
                           configuration={"chaosdb_cluster_dir": pg_cluster.dir})
        assert poll(lambda: len(read_workers(samples)) == 2 and all(w["samples"] > 0 for w in read_workers(samples)),
                    timeout=180, every=0.5), read_workers(samples)
    finally:
        record = control.stop_load()
    rows = list(read_samples(samples))
    assert {s.name for s in rows} == {"read", "update"} and all(s.outcome == "committed" for s in rows)
    assert len(sample_files(samples)) == 2 and record["workers_lost"] == []
    assert len(rows) == record["transactions"] == sum(w["samples"] for w in record["workers"])
    per_file = [{s.terminal for s in read_samples(f)} for f in sample_files(samples)]
    assert not per_file[0] & per_file[1], per_file
