"""TiKV / PD: key encodings, PD record normalisation against recorded real outputs, and the probes and actions
against a local PD stand-in (tests/unit/pd_standin.py; no PD can run here)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.k8s import api
from chaosdb.tikv import actions, probes
from chaosdb.tikv.keys import decode_bytes, encode_bytes, encode_key
from chaosdb.tikv.records import normalise_region, normalise_store, normalise_stores, parse_go_duration, parse_size
from tests.unit.k8s_api_standin import KubeStandin
from tests.unit.pd_standin import PDStandin

DATA = Path(__file__).resolve().parents[1] / "data" / "tikv"


def test_memcomparable_encoding_matches_pd():
    # TiDB table 29's prefix as PD prints the region boundary (pd-ctl docs, region 2 start_key)
    assert encode_bytes(b"t\x80" + b"\x00" * 5 + b"\x00\x1d").hex().upper() == "7480000000000000FF1D00000000000000F8"
    assert encode_bytes(b"") == b"\x00" * 8 + b"\xf7"
    assert encode_bytes(b"12345678") == b"12345678\xff" + b"\x00" * 8 + b"\xf7"  # full group: padding group
    for k in (b"", b"a", b"usertable:user123", bytes(range(20))):
        assert decode_bytes(encode_bytes(k)) == k
    assert encode_key("usertable:user1") == b"usertable:user1"  # RawKV API V1: the key itself
    assert encode_key("usertable:user1", "txn") == encode_bytes(b"usertable:user1")
    assert encode_key("k", "raw", api_version=2, keyspace_id=1) == encode_bytes(b"r\x00\x00\x01k")
    assert encode_key("6b", key_format="hex") == b"k"
    with pytest.raises(ChaosDBError, match="raw or txn"):
        encode_key("k", "coprocessor")
    # order is preserved, which is what region boundaries rely on
    keys = [b"a", b"a\x00", b"ab", b"abcdefgh", b"abcdefgh\x00", b"b"]
    assert sorted(encode_bytes(k) for k in keys) == [encode_bytes(k) for k in sorted(keys)]


def _json_from_doc(text: str) -> str:
    """Docs' JSON made parseable: prompt/command lines, `#` and `//` comments and `......` elisions removed."""
    text = re.sub(r"^\s*(#|>>|```|curl ).*$", "", text, flags=re.M)  # header, prompt, command and fence lines
    text = re.sub(r"\s+(#|//)[^\n\"]*$", "", text, flags=re.M)  # trailing comments
    text = re.sub(r",?\s*\.\.\.\.\.\.", "", text)  # elisions
    return text


def test_recorded_offline_store_and_stores_example():
    raw = (DATA / "github_tikv_pd_issue_3780_store_offline_v5.1.0-alpha.txt").read_text()
    inner = raw[raw.index("[") + 1:].strip()  # the store object inside the unbalanced upstream text
    obj, _ = json.JSONDecoder().raw_decode(inner)
    s = normalise_store(obj, now=1623768761.232345 + 5)
    assert (s["id"], s["state"], s["status_address"]) == (1531026, "Offline", "0.0.0.0:20180")
    assert s["leader_count"] == 1110 and s["region_count"] == 3209 and s["pending_peer_count"] == 0
    assert s["capacity_bytes"] == int(3.125 * 1024 ** 4) and s["used_bytes"] == int(83.58 * 1024 ** 3)
    assert s["heartbeat_age_s"] == pytest.approx(5, abs=0.01) and s["uptime_s"] == pytest.approx(79555.23, abs=0.01)
    text = _json_from_doc((DATA / "tikv_website_7.1_api_md_pd_stores_example.txt").read_text()) + "}"
    (one,) = normalise_stores(json.loads(text))
    assert one["state"] == "Up" and one["address"] == "127.0.0.1:20160" and one["leader_count"] == 17
    assert one["capacity_bytes"] == 20 * 1024 ** 3 and one["last_heartbeat"].startswith("2019-03-21T06:14:22.961171")


def test_state_from_heartbeat_when_pd_sends_no_name():
    base = {"store": {"id": 4, "address": "a:20160", "last_heartbeat": int(1000 * 1e9)}, "status": {}}
    assert normalise_store(base, now=1010)["state"] == "Up"  # state 0 omitted = Up
    assert normalise_store(base, now=1030)["state"] == "Disconnected"  # > 20 s
    assert normalise_store(base, now=1000 + 31 * 60)["state"] == "Down"  # > max-store-down-time
    assert normalise_store({**base, "store": {**base["store"], "state": 2}}, now=5000)["state"] == "Tombstone"
    assert normalise_store(base, now=1010)["leader_count"] == 0  # omitted zero counts


