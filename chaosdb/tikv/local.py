"""TiKV stores running on this machine: the ``tikv-server`` process serving a store's address, as a fault
target for the local engine (CPU, memory) and for kills."""

from __future__ import annotations

import os

from chaosdb.cockroach.localproc import node_address_flags
from chaosdb.core.errors import ChaosDBError
from chaosdb.faults.engine import ProcessGroup
from chaosdb.local.processes import _read, pid_alive

__all__ = ["store_pids", "store_group"]


def _norm(address: str) -> tuple[str, str]:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    return ("127.0.0.1" if host in ("localhost", "0.0.0.0", "") else host), port


def store_pids(address: str, match: str = "tikv-server") -> list[int]:
    """Live processes whose command line names *match* and listens on / advertises *address*."""
    want = _norm(address)
    me = os.getpid()
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        argv = [a for a in _read(f"/proc/{entry.name}/cmdline").split("\0") if a]
        if not argv or not any(match in os.path.basename(a) for a in argv[:2]):
            continue
        if want in {(h if h not in ("localhost", "0.0.0.0") else "127.0.0.1", p)
                    for h, p in node_address_flags(argv)} and pid_alive(int(entry.name)):
            out.append(int(entry.name))
    return sorted(out)


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
