"""Runs that share a host stay apart, and bad input is refused before anything starts (issue 32): a run owns its
output folders (two runs from one working folder wiped each other's samples, and one reported the other cluster's
throughput as its own), control arguments and names are checked first, a refusal is called one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chaosdb.core.claims import CLAIM_FILE, claim, holder, release
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import start_time
from chaosdb.experiment.checks import output_problems
from chaosdb.load import control as load_control


@pytest.fixture
def other_run():
    """A live process standing for another `chaos run`."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _held_by(folder, pid: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CLAIM_FILE).write_text(json.dumps({"pid": pid, "start": start_time(pid), "claimed": 0}))


def test_a_folder_is_one_runs_until_it_ends(tmp_path, other_run):
    mine = claim(tmp_path / "a", "the samples folder")
    assert (mine / CLAIM_FILE).exists() and holder(mine) is None
    assert claim(mine, "the samples folder") == mine  # this run again: fine
    release(mine)
    assert not (mine / CLAIM_FILE).exists()

    _held_by(tmp_path / "b", other_run)
    with pytest.raises(ChaosDBError) as exc:
        claim(tmp_path / "b", "the samples folder", "samples_dir, e.g. CHAOSDB_REPORT_DIR")
    assert f"is being written by another run (process {other_run}" in str(exc.value)
    assert "give this run its own folder (samples_dir, e.g. CHAOSDB_REPORT_DIR)" in str(exc.value)
    release(tmp_path / "b")  # not ours: left alone
    assert holder(tmp_path / "b")["pid"] == other_run

    _held_by(tmp_path / "c", 999_999)  # a run that is gone: its folder can be taken
    (tmp_path / "c" / CLAIM_FILE).write_text(json.dumps({"pid": 999_999, "start": 1, "claimed": 0}))
    assert claim(tmp_path / "c", "the report folder") == (tmp_path / "c").absolute()


def test_a_busy_output_folder_is_refused_before_anything_starts(tmp_path, other_run):
    _held_by(tmp_path / "runs" / "samples", other_run)
    experiment = {"controls": [
        {"name": "tpcc-load", "provider": {"type": "python", "module": "chaosdb.load.control",
                                           "arguments": {"samples_dir": "${report_dir}/samples"}}},
        {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                        "arguments": {"out_dir": "${report_dir}"}}}]}
    problems = output_problems(experiment, {"report_dir": str(tmp_path / "runs")})
    assert len(problems) == 1 and problems[0].startswith("control 'tpcc-load': the samples folder"), problems
    # and the load itself refuses before it starts anything, whoever calls it
    with pytest.raises(ChaosDBError, match="is being written by another run"):
        load_control.start_load(dsn="postgresql://app@127.0.0.1:1/app", samples_dir=str(tmp_path / "runs" / "samples"),
                                replace_samples=True)
    assert not list((tmp_path / "runs" / "samples").glob("samples-*"))


def test_control_arguments_and_huge_durations_are_refused_before_anything_starts():
    """Issue 32: `users: 0`, a negative baseline, warehouses below zero, `nodes: "three"` and a fault lasting 1e12 s
    were accepted and failed minutes later (after a cluster start and a data load)."""
    from chaosdb.experiment.checks import experiment_problems

    experiment = {
        "controls": [
            {"name": "embedded-cluster", "provider": {"type": "python", "module": "chaosdb.clusters.postgres_ha.control",
                                                      "arguments": {"nodes": "three", "tpcc_warehouses": -1,
                                                                    "secure": "${secure}",
                                                                    "address_base": "10.0.0.1"}}},
            {"name": "tpcc-load", "provider": {"type": "python", "module": "chaosdb.load.control",
                                               "arguments": {"users": 0, "baseline_s": "${baseline_s}"}}}],
        "method": [{"type": "action", "name": "partition", "provider": {
            "type": "python", "module": "chaosdb.faults.actions", "func": "partition_node",
            "arguments": {"target": "replica", "duration_s": 1e12}}}]}
    problems = experiment_problems(experiment, {"baseline_s": "-5", "secure": "maybe"})
    text = "\n".join(problems)
    for expected in ("control 'embedded-cluster': nodes must be a number, got 'three'",
                     "control 'embedded-cluster': tpcc_warehouses must be >= 0",
                     "control 'embedded-cluster': secure must be true or false, got 'maybe'",
                     "control 'embedded-cluster': 10.0.0.1 is not a loopback address",
                     "control 'tpcc-load': users must be >= 1",
                     "control 'tpcc-load': baseline_s must be >= 0",
                     "activity 'partition': duration_s must be >= 0 and <= 2592000 (seconds; at most 30 days), "
                     "got 1000000000000.0"):
        assert expected in text, text