def test_recorded_regions_old_and_new_shapes():
    text = (DATA / "tikv_website_7.1_pd-ctl_region_example.txt").read_text()
    body = _json_from_doc(text[text.index(">> region 2"):])
    body = body[:body.rindex("}") + 1]
    r = normalise_region(json.loads(body))
    assert (r["id"], r["leader_store_id"], r["follower_store_ids"]) == (2, 3, [])
    assert r["start_key"] == "7480000000000000FF1D00000000000000F8" and r["peers"][0]["role"] == "Voter"
    excerpt = (DATA / "github_tikv_pd_issue_6560_regions_by_state_excerpt.txt").read_text()
    first = excerpt[excerpt.index('"regions": [') + len('"regions": ['):excerpt.index("[... truncated")]
    region = json.loads(_json_from_doc(first).rstrip().rstrip(",") + "}")
    r = normalise_region(region)
    assert r["leader_store_id"] == 1 and r["follower_store_ids"] == [4, 5] and r["learner_store_ids"] == [2751139]
    assert r["epoch"] == {"conf_ver": 6, "version": 109399}


def test_recorded_health():
    from chaosdb.tikv.records import normalise_health
    (member,) = normalise_health(json.loads(_json_from_doc(
        (DATA / "tikv_website_7.1_pd-ctl_health_example.txt").read_text())))
    assert member == {"name": "pd", "member_id": 13195394291058371180, "client_urls": ["http://127.0.0.1:2379"],
                      "healthy": True}  # a uint64 above 2**53 kept exact


def test_sizes_and_durations():
    assert parse_size("0B") == 0 and parse_size("10 GiB") == 10 * 1024 ** 3 and parse_size(None) is None
    assert parse_go_duration("1h2m3.5s") == pytest.approx(3723.5) and parse_go_duration("150ms") == 0.15
    with pytest.raises(ChaosDBError):
        parse_size("lots")


# ---------------------------------------------------------------------------
# against the PD stand-in


@pytest.fixture
def pd():
    with PDStandin() as standin:
        standin.cfg = {"pd_url": standin.url}
        yield standin


def test_stores_region_and_leader_of_a_key(pd):
    stores = probes.stores(configuration=pd.cfg)
    assert [(s["id"], s["state"], s["leader_count"], s["region_count"]) for s in stores] == \
        [(1, "Up", 1, 2), (2, "Up", 1, 2), (3, "Up", 0, 2)]  # store 3's zero leader_count was omitted
    region = probes.region_for_key("usertable:user7", configuration=pd.cfg)
    assert region["leader_store_id"] == 2 and region["follower_store_ids"] == [1, 3]
    assert region["start_key"] == b"usertable:user5".hex().upper()
    lead = probes.leader_store_of_key("usertable:user1", configuration=pd.cfg)
    assert lead["id"] == 1 and lead["address"] == "127.0.0.1:20161" and lead["region"]["id"] == 2
    dist = probes.leader_distribution(configuration=pd.cfg)
    assert dist["leaders"] == 2 and dist["max_share"] == 0.5 and dist["stores"]["3"]["leaders"] == 0
    assert probes.pd_members(configuration=pd.cfg)["leader"] == "pd-1"
    assert probes.cluster_is_healthy(configuration=pd.cfg)


def test_health_reports_a_stopped_store(pd):
    pd.state.stop_store(2)
    pd.state.clock = lambda: __import__("time").time() + 25  # 25 s without heartbeats
    health = probes.cluster_health(configuration=pd.cfg)
    assert not health["healthy"]
    assert "store 2 (127.0.0.1:20162) is Disconnected" in health["problems"]
    assert any("down peer" in p for p in health["problems"])
    assert probes.region_for_key("usertable:user9", configuration=pd.cfg)["down_store_ids"] == [2]


def test_pd_is_healthy_and_counts_the_regions_without_a_leader(pd):
    assert probes.pd_is_healthy(configuration=pd.cfg) is True
    assert probes.regions_without_leader(configuration=pd.cfg) == 0
    pd.state.regions[1]["leader"] = None  # PD knows no leader of region 3 (an election, or no quorum left)
    assert probes.regions_without_leader(configuration=pd.cfg) == 1


def test_transfer_leader_to_a_follower_and_errors(pd):
    res = actions.transfer_region_leader(key="usertable:user9", to_store="follower", configuration=pd.cfg)
    assert (res["from_store"], res["to_store"], res["moved"], res["pd"]) == (2, 1, True, "The operator is created.")
    assert probes.region_for_key("usertable:user9", configuration=pd.cfg)["leader_store_id"] == 1
    with pytest.raises(ChaosDBError, match="store 9 holds no voter"):
        actions.transfer_region_leader(region_id=3, to_store=9, configuration=pd.cfg)
    with pytest.raises(ChaosDBError, match="exactly one of key and region_id"):
        actions.transfer_region_leader(configuration=pd.cfg)
    with pytest.raises(ChaosDBError, match="HTTP 404.*ErrRegionNotFound"):
        actions.transfer_region_leader(region_id=77, configuration=pd.cfg)


