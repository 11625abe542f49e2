"""Opt-in: the TiKV/PD probes against a real PD (``CHAOSDB_PD_URL=http://pd:2379``), read-only; optionally
``CHAOSDB_TIKV_KEY`` (a RawKV key that exists) for the region/leader lookups."""

from __future__ import annotations

import os

import pytest

from chaosdb.tikv import probes

CHAOSDB_PD_URL = os.environ.get("CHAOSDB_PD_URL")
pytestmark = pytest.mark.skipif(not CHAOSDB_PD_URL, reason="set CHAOSDB_PD_URL to run against a real PD")


def test_real_pd_stores_members_health():
    cfg = {"pd_url": CHAOSDB_PD_URL}
    stores = probes.stores(configuration=cfg)
    assert stores and all(s["address"] for s in stores)
    assert probes.pd_members(configuration=cfg)["leader"]
    assert all("healthy" in m for m in probes.pd_health(configuration=cfg))
    dist = probes.leader_distribution(configuration=cfg)
    assert dist["leaders"] == sum(s["leader_count"] for s in stores if s["state"] != "Tombstone")
    region = probes.region_for_key(os.environ.get("CHAOSDB_TIKV_KEY", "usertable:user1"), configuration=cfg)
    assert region["leader_store_id"] in {s["id"] for s in stores}
