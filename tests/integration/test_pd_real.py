"""The TiKV/PD activities against a real PD (v8.5.7) with pd-simulator's stores (``chaosdb cluster up --kind pd``).

What is real here: PD itself (its HTTP API, scheduling, operators, schedulers, store states, members and leader
election) and the store/region heartbeats the simulator sends as TiKV would. What is not: data (no TiKV serves
keys, so no load) and store processes (``kill_store`` and the local CPU/memory limits need ``tikv-server``
processes; they stay tested against recorded outputs). Binaries: see tests/realservers.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from chaosdb.clusters.pd import simulated_cluster
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import record_problems
from chaosdb.embedded.processes import node_processes
from chaosdb.load.observer import Observer, chosen_sources, read_events
from chaosdb.tikv import actions, probes
from chaosdb.tikv.keys import encode_key
from tests.chaosrun import build_report
from tests.polling import poll
from tests.realservers import real_binaries

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHAOS = str(Path(sys.executable).parent / "chaos")
KEY = "usertable:user1000"


def _poll(check, timeout: float = 90.0, every: float = 0.5):
    return poll(check, timeout, every)


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    return real_binaries(tmp_path_factory, ["pd-server", "pd-simulator"])


@contextmanager
def _pd_cluster(tmp_path_factory, bin_dir: str, members: int, stores: int, regions: int, address_base: str):
    d = tmp_path_factory.mktemp(f"pd{members}-cluster")
    res = simulated_cluster.up(d, f"pytest-pd{members}", members=members, stores=stores, regions=regions,
                     address_base=address_base, bin_dir=bin_dir)
    try:
        yield {"dir": d, "up": res, "cfg": res["configuration"]}
    finally:
        simulated_cluster.down(d, purge=True)
        assert not node_processes(d), "PD or simulator processes left behind"


@pytest.fixture(scope="module")
def pd(bin_dir, tmp_path_factory):
    with _pd_cluster(tmp_path_factory, bin_dir, 1, 5, 60, "127.0.40.1") as cluster:
        yield cluster


def test_up_is_ready_with_every_store_up_and_every_region_leader_known(pd):
    st = simulated_cluster.status(pd["dir"])
    assert st["ready"] and st["healthy"], st
    stores = probes.stores(configuration=pd["cfg"])
    assert len(stores) == 5 and {s["state"] for s in stores} == {"Up"}
    assert all(s["version"] == "8.5.7" and s["uptime_s"] is None for s in stores)  # mock stores report no start
    dist = probes.leader_distribution(configuration=pd["cfg"])
    assert dist["leaders"] >= 60
    assert probes.cluster_is_healthy(configuration=pd["cfg"]) is True
    members = probes.pd_members(configuration=pd["cfg"])
    assert members["leader"] == "pd1" and [m["name"] for m in members["members"]] == ["pd1"]


@pytest.mark.parametrize("mode, key_format, key", [("raw", "utf8", KEY), ("txn", "utf8", KEY),
                                                    ("raw", "hex", KEY.encode().hex())])
def test_the_region_and_leader_of_a_key_are_the_ones_pd_says(pd, mode, key_format, key):
    region = probes.region_for_key(key, mode=mode, key_format=key_format, configuration=pd["cfg"])
    encoded = encode_key(key, mode, 1, 0, key_format).hex().upper()
    assert region["key"]["encoded_hex"] == encoded
    # PD's own boundaries (hex, upper case) hold the encoded key
    assert region["start_key"] <= encoded and (region["end_key"] == "" or encoded < region["end_key"]), region
    leader = probes.leader_store_of_key(key, mode=mode, key_format=key_format, configuration=pd["cfg"])
    assert leader["id"] == region["leader_store_id"] and leader["region"]["id"] == region["id"]


def test_transfer_leader_moves_it_to_the_follower_pd_then_reports(pd):
    before = probes.region_for_key(KEY, configuration=pd["cfg"])
    res = actions.transfer_region_leader(key=KEY, to_store="follower", wait_s=60, configuration=pd["cfg"])
    assert res["moved"] and res["from_store"] == before["leader_store_id"], res
    after = probes.region_for_key(KEY, configuration=pd["cfg"])
    assert after["leader_store_id"] == res["to_store"] != before["leader_store_id"]


def test_evict_leaders_empties_the_store_and_its_removal_lets_them_back(pd):
    res = actions.evict_leaders(target="leader", key=KEY, wait_s=90, configuration=pd["cfg"])
    store = res["store"]
    assert res["targets"][0]["name"] == str(store) and not record_problems(res), res
    try:
        assert res["leaderless_after_s"] is not None, res
        assert probes.leader_distribution(configuration=pd["cfg"])["stores"][str(store)]["leaders"] == 0
        schedulers = actions.remove_leader_eviction(store=store, configuration=pd["cfg"])["schedulers"]
    finally:
        actions.remove_leader_eviction(configuration=pd["cfg"])
    assert not [s for s in schedulers if "evict-leader" in s], schedulers
    # PD's balance-leader scheduler gives the store leaders again
    assert _poll(lambda: probes.leader_distribution(configuration=pd["cfg"])["stores"][str(store)]["leaders"] > 0)


def test_offline_then_up_is_refused_without_the_flag_and_reverts_with_it(pd):
    store = probes.stores(configuration=pd["cfg"])[-1]["id"]
    with pytest.raises(ChaosDBError, match="i_understand_offline_removes_the_store"):
        actions.set_store_state(store, "Offline", configuration=pd["cfg"])
    res = actions.set_store_state(store, "Offline", i_understand_offline_removes_the_store=True,
                                  configuration=pd["cfg"])
    try:
        assert res["from"] == "Up" and res["now"] == "Offline", res
        assert probes.cluster_is_healthy(configuration=pd["cfg"]) is False
    finally:
        back = actions.set_store_state(store, "Up", configuration=pd["cfg"])
    assert back["now"] == "Up", back
    assert _poll(lambda: probes.cluster_is_healthy(configuration=pd["cfg"]))


def test_the_tikv_evict_leader_experiment_runs_end_to_end(pd, tmp_path):
    exp = json.loads((ROOT / "experiments" / "tikv" / "evict-leader.json").read_text())
    for activity in exp["method"]:
        if activity.get("pauses"):
            activity["pauses"]["after"] = 3  # the CI version
    path = tmp_path / "evict-leader.json"
    path.write_text(json.dumps(exp))
    env_cfg = {"CHAOSDB_PD_URL": pd["cfg"]["pd_url"], "CHAOSDB_TIKV_KEY": "usertable:user2000", "CHAOSDB_TIKV_MODE": "raw"}
    run = subprocess.run([CHAOS, "--no-log-file", "run", "--journal-path", str(tmp_path / "journal.json"), str(path)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, **env_cfg})
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    evict = next(r for r in journal["run"] if r["activity"]["name"] == "evict-leaders-from-the-leader-store")
    assert evict["status"] == "succeeded" and evict["output"]["leaderless_after_s"] is not None
    assert journal["rollbacks"][0]["output"]["removed"], journal["rollbacks"]
    report = build_report(tmp_path / "journal.json", tmp_path / "report")
    assert "evict-leaders-from-the-leader-store" in report and "completed" in report


def test_chaosdb_check_of_the_shipped_tikv_checks_reads_the_real_pd(pd):
    """``chaosdb check shipped:tikv`` (what a Litmus cmdProbe or a Workflow Task runs) against the real PD: PD healthy
    and no region without a leader, one JSON line, exit 0; a PD nobody answers at is a failed check, exit 1."""
    chaosdb = str(Path(sys.executable).parent / "chaosdb")
    run = subprocess.run([chaosdb, "check", "shipped:tikv"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CHAOSDB_PD_URL": pd["cfg"]["pd_url"]})
    [line] = run.stdout.splitlines()
    result = json.loads(line)
    assert run.returncode == 0 and result["ok"], (run.stdout, run.stderr)
    values = {c["check"]: c["value"] for c in result["checks"]}
    assert values == {"pd-healthy": True, "no-leaderless-region": 0}
    assert all(c["latency_ms"] > 0 for c in result["checks"])
    gone = subprocess.run([chaosdb, "check", "shipped:tikv", "no-leaderless-region", "--var",
                           "pd_url=http://127.0.40.250:2379"], capture_output=True, text=True, timeout=120)
    result = json.loads(gone.stdout)
    assert gone.returncode == 1 and not result["ok"] and result["checks"][0]["reason"], gone.stdout


def test_a_store_the_simulator_takes_away_loses_its_leaders_and_is_reported(pd):
    """Last of the one-member cluster's tests: the store does not come back."""
    victim = probes.leader_store_of_key(KEY, configuration=pd["cfg"])["id"]
    simulated_cluster.sim_event(pd["dir"], "down-node", victim)
    assert _poll(lambda: probes.leader_distribution(configuration=pd["cfg"])["stores"].get(str(victim), {})
                 .get("leaders", 0) == 0, timeout=60), "PD never moved the leaders off the lost store"
    assert probes.leader_store_of_key(KEY, configuration=pd["cfg"])["id"] != victim
    # no heartbeat: Disconnected after 20 s, which the health probe reports
    health = _poll(lambda: (lambda h: h if not h["healthy"] else None)(
        probes.cluster_health(configuration=pd["cfg"])), timeout=90)
    assert health and any(f"store {victim}" in p for p in health["problems"]), health