def test_evict_leaders_of_the_keys_leader_then_roll_back(pd):
    res = actions.evict_leaders("leader", key="usertable:user1", configuration=pd.cfg)
    assert res["store"] == 1 and res["leaders_before"] == 1 and res["leaderless_after_s"] is not None
    assert res["pd"] == "The scheduler is created."
    assert probes.leader_store_of_key("usertable:user1", configuration=pd.cfg)["id"] != 1
    # a transfer back to the evicted store is refused by PD
    with pytest.raises(ChaosDBError, match="HTTP 500"):
        actions.transfer_region_leader(key="usertable:user1", to_store=1, configuration=pd.cfg)
    back = actions.remove_leader_eviction(1, configuration=pd.cfg)
    assert back["removed"] == ["evict-leader-scheduler-1"] and "evict-leader-scheduler" not in back["schedulers"]
    assert actions.remove_leader_eviction(1, configuration=pd.cfg)["removed"] == []  # idempotent rollback
    assert actions.transfer_region_leader(key="usertable:user1", to_store=1, configuration=pd.cfg)["moved"]


def test_store_state_needs_the_explicit_flag(pd, caplog):
    with pytest.raises(ChaosDBError, match="i_understand_offline_removes_the_store"):
        actions.set_store_state(3, "Offline", configuration=pd.cfg)
    assert probes.stores(configuration=pd.cfg)[2]["state"] == "Up"
    res = actions.set_store_state(3, "Offline", i_understand_offline_removes_the_store=True, configuration=pd.cfg)
    assert (res["from"], res["now"]) == ("Up", "Offline")
    with caplog.at_level(logging.WARNING, logger="chaostoolkit"):
        assert not probes.cluster_is_healthy(configuration=pd.cfg)
    # the journal keeps only False: the log says why
    assert "the TiKV cluster is not healthy: store 3 " in caplog.text and "is Offline" in caplog.text
    assert actions.set_store_state(3, "Up", configuration=pd.cfg)["now"] == "Up"


def test_kill_store_on_kubernetes_sends_the_signal_in_its_pod_through_the_api(pd, tmp_path):
    api.reset_clients()
    kube = KubeStandin().start()
    try:
        kube.add_statefulset("basic-tikv", "tidb", 3, {"app.kubernetes.io/component": "tikv"}, containers=("tikv",))
        cfg = {**pd.cfg, "k8s_namespace": "tidb", "k8s_kubeconfig": kube.write_kubeconfig(tmp_path / "kubeconfig"),
               "tikv_pods": {"1": "basic-tikv-0", "2": "basic-tikv-1", "3": "basic-tikv-2"}}
        res = actions.kill_store("leader", key="usertable:user7", signal="SIGTERM", configuration=cfg)
        assert (res["store"], res["pod"], res["where"], res["container"]) == (2, "basic-tikv-1", "kubernetes", "tikv")
        assert kube.execs == [{"pod": "basic-tikv-1", "namespace": "tidb", "container": "tikv",
                               "command": ["kill", "-s", "TERM", "1"]}]
        with pytest.raises(ChaosDBError, match="has no container 'db'"):
            actions.kill_store("leader", key="usertable:user7", container="db", configuration=cfg)
    finally:
        kube.stop()
        api.reset_clients()


def test_configuration_errors_are_clear():
    with pytest.raises(ChaosDBError, match="set pd_url"):
        probes.stores(configuration={})
    with pytest.raises(ChaosDBError, match="no PD endpoint answered"):
        probes.stores(configuration={"pd_urls": "http://127.0.0.1:9,http://127.0.0.1:10"})
    with pytest.raises(ChaosDBError, match="needs the key"):
        actions.evict_leaders("leader", configuration={"pd_url": "http://127.0.0.1:9"})


def test_second_pd_endpoint_is_used_when_the_first_is_down(pd):
    cfg = {"pd_urls": ["http://127.0.0.1:9", pd.url]}
    assert len(probes.stores(configuration=cfg)) == 3


# ---------------------------------------------------------------------------
# local stores as fault targets (stand-in tikv-server processes; the CPU limit is the real cgroup engine)


