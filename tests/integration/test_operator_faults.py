"""Operator faults and game-day cluster steps against the real embedded cluster."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.clusters.postgres_ha import operations
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.processes import node_processes
from chaosdb.embedded.state import load_layout
from chaosdb.gameday import cluster_steps

pytestmark = pytest.mark.integration


def _postmasters(layout):
    st = lc.status(layout)
    return {n["name"]: n["pids"]["postmaster"] for n in st["nodes"]}


def test_scale_out_serves_then_scale_in_leaves_nothing(healthy, config):
    with psycopg.connect(healthy.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS scale_rows (v int)")
        conn.execute("INSERT INTO scale_rows VALUES (42)")
    out = operations.scale_out(timeout_s=180, configuration=config)
    try:
        assert out["node"] == "node4" and out["nodes"] == 4
        assert 0 < out["serving_s"] <= out["total_s"]
        layout = load_layout(healthy.dir)
        node4 = layout.node("node4")
        assert node4.host == ".".join(healthy.nodes[0].host.split(".")[:3] + [
            str(int(healthy.nodes[0].host.split(".")[3]) + 3)])
        members = {m.name for m in lc.etcd_client(layout).members()}
        assert members == {"node1", "node2", "node3", "node4"}
        with psycopg.connect(layout.node_dsn("node4", user="postgres", database=layout.database)) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
            assert conn.execute("SELECT count(*) FROM scale_rows WHERE v = 42").fetchone()[0] >= 1
        roles = {n["name"]: n["role"] for n in lc.status(layout)["nodes"]}
        assert roles["node4"] in ("replica", "sync_standby")
    finally:
        removed = operations.scale_in(configuration=config)
    assert removed["node"] == "node4" and removed["nodes"] == 3
    layout = load_layout(healthy.dir)
    assert [n.name for n in layout.nodes] == ["node1", "node2", "node3"]
    assert {m.name for m in lc.etcd_client(layout).members()} == {"node1", "node2", "node3"}
    assert not Path(node4.dir).exists() and not node_processes(Path(node4.dir), Path(node4.dir) / "data")
    # a second scale-in is a no-op: safe as a rollback whether or not the scale-out happened
    assert operations.scale_in(configuration=config)["node"] is None


def test_rolling_restart_restarts_every_node_primary_last(healthy, config):
    before = _postmasters(healthy)
    leader = lc.patroni_client(healthy).leader().name
    out = operations.rolling_restart(wait_healthy_s=120, configuration=config)
    assert out["order"][-1] == leader and sorted(out["order"]) == ["node1", "node2", "node3"]
    last = out["steps"][-1]
    assert last["switchover_to"] != leader and out["leader"] == last["switchover_to"]
    after = _postmasters(healthy)
    assert all(after[n] and after[n] != before[n] for n in before), (before, after)
    assert all(s["healthy_s"] >= s["serving_s"] > 0 for s in out["steps"])
    with pytest.raises(ChaosDBError, match="wait_healthy_s"):
        operations.rolling_restart(wait_healthy_s=0, configuration=config)


def test_game_day_steps_set_synchronous_standbys_and_move_the_primary(healthy):
    d = Path(healthy.dir)
    client = lc.patroni_client(healthy)
    try:
        assert cluster_steps.set_synchronous_standbys(d, 2)["synchronous_standbys"] == 2
        assert sum(1 for m in client.members() if m.role == "sync_standby") == 2
        assert cluster_steps.set_synchronous_standbys(d, 0)["synchronous_standbys"] == 0
        assert not [m for m in client.members() if m.role == "sync_standby"]
        with pytest.raises(ChaosDBError, match="needs 4 nodes"):
            cluster_steps.set_synchronous_standbys(d, 3)
        assert load_layout(healthy.dir).replication == "async"  # health follows the live setting
    finally:
        cluster_steps.restore_replication(d, "sync")
    assert load_layout(healthy.dir).replication == "sync"
    assert sum(1 for m in client.members() if m.role == "sync_standby") == 1
    # move the primary to a replica that is not the synchronous standby (Patroni refuses that switchover
    # in synchronous mode; the step drops to asynchronous for it and restores the setting)
    target = next(m.name for m in client.members() if m.role == "replica")
    moved = cluster_steps.move_leader(d, target)
    assert moved["moved"] and client.leader().name == target
    assert sum(1 for m in client.members() if m.role == "sync_standby") == 1
    assert cluster_steps.move_leader(d, target)["moved"] is False
