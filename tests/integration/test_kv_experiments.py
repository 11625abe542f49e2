"""Short versions of the etcd leader-versus-follower experiments, run for real with `chaos run` on the session's
embedded cluster (YCSB-A on its etcd): the fault on the leader must hurt clients more than the same fault on a
follower, nothing acknowledged may be lost, and each run leaves its report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.load import integrity
from chaosdb.report.data import load_samples
from chaosdb.report.journal import parse_ts
from tools import make_kv_experiments as gen

pytestmark = pytest.mark.integration

CHAOS = str(Path(sys.executable).parent / "chaos")


@pytest.fixture(autouse=True, scope="module")
def clean_etcd_afterwards(pg_cluster):
    """The runs put ~100,000 records into the session cluster's etcd (Patroni's DCS): give the space back."""
    yield
    from chaosdb.workloads import kv
    kv.clear_etcd(",".join(pg_cluster.etcd_urls))


def _run(name: str, cluster_dir: str, tmp_path: Path) -> dict:
    exp = gen.build(name, short=True)
    exp["configuration"] = {"chaosdb_cluster_dir": cluster_dir, "report_dir": str(tmp_path / name),
                            "baseline_s": "8", "address_base": "unused"}
    ctl = next(c for c in exp["controls"] if c["name"] == "embedded-cluster")
    ctl["provider"]["arguments"].update(down_after=False, address_base="127.0.0.21")  # the session cluster
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(exp))
    run = subprocess.run([CHAOS, "--log-file", str(tmp_path / f"{name}.log"), "run", str(path), "--journal-path",
                          str(tmp_path / f"{name}.journal.json")], capture_output=True, text=True, timeout=400,
                         cwd=tmp_path)
    journal = json.loads((tmp_path / f"{name}.journal.json").read_text())
    log = (tmp_path / f"{name}.log").read_text() if (tmp_path / f"{name}.log").exists() else ""
    assert journal["status"] == "completed", (run.stdout + run.stderr)[-2000:] + "\n--- log ---\n" + log[-3000:]
    metrics = json.loads((tmp_path / name / "metrics.json").read_text())
    return {"journal": journal, "metrics": metrics, "samples": tmp_path / name / "samples"}


def _started(run: dict, prefix: str) -> float:
    """When the run's first activity whose name starts with *prefix* started (epoch seconds)."""
    entry = next(x for x in run["journal"]["run"] if x["activity"]["name"].startswith(prefix))
    started = parse_ts(entry["start"])
    assert started is not None, entry
    return started


def _longest_stall_before_restart(run: dict) -> dict:
    """The longest span without a completed operation from the kill to the killed member's restart, and where it
    began (seconds after the kill). The restart is left out: the member coming back replays its log and catches up
    from the leader on the same disk and cores, and a busy machine can stall every member for a moment then,
    whichever role was killed; the kill itself is what tells a leader from a follower."""
    kill, restart = _started(run, "kill-the-etcd-"), _started(run, "restart-the-killed-member")
    done = load_samples(run["samples"]).completions(kill, restart)
    edges = [kill, *done.tolist(), restart]
    gaps = [(b - a, a - kill) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    gap, at = max(gaps)
    return {"stall_s": round(gap, 3), "at_s": round(at, 3), "window_s": round(restart - kill, 3),
            "unavailability_s": run["metrics"]["recovery"]["unavailability_s"]}


def _nothing_acknowledged_lost(name: str, run: dict, cluster_dir: str, tmp_path: Path) -> None:
    """The kill succeeded, etcd is healthy afterwards and no acknowledged put is lost. The hypothesis stops at
    its first failing probe: when that is a load probe (latency or errors, which a busy machine can push over
    its limit), the ledger is checked here, right after the run, with the same probe function."""
    runs = {x["activity"]["name"]: x for x in run["journal"]["run"]}
    assert any(k.startswith("kill-the-etcd-") and v["status"] == "succeeded" for k, v in runs.items())
    after = {p["activity"]["name"]: p for p in run["journal"]["steady_states"]["after"]["probes"]}
    assert after["etcd-is-healthy"]["output"] is True
    if "acknowledged-puts-lost" in after:
        assert after["acknowledged-puts-lost"]["output"] == 0
        return
    failed = [n for n, p in after.items() if not p["tolerance_met"]]
    assert failed and failed[0] in ("p99-vs-baseline-last-10s", "error-rate-last-10s"), after
    lost = integrity.kv_lost_acknowledged_writes(samples=str(tmp_path / name / "samples"),
                                                 configuration={"chaosdb_cluster_dir": cluster_dir})
    assert lost == 0


def test_kill_leader_versus_follower(pg_cluster, tmp_path, healthy):
    leader = _run("kill-leader", pg_cluster.dir, tmp_path)
    _nothing_acknowledged_lost("kill-leader", leader, pg_cluster.dir, tmp_path)
    follower = _run("kill-follower", pg_cluster.dir, tmp_path)
    _nothing_acknowledged_lost("kill-follower", follower, pg_cluster.dir, tmp_path)
    # killing the leader forces an election: for a while no operation completes; killing a follower does
    # not (the single slowest operation is noise at ~1,000 operations/s: the game-day example of 3 runs
    # each shows 1.0-1.6 s without a completed operation for the leader, 0.0-0.2 s for a follower). Measured
    # from the kill to the restart: a CI run beside the other worker's load once saw 1.5 s without a completion
    # over a follower's whole run (restart included) and 1.0 s for the leader's.
    lu, fu = (_longest_stall_before_restart(r) for r in (leader, follower))
    assert lu["stall_s"] > fu["stall_s"] and lu["stall_s"] > 0.5, (lu, fu)


def test_cpu_quota_on_leader_versus_follower(pg_cluster, tmp_path, healthy):
    leader = _run("cpu-leader-5pct", pg_cluster.dir, tmp_path)
    follower = _run("cpu-follower-5pct", pg_cluster.dir, tmp_path)
    # etcd's answer to a CPU-starved leader is an election: the followers stop hearing it, wait out the
    # election timeout (1 s) and elect one of themselves, so the clients see a stall, then a new leader. A
    # starved follower changes nothing (the leader has its quorum with the other). The stall is the robust
    # difference: quiet, 0.92 s without a completed operation for the leader and 0.02 s for the follower. The
    # throughput over the impact window is not: it depends on how soon the leadership moved and on what the
    # rest of the machine did meanwhile (-47 % vs +12 % quiet, 7 % vs 18 % in a CI run beside the other
    # test worker's load)
    lu, fu = (r["metrics"]["recovery"]["unavailability_s"] for r in (leader, follower))
    assert lu > fu and lu > 0.5, (leader["metrics"]["recovery"], follower["metrics"]["recovery"])
