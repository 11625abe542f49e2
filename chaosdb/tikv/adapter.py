"""TiKV's answer to "which node has this role", asked of PD: the store holding the leader (or a follower) of
the region of a key, or a store by id (see :mod:`chaosdb.core.adapters`)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.errors import ChaosDBError
from chaosdb.tikv.cluster import check_store_selector, resolve_store
from chaosdb.tikv.local import store_pids

__all__ = ["ADAPTER", "TikvAdapter"]


def _selector(role: str, target: dict[str, Any]) -> Any:
    return target.get("store") if role == "store" else role


class TikvAdapter(DatabaseAdapter):
    """``tikv-leader`` / ``tikv-follower`` (with ``key``, and ``mode`` raw or txn, ``api_version``,
    ``keyspace_id``, ``key_format`` utf8 or hex), ``tikv-store`` (with ``store``: an id). Locally a store is
    the ``tikv-server`` process (``process_match``) listening on or advertising its address."""

    name = "tikv"
    roles = ("leader", "follower", "store")

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


    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        match = str(target.get("process_match") or "tikv-server")
        pids = store_pids(str(node.address or ""), match)
        if not pids:
            raise ChaosDBError(f"no local {match} serves {node.name} ({node.address})")
        return pids


ADAPTER = TikvAdapter()
