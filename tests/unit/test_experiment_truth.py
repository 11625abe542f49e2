"""Bad input refused before anything starts, a failed action stops the method, and the run ends with the truth.

The end-to-end checks run the real ``chaos validate`` / ``chaos run`` on small experiments whose activities
need no cluster (a stdlib probe for the hypothesis, chaosdb actions pointed at a cluster directory that does
not exist, which fail at once).
"""

from __future__ import annotations

import copy
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from chaoslib.exceptions import InvalidActivity

from chaosdb.clusters.postgres_ha import operations as local_operations
from chaosdb.core.arguments import CheckedSignature, problems_in_call
from chaosdb.embedded import actions as local_actions
from chaosdb.experiment.checks import experiment_problems
from chaosdb.experiment.verdict import verdict_of
from chaosdb.faults import actions as fault_actions
from chaosdb.load import probes as load_probes

CHAOS = str(Path(sys.executable).parent / "chaos")
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# argument values, checked by the signature chaoslib binds


@pytest.mark.parametrize("func, arguments, message", [
    (local_actions.kill_node, {"target": "priamry"}, "unknown target priamry: selectors are leader, primary"),
    (local_actions.kill_node, {"target": "priamry"}, "did you mean 'primary'?"),
    (local_actions.kill_node, {"count": -1}, "count must be a positive integer or 'all', got -1"),
    (local_actions.restart_nodes, {"wait_healthy_s": -90}, "wait_healthy_s must be >= 0 and <= 2592000 (seconds; at most 30 days), "
                                                                       "got -90"),
    (local_actions.stop_database, {"method": "switchover!"}, "method must be one of switchover, shutdown"),
    (local_operations.rolling_restart, {"wait_healthy_s": 0}, "wait_healthy_s must be > 0"),
    (fault_actions.limit_cpu, {"period_s": 2}, "period_s must be >= 0.001 and <= 1"),
    (fault_actions.partition_node, {"scope": "peer"}, "did you mean 'peers'?"),
    (fault_actions.lose_packets, {"loss_percent": 100}, "loss_percent must be > 0 and < 100"),
    (fault_actions.delay_traffic, {"delay_ms": 10, "jitter_ms": 20}, "jitter_ms must be between 0 and delay_ms"),
    (load_probes.latency_percentile, {"percentile": 0}, "percentile must be > 0 and <= 100"),
    (load_probes.error_rate, {"window_s": 0}, "window_s must be > 0 and <= 2592000 (seconds; at most 30 days), got 0"),
])
def test_bad_values_are_refused_with_the_actions_message(func, arguments, message):
    sig = inspect.signature(func)
    assert isinstance(sig, CheckedSignature)
    with pytest.raises(InvalidActivity, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        sig.bind(**arguments)
    assert any(message in p for p in problems_in_call(func, arguments))


@pytest.mark.parametrize("func, arguments", [
    (local_actions.kill_node, {"target": "leader", "count": "all"}),
    (local_actions.kill_node, {"target": "node1,node3", "count": 2}),
    (local_actions.kill_node, {"target": ["node2"]}),
    (local_actions.restart_nodes, {"nodes": "all", "wait_healthy_s": "90"}),  # configuration values are strings
    (local_operations.cluster_up, {"nodes": 5}),
    (local_operations.scale_in, {}),
    (fault_actions.limit_cpu, {"target": "replica", "quota_s": 0.05, "period_s": 1.0, "components": ["postgres"]}),
    (fault_actions.revert_faults, {"kinds": ["cpu", "delay"], "target": "node2"}),
    (local_actions.kill_node, {"target": "${victim}", "count": "${how_many}"}),  # known only at run time
])
def test_good_values_pass(func, arguments):
    inspect.signature(func).bind(**arguments)


def test_every_activity_has_checked_typed_arguments():
    """Every activity of ``chaos discover`` binds through the value checks, and every argument is typed."""
    import chaosdb

    discovered = chaosdb.discover()["activities"]
    assert len(discovered) > 100
    untyped = [(a["name"], arg["name"]) for a in discovered for arg in a.get("arguments", []) if "type" not in arg]
    assert untyped == []
    # a number's type is named (postponed annotations, ``from __future__ import annotations``, make every argument
    # of a module "object" in chaos discover)
    vague = []
    for a in discovered:
        params = inspect.signature(getattr(__import__(a["mod"], fromlist=[a["name"]]), a["name"])).parameters
        vague += [(a["name"], arg["name"]) for arg in a.get("arguments", [])
                  if params[arg["name"]].annotation in (int, float, "int", "float")
                  and arg["type"] not in ("integer", "number")]
    assert vague == []
    for a in discovered:
        func = getattr(__import__(a["mod"], fromlist=[a["name"]]), a["name"])
        assert isinstance(inspect.signature(func), CheckedSignature), a["mod"] + "." + a["name"]
        assert (func.__doc__ or "").strip(), a["mod"] + "." + a["name"]


def test_experiment_problems_substitute_the_configuration():
    experiment = {"method": [{"type": "action", "name": "kill", "provider": {
        "type": "python", "module": "chaosdb.embedded.actions", "func": "kill_node",
        "arguments": {"target": "${victim}", "count": "${n}"}}}],
        "rollbacks": [{"type": "action", "name": "restart", "provider": {
            "type": "python", "module": "chaosdb.embedded.actions", "func": "restart_nodes",
            "arguments": {"wait_healthy_s": -1}}}]}
    problems = experiment_problems(experiment, {"victim": "priamry", "n": "2"})
    assert len(problems) == 2
    assert problems[0].startswith("activity 'kill': unknown target priamry")
    assert problems[1].startswith("activity 'restart': wait_healthy_s must be >= 0")
    assert experiment_problems(experiment | {"rollbacks": []}, {"victim": "leader", "n": "1"}) == []


# ---------------------------------------------------------------------------
# the verdict, from journals


def _run(name: str, status: str, kind: str = "action", error: str | None = None) -> dict:
    run = {"activity": {"type": kind, "name": name}, "status": status, "output": None}
    if error:
        run["exception"] = ["Traceback ...", f"chaoslib.exceptions.ActivityFailed: {error}\n"]
    return run


def _probe(name: str, output, met: bool, tolerance=True) -> dict:
    return {"activity": {"type": "probe", "name": name, "tolerance": tolerance}, "status": "succeeded",
            "output": output, "tolerance_met": met}


def _journal(**kw) -> dict:
    journal = {"status": "completed", "deviated": False, "steady_states": {"before": None, "after": None},
               "run": [], "rollbacks": []}
    journal.update(kw)
    return journal


def test_verdict_hypothesis_failed_before_is_a_failure_not_a_completion():
    before = {"steady_state_met": False, "probes": [_probe("p99-vs-baseline-last-10s", 4.2, False, {
        "type": "range", "range": [0, 3]})]}
    v = verdict_of(_journal(steady_states={"before": before, "after": None}))
    assert not v.ok and v.status == "failed"
    assert v.sentence.startswith("The steady-state hypothesis did not hold before the method, so no fault was "
                                 "injected: probe 'p99-vs-baseline-last-10s' returned 4.2")
    assert v.hypothesis["before"][0]["met"] is False


def test_verdict_failed_first_action_injected_nothing():
    v = verdict_of(_journal(status="aborted", run=[_run("kill", "failed", error="unknown target priamry")]))
    assert v.status == "failed"
    assert v.sentence == "Action 'kill' failed, so no fault was injected: unknown target priamry."
    later = verdict_of(_journal(run=[_run("kill", "succeeded"), _run("restart", "failed", error="boom")]))
    assert "the method stopped there (the actions before it did run)" in later.sentence


def test_verdict_deviation_and_success_and_interruption():
    ok = {"steady_state_met": True, "probes": [_probe("errors", 0.0, True)]}
    bad = {"steady_state_met": False, "probes": [_probe("errors", 0.2, False)]}
    v = verdict_of(_journal(deviated=True, steady_states={"before": ok, "after": bad}, run=[_run("kill", "succeeded")]))
    assert not v.ok and v.deviated and v.sentence.startswith("The steady-state hypothesis did not hold after")
    v = verdict_of(_journal(steady_states={"before": ok, "after": ok}, run=[_run("kill", "succeeded")]))
    assert v.ok and v.status == "completed" and "held before and after" in v.sentence
    v = verdict_of(_journal(status="interrupted"))
    assert not v.ok and v.status == "interrupted"


# ---------------------------------------------------------------------------
# real chaos validate / chaos run


def _experiment(tmp_path: Path, method: list, hypothesis_ok: bool = True, controls: list | None = None,
                rollbacks: list | None = None, configuration: dict | None = None) -> Path:
    exp = {
        "version": "1.0.0", "title": "truth", "description": "test",
        "configuration": {"chaosdb_cluster_dir": str(tmp_path / "no-such-cluster"), **(configuration or {})},
        "controls": controls if controls is not None else [
            {"name": "verdict", "provider": {"type": "python", "module": "chaosdb.experiment.control"}}],
        "steady-state-hypothesis": {"title": "a file exists", "probes": [
            {"type": "probe", "name": "root-exists", "tolerance": True, "provider": {
                "type": "python", "module": "os.path", "func": "exists",
                "arguments": {"path": "/" if hypothesis_ok else str(tmp_path / "absent")}}}]},
        "method": method,
        "rollbacks": rollbacks or [],
    }
    path = tmp_path / "experiment.json"
    path.write_text(json.dumps(exp))
    return path


def _chaos(tmp_path: Path, *args: str) -> tuple[int, str, dict]:
    proc = subprocess.run([CHAOS, "--no-log-file", *args], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, stdin=subprocess.DEVNULL)
    journal_path = tmp_path / "journal.json"
    journal = json.loads(journal_path.read_text()) if journal_path.exists() else {}
    return proc.returncode, proc.stdout + proc.stderr, journal


KILL = {"type": "action", "name": "kill-the-primary", "provider": {
    "type": "python", "module": "chaosdb.embedded.actions", "func": "kill_node", "arguments": {"target": "leader"}}}
TOUCH = {"type": "action", "name": "touch-a-file", "provider": {
    "type": "process", "path": "touch", "arguments": "touched"}}


def test_chaos_validate_refuses_bad_values(tmp_path):
    bad = copy.deepcopy(KILL)
    bad["provider"]["arguments"] = {"target": "priamry", "count": -1}
    code, out, _ = _chaos(tmp_path, "validate", str(_experiment(tmp_path, [bad])))
    assert code == 1
    assert "unknown target priamry" in out and "did you mean 'primary'?" in out
    assert "count must be a positive integer or 'all', got -1" in out


def test_a_substituted_bad_value_stops_the_run_before_any_other_control(tmp_path):
    bad = copy.deepcopy(KILL)
    bad["provider"]["arguments"] = {"target": "${victim}"}
    cluster_dir = tmp_path / "would-be-created"
    controls = [{"name": "verdict", "provider": {"type": "python", "module": "chaosdb.experiment.control"}},
                {"name": "embedded-cluster", "provider": {"type": "python", "module": "chaosdb.clusters.postgres_ha.control"}}]
    path = _experiment(tmp_path, [bad], controls=controls,
                       configuration={"victim": "priamry", "chaosdb_cluster_dir": str(cluster_dir)})
    code, out, journal = _chaos(tmp_path, "run", "--journal-path", "journal.json", str(path))
    assert code == 1
    assert not cluster_dir.exists(), "the embedded cluster control started although the input was bad"
    assert journal["run"] == [] and journal["status"] == "refused"
    assert "Nothing was started: the experiment's arguments are wrong" in journal["chaosdb_verdict"]["sentence"]
    assert "activity 'kill-the-primary': unknown target priamry" in out


def test_a_failing_hypothesis_before_the_method_fails_the_run(tmp_path):
    code, out, journal = _chaos(tmp_path, "run", "--journal-path", "journal.json",
                                str(_experiment(tmp_path, [TOUCH], hypothesis_ok=False)))
    assert code == 1
    assert journal["status"] == "failed" and journal["run"] == []
    assert not (tmp_path / "touched").exists()
    sentence = journal["chaosdb_verdict"]["sentence"]
    assert sentence.startswith("The steady-state hypothesis did not hold before the method, so no fault")
    assert out.rstrip().splitlines()[-1].endswith(sentence), "the verdict is not the run's last word"


def test_a_failed_action_stops_the_method_and_the_rollbacks_still_run(tmp_path):
    rollback = {"type": "action", "name": "rollback-touch", "provider": {
        "type": "process", "path": "touch", "arguments": "rolled-back"}}
    code, out, journal = _chaos(tmp_path, "run", "--journal-path", "journal.json",
                                str(_experiment(tmp_path, [KILL, TOUCH], rollbacks=[rollback])))
    assert code == 1
    assert [r["activity"]["name"] for r in journal["run"]] == ["kill-the-primary"]
    assert not (tmp_path / "touched").exists(), "the method went on after the failed action"
    assert (tmp_path / "rolled-back").exists(), "the rollbacks did not run"
    assert journal["status"] == "failed" and journal["steady_states"]["after"] is None
    assert journal["chaosdb_verdict"]["sentence"].startswith(
        "Action 'kill-the-primary' failed, so no fault was injected:")


def test_without_the_control_chaos_toolkit_alone_would_report_success(tmp_path):
    """The behaviour the control corrects, kept visible: chaoslib ends such a run 'completed', exit 0."""
    code, _, journal = _chaos(tmp_path, "run", "--journal-path", "journal.json",
                              str(_experiment(tmp_path, [TOUCH], hypothesis_ok=False, controls=[])))
    assert code == 0 and journal["status"] == "completed"


def test_a_run_that_holds_ends_completed_with_exit_0(tmp_path):
    code, out, journal = _chaos(tmp_path, "run", "--journal-path", "journal.json",
                                str(_experiment(tmp_path, [TOUCH])))
    assert code == 0, out[-2000:]
    assert journal["status"] == "completed" and (tmp_path / "touched").exists()
    assert journal["chaosdb_verdict"]["ok"] is True


def test_the_probes_a_failed_hypothesis_skipped_still_run_and_reach_the_verdict(tmp_path):
    """Chaos Toolkit stops a hypothesis at its first failing probe (a latency probe would hide the ledger's
    answer): the verdict control runs the rest and records what they said."""
    path = _experiment(tmp_path, [TOUCH], hypothesis_ok=False)
    exp = json.loads(path.read_text())
    exists = exp["steady-state-hypothesis"]["probes"][0]
    held = copy.deepcopy(exists)
    held["name"], held["provider"]["arguments"] = "root-exists-too", {"path": "/"}
    broken = copy.deepcopy(exists)
    broken["name"] = "absent-too"
    exp["steady-state-hypothesis"]["probes"] += [held, broken]
    path.write_text(json.dumps(exp))
    code, out, journal = _chaos(tmp_path, "run", "--journal-path", "journal.json", str(path))
    assert code == 1 and journal["run"] == []
    before = journal["steady_states"]["before"]
    assert [p["activity"]["name"] for p in before["probes"]] == ["root-exists"]  # where chaoslib stopped
    assert [(c["name"], c["output"], c["tolerance_met"]) for c in before["chaosdb_skipped_probes"]] == \
        [("root-exists-too", True, True), ("absent-too", False, False)]
    sentence = journal["chaosdb_verdict"]["sentence"]
    assert "of the probes it skipped, these did not hold either: absent-too" in sentence, sentence
    rows = journal["chaosdb_verdict"]["hypothesis"]["before"]
    assert [(r["name"], r["met"], r.get("skipped_then_run", False)) for r in rows] == \
        [("root-exists", False, False), ("root-exists-too", True, True), ("absent-too", False, True)]
    assert "the probes the hypothesis skipped still ran: held: root-exists-too; NOT held: absent-too" in out
