"""TiKV / PD actions: move a region's leader, evict every leader from a store (and undo it), and change
a store's state (Offline / Up, only with an explicit flag because Offline starts removing the store).

Stores are chosen when the action runs (``target``): a store id, or ``"leader"`` / ``"follower"`` of the region
holding ``key`` (see :mod:`chaosdb.tikv.probes` for ``mode`` / ``api_version``). A CPU or memory limit on a store's
local ``tikv-server`` is the host engine's: ``chaosdb.faults.actions.limit_cpu`` / ``limit_memory`` with
``target: {"role": "tikv-leader", "key": ...}``.
"""

import time
from typing import Any, Dict, Optional, Union

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments, choice, number
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.core.signals import SIGNALS, signal_name
from chaosdb.tikv import cluster
from chaosdb.tikv.keys import MODES
from chaosdb.tikv.pd import pd_client
from chaosdb.tikv.store_processes import store_pids

__all__ = ["transfer_region_leader", "evict_leaders", "remove_leader_eviction", "set_store_state", "kill_store"]

EVICT = "evict-leader-scheduler"


def _store_entry(store: Dict[str, Any]) -> Dict[str, Any]:
    """A store as the entry of a result's ``targets``: its id (what ``target`` takes), address and pod."""
    return target_entry(store["id"], kind="store", address=store.get("address"), pod=store.get("pod"))


def _region_entry(region_id: int, from_store: int, to_store: int) -> Dict[str, Any]:
    return target_entry(region_id, kind="region", from_store=from_store, to_store=to_store)


def _wait(check, timeout_s: float, interval_s: float = 0.5) -> Optional[float]:
    t0 = time.monotonic()
    while time.monotonic() - t0 <= timeout_s:
        if check():
            return round(time.monotonic() - t0, 3)
        time.sleep(interval_s)
    return None