def test_a_cluster_name_is_a_name_and_output_folders_do_not_climb(tmp_path):
    """Issue 32: a '/' in the cluster name nested folders outside CHAOSDB_HOME; a report_dir with '../' wrote
    anywhere."""
    from chaosdb.embedded.state import cluster_dir_for
    from chaosdb.experiment.checks import configuration_problems, experiment_problems

    with pytest.raises(ChaosDBError, match="cluster name '../etc' may contain only letters"):
        cluster_dir_for("../etc")
    assert configuration_problems({"chaosdb_cluster": "a/b"})[0].startswith(
        "configuration: chaosdb_cluster: cluster name 'a/b' may contain only letters")
    experiment = {"controls": [{"name": "report", "provider": {
        "type": "python", "module": "chaosdb.report.control", "arguments": {"out_dir": "${report_dir}"}}}]}
    problems = experiment_problems(experiment, {"report_dir": "runs/../../elsewhere"})
    assert len(problems) == 1 and "goes up with '..'" in problems[0] and "give the folder without '..'" in problems[0]
    with pytest.raises(ChaosDBError, match="goes up with '..'"):
        claim(tmp_path / ".." / "x", "the samples folder")


def test_a_control_refusal_is_called_a_refusal_and_a_cluster_that_never_started_is_not_stopped(tmp_path, caplog):
    import logging

    from chaosdb.clusters.postgres_ha import control as local_control
    from chaosdb.experiment import refusals
    from chaosdb.experiment.verdict import verdict_of

    refusals.forget()
    exc = refusals.refused("chaosdb load control: users must be >= 1")
    assert str(exc) == "chaosdb load control: users must be >= 1" and refusals.reason() == str(exc)
    sentence = verdict_of({"status": "interrupted", "chaosdb_refused": refusals.reason()}).sentence
    assert sentence.startswith("Refused: chaosdb load control: users must be >= 1") and "signal" not in sentence
    assert verdict_of({"status": "interrupted"}).sentence.startswith("The run was interrupted")
    refusals.forget()
    with caplog.at_level(logging.INFO, logger="chaostoolkit"):
        local_control.after_experiment_control({}, {}, configuration={"chaosdb_cluster_dir": str(tmp_path / "none")})
    assert not [r for r in caplog.records if "could not stop" in r.getMessage()]


def test_a_node_the_cluster_will_not_have_is_refused_before_the_cluster_starts(tmp_path):
    """Issue 32: `target: node9` passed validation and was refused two minutes in, after the load."""
    from chaosdb.clusters.postgres_ha import control as local_control

    experiment = {"controls": [], "method": [
        {"type": "action", "name": "kill-node9", "provider": {
            "type": "python", "module": "chaosdb.embedded.actions", "func": "kill_node", "arguments": {"target": "node9"}}},
        {"type": "action", "name": "restart", "provider": {
            "type": "python", "module": "chaosdb.embedded.actions", "func": "restart_nodes",
            "arguments": {"nodes": ["node1", "${extra}"]}}}]}
    with pytest.raises(Exception) as exc:
        local_control.before_experiment_control(experiment, {"chaosdb_cluster_dir": str(tmp_path / "new"),
                                                             "extra": "node4"}, nodes=3)
    text = str(exc.value)
    assert "refused before the cluster starts: activity 'kill-node9' names node9; activity 'restart' names node4" \
        in text and "(its nodes: node1, node2, node3)" in text, text
    assert not (tmp_path / "new").exists()


def test_an_experiment_too_large_for_its_journal_is_refused():
    from chaosdb.experiment.checks import experiment_problems

    problems = experiment_problems({"description": "x" * (2 << 20), "method": []})
    assert problems and problems[0].startswith("experiment: it is 2.1 MB, over the 1 MiB this pack accepts")
