"""The game-day CronJob's container command, as the manifest writes it, as process 1 of its own PID namespace
(``unshare -p -f --mount-proc``, as in a container), against the real embedded cluster: the SIGTERM a Job's
``activeDeadlineSeconds`` sends in the middle of the method ends the run with its faults reverted and a journal
written. Only the two mount points differ from a pod: ``/results`` and ``/experiment`` are folders of the test,
and ``$(CHAOSDB_JOB_NAME)`` is expanded as the kubelet would."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.faults.probes import active_faults
from chaosdb.manifests.templates import render
from tests.polling import poll

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def _container_argv(results: Path, experiment: Path) -> list[str]:
    """The CronJob container's command, the mount points moved to the test's folders."""
    docs = render("kubernetes/gameday-cronjob", {"IMAGE": "registry.local/chaosdb:1"}).objects
    cron = next(d for d in docs if d["kind"] == "CronJob")
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    argv = [a.replace("$(CHAOSDB_JOB_NAME)", "gameday-1").replace("/results", str(results))
            .replace("/experiment/experiment.json", str(experiment)) for a in container["command"]]
    assert argv[0] == "chaos" and "args" not in container
    return [str(BIN / "chaos"), *argv[1:]]


def _pid1_of(unshare: subprocess.Popen) -> int:
    """The process unshare forked: process 1 of the new PID namespace."""
    children = Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children").read_text().split()
    return int(children[0]) if children else 0


#: the method: a partition of the leader held by a long pause (SIGTERM lands in the pause) or, with a second action
#: that waits for a health the partition prevents, by that action (SIGTERM lands inside an action: Chaos Toolkit
#: makes it the action's failure and would sleep through the pause, unless the pack sends SIGTERM again)
PARTITION = {"type": "action", "name": "partition-the-leader", "provider": {
    "type": "python", "module": "chaosdb.faults.actions", "func": "partition_node", "arguments": {"target": "leader"}}}
WAIT = {"type": "action", "name": "wait-for-a-health-the-partition-prevents", "provider": {
    "type": "python", "module": "chaosdb.postgres.actions", "func": "wait_until_healthy",
    "arguments": {"timeout_s": 600, "stable_s": 500}}}


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
@pytest.mark.parametrize("where", ["in-a-pause", "in-an-action"])
def test_sigterm_to_the_cronjobs_process_1_reverts_the_runs_faults_and_writes_the_journal(healthy, tmp_path, where):
    method = ([{**PARTITION, "pauses": {"after": 600}}] if where == "in-a-pause"
              else [PARTITION, {**WAIT, "pauses": {"after": 600}}])
    experiment = tmp_path / "experiment.json"
    experiment.write_text(json.dumps({
        "version": "1.0.0", "title": "a game day cut by its deadline", "description": "a partition, then a long wait",
        "configuration": {"chaosdb_cluster_dir": str(healthy.dir)},
        "controls": [{"name": "verdict", "provider": {"type": "python", "module": "chaosdb.experiment.control"}},
                     {"name": "faults", "provider": {"type": "python", "module": "chaosdb.faults.control"}}],
        "steady-state-hypothesis": {"title": "healthy", "probes": [
            {"type": "probe", "name": "healthy", "tolerance": True, "provider": {
                "type": "python", "module": "chaosdb.embedded.probes", "func": "cluster_is_healthy"}}]},
        # a container sees no process of the database (its own /proc): a network fault, by address
        "method": method,
        "rollbacks": [{"type": "action", "name": "revert", "provider": {
            "type": "python", "module": "chaosdb.faults.actions", "func": "revert_faults"}}],
    }))
    results = tmp_path / "results"
    results.mkdir()
    log = results / "gameday-1-chaostoolkit.log"
    argv = _container_argv(results, experiment)
    env = dict(os.environ, CHAOSDB_K8S_NAMESPACE="cockroachdb", CHAOSDB_CHAOS_NAMESPACE="chaos-testing",
               CHAOSDB_REPORT_DIR=str(results / "gameday-1"))
    # the moment to send SIGTERM: the pause after the partition, or the waiting action under way
    started = "Pausing after activity" if where == "in-a-pause" else f"Action: {WAIT['name']}"
    unshare = subprocess.Popen(["unshare", "-p", "-f", "--mount-proc", *argv], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ready = poll(lambda: unshare.poll() is not None or (log.exists() and started in log.read_text()), timeout=240)
        assert ready and unshare.poll() is None, f"the run never got there: {unshare.communicate()[0]}"
        assert any(f.get("kind") == "partition" for f in active_faults()), "the partition was not injected"
        pid1 = _pid1_of(unshare)
        assert pid1 and Path(f"/proc/{pid1}/status").read_text().count("chaos") >= 1
        nspid = [ln for ln in Path(f"/proc/{pid1}/status").read_text().splitlines() if ln.startswith("NSpid:")]
        assert nspid and nspid[0].split()[-1] == "1", nspid  # chaos itself is process 1, no shell in between
        os.kill(pid1, signal.SIGTERM)
        out, _ = unshare.communicate(timeout=180)  # the pause is 600 s: only an interrupted run ends before
    finally:
        if unshare.poll() is None:
            unshare.kill()
            unshare.wait()
    assert unshare.returncode != 0, out
    assert not [f for f in active_faults() if f.get("kind") == "partition"], "the partition outlived the run"
    journal = json.loads((results / "gameday-1-journal.json").read_text())
    assert journal["status"] in ("interrupted", "aborted", "failed"), journal["status"]
    assert "SIGTERM" in out or "SIGTERM" in log.read_text()
