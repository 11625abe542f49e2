"""Every node-failure action and its rollback, against the real embedded cluster."""

from __future__ import annotations

import collections
import json
import threading
import time

import psycopg
import pytest

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.core.errors import ChaosDBError, UnsafeFault
from chaosdb.core.results import record_problems
from chaosdb.embedded import actions, probes
from chaosdb.workloads import ycsb
from tests.polling import poll

pytestmark = pytest.mark.integration


def write_and_read(layout, value: int, timeout: float = 60.0) -> str:
    """Commit a row through the multi-host DSN (retrying while there is no primary); return the server."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(layout.dsn(), connect_timeout=2) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS probe_rows (v int)")
                conn.execute("INSERT INTO probe_rows VALUES (%s)", (value,))
                conn.commit()
                assert conn.execute("SELECT count(*) FROM probe_rows WHERE v = %s", (value,)).fetchone()[0] >= 1
                return str(conn.execute("SELECT inet_server_addr()").fetchone()[0])
        except psycopg.OperationalError as exc:
            last = exc
            time.sleep(0.3)
    raise AssertionError(f"no writable primary within {timeout}s: {last}")


def host_of(layout, name):
    return layout.node(name).host


class YcsbClient(threading.Thread):
    """One YCSB-A client (autocommit reads and updates) running through a fault: every operation and its sample,
    in order."""

    def __init__(self, dsn: str, records: int) -> None:
        super().__init__(daemon=True)
        self.backend = ycsb.SqlBackend(dsn, client=0, seed=11)
        self.workload = ycsb.WorkloadA(records, seed=11)
        self.stop = threading.Event()
        self.attempts: list = []

    def run(self) -> None:
        while not self.stop.is_set():
            op = self.workload.next()
            self.attempts.append((op, self.backend.execute(op, 0)))
        self.backend.close()

    def finish(self) -> list:
        self.stop.set()
        self.join(timeout=60)
        return self.attempts


def assert_no_acknowledged_update_lost(dsn: str, attempts: list) -> None:
    """Every field's value is its last committed update, or an ambiguous update after it (which may have been
    applied): an acknowledged update is never lost, whatever the failover did."""
    allowed: dict = {}
    for op, sample in attempts:
        if op.kind != "update":
            continue
        if sample.outcome == "committed":
            allowed[(op.key, op.field)] = {op.value}
        elif sample.outcome == "ambiguous" and (op.key, op.field) in allowed:
            allowed[(op.key, op.field)].add(op.value)
    with psycopg.connect(dsn) as conn:
        for (key, field), values in allowed.items():
            got = conn.execute(f"SELECT field{field} FROM usertable WHERE ycsb_key = %s", (key,)).fetchone()[0]
            assert got in values, (key, field)


def test_kill_postgres_process_of_leader_is_restarted_by_patroni(healthy, config):
    before = lc.status(healthy)
    leader = before["leader"]
    old_pid = next(n["pids"]["postmaster"] for n in before["nodes"] if n["name"] == leader)
    record = actions.kill_postgres_process(target="leader", configuration=config)
    assert record["targets"][0]["node"] == leader
    assert record["killed_pids"] == {leader: [old_pid]}
    assert record["signal"] == "SIGKILL" and record["end_ts"] >= record["start_ts"]
    json.dumps(record)  # journal-safe
    lc.wait_healthy(healthy, timeout=90)
    after = lc.status(healthy)
    new_pid = next(n["pids"]["postmaster"] for n in after["nodes"] if n["name"] == leader)
    assert new_pid and new_pid != old_pid, "the supervisor (Patroni) should have started a new postmaster"
    # etcd and Patroni of that node were not touched
    assert [n["pids"]["patroni"] for n in after["nodes"]] == [n["pids"]["patroni"] for n in before["nodes"]]
    write_and_read(healthy, 1)


def test_kill_node_of_leader_elects_new_leader_and_old_one_rejoins(healthy, config):
    old_leader = lc.status(healthy)["leader"]
    write_and_read(healthy, 2)
    ycsb.load(healthy.dsn(), 200)
    client = YcsbClient(healthy.dsn(), 200)  # YCSB through the kill: each statement its own transaction
    client.start()
    assert poll(lambda: sum(1 for _, s in client.attempts if s.outcome == "committed") >= 20)
    record = actions.kill_node(target="leader", configuration=config)
    killed = record["targets"][0]
    assert killed["name"] == old_leader and record["action"] == "kill_node" and not record_problems(record), record
    kinds = {p["kind"] for p in killed["processes"]}
    assert {"etcd", "patroni", "postmaster"} <= kinds
    assert probes.node_process_count(node=old_leader, configuration=config) == 0
    # a different node becomes a writable primary
    server = write_and_read(healthy, 3, timeout=90)
    assert server != host_of(healthy, old_leader)
    felt = len(client.attempts)
    assert poll(lambda: sum(1 for _, s in client.attempts[felt:] if s.outcome == "committed") >= 20)
    attempts = client.finish()
    # the kill is felt as connection errors or ambiguous updates, never as another error or a lost update
    outcomes = collections.Counter(s.outcome for _, s in attempts)
    assert set(outcomes) <= {"committed", "conn_error", "ambiguous"} and len(outcomes) > 1, outcomes
    assert all(s.outcome != "ambiguous" for op, s in attempts if op.kind == "read"), outcomes
    assert_no_acknowledged_update_lost(healthy.dsn(), attempts)
    new_leader = lc.status(healthy)["leader"]
    assert new_leader and new_leader != old_leader
    # it stays down until restarted
    assert lc.status(healthy)["nodes"][int(old_leader[-1]) - 1]["state"] == "down"
    rb = actions.restart_nodes(nodes="all", wait_healthy_s=90, configuration=config)
    assert old_leader in rb["started"]
    st = lc.status(healthy)
    old = next(n for n in st["nodes"] if n["name"] == old_leader)
    assert st["healthy"] and old["role"] in ("replica", "sync_standby") and old["state"] == "streaming"
    # rows written before the kill survived the failover (synchronous replication)
    with psycopg.connect(healthy.dsn()) as conn:
        assert conn.execute("SELECT count(*) FROM probe_rows WHERE v IN (2, 3)").fetchone()[0] == 2
    # the rollback is idempotent
    assert actions.restart_nodes(nodes="all", wait_healthy_s=30, configuration=config)["started"] == {}


def test_stop_database_switchover_moves_leadership_before_stopping(healthy, config):
    old_leader = lc.status(healthy)["leader"]
    record = actions.stop_database(target="leader", method="switchover", drain_wait_s=1, grace_s=20,
                                   configuration=config)
    assert record["switchover"]["from"] == old_leader
    assert record["switchover"]["to"] != old_leader
    assert record["sigkilled"] == {old_leader: []}, "a clean stop needs no SIGKILL"
    st = lc.status(healthy)
    old = next(n for n in st["nodes"] if n["name"] == old_leader)
    assert st["leader"] == record["switchover"]["to"]
    assert old["pids"]["patroni"] is None and old["pids"]["postmaster"] is None
    assert old["pids"]["etcd"] is not None, "database-level stop keeps the node's etcd member"
    write_and_read(healthy, 4)
    actions.restart_nodes(configuration=config, wait_healthy_s=90)
    assert lc.status(healthy)["healthy"]


def test_stop_database_shutdown_of_a_replica(healthy, config):
    record = actions.stop_database(target="replica", method="shutdown", drain_wait_s=0, grace_s=20,
                                   configuration=config)
    assert record["switchover"] is None
    name = record["targets"][0]["node"]
    assert next(n for n in lc.status(healthy)["nodes"] if n["name"] == name)["state"] == "stopped"
    actions.restart_nodes(nodes=name, configuration=config, wait_healthy_s=90)


def test_suspend_node_resumes_itself_after_duration(healthy, config):
    record = actions.suspend_node(target="replica", duration_s=6, configuration=config)
    name = record["targets"][0]["node"]
    assert record["stopped_pids"][name]
    node = next(n for n in lc.status(healthy)["nodes"] if n["name"] == name)
    assert node["suspended"] and node["state"] == "suspended"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if not next(n for n in lc.status(healthy)["nodes"] if n["name"] == name)["suspended"]:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the detached reverter did not resume the node")
    # resuming again is a harmless no-op
    assert actions.resume_nodes(configuration=config)["resumed"] == {}
    lc.wait_healthy(healthy, timeout=60)


def test_suspend_and_resume_rollback(healthy, config):
    record = actions.suspend_node(target="etcd-follower", configuration=config)
    name = record["targets"][0]["node"]
    assert record["reverts_at"] is None and record["fault_id"]  # no timer: a fault of the host engine
    assert probes.cluster_is_healthy(configuration=config) is False
    resumed = actions.resume_nodes(nodes=name, configuration=config)
    assert sorted(resumed["resumed"][name]) == sorted(record["stopped_pids"][name])
    lc.wait_healthy(healthy, timeout=60)


def test_suspend_is_a_host_fault_that_any_revert_resumes(healthy, config):
    """The host engine's suspend: a database role target (another adapter's, etcd's follower) stopped whole, each
    process recorded before it is signalled; revert_faults resumes exactly those, and the record is gone."""
    from chaosdb.core.faultrecords.records import load_records
    from chaosdb.core.processes import proc_state
    from chaosdb.embedded.processes import node_processes
    from chaosdb.faults import actions as faults

    done = faults.suspend_processes(target={"role": "etcd-follower"}, configuration=config)
    try:
        name = done["targets"][0]["name"]
        node = healthy.node(name)
        etcd = [p.pid for p in node_processes(node.path, node.data_dir) if p.kind == "etcd"]
        assert done["stopped_pids"] == {name: etcd} and all(proc_state(p) == "T" for p in etcd)
        assert [r.id for r in load_records() if r.kind == "suspend"] == [done["fault_id"]]
        assert not record_problems(done)
    finally:
        reverted = faults.revert_faults(kinds=["suspend"], configuration=config)["reverted"]
    assert [r["id"] for r in reverted] == [done["fault_id"]] and reverted[0]["resumed"] == {name: etcd}
    assert not any(proc_state(p) == "T" for p in etcd) and not load_records()
    lc.wait_healthy(healthy, timeout=60)


def test_the_host_engines_kill_takes_the_embedded_role_in_full_and_its_majority_rule(healthy, config):
    """One target vocabulary: {"role": "embedded-replica"} is what "replica" is shorthand for; the host engine's
    kill of its PostgreSQL (postmaster and backends) is survived (Patroni starts it again); a kill of two nodes is
    refused before any process is signalled."""
    from chaosdb.embedded.processes import node_processes
    from chaosdb.faults import actions as faults

    before = probes.node_process_count(configuration=config)
    with pytest.raises(UnsafeFault, match="majority quorum tolerates only 1"):
        faults.kill_processes(target={"role": "embedded-any"}, count=2, configuration=config)
    assert probes.node_process_count(configuration=config) == before
    done = faults.kill_processes(target={"role": "embedded-replica"}, components=["postgres"], configuration=config)
    assert not record_problems(done) and done["exited"] is True and done["quorum"]["allowed_by_quorum_rule"], done
    (name, pids), = done["killed_pids"].items()
    node = healthy.node(name)
    assert "replica" in done["targets"][0]["roles"] and done["targets"][0]["role"] == "embedded-replica"
    assert poll(lambda: any(p.kind == "postmaster" and p.pid not in pids
                            for p in node_processes(node.path, node.data_dir)), 120), "Patroni did not restart it"
    lc.wait_healthy(healthy, timeout=120)


def test_quorum_rule_refuses_before_injecting(healthy, config):
    before = probes.node_process_count(configuration=config)
    with pytest.raises(UnsafeFault, match="majority quorum tolerates only 1"):
        actions.kill_node(target="any", count=2, configuration=config)
    with pytest.raises(UnsafeFault):
        actions.suspend_node(target="replica", count="all", configuration=config)
    assert probes.node_process_count(configuration=config) == before
    assert lc.status(healthy)["healthy"]


def test_a_second_fault_while_one_node_is_down_is_refused(healthy, config):
    actions.kill_node(target="replica", configuration=config)
    try:
        with pytest.raises(UnsafeFault, match="would be down"):
            actions.kill_postgres_process(target="leader", configuration=config)
    finally:
        actions.restart_nodes(configuration=config, wait_healthy_s=90)


def test_bad_input_is_rejected_clearly(healthy, config):
    with pytest.raises(ChaosDBError, match="unknown target node9"):
        actions.kill_node(target="node9", configuration=config)
    with pytest.raises(ChaosDBError, match="method must be"):
        actions.stop_database(method="pull-the-plug", configuration=config)
    with pytest.raises(ChaosDBError, match="no embedded cluster"):
        actions.kill_node(configuration={"chaosdb_cluster_dir": "/nonexistent/cluster"})
    assert lc.status(healthy)["healthy"]
