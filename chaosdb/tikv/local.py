"""TiKV stores running on this machine: the ``tikv-server`` process serving a store's address, as a fault
target for the local engine (CPU, memory) and for kills."""

from __future__ import annotations

import os

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import processes_serving
from chaosdb.faults.engine import ProcessGroup

__all__ = ["store_pids", "store_group"]


def store_pids(address: str, match: str = "tikv-server") -> list[int]:
    """Live processes whose command line names *match* and listens on / advertises *address*."""
    return processes_serving(address, lambda argv: any(match in os.path.basename(a) for a in argv[:2]))


def store_group(store: dict, match: str = "tikv-server") -> ProcessGroup:
    """The store's process as a fault-engine target (listed again whenever the engine looks)."""
    address = store.get("address")
    if not address:
        raise ChaosDBError(f"store {store.get('id')} has no address")
    if not store_pids(address, match):
        raise ChaosDBError(f"no local {match} process serves store {store['id']} ({address}): is it on this "
                           "machine? (on Kubernetes use the Chaos Mesh templates with the store's pod)")
    return ProcessGroup(target={"name": f"store-{store['id']}", "store": store["id"], "address": address},
                        pids=lambda: store_pids(address, match))
