"""TiKV stores running on this machine: the ``tikv-server`` process serving a store's address (what the TiKV
adapter gives the local fault engine, and what ``kill_store`` signals)."""

from __future__ import annotations

import os

from chaosdb.core.processes import processes_serving

__all__ = ["store_pids"]


def store_pids(address: str, match: str = "tikv-server") -> list[int]:
    """Live processes whose command line names *match* and listens on / advertises *address*."""
    return processes_serving(address, lambda argv: any(match in os.path.basename(a) for a in argv[:2]))
