"""A real chaos run on the embedded cluster (kill the primary's node under TPC-C load, restart it): the report
draws the fault while the node was down, records what the database did where the cluster's own history says it
happened (Patroni's /history, etcd's leader), the outage probes answer during the run, and the report is rebuilt
from its folder alone."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
import requests

from chaosdb.etcd import probes as etcd_probes
from chaosdb.report.build import build_report
from tests.chaosrun import ChaosRun

pytestmark = pytest.mark.integration


def _experiment(tmp_path: Path, cluster_dir: str) -> Path:
    probe = lambda name, func, args=None: {  # noqa: E731
        "type": "probe", "name": name, "tolerance": {"type": "range", "range": [0, 600]},
        "provider": {"type": "python", "module": "chaosdb.report.probes", "func": func, "arguments": args or {}}}
    exp = {
        "version": "1.0.0", "title": "kill the primary's node, then restart it", "description": "test",
        "configuration": {"chaosdb_cluster_dir": cluster_dir},
        "controls": [
            {"name": "load", "provider": {"type": "python", "module": "chaosdb.load.control", "arguments": {
                "users": 4, "warmup_s": 3, "baseline_s": 10, "samples_dir": str(tmp_path / "run" / "samples")}}},
            {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                            "arguments": {"out_dir": str(tmp_path / "run")}}}],
        "steady-state-hypothesis": {"title": "outage measured", "probes": [
            probe("gap", "longest_commit_gap_s"), probe("new-leader", "time_to_new_leader_s", {"source": "patroni"})]},
        "method": [
            {"type": "action", "name": "kill-the-primary-node", "pauses": {"after": 25}, "provider": {
                "type": "python", "module": "chaosdb.embedded.actions", "func": "kill_node",
                "arguments": {"target": "leader"}}},
            {"type": "action", "name": "restart-the-killed-node", "pauses": {"after": 8}, "provider": {
                "type": "python", "module": "chaosdb.embedded.actions", "func": "restart_nodes",
                "arguments": {"nodes": "all", "wait_healthy_s": 90}}}],
        "rollbacks": [{"type": "action", "name": "restart", "provider": {
            "type": "python", "module": "chaosdb.embedded.actions", "func": "restart_nodes",
            "arguments": {"wait_healthy_s": 90}}}],
    }
    path = tmp_path / "experiment.json"
    path.write_text(json.dumps(exp))
    return path


def _patroni_history(layout) -> list:
    for node in layout.nodes:
        try:
            return requests.get(f"http://{node.host}:{node.api_port}/history", timeout=5).json()
        except requests.RequestException:
            continue
    raise AssertionError("no Patroni member answered /history")


def test_fault_span_database_events_and_outage_probes_of_a_real_run(tpcc_db, tmp_path, healthy):
    before = _patroni_history(tpcc_db)
    journal_path = tmp_path / "journal.json"
    run = ChaosRun(["--no-log-file", "run", str(_experiment(tmp_path, tpcc_db.dir)), "--journal-path",
                    str(journal_path)], cwd=tmp_path)
    assert run.proc.wait(timeout=400) == 0, run.output[-3000:]
    journal = json.loads(journal_path.read_text())
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    kill, restart = journal["run"][0], journal["run"][1]
    start = lambda r: datetime.fromisoformat(r["start"]).timestamp()  # noqa: E731

    # the fault is drawn from the kill to the restart, not for the kill's own fraction of a second
    span = m["fault_spans"][0]
    assert span["start_ts"] == pytest.approx(start(kill), abs=0.01)
    assert span["end_ts"] == pytest.approx(start(restart), abs=0.01) and "restart-the-killed-node" in span["ended_by"]
    assert span["seconds"] > 20

    # Patroni's own history: one new timeline, promoted after the kill and before our watcher saw the new timeline
    after = _patroni_history(tpcc_db)
    assert len(after) == len(before) + 1
    timeline, _lsn, _reason, promoted_at = after[-1][:4]
    promoted = datetime.fromisoformat(promoted_at).timestamp()
    events = [e for e in m["events"] if e["source"] == "patroni"]
    changed = next(e for e in events if e["event"] == "term_changed")
    elected = next(e for e in events if e["event"] == "leader_elected")
    assert changed["from"] == timeline and changed["to"] == timeline + 1
    assert start(kill) <= promoted <= changed["ts"] + 0.5, (promoted, changed)
    killed = kill["output"]["targets"][0]["name"]
    first_change = next(e for e in events if e["event"] in ("leader_lost", "leader_elected"))
    assert first_change["from"] == killed and elected["to"] != killed  # (lost, then elected, or at once)
    if len(after[-1]) > 4:  # Patroni >= 3.0 names the new leader
        assert after[-1][4] == elected["to"]
    # the node left and came back, and the replicas caught up again, in that order
    kinds = [(e["event"], e.get("member")) for e in events]
    left = kinds.index(("member_left", killed))
    assert ("member_rejoined", killed) in kinds[left:]
    assert any(e["event"] == "replicas_converged" and e["ts"] > start(restart) for e in events)
    # etcd: the watcher's last word on its leader is etcd's answer now
    etcd_leaders = [e.get("to", e.get("leader")) for e in m["events"] if e["source"] == "etcd"
                    and e["event"] in ("observed", "leader_elected")]
    assert etcd_leaders and etcd_leaders[-1] == etcd_probes.etcd_leader({"chaosdb_cluster_dir": tpcc_db.dir})

    # time to each effect, in order, the first commit after the election among them
    steps = {(s["step"], s["source"]): s for s in m["effects"]}
    assert steps["new leader elected", "patroni"]["at_s"] == pytest.approx(elected["at_s"])
    assert steps["first commit after the election", "samples"]["leader"] == elected["to"]
    assert steps["first commit after the election", "samples"]["at_s"] >= elected["at_s"]
    assert [s["at_s"] for s in m["effects"]] == sorted(s["at_s"] for s in m["effects"])

    # the outage probes of the hypothesis after the method measured the same outage as the report
    outputs = {p["activity"]["name"]: p["output"] for p in journal["steady_states"]["after"]["probes"]}
    assert outputs["new-leader"] == pytest.approx(elected["ts"] - start(kill), abs=0.05)
    assert outputs["gap"] == pytest.approx(m["recovery"]["unavailability_s"], abs=0.5)
    assert outputs["gap"] > 5
    before_method = {p["activity"]["name"]: p["output"] for p in journal["steady_states"]["before"]["probes"]}
    assert before_method["new-leader"] == 0 and before_method["gap"] < outputs["gap"] / 3  # the baseline's gaps

    # the report's folder alone rebuilds the same report
    alone = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "run", alone)
    shutil.rmtree(tmp_path / "run")
    rebuilt = build_report(alone / "journal.json", out_dir=alone / "rebuilt")["metrics"]
    for key in ("fault_spans", "events", "effects", "recovery", "windows", "baseline", "impact"):
        assert rebuilt[key] == m[key], key
    assert "What the database did" in (alone / "rebuilt" / "report.md").read_text()
