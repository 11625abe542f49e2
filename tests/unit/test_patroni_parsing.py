"""Patroni /cluster and etcd responses recorded from a real cluster (see tests/data/patroni/PROVENANCE.md)."""

import json
from pathlib import Path

from chaosdb.postgres.patroni import parse_members

DATA = Path(__file__).resolve().parents[1] / "data" / "patroni"


def load(name):
    return json.loads((DATA / name).read_text())


def test_members_are_normalised():
    members = parse_members(load("cluster_sync_3_members.json"))
    assert [m.name for m in members] == ["node1", "node2", "node3"]
    leader = next(m for m in members if m.is_leader)
    assert leader.name == "node2" and leader.lag_bytes is None and leader.state == "running"
    assert leader.api_url == "http://127.0.0.12:8008", "the /patroni suffix is stripped"
    replicas = [m for m in members if m.is_replica]
    assert all(m.lag_bytes == 0 and m.state == "streaming" and m.timeline == 1 for m in replicas)


def test_stale_member_is_still_listed_by_patroni():
    """Why status() asks every node itself: /cluster keeps a killed node as 'streaming' until its TTL."""
    members = {m.name: m for m in parse_members(load("cluster_stale_member_3s_after_node3_killed.json"))}
    assert members["node3"].state == "streaming"
    assert members["node1"].role == "sync_standby"


def test_unknown_lag_is_none_not_a_number():
    data = load("cluster_sync_3_members.json")
    data["members"][0]["lag"] = "unknown"
    assert parse_members(data)[0].lag_bytes is None


def test_etcd_recorded_shapes():
    status = load("etcd_status.json")
    members = load("etcd_member_list.json")["members"]
    assert status["leader"] in {m["ID"] for m in members}
    assert {m["name"] for m in members} == {"node1", "node2", "node3"}
