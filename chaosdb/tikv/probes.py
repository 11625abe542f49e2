"""TiKV / PD probes: stores, the region and leader store of a key, leader distribution, PD members and
health (``pd_is_healthy``), regions without a leader, and ``cluster_is_healthy`` (a steady-state probe and a gate
before injecting).

Configuration: ``pd_url`` or ``pd_urls``. Keys: ``key`` as text (``key_format: hex`` for bytes),
``mode`` ``raw`` (RawKV, go-ycsb's default) or ``txn`` (TxnKV / TiDB), ``api_version`` 1 or 2
(``keyspace_id`` for V2).
"""

from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments, choice, number
from chaosdb.core.health import healthy_or_say_why, healthy_within
from chaosdb.tikv import cluster
from chaosdb.tikv.keys import MODES

__all__ = ["stores", "region_for_key", "leader_store_of_key", "leader_distribution", "pd_members", "pd_health",
           "pd_is_healthy", "regions_without_leader", "cluster_health", "cluster_is_healthy"]


def stores(include_tombstone: bool = False, configuration: Configuration = None,
           secrets: Secrets = None) -> List[Dict[str, Any]]:
    """Every store: id, address, status address, state (Up, Offline, Tombstone, or Disconnected/Down
    from an old heartbeat), leader and region counts, capacity, last heartbeat and its age, uptime."""
    return cluster.stores(configuration or {}, include_tombstone)


def region_for_key(key: str, mode: str = "raw", api_version: int = 1, keyspace_id: int = 0,
                   key_format: str = "utf8", configuration: Configuration = None,
                   secrets: Secrets = None) -> Dict[str, Any]:
    """The region holding ``key``: id, boundaries (PD's hex), peers with roles, leader store, follower
    and learner stores, down and pending peers; the key as encoded for the lookup."""
    return cluster.region_for_key(configuration or {}, key, mode, api_version, keyspace_id, key_format)


def leader_store_of_key(key: str, mode: str = "raw", api_version: int = 1, keyspace_id: int = 0,
                        key_format: str = "utf8", configuration: Configuration = None,
                        secrets: Secrets = None) -> Dict[str, Any]:
    """The store leading the region of ``key`` (store record plus ``pod`` on Kubernetes and ``region``)."""
    return cluster.resolve_store(configuration or {}, "leader", key, mode, api_version, keyspace_id, key_format)


def leader_distribution(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Leaders and regions per Up store, each store's share of the leaders, and the largest share
    (1/number of stores when balanced; watch it move during leader eviction)."""
    up = [s for s in cluster.stores(configuration or {}) if s["state"] not in ("Tombstone",)]
    total = sum(s["leader_count"] for s in up) or 0
    per = {str(s["id"]): {"leaders": s["leader_count"], "regions": s["region_count"], "state": s["state"],
                          "share": round(s["leader_count"] / total, 4) if total else 0.0} for s in up}
    return {"stores": per, "leaders": total,
            "max_share": max((v["share"] for v in per.values()), default=0.0)}


def pd_members(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """PD members with their URLs, the PD leader and the etcd leader."""
    return cluster.members(configuration or {})


def pd_health(configuration: Configuration = None, secrets: Secrets = None) -> List[Dict[str, Any]]:
    """Each PD member and whether it is reachable (``/pd/api/v1/health``)."""
    return cluster.health(configuration or {})


def pd_is_healthy(configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when PD answers and reports every one of its members healthy (``/pd/api/v1/health``); fails when no PD
    endpoint answers."""
    members = cluster.health(configuration or {})
    problems = [f"PD member {m['name']} is not healthy" for m in members if not m["healthy"]]
    problems += [] if members else ["PD reports no member"]
    return healthy_or_say_why({"healthy": not problems, "problems": problems}, "PD")


def regions_without_leader(configuration: Configuration = None, secrets: Secrets = None) -> int:
    """How many regions PD reports without a leader (``GET /pd/api/v1/regions``; use with tolerance 0): such a
    region serves no reads or writes until its peers elect one."""
    return len(cluster.regions_without_leader(configuration or {}))


def cluster_health(configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Healthy when every store is Up (none Offline, Disconnected or Down), every PD member is healthy
    and PD's metrics (when served) report no region missing a peer or with a down or offline peer.
    Returns ``healthy``, one line per ``problem``, the stores and the region counts."""
    return cluster.cluster_health(configuration or {})


def cluster_is_healthy(within_s: float = 0, configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when :func:`cluster_health` finds nothing wrong (steady state; safety gate). With ``within_s``
    it asks again every second until healthy or that many seconds have passed ("every store Up, or back
    within 30 s"). A False logs the problems it found last."""
    cfg = configuration or {}
    return healthy_within(lambda: cluster.cluster_health(cfg), "the TiKV cluster", within_s)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), mode=choice("mode", *MODES), key_format=choice("key_format", "utf8", "hex"),
                api_version=choice("api_version", 1, 2), keyspace_id=number("keyspace_id", 0, integer=True))