@pytest.fixture(scope="module")
def pd3(bin_dir, tmp_path_factory):
    with _pd_cluster(tmp_path_factory, bin_dir, 3, 3, 30, "127.0.40.11") as cluster:
        yield cluster


def test_a_killed_pd_member_is_survived_by_the_client_through_another_endpoint(pd3):
    cfg = pd3["cfg"]
    assert len(cfg["pd_urls"]) == 3
    leader = probes.pd_members(configuration=cfg)["leader"]
    # the run's watcher of the database (the load control's), through the TiKV adapter: PD and its stores
    events_dir = Path(pd3["dir"]) / "watched"
    events_dir.mkdir(exist_ok=True)
    watcher = Observer(events_dir, chosen_sources("auto", cfg), cfg, None, every_s=0.5)
    assert [s for _, s in watcher.sources] == ["pd", "tikv"]
    watcher.start()
    assert _poll(lambda: len(read_events(events_dir)) >= 2 or None, timeout=30)
    # kill the member our client asks first (pd_url), whichever role it has, and the leader if another
    first = Path(pd3["dir"]) / "pd1"
    victims = [p.pid for p in node_processes(first)]
    assert victims
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    # pd_url is dead now; until PD elects a new leader (about 10 s after a SIGKILL) the other members answer
    # 500 "redirect failed": the client tries them all, and answers once one can
    def stores_or_none():
        try:
            return probes.stores(configuration=cfg)
        except ChaosDBError as exc:
            assert "no PD endpoint answered" in str(exc), exc
            return None

    stores = _poll(stores_or_none, timeout=90)
    assert stores and len(stores) == 3
    members = _poll(lambda: (lambda m: m if m.get("leader") and m["leader"] != "pd1" else None)(
        probes.pd_members(configuration=cfg)), timeout=60)
    assert members and members["leader"] in ("pd2", "pd3"), (leader, members)
    # what the watcher recorded is what PD says: pd1 left; a new leader when pd1 led; the stores stayed up
    assert _poll(lambda: any(e["event"] == "member_left" and e.get("member") == "pd1"
                             for e in read_events(events_dir)) or None, timeout=30)
    if leader == "pd1":
        assert _poll(lambda: any(e["event"] == "leader_elected" and e.get("to") == members["leader"]
                                 for e in read_events(events_dir)) or None, timeout=30)
    watched = watcher.stop()
    events = read_events(events_dir)
    assert watched["events"] == len(events)
    stores = next(e for e in events if e["source"] == "tikv" and e["event"] == "observed")
    assert len(stores["members"]) == 3 and set(stores["members"].values()) == {"Up"}
    assert not any(e["source"] == "tikv" and e["event"] == "member_left" for e in events)
