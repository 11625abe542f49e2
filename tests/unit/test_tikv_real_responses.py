"""Responses recorded from a real PD v8.5.7 with pd-simulator stores (tests/data/tikv/pd-v8.5.7-simulator,
provenance there) through the normalisers: what a real PD says wins over hand-made samples."""

from __future__ import annotations

import json
from pathlib import Path

from chaosdb.tikv.records import normalise_health, normalise_member, normalise_region, normalise_store, normalise_stores

DATA = Path(__file__).resolve().parents[1] / "data" / "tikv" / "pd-v8.5.7-simulator"


def _load(name: str):
    return json.loads((DATA / name).read_text())


def test_stores_of_mock_stores_have_no_start_and_no_uptime():
    stores = normalise_stores(_load("stores.json"))
    assert len(stores) == 5 and {s["state"] for s in stores} == {"Up"}
    assert all(s["started_at"] is None and s["uptime_s"] is None for s in stores)  # not "since 1970"
    assert all(s["version"] == "8.5.7" and s["capacity_bytes"] == 1 << 40 for s in stores)
    assert sum(s["leader_count"] for s in stores) == 300


def test_offline_and_down_stores():
    assert normalise_store(_load("store1-offline.json"))["state"] == "Offline"
    assert normalise_store(_load("store1.json"))["state"] == "Up"
    states = {s["id"]: s["state"] for s in normalise_stores(_load("stores-after-sim-killed.json"))}
    assert set(states.values()) <= {"Down", "Disconnected"} and states


def test_region_by_key_in_both_lookups():
    for name in ("region-by-key-hex.json", "region-by-key-raw-zzz.json"):
        region = normalise_region(_load(name))
        assert region["leader_store_id"] in {p["store_id"] for p in region["peers"]}
        assert len(region["follower_store_ids"]) == 2 and all(p["role"] == "Voter" for p in region["peers"])
        assert region["start_key"] == region["start_key"].upper()


def test_members_and_health_around_a_killed_leader():
    before, after = _load("members-3node.json"), _load("members-3node-after-kill.json")
    assert before["leader"]["name"] == "pdA" and after["leader"]["name"] == "pdB"
    assert [normalise_member(m)["name"] for m in after["members"]] == [m["name"] for m in after["members"]]
    health = {m["name"]: m["healthy"] for m in normalise_health(_load("health-3node-after-kill.json"))}
    assert health == {"pdA": False, "pdB": True, "pdC": True}


def test_schedulers_show_the_eviction():
    assert "evict-leader-scheduler" in _load("schedulers-with-evict.json")
    assert "evict-leader-scheduler" not in _load("schedulers.json")
