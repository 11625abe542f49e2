"""One target vocabulary on the host engine: a string target is shorthand for the embedded adapter's roles, every
target is resolved by an adapter (or is already resolved: processes a database's action found), and every local
kill goes through the engine's one kill (real child processes, a fault-record folder of the test's own)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chaosdb.core.adapters import adapter_roles
from chaosdb.core.arguments import problems_in_call
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import pid_alive, wait_gone
from chaosdb.core.results import record_problems
from chaosdb.faults import actions
from chaosdb.faults.targets import check_fault_target, role_target
from tests.polling import poll


@pytest.fixture
def records(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSDB_FAULTS_DIR", str(tmp_path / "faults"))
    return tmp_path / "faults"


@pytest.fixture
def sleepers():
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(3)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_string_target_is_the_embedded_adapters_role():
    assert role_target("leader") == {"role": "embedded-leader"}
    assert role_target("Replica", cluster="second") == {"role": "embedded-replica", "cluster": "second"}
    assert role_target("node1,node3") == {"role": "embedded-node", "names": "node1,node3"}
    assert role_target(["node2"], cluster_dir="/x") == {"role": "embedded-node", "names": ["node2"],
                                                         "cluster_dir": "/x"}
    assert role_target({"role": "etcd-leader"}, cluster="c") == {"role": "etcd-leader", "cluster": "c"}
    assert {"embedded-leader", "embedded-etcd-leader", "embedded-node"} <= set(adapter_roles())


def test_targets_are_checked_before_anything_runs():
    check_fault_target("leader")
    check_fault_target({"role": "embedded-node", "names": ["node1", "node12"]})
    check_fault_target({"pids": [1234], "name": "n1"})
    with pytest.raises(ChaosDBError, match="leeder"):
        check_fault_target("leeder")
    with pytest.raises(ChaosDBError, match="'names' goes with the role embedded-node"):
        check_fault_target({"role": "embedded-leader", "names": "node1"})
    with pytest.raises(ChaosDBError, match="target pids must be a non-empty list"):
        check_fault_target({"pids": []})
    # network faults need every node's address and user: a database that does not list them is refused at validate
    problems = problems_in_call(actions.partition_node, {"target": {"role": "etcd-leader"}})
    assert any("etcd does not list its nodes'" in p for p in problems), problems
    assert not problems_in_call(actions.partition_node, {"target": {"role": "embedded-replica"}})
    assert any("signal must be one of KILL, TERM" in p
               for p in problems_in_call(actions.kill_processes, {"signal": "STOP"}))


def test_the_engines_one_kill_signals_resolved_processes_at_once_and_waits(records, sleepers):
    a, b, c = sleepers
    out = actions.kill_processes(target=[{"pids": [a.pid], "name": "n1"}, {"pids": [b.pid], "name": "n2"}],
                                 signal="TERM", wait_s=60)
    assert not record_problems(out), record_problems(out)
    assert out["killed_pids"] == {"n1": [a.pid], "n2": [b.pid]} and out["exited"] is True, out
    assert [t["name"] for t in out["targets"]] == ["n1", "n2"] and out["signal"] == "TERM"
    assert a.wait(30) == -15 and b.wait(30) == -15 and c.poll() is None
    assert not list(records.glob("*.json")), "a kill leaves no record: there is nothing to revert"
    with pytest.raises(ChaosDBError, match="have no running process to signal"):
        actions.kill_processes(target={"pids": [a.pid], "name": "n1"})


def test_a_database_stop_through_the_engine_is_recorded_and_continued(records, sleepers):
    proc = sleepers[0]
    done = actions.signal_resolved({"pids": [proc.pid], "name": "store 4"}, "STOP")
    assert done["exited"] is False and done["kind"] == "suspend", done
    assert len(list(records.glob("*.json"))) == 1, "a stop is recorded, so it can be continued"
    assert poll(lambda: _state(proc.pid) == "T", 30), _state(proc.pid)
    back = actions.signal_resolved({"pids": [proc.pid], "name": "store 4"}, "CONT")
    assert [r["kind"] for r in back["reverted"]] == ["suspend"], back
    assert poll(lambda: _state(proc.pid) != "T", 30) and not list(records.glob("*.json"))
    killed = actions.signal_resolved({"pids": [proc.pid], "name": "store 4"}, "KILL", wait_s=30)
    assert killed["exited"] is True and not wait_gone([proc.pid], 30) and not pid_alive(proc.pid)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_the_operator_actions_are_their_own_activity_module():
    from chaosdb import activity_modules
    from chaosdb.embedded import actions as node_actions

    assert "chaosdb.clusters.postgres_ha.operations" in activity_modules()["action"]
    assert not {"rolling_restart", "scale_out", "cluster_up"} & set(node_actions.__all__)
