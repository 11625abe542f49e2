"""Reading a TiKV cluster through PD: stores, the region and leader of a key, members, health."""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.podnames import pod_map, statefulset_pod
from chaosdb.core.prometheus import parse_prometheus
from chaosdb.tikv.keys import encode_key
from chaosdb.tikv.pd import PDError, pd_client
from chaosdb.tikv.records import (
    normalise_health,
    normalise_member,
    normalise_region,
    normalise_store,
    normalise_stores,
)

__all__ = [
    "STORE_SELECTORS",
    "check_store_selector",
    "cluster_health",
    "health",
    "members",
    "pod_of",
    "region_by_id",
    "region_for_key",
    "region_problems",
    "regions_without_leader",
    "resolve_store",
    "store",
    "stores",
]

STORE_SELECTORS = ("leader", "follower")


def stores(cfg: dict[str, Any], include_tombstone: bool = False) -> list[dict[str, Any]]:
    """Every store PD knows (tombstones too with *include_tombstone*), normalised."""
    query = [("state", "0"), ("state", "1"), ("state", "2")] if include_tombstone else None
    return normalise_stores(pd_client(cfg).get("/stores", query))


def store(cfg: dict[str, Any], store_id: int) -> dict[str, Any]:
    """One store by id, normalised."""
    return normalise_store(pd_client(cfg).get(f"/store/{int(store_id)}"))


def region_for_key(cfg: dict[str, Any], key: str, mode: str = "raw", api_version: int = 1, keyspace_id: int = 0,
                   key_format: str = "utf8") -> dict[str, Any]:
    """The region holding *key* (encoded as TiKV stores it: *mode*, *api_version*, keyspace), with its leader and peers.
    """
    encoded = encode_key(key, mode, api_version, keyspace_id, key_format)
    try:
        body = pd_client(cfg).get(f"/region/key/{encoded.hex().upper()}", [("format", "hex")])
    except PDError as exc:
        if exc.status == 404:
            raise ChaosDBError(f"PD knows no region for key {key!r} ({mode}, API V{api_version}): {exc}") from None
        raise
    rec = normalise_region(body)
    rec["key"] = {"key": key, "mode": mode, "api_version": api_version, "encoded_hex": encoded.hex().upper()}
    return rec


def region_by_id(cfg: dict[str, Any], region_id: int) -> dict[str, Any]:
    """One region by id, with its leader and peers."""
    return normalise_region(pd_client(cfg).get(f"/region/id/{int(region_id)}"))


def members(cfg: dict[str, Any]) -> dict[str, Any]:
    """PD's members, its leader and its etcd leader."""
    body = pd_client(cfg).get("/members")
    return {"members": [normalise_member(m) for m in body.get("members") or []],
            "leader": (body.get("leader") or {}).get("name"),
            "etcd_leader": (body.get("etcd_leader") or {}).get("name")}