@pytest.fixture
def local_stores(pd, tmp_path):
    import subprocess
    exe = str(DATA / "standin" / "tikv-server")
    procs = [subprocess.Popen([exe, "--pd", "127.0.0.1:2379", "--addr", f"127.0.0.1:{20160 + i}",
                               "--data-dir", str(tmp_path / f"s{i}")] + (["--spin"] if i == 1 else []))
             for i in (1, 2, 3)]
    from chaosdb.tikv.store_processes import store_pids
    deadline = __import__("time").time() + 10
    while not all(store_pids(f"127.0.0.1:{20160 + i}") for i in (1, 2, 3)) and __import__("time").time() < deadline:
        __import__("time").sleep(0.05)  # until each has exec'd its command line
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_local_store_processes_are_found_by_address(local_stores):
    from chaosdb.tikv.store_processes import store_pids
    assert store_pids("127.0.0.1:20162") == [local_stores[1].pid]
    assert store_pids("localhost:20163") == [local_stores[2].pid]
    assert store_pids("127.0.0.1:2016") == []  # a prefix of another address is not that address


def _can_limit_cpu() -> bool:
    import os
    return os.geteuid() == 0 and Path("/sys/fs/cgroup/cpu").is_dir()


@pytest.mark.skipif(not _can_limit_cpu(), reason="needs root and the cgroup cpu controller")
def test_cpu_limit_on_the_leader_store_of_a_key(pd, local_stores):
    import time as _time

    from chaosdb.embedded.processes import cpu_time_s
    from chaosdb.faults import actions as fault_actions
    res = fault_actions.limit_cpu(target={"role": "tikv-leader", "key": "usertable:user1"}, quota_s=0.05,
                                  period_s=0.5, configuration=pd.cfg)
    try:
        assert res["targets"][0]["store_id"] == 1 and res["kind"] == "cpu"
        assert res["cgroups"][0]["pids"] == [local_stores[0].pid]
        t0, c0 = _time.monotonic(), cpu_time_s([local_stores[0].pid])
        _time.sleep(2)
        used = (cpu_time_s([local_stores[0].pid]) - c0) / (_time.monotonic() - t0)
        assert used < 0.2, used  # 10 % of a core allowed; a free spinner uses ~100 %
    finally:
        reverted = fault_actions.revert_faults()["reverted"]
    assert [r["kind"] for r in reverted] == ["cpu"]
    with pytest.raises(ChaosDBError, match="no local no-such-binary"):
        actions.kill_store("follower", key="usertable:user1", process_match="no-such-binary", configuration=pd.cfg)


def test_kill_the_follower_store_locally(pd, local_stores):
    res = actions.kill_store("follower", key="usertable:user9", configuration=pd.cfg)
    assert res["where"] == "local" and res["store"] == 1 and res["pids"] == [local_stores[0].pid]
    assert local_stores[0].wait(5) == -9


def test_chaos_run_of_the_tikv_experiments(pd, local_stores, tmp_path):
    """Real `chaos run` of two shipped TiKV experiments against the PD stand-in and stand-in store processes."""
    import os
    import subprocess
    import sys
    chaos = str(Path(sys.executable).parent / "chaos")
    env = {**os.environ, "CHAOSDB_PD_URL": pd.url, "CHAOSDB_TIKV_KEY": "usertable:user9", "CHAOSDB_K8S_NAMESPACE": ""}
    exp_dir = Path(__file__).resolve().parents[2] / "experiments" / "tikv"
    for name in ("evict-leader", "kill-follower"):
        exp = json.loads((exp_dir / f"{name}.json").read_text())
        for a in exp["method"]:
            a.pop("pauses", None)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(exp))
        subprocess.run([chaos, "--log-file", str(tmp_path / "chaos.log"), "run", str(path), "--journal-path",
                        str(tmp_path / f"{name}.journal.json")], env=env, capture_output=True, timeout=120)
        journal = json.loads((tmp_path / f"{name}.journal.json").read_text())
        runs = {r["activity"]["name"]: r for r in journal["run"]}
        if name == "evict-leader":
            assert runs["leader-of-the-key-before"]["output"]["id"] == 2  # usertable:user9 is led by store 2
            assert journal["status"] == "completed"
            assert runs["evict-leaders-from-the-leader-store"]["output"]["store"] == 2
            assert journal["rollbacks"][-1]["output"]["removed"] == ["evict-leader-scheduler"]
        else:
            # the eviction moved the leadership to store 1 (removing it does not move it back)
            assert runs["leader-of-the-key-before"]["output"]["id"] == 1
            killed = runs["kill-the-follower-store"]["output"]
            assert killed["store"] == 2 and killed["pids"] == [local_stores[1].pid]
    assert pd.state.evicted == set()  # the rollback removed the eviction
