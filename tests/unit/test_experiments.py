"""The shipped experiments: generated from one template, valid, and honest about their hypothesis."""

import json
from pathlib import Path

import pytest

from chaosdb.devtools.make_experiments import EXPERIMENTS, render

EXP_DIR = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_committed_file_is_what_the_generator_writes(name):
    assert (EXP_DIR / f"{name}.json").read_text() == render(name), \
        "run: python -m chaosdb.devtools.make_experiments experiments"


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_each_experiment_states_its_hypothesis_and_restores_the_cluster(name):
    exp = json.loads((EXP_DIR / f"{name}.json").read_text())
    assert exp["description"].startswith("Hypothesis:")
    funcs = {a["provider"]["func"] for a in exp["method"]}
    modules = {a["provider"]["module"] for a in exp["method"]}
    rollbacks = [r["provider"]["func"] for r in exp["rollbacks"]]
    controls = {c["name"] for c in exp["controls"]}
    if "chaosdb.faults.actions" in modules:
        # local faults: timed, reverted by rollback and by the control whatever happens
        assert controls == {"embedded-cluster", "local-faults", "tpcc-load", "report"}
        assert rollbacks == ["revert_faults", "resume_nodes", "restart_nodes"]
        assert all(a["provider"]["arguments"]["duration_s"] > 0 for a in exp["method"]
                   if a["provider"]["module"] == "chaosdb.faults.actions")
        assert funcs & {"limit_cpu", "limit_memory", "partition_node", "lose_packets", "lose_packets_in_bursts"}
    else:
        assert controls == {"embedded-cluster", "tpcc-load", "report"}
        assert rollbacks == ["resume_nodes", "restart_nodes"]
        assert funcs & {"kill_node", "kill_postgres_process", "stop_database", "suspend_node"}
    # secrets never inline: every configuration value is read from the environment
    assert all(v.get("type") == "env" for v in exp["configuration"].values())


def test_no_stray_experiment_files():
    assert {p.stem for p in EXP_DIR.glob("*.json")} == set(EXPERIMENTS)