def health(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Each PD member's health."""
    return normalise_health(pd_client(cfg).get("/health"))


def regions_without_leader(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every region PD knows (``GET /regions``) whose leader it does not report (no ``leader``, or one without a
    ``store_id``: an election under way, or no quorum of its peers left), normalised."""
    body = pd_client(cfg).get("/regions")
    if not isinstance(body, dict) or not isinstance(body.get("regions"), list):
        raise ChaosDBError(f"PD's /regions answered something that is not a list of regions: {str(body)[:120]}")
    return [r for r in (normalise_region(x) for x in body["regions"]) if r["leader_store_id"] is None]


def region_problems(cfg: dict[str, Any]) -> dict[str, int] | None:
    """``pd_regions_status`` counts from PD's /metrics (miss/down/offline/pending peers), or None when PD
    serves no metrics. Both spellings (``miss-peer-region-count`` in code, underscores in old rules) count."""
    try:
        text = pd_client(cfg).metrics()
    except ChaosDBError:
        return None
    out: dict[str, int] = {}
    for name, labels, value in parse_prometheus(text):
        if name == "pd_regions_status" and "type" in labels:
            key = labels["type"].replace("_", "-")
            out[key] = max(out.get(key, 0), int(value))  # each PD reports; the leader's is the real one
    return out


def cluster_health(cfg: dict[str, Any]) -> dict[str, Any]:
    """Whether the TiKV cluster is healthy: every store Up, every PD member healthy, no region missing or down peers;
    the problems named."""
    problems = []
    all_stores = stores(cfg)
    for s in all_stores:
        if s["state"] != "Up":
            problems.append(f"store {s['id']} ({s['address']}) is {s['state']}")
    if not all_stores:
        problems.append("PD reports no store")
    try:
        pd_members = health(cfg)
        problems += [f"PD member {m['name']} is not healthy" for m in pd_members if not m["healthy"]]
    except ChaosDBError as exc:
        problems.append(f"PD health unknown: {exc}")
    regions = region_problems(cfg)
    for kind in ("miss-peer-region-count", "down-peer-region-count", "offline-peer-region-count"):
        if regions and regions.get(kind):
            problems.append(f"{regions[kind]} region(s) with {kind.replace('-region-count', '').replace('-', ' ')}")
    return {"healthy": not problems, "problems": problems, "stores": all_stores, "regions": regions}


def pod_of(address: str | None, store_id: Any = None, configuration: dict[str, Any] | None = None) -> str | None:
    """The pod of a store: ``tikv_pods`` in the configuration (store id -> pod name) when it names this store,
    else the StatefulSet pod of its address (``basic-tikv-1.basic-tikv-peer.tidb.svc:20160`` -> ``basic-tikv-1``),
    else None."""
    pods = pod_map(configuration, "tikv_pods")
    if store_id is not None and str(store_id) in pods:
        return pods[str(store_id)]
    return statefulset_pod(address)


def check_store_selector(store_sel: Any, key: Any) -> None:
    """The ``store`` selector's grammar, before anything asks PD: a store id, or ``leader`` / ``follower`` of
    the region holding ``key``."""
    if isinstance(store_sel, bool) or store_sel is None:
        raise ChaosDBError(f"store must be a store id, leader or follower; got {store_sel!r}")
    if isinstance(store_sel, int) or (isinstance(store_sel, str) and store_sel.isdigit()):
        return
    if store_sel not in STORE_SELECTORS:
        raise ChaosDBError(f"store must be a store id, leader or follower; got {store_sel!r}")
    if key is None:
        raise ChaosDBError(f"store {store_sel!r} needs the key whose region decides it")


def resolve_store(cfg: dict[str, Any], store_sel: Any = "leader", key: str | None = None, mode: str = "raw",
                  api_version: int = 1, keyspace_id: int = 0, key_format: str = "utf8") -> dict[str, Any]:
    """A store by id, or the ``leader`` / a ``follower`` of the region holding ``key``; with ``region``
    (for key selectors) and ``pod``."""
    region = None
    check_store_selector(store_sel, key)
    if isinstance(store_sel, int) or (isinstance(store_sel, str) and store_sel.isdigit()):
        chosen = store(cfg, int(store_sel))
    elif store_sel in STORE_SELECTORS:
        region = region_for_key(cfg, str(key), mode, api_version, keyspace_id, key_format)  # checked: not None
        by_id = {s["id"]: s for s in stores(cfg)}
        if store_sel == "leader":
            if region["leader_store_id"] is None:
                raise ChaosDBError(f"region {region['id']} has no leader right now (election?); retry")
            chosen = by_id.get(region["leader_store_id"]) or store(cfg, region["leader_store_id"])
        else:
            ups = [by_id[i] for i in region["follower_store_ids"] if i in by_id and by_id[i]["state"] == "Up"]
            if not ups:
                raise ChaosDBError(f"region {region['id']} has no Up follower store")
            chosen = ups[0]
    else:
        raise ChaosDBError(f"unknown store selector {store_sel!r}: a store id, leader or follower")
    out = dict(chosen)
    out["pod"] = pod_of(chosen.get("address"), chosen.get("id"), cfg)
    if region is not None:
        out["region"] = {k: region[k] for k in ("id", "leader_store_id", "follower_store_ids", "key")}
    return out
