"""Patroni /cluster and etcd responses recorded from a real cluster (see tests/data/patroni/PROVENANCE.md)."""

import json
from pathlib import Path

from chaosdb.postgres.patroni import Member, PatroniClient, parse_members

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


def _member(name: str, role: str, state: str, lag: int | None) -> Member:
    return Member(name=name, role=role, state=state, host=name, port=5432, api_url=f"http://{name}:8008",
                  timeline=3, lag_bytes=lag, is_leader=role == "leader", pending_restart=False)


# what Patroni 3.0.2 answered on GET /patroni in the local Kubernetes (real node), 2026-11-27
LEADER_STATUS = {"state": "running", "role": "master", "xlog": {"location": 1136520560}, "timeline": 3}
REPLICA_STATUS = {"state": "running", "role": "replica", "timeline": 3, "sync_standby": True,
                  "xlog": {"received_location": 1136520560, "replayed_location": 1136400000, "paused": False}}


def _client(monkeypatch, members: list[Member], statuses: dict[str, dict]) -> PatroniClient:
    client = PatroniClient(["http://p0:8008"])
    monkeypatch.setattr(client, "members", lambda: members)
    monkeypatch.setattr(client, "node_status", lambda url: statuses[url])
    monkeypatch.setattr(client, "answers", lambda url: True)
    return client


def test_a_replica_whose_dcs_lag_is_stale_is_healthy_when_it_has_caught_up(monkeypatch):
    """/cluster showed a caught-up sync standby 1.8 MB behind (the lag it last wrote to the DCS, under load): the
    members' own positions decide."""
    members = [_member("p0", "leader", "running", None), _member("p1", "sync_standby", "running", 1882032)]
    client = _client(monkeypatch, members, {"http://p0:8008": LEADER_STATUS, "http://p1:8008": REPLICA_STATUS})
    assert client.live_lag("http://p0:8008", "http://p1:8008") == 0
    assert client.health_problems(max_lag_bytes=1048576)[1] == []


def test_a_replica_really_behind_stays_a_problem_with_its_live_lag(monkeypatch):
    members = [_member("p0", "leader", "running", None), _member("p1", "replica", "streaming", 5_000_000)]
    behind = {**REPLICA_STATUS, "xlog": {"received_location": 1130000000, "replayed_location": 1129000000}}
    client = _client(monkeypatch, members, {"http://p0:8008": LEADER_STATUS, "http://p1:8008": behind})
    assert client.health_problems(max_lag_bytes=1048576)[1] == ["p1 is replica/streaming with lag 6520560 bytes (at most 1048576)"]


def test_a_replica_that_does_not_say_its_position_keeps_the_dcs_verdict(monkeypatch):
    members = [_member("p0", "leader", "running", None), _member("p1", "replica", "streaming", 5_000_000)]
    client = _client(monkeypatch, members, {"http://p0:8008": LEADER_STATUS, "http://p1:8008": {"state": "running"}})
    assert client.health_problems(max_lag_bytes=1048576)[1] == ["p1 is replica/streaming with lag unknown"]


def test_a_stopped_replica_is_a_problem_whatever_its_lag(monkeypatch):
    members = [_member("p0", "leader", "running", None), _member("p1", "replica", "stopped", 0)]
    client = _client(monkeypatch, members, {"http://p0:8008": LEADER_STATUS, "http://p1:8008": REPLICA_STATUS})
    assert client.health_problems()[1] == ["p1 is replica/stopped with lag 0 bytes (at most 1048576)"]


def test_has_primary_is_whether_patroni_names_a_leader_that_answers_as_a_running_primary(monkeypatch):
    from chaosdb.core.errors import ChaosDBError
    from chaosdb.postgres import probes

    members = parse_members(load("cluster_sync_3_members.json"))
    client = PatroniClient(["http://p0:8008"])
    answers = {"status": {"state": "running", "role": "master"}}

    def node_status(url: str) -> dict:
        if answers["status"] is None:
            raise ChaosDBError(f"{url} refused the connection")
        return answers["status"]

    monkeypatch.setattr(client, "members", lambda: members)
    monkeypatch.setattr(client, "node_status", node_status)
    monkeypatch.setattr(probes, "patroni_client", lambda configuration, secrets: client)
    assert probes.has_primary() is True
    answers["status"] = {"state": "running", "role": "primary"}  # Patroni 4 says primary
    assert probes.has_primary() is True
    answers["status"] = None  # the leader was killed: /cluster still names it until its key expires
    assert probes.has_primary() is False
    answers["status"] = {"state": "starting", "role": "replica"}  # demoted, coming back
    assert probes.has_primary() is False
    answers["status"] = {"state": "running", "role": "master"}
    monkeypatch.setattr(client, "members", lambda: [m for m in members if not m.is_leader])  # a failover under way
    assert probes.has_primary() is False
