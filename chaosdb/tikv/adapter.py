"""TiKV's answer to "which node has this role", asked of PD: the store holding the leader (or a follower) of
the region of a key, or a store by id (see :mod:`chaosdb.core.adapters`)."""

from __future__ import annotations

from typing import Any, Union

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.target_model import Name
from chaosdb.tikv.cluster import check_store_selector, health, members, resolve_store, stores
from chaosdb.tikv.store_processes import store_pids

__all__ = ["ADAPTER", "TikvAdapter"]


def _selector(role: str, target: dict[str, Any]) -> Any:
    return target.get("store") if role == "store" else role


class TikvAdapter(DatabaseAdapter):
    """``tikv-leader`` / ``tikv-follower`` (with ``key``, and ``mode`` raw or txn, ``api_version``,
    ``keyspace_id``, ``key_format`` utf8 or hex), ``tikv-store`` (with ``store``: an id). Locally a store is
    the ``tikv-server`` process (``process_match``) listening on or advertising its address."""

    name = "tikv"
    roles = ("leader", "follower", "store")
    target_keys = {"key": Name, "mode": Name, "api_version": int, "keyspace_id": int, "key_format": Name,
                   "store": Union[int, Name], "process_match": Name}

    def check(self, role: str, target: dict[str, Any]) -> None:
        check_store_selector(_selector(role, target), target.get("key"))

    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        store = resolve_store(configuration, _selector(role, target), key=target.get("key"),
                              mode=str(target.get("mode") or "raw"),
                              api_version=int(target.get("api_version") or 1),
                              keyspace_id=int(target.get("keyspace_id") or 0),
                              key_format=str(target.get("key_format") or "utf8"))
        return ResolvedNode(name=f"TiKV store {store['id']}", pod=store.get("pod"), address=store.get("address"),
                            detail={"store_id": store["id"], "address": store.get("address"),
                                    "region_id": (store.get("region") or {}).get("id")})

    def sources(self, configuration: dict[str, Any]) -> tuple[str, ...]:
        """PD (its leader and members) and the TiKV stores it knows, when ``pd_url`` or ``pd_urls`` is set."""
        return ("pd", "tikv") if configuration.get("pd_url") or configuration.get("pd_urls") else ()

    def view(self, source: str, configuration: dict[str, Any], secrets: dict[str, Any] | None) -> View:
        """``pd``: PD's leader and each member's health; ``tikv``: each store's state as PD sees it (up:
        ``Up``), with its count of region leaders."""
        if source == "pd":
            healthy = {h["name"]: h for h in health(configuration)}
            return View("pd", members(configuration).get("leader"),
                        {name: {"up": h["healthy"], "state": "healthy" if h["healthy"] else "unhealthy"}
                         for name, h in healthy.items()})
        if source == "tikv":
            return View("tikv", None, {f"store {st['id']}": {"up": st["state"] == "Up", "state": st["state"],
                                                           "leader_count": st["leader_count"]}
                                       for st in stores(configuration)})
        return super().view(source, configuration, secrets)

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        match = str(target.get("process_match") or "tikv-server")
        pids = store_pids(str(node.address or ""), match)
        if not pids:
            raise ChaosDBError(f"no local {match} serves {node.name} ({node.address})")
        return pids


ADAPTER = TikvAdapter()
