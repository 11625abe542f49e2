"""Unit tests of the fault engine's pure parts: packet classification, Gilbert parameters,
cgroup v1/v2 file writes on a fake hierarchy, records, validation before injection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.faults import cgroups
from chaosdb.faults.classify import NodeIdentity, check_identities, label_rules, packet_matches
from chaosdb.faults.host import cgroup_host

N = [NodeIdentity("node1", 0, "127.0.0.21", 1001), NodeIdentity("node2", 1, "127.0.0.22", 1002),
     NodeIdentity("node3", 2, "127.0.0.23", 1003)]


def _flat(rules):
    return [" ".join(r) for r in rules]


def test_labels_mark_connections_opened_by_each_node_user():
    rules = _flat(label_rules(N))
    assert rules[0] == "! -s 127.0.0.21 -m owner --uid-owner 1001 -j CONNMARK --or-mark 0x10000"
    assert rules[2].endswith("--or-mark 0x40000")


def test_peer_partition_matches_both_opening_sides_and_never_self_or_clients():
    rules = _flat(packet_matches(N[0], N, "peers", "both"))
    # for each peer: to T opened by X, from X opened by T, to X opened by T, from T opened by X
    assert len(rules) == 8
    assert "-d 127.0.0.21 -m connmark --mark 0x20000/0x20000" in rules
    assert "-s 127.0.0.22 -m connmark --mark 0x10000/0x10000" in rules
    assert "-d 127.0.0.23 -m connmark --mark 0x10000/0x10000" in rules
    assert "-s 127.0.0.21 -m connmark --mark 0x40000/0x40000" in rules
    assert not any("0x0/" in r for r in rules)  # no client rule


def test_directions_and_client_scope():
    inbound = _flat(packet_matches(N[1], N, "clients", "inbound"))
    assert inbound == ["-d 127.0.0.22 -m connmark --mark 0x0/0x70000"]
    outbound = _flat(packet_matches(N[1], N, "clients", "outbound"))
    assert outbound == ["-s 127.0.0.22 -m connmark --mark 0x0/0x70000"]
    assert len(packet_matches(N[1], N, "all", "both")) == 8 + 2
    assert len(packet_matches(N[1], N, "peers", "inbound")) == 4


@pytest.mark.parametrize("scope,direction", [("everyone", "both"), ("peers", "sideways")])
def test_bad_scope_or_direction_is_refused(scope, direction):
    with pytest.raises(ChaosDBError, match="must be one of"):
        packet_matches(N[0], N, scope, direction)


def test_identities_must_be_distinct_users_and_addresses():
    shared = [NodeIdentity("a", 0, "127.0.0.21", 1001), NodeIdentity("b", 1, "127.0.0.22", 1001)]
    with pytest.raises(ChaosDBError, match="user of its own.*chaosdb-n1"):
        check_identities(shared)
    same_addr = [NodeIdentity("a", 0, "127.0.0.1", 1001), NodeIdentity("b", 1, "127.0.0.1", 1002)]
    with pytest.raises(ChaosDBError, match="own address"):
        check_identities(same_addr)
    assert check_identities(N) == N


def test_gilbert_parameters_give_the_asked_loss_and_burst():
    # q = p / (L (1 - p)), r = 1/L; stationary loss L / ((1-q)/q + L + 1) must equal p
    for p, L in ((0.05, 4.0), (0.2, 5.0), (0.01, 1.0)):
        q = p / (L * (1 - p))
        loss = L / ((1 - q) / q + L + 1)
        assert loss == pytest.approx(p, rel=1e-9)


def _fake_v2(tmp_path: Path) -> Path:
    root = tmp_path / "cg2"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def test_cgroup_v2_files_are_written(tmp_path):
    root = _fake_v2(tmp_path)
    host = cgroup_host(root)
    assert host.version == 2 and host.controllers == {"cpu", "memory"}
    # a fake tree does not create interface files: emulate the kernel for the parent
    (root / "chaosdb").mkdir()
    (root / "chaosdb" / "cgroup.subtree_control").write_text("")
    path = cgroups.create_group(host, "cpu", "abc-node1")
    assert (root / "cgroup.subtree_control").read_text() == "+cpu"
    assert cgroups.set_cpu_quota(host, path, 0.05, 1.0) == {"quota_us": 50000, "period_us": 1000000}
    assert (path / "cpu.max").read_text() == "50000 1000000"
    (path / "memory.swap.max").write_text("max")
    applied = cgroups.set_memory_limit(host, path, 128 << 20)
    assert (path / "memory.max").read_text() == str(128 << 20)
    assert (path / "memory.swap.max").read_text() == "0" and applied["swap"] == 0


def test_cgroup_v1_host_and_missing_controller(tmp_path):
    root = tmp_path / "cg1"
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "cgroup.procs").write_text("")
    host = cgroup_host(root)
    assert host.version == 1 and host.controllers == {"cpu"}
    path = cgroups.create_group(host, "cpu", "f00-node2")
    cgroups.set_cpu_quota(host, path, 0.1, 0.5)
    assert (path / "cpu.cfs_quota_us").read_text() == "100000"
    assert (path / "cpu.cfs_period_us").read_text() == "500000"
    with pytest.raises(ChaosDBError, match="memory cgroup controller is not available"):
        host.hierarchy("memory")
    with pytest.raises(ChaosDBError, match="no cgroup file system"):
        cgroup_host(tmp_path / "nothing")


def test_records_round_trip_and_owner(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSDB_FAULTS_DIR", str(tmp_path / "faults"))
    from chaosdb.core.faultrecords.records import load_record, load_records, new_record

    rec = new_record("loss", params={"loss_percent": 5})
    rec.save()
    assert oct(os.stat(tmp_path / "faults").st_mode)[-3:] == "700"
    again = load_record(rec.id)
    assert again is not None and again.params == {"loss_percent": 5} and again.owned_by_live_process()
    assert [r.id for r in load_records()] == [rec.id]
    rec.delete()
    assert load_records() == []


def test_validation_happens_before_anything_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSDB_FAULTS_DIR", str(tmp_path / "faults"))
    from chaosdb.faults import engine

    with pytest.raises(ChaosDBError, match="loss_percent"):
        engine.inject_network("loss", N[:1], N, loss_percent=150)
    with pytest.raises(ChaosDBError, match="mean_burst_packets"):
        engine.inject_network("bursty-loss", N[:1], N, loss_percent=5, burst_packets=0.5)
    with pytest.raises(ChaosDBError, match="unknown network fault"):
        engine.inject_network("earthquake", N[:1], N)
    with pytest.raises(ChaosDBError, match="duration_s"):
        engine.inject_network("partition", N[:1], N, duration_s=-1)
    with pytest.raises(ChaosDBError, match="period_s"):
        engine.inject_cpu_quota([], 0.05, period_s=5)
    with pytest.raises(ChaosDBError, match="limit_mb"):
        engine.inject_memory_limit([], 1)
    with pytest.raises(ChaosDBError, match="jitter_ms"):
        engine.inject_proxy_delay(N[:1], N, {"node1": [5432]}, delay_ms=10, jitter_ms=20)
    assert not (tmp_path / "faults").exists() or not list((tmp_path / "faults").iterdir())


def test_not_root_and_missing_tools_are_explained_before_anything(monkeypatch, tmp_path):
    from chaosdb.faults import engine, host

    monkeypatch.setenv("CHAOSDB_FAULTS_DIR", str(tmp_path / "faults"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ChaosDBError, match="needs root"):
        engine.inject_network("partition", N[:1], N)
    with pytest.raises(ChaosDBError, match="needs root"):
        engine.inject_cpu_quota([engine.ProcessGroup({"name": "x"}, lambda: [1])], 0.05)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("PATH", str(tmp_path))
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: False if str(p).endswith("/iptables") else real_exists(p))
    with pytest.raises(ChaosDBError, match="apt-get install iptables"):
        host.require_tool("iptables", "iptables")
    with pytest.raises(ChaosDBError, match="iptables is not installed"):
        engine.inject_network("loss", N[:1], N, loss_percent=5)
    assert not (tmp_path / "faults").exists()


def test_a_faults_rules_go_through_one_iptables_restore():
    """Chains first, rules in order, the hook into the built-in chain; one block per table; nothing a shell or
    iptables-restore could read differently gets in."""
    from chaosdb.faults.netfilter import Batch

    b = Batch()
    b.chain("mangle", "CHAOSDB-ab12-L")
    b.rule("mangle", "CHAOSDB-ab12-L", ["-m", "owner", "--uid-owner", "1001", "-j", "MARK", "--set-xmark",
                                        "0x10000/0x10000"])
    b.hook("mangle", "OUTPUT", "CHAOSDB-ab12-L", "ab12")
    b.chain("filter", "CHAOSDB-ab12")
    b.rule("filter", "CHAOSDB-ab12", ["-m", "mark", "!", "--mark", "0x10000/0x10000", "-j", "DROP"])
    assert b.text() == (
        "*mangle\n:CHAOSDB-ab12-L - [0:0]\n"
        "-A CHAOSDB-ab12-L -m owner --uid-owner 1001 -j MARK --set-xmark 0x10000/0x10000\n"
        "-I OUTPUT 1 -m comment --comment chaosdb:ab12 -j CHAOSDB-ab12-L\nCOMMIT\n"
        "*filter\n:CHAOSDB-ab12 - [0:0]\n-A CHAOSDB-ab12 -m mark ! --mark 0x10000/0x10000 -j DROP\nCOMMIT\n")
    for bad in (["-j", "DROP\n-F INPUT"], ["--comment", "a b"], ["x'y"], [""]):
        with pytest.raises(ChaosDBError, match="cannot go through iptables-restore"):
            b.rule("filter", "CHAOSDB-ab12", bad)