@action_result
def transfer_region_leader(key: Optional[str] = None, region_id: Optional[int] = None,
                           to_store: Union[int, str] = "follower", mode: str = "raw", api_version: int = 1,
                           keyspace_id: int = 0, key_format: str = "utf8", wait_s: float = 30,
                           configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Move the leader of a region (given by ``key`` or ``region_id``) to ``to_store`` (a store id that
    holds a voter of the region, or ``"follower"``: the first Up follower) with a PD
    ``transfer-leader`` operator, then wait up to ``wait_s`` for PD to see the new leader."""
    cfg = configuration or {}
    if (key is None) == (region_id is None):
        raise ChaosDBError("give exactly one of key and region_id")
    region = (cluster.region_for_key(cfg, key, mode, api_version, keyspace_id, key_format) if key is not None
              else cluster.region_by_id(cfg, int(region_id or 0)))  # one of the two is given (checked)
    if to_store == "follower":
        up = {s["id"] for s in cluster.stores(cfg) if s["state"] == "Up"}
        candidates = [s for s in region["follower_store_ids"] if s in up]
        if not candidates:
            raise ChaosDBError(f"region {region['id']} has no Up follower to take the leadership")
        target = candidates[0]
    elif isinstance(to_store, int) or (isinstance(to_store, str) and to_store.isdigit()):
        target = int(to_store)
        voters = [p["store_id"] for p in region["peers"] if not p["is_learner"]]
        if target not in voters:
            raise ChaosDBError(f"store {target} holds no voter of region {region['id']} (voters on stores "
                               f"{', '.join(map(str, voters))}): a leader can only move to one of them")
    else:
        raise ChaosDBError(f"to_store must be a store id or 'follower', got {to_store!r}")
    before = region["leader_store_id"]
    if before == target:
        return {"targets": [_region_entry(region["id"], before, target)], "region": region["id"],
                "from_store": before, "to_store": target, "moved": False,
                "reason": "already the leader"}
    reply = pd_client(cfg).post("/operators", {"name": "transfer-leader", "region_id": region["id"],
                                               "to_store_id": target})
    took = _wait(lambda: cluster.region_by_id(cfg, region["id"])["leader_store_id"] == target, float(wait_s))
    return {"targets": [_region_entry(region["id"], before, target)], "region": region["id"],
            "from_store": before, "to_store": target, "pd": reply,
            "moved": took is not None, "took_s": took}


@action_result
def evict_leaders(target: Union[int, str] = "leader", key: Optional[str] = None, mode: str = "raw",
                  api_version: int = 1, keyspace_id: int = 0, key_format: str = "utf8", wait_s: float = 60,
                  configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Add PD's ``evict-leader-scheduler`` for a store (an id, or the ``leader`` / a ``follower`` of
    ``key``'s region): PD moves every leader off it and keeps it leaderless. Waits up to ``wait_s``
    for its leader count to reach 0. Rollback: ``remove_leader_eviction`` with the same store id."""
    cfg = configuration or {}
    picked = cluster.resolve_store(cfg, target, key, mode, api_version, keyspace_id, key_format)
    if picked["state"] != "Up":
        raise ChaosDBError(f"store {picked['id']} is {picked['state']}: evicting its leaders would change nothing")
    others = [s for s in cluster.stores(cfg) if s["state"] == "Up" and s["id"] != picked["id"]]
    if not others:
        raise ChaosDBError(f"store {picked['id']} is the only Up store: its leaders have nowhere to go")
    reply = pd_client(cfg).post("/schedulers", {"name": EVICT, "store_id": picked["id"]})
    took = _wait(lambda: cluster.store(cfg, picked["id"])["leader_count"] == 0, float(wait_s))
    return {"targets": [_store_entry(picked)], "store": picked["id"], "address": picked["address"],
            "pod": picked["pod"], "pd": reply,
            "leaders_before": picked["leader_count"], "leaderless_after_s": took, "region": picked.get("region")}


@action_result
def remove_leader_eviction(store: Union[int, str, None] = None, configuration: Configuration = None,
                           secrets: Secrets = None) -> Dict[str, Any]:
    """Remove the evict-leader scheduler of one store (its id), or of every store when ``store`` is not
    given; a store without one is not an error (safe as a rollback)."""
    cfg = configuration or {}
    pd = pd_client(cfg)
    names = pd.get("/schedulers") or []
    if store is not None and not str(store).isdigit():
        raise ChaosDBError("store must be the store id the eviction was for")
    removed = []
    if EVICT in names or any(str(n).startswith(EVICT) for n in names):
        path = f"/schedulers/{EVICT}-{int(store)}" if store is not None else f"/schedulers/{EVICT}"
        try:
            pd.delete(path)
            removed.append(path.rsplit("/", 1)[1])
        except ChaosDBError as exc:
            if getattr(exc, "status", None) != 404:
                raise
    stores = [target_entry(name.rsplit("-", 1)[1]) for name in removed if name.rsplit("-", 1)[-1].isdigit()]
    return {"targets": stores, "removed": removed, "schedulers": pd.get("/schedulers") or []}


@action_result
def set_store_state(store: Union[int, str], state: str, i_understand_offline_removes_the_store: bool = False,
                    configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Set a store ``Offline`` (PD starts moving its regions away to remove it: only with
    ``i_understand_offline_removes_the_store``) or back ``Up`` (cancels a removal that has not finished;
    the rollback). Tombstone stores cannot come back."""
    cfg = configuration or {}
    if state not in ("Up", "Offline"):
        raise ChaosDBError("state must be Up or Offline")
    if not str(store).isdigit():
        raise ChaosDBError("store must be a store id")
    current = cluster.store(cfg, int(store))
    if state == "Offline" and not i_understand_offline_removes_the_store:
        raise ChaosDBError("setting a store Offline starts removing it from the cluster; pass "
                           "i_understand_offline_removes_the_store: true to do it")
    if current["state"] == "Tombstone":
        raise ChaosDBError(f"store {store} is a Tombstone: it was removed and cannot change state")
    reply = pd_client(cfg).post(f"/store/{int(store)}/state", query=[("state", state)])
    return {"targets": [_store_entry(current)], "store": int(store), "from": current["state"], "to": state,
            "pd": reply,
            "now": cluster.store(cfg, int(store))["state"]}


@action_result
def kill_store(target: Union[int, str] = "leader", key: Optional[str] = None, signal: str = "KILL",
               mode: str = "raw", api_version: int = 1, process_match: str = "tikv-server",
               container: Optional[str] = None, configuration: Configuration = None,
               secrets: Secrets = None) -> Dict[str, Any]:
    """Kill the store chosen when the action runs (an id, or the ``leader`` / a ``follower`` of ``key``'s
    region): on Kubernetes (``k8s_namespace`` set) ``kill`` inside its pod (``container`` or
    ``k8s_container``, default ``tikv``), locally the ``tikv-server`` serving its address. Nothing restarts a
    local store: start it again the way you started it."""

    cfg = configuration or {}
    sig = signal_name(signal)
    picked = cluster.resolve_store(cfg, target, key, mode, api_version)
    base = {"targets": [_store_entry(picked)], "store": picked["id"], "address": picked["address"],
            "pod": picked["pod"], "signal": sig,
            "region": picked.get("region")}
    if cfg.get("k8s_namespace"):
        if not picked["pod"]:
            raise ChaosDBError(f"store {picked['id']} ({picked['address']}) is not a StatefulSet pod address: "
                               "set tikv_pods (store id -> pod name) in the configuration")
        # the Kubernetes engine's one kill: exec through the official client, never waiting for the restart
        cont = str(container or cfg.get("k8s_container") or "tikv")
        engine_action("kubernetes", "kill_container_process")(
            {"pod": picked["pod"]}, cont, sig, wait_restarted=False, configuration=cfg, secrets=secrets)
        return {**base, "where": "kubernetes", "container": cont}
    pids = store_pids(picked["address"], process_match)
    if not pids:
        raise ChaosDBError(f"no local {process_match} serves store {picked['id']} ({picked['address']})")
    # the host engine's one kill, on the processes found for the store; nothing waits for them to exit
    engine_action("host", "signal_resolved")({"pids": pids, "name": f"TiKV store {picked['id']}"}, sig,
                                             configuration=cfg)
    return {**base, "where": "local", "pids": pids}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _store_rule(args: Dict[str, Any]) -> None:
    chosen = args.get("target")
    cluster.check_store_selector("leader" if chosen is None else chosen, args.get("key"))


def _transfer_rule(args: Dict[str, Any]) -> None:
    if (args.get("key") is None) == (args.get("region_id") is None):
        raise ChaosDBError("give exactly one of key and region_id")
    to_store = args.get("to_store")
    if not (to_store == "follower" or (isinstance(to_store, int) and not isinstance(to_store, bool))
            or (isinstance(to_store, str) and to_store.isdigit())):
        raise ChaosDBError(f"to_store must be a store id or 'follower', got {to_store!r}")


def _store_id(value: Any) -> None:
    if value is not None and not ((isinstance(value, int) and not isinstance(value, bool))
                                  or (isinstance(value, str) and value.isdigit())):
        raise ChaosDBError("store must be a store id")


check_arguments(globals(), {"transfer_region_leader": _transfer_rule, "evict_leaders": _store_rule,
                            "kill_store": _store_rule},
                {"remove_leader_eviction": {"store": _store_id}, "set_store_state": {"store": _store_id}},
                state=choice("state", "Up", "Offline"), mode=choice("mode", *MODES),
                key_format=choice("key_format", "utf8", "hex"), api_version=choice("api_version", 1, 2),
                signal=choice("signal", *SIGNALS), keyspace_id=number("keyspace_id", 0, integer=True))
