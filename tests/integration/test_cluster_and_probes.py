"""Cluster lifecycle, status, and the Patroni/PostgreSQL/etcd probes and actions on the real cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psycopg
import pytest

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import record_problems
from chaosdb.embedded.state import load_secrets
from chaosdb.etcd import probes as etcd_probes
from chaosdb.postgres import actions as pg_actions
from chaosdb.postgres import probes as pg_probes

pytestmark = pytest.mark.integration


def test_up_again_is_a_no_op(healthy):
    before = lc.status(healthy)
    result = lc.up(healthy.path, "pytest")
    assert result["created"] is False and result["started"] == {}
    after = lc.status(healthy)
    assert [n["pids"] for n in after["nodes"]] == [n["pids"] for n in before["nodes"]]


def test_status_shows_roles_lag_timeline_and_etcd_leader(healthy):
    st = lc.status(healthy)
    assert st["healthy"] is True
    roles = sorted(n["role"] for n in st["nodes"])
    assert roles.count("leader") == 1
    assert set(roles) - {"leader"} <= {"replica", "sync_standby"}
    assert "sync_standby" in roles, "synchronous replication is the default"
    assert st["etcd_leader"] in {n.name for n in healthy.nodes}
    for n in st["nodes"]:
        assert isinstance(n["timeline"], int) and n["timeline"] >= 1
        assert n["pids"]["etcd"] and n["pids"]["patroni"] and n["pids"]["postmaster"]
        if n["role"] != "leader":
            assert n["state"] == "streaming" and n["lag_bytes"] is not None
    # every node has its own loopback address
    assert len({n["host"] for n in st["nodes"]}) == 3


def test_cluster_runs_unprivileged_when_started_as_root(healthy):
    st = lc.status(healthy)
    per_node = {}
    for n, sn in zip(healthy.nodes, st["nodes"], strict=False):
        uids = {os.stat(f"/proc/{sn['pids'][kind]}").st_uid for kind in ("etcd", "patroni", "postmaster")}
        assert uids == {healthy.node_user(n)[1]}, n.name  # every process of a node runs as the node's user
        per_node[n.name] = uids.pop()
    if os.geteuid() == 0:
        # as root each node has a user of its own (what per-node network faults match on), never root
        assert 0 not in per_node.values()
        assert len(set(per_node.values())) == len(healthy.nodes)
        # and a user of this cluster's own: another cluster on the machine never shares a node identity
        assert [healthy.node_user(n)[0] for n in healthy.nodes] == [f"chaosdb-{healthy.name}-n{i}" for i in (1, 2, 3)]
    else:
        assert set(per_node.values()) == {os.geteuid()}


def test_dsn_is_multi_host_read_write_without_password(healthy):
    dsn = healthy.dsn()
    secrets = load_secrets(healthy.path)
    assert "target_session_attrs=read-write" in dsn
    assert all(v not in dsn for v in secrets.values())
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is False
        assert conn.execute("SELECT current_user").fetchone()[0] == healthy.app_user


def test_cli_status_json_and_check(healthy):
    out = subprocess.run([sys.executable, "-m", "chaosdb.cli", "cluster", "status", "--dir", healthy.dir, "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)
    assert st["healthy"] and st["leader"]
    text = subprocess.run([sys.executable, "-m", "chaosdb.cli", "cluster", "status", "--dir", healthy.dir, "--check"],
                          capture_output=True, text=True, timeout=60)
    assert text.returncode == 0 and "healthy: yes" in text.stdout and st["leader"] in text.stdout


def test_postgres_probes_on_the_embedded_cluster(healthy, config):
    st = lc.status(healthy)
    assert pg_probes.current_primary(configuration=config) == st["leader"]
    members = pg_probes.cluster_members(configuration=config)
    assert sorted(m["name"] for m in members) == ["node1", "node2", "node3"]
    with psycopg.connect(healthy.dsn()) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS lag_probe (v int)")
        conn.execute("INSERT INTO lag_probe SELECT generate_series(1, 1000)")
    lag = pg_probes.replication_lag(configuration=config)
    assert len(lag["replicas"]) == 2 and all(r["streaming"] for r in lag["replicas"])
    assert isinstance(lag["max_lag_bytes"], int) and isinstance(lag["max_replay_lag_s"], float)
    assert pg_probes.max_replication_lag_bytes(configuration=config) >= 0
    # a point-in-time probe: right after the writes a member may report its lag as unknown for a moment
    deadline = time.monotonic() + 15
    while not pg_probes.cluster_is_healthy(configuration=config, expected_members=3) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert pg_probes.cluster_is_healthy(configuration=config, expected_members=3) is True
    assert pg_probes.cluster_is_healthy(configuration=config, expected_members=4) is False
    assert pg_probes.current_timeline(configuration=config) == next(
        n["timeline"] for n in st["nodes"] if n["name"] == st["leader"])


def test_probes_with_explicit_endpoints_and_secrets(healthy):
    """The way a user points the pack at any Patroni cluster: URLs in configuration, credentials in secrets."""
    secrets = load_secrets(healthy.path)
    configuration = {"patroni_urls": ",".join(healthy.patroni_urls), "etcd_urls": healthy.etcd_urls}
    n = healthy.nodes[0]
    dsn = (f"postgresql://postgres:{secrets['postgres_password']}@"
           + ",".join(f"{x.host}:{x.pg_port}" for x in healthy.nodes) + "/postgres")
    creds = {"patroni_username": "patroni", "patroni_password": secrets["patroni_password"], "postgres_dsn": dsn}
    assert pg_probes.current_primary(configuration=configuration, secrets=creds)
    lag = pg_probes.replication_lag(configuration=configuration, secrets=creds)
    assert secrets["postgres_password"] not in json.dumps(lag)
    assert etcd_probes.etcd_is_healthy(configuration=configuration)
    # a wrong password produces an error that does not leak the password
    bad = dict(creds, postgres_dsn=dsn.replace(secrets["postgres_password"], "wrong-canary-pw-123"))
    with pytest.raises(Exception) as exc:
        pg_probes.replication_lag(configuration=configuration, secrets=bad)
    assert "wrong-canary-pw-123" not in str(exc.value)
    assert n.host in str(exc.value) or "failed" in str(exc.value)


def test_etcd_probes(healthy, config):
    leader = etcd_probes.etcd_leader(configuration=config)
    members = etcd_probes.etcd_members(configuration=config)
    assert sorted(m["name"] for m in members) == ["node1", "node2", "node3"]
    assert [m["name"] for m in members if m["leader"]] == [leader]
    assert all(m["healthy"] for m in members)
    assert etcd_probes.etcd_is_healthy(configuration=config)
    assert lc.status(healthy)["etcd_leader"] == leader


def test_etcd_roles_are_resolved_by_its_adapter(healthy, config):
    from chaosdb.core.adapters import resolve_role_target
    from chaosdb.k8s.roles import resolve_target

    leader = resolve_role_target({"role": "etcd-leader"}, config)
    follower = resolve_role_target({"role": "etcd-follower"}, config)
    assert leader.name == etcd_probes.etcd_leader(configuration=config)
    assert follower.name != leader.name and follower.name in ("node1", "node2", "node3")
    node = next(n for n in healthy.nodes if n.name == leader.name)
    assert leader.address == f"{node.host}:{node.etcd_client_port}" and leader.detail["leader"] == leader.name
    # on Kubernetes the member name is the pod, or configuration etcd_pods maps it
    mapped = resolve_target({"role": "etcd-leader"}, {**config, "etcd_pods": {leader.name: "etcd-2"}})
    assert mapped["pods"] == ["etcd-2"]
    # on this machine, the member's own etcd process (what the local engine's faults act on)
    from chaosdb.embedded.processes import node_processes
    from chaosdb.faults.targets import role_group

    group = role_group({"role": "etcd-leader"}, config)
    mine = [p.pid for p in node_processes(node.path, node.data_dir) if p.kind == "etcd"]
    assert group.pids() == mine and len(mine) == 1 and group.target["name"] == leader.name


def test_switchover_and_failover_actions(healthy, config):
    first = pg_probes.current_primary(configuration=config)
    tl = pg_probes.current_timeline(configuration=config)
    members = pg_probes.cluster_members(configuration=config)
    target = next(m["name"] for m in members if m["role"] == "sync_standby")
    async_replica = next(m["name"] for m in members if m["role"] == "replica")
    with pytest.raises(ChaosDBError, match="only to a synchronous standby"):
        pg_actions.switchover(candidate=async_replica, configuration=config)
    assert pg_probes.current_primary(configuration=config) == first
    result = pg_actions.switchover(candidate=target, configuration=config)
    assert result["from"] == first and result["to"] == target
    assert result["targets"] == [{"name": first, "roles": ["leader"]}] and not record_problems(result), result
    assert pg_probes.current_primary(configuration=config) == target
    assert pg_probes.current_timeline(configuration=config) == tl + 1
    pg_actions.wait_until_healthy(timeout_s=60, expected_members=3, configuration=config)
    result = pg_actions.failover(configuration=config)
    assert result["from"] == target and result["to"] != target
    healthy_result = pg_actions.wait_until_healthy(timeout_s=60, configuration=config)
    assert healthy_result["leader"] == result["to"]


def test_down_then_up_restarts_with_existing_data(healthy):
    with psycopg.connect(healthy.dsn()) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS survives_restart (v text)")
        conn.execute("INSERT INTO survives_restart VALUES ('kept')")
    result = lc.down(healthy)
    assert result["purged"] is False
    st = lc.status(healthy)
    assert all(n["state"] == "down" and n["processes"] == 0 for n in st["nodes"])
    again = lc.up(healthy.path, "pytest")
    assert again["created"] is False and set(again["started"]) == {"node1", "node2", "node3"}
    with psycopg.connect(healthy.dsn()) as conn:
        assert conn.execute("SELECT v FROM survives_restart").fetchall() == [("kept",)]


def test_healthy_with_converged_waits_until_every_replica_replayed_what_the_leader_wrote(healthy, config):
    """Issue 32: "wait until healthy" returned while a replica was still behind, and "replicas converged" failed
    next. With ``converged`` the wait returns only once each replica replayed the leader's WAL position of the
    moment the cluster looked healthy."""
    from chaosdb.embedded.health import patroni_client

    layout = healthy
    with psycopg.connect(layout.dsn(user="postgres", database="postgres"), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS converge_probe (i int, pad text)")
        conn.execute("INSERT INTO converge_probe SELECT g, repeat('x', 500) FROM generate_series(1, 20000) g")
        position = int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'").fetchone()[0])
    try:
        done = pg_actions.wait_until_healthy(timeout_s=60, expected_members=3, converged=True, configuration=config)
        client = patroni_client(layout)
        for m in client.members():
            if not m.is_leader:
                replayed = int((client.node_status(m.api_url).get("xlog") or {}).get("replayed_location") or 0)
                assert replayed >= position, (m.name, replayed, position, done)
    finally:
        with psycopg.connect(layout.dsn(user="postgres", database="postgres"), autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS converge_probe")
