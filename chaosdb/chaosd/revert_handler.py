"""What the chaosd engine undoes of a fault record: the attacks it asked chaosd for directly (those Chaos Mesh
carried out, with an ``object``, are the ``chaosmesh`` engine's), and what chaosd's network attacks leave on this
machine (``CHAOS-*`` chains, ``chaos-*`` ipsets) for ``residue`` and ``cleanup``."""

from __future__ import annotations

import os
from typing import Any

from chaosdb.core.chaosd import leftovers, recover_attacks, recover_entry, remove_leftovers
from chaosdb.core.faultrecords.handlers import RevertHandler
from chaosdb.core.faultrecords.records import FaultRecord

__all__ = ["ChaosdRevertHandler", "REVERT_HANDLER"]


class ChaosdRevertHandler(RevertHandler):
    """chaosd's attacks recovered through its HTTP API (undone here when it is gone), and its leftovers."""

    engine = "chaosd"

    def revert(self, rec: FaultRecord, out: dict[str, Any]) -> list[str]:
        """Recover each attack of *rec* that this pack asked chaosd for itself."""
        return recover_attacks(rec, out, [a for a in rec.attacks if not a.get("object")], recover_entry)

    def residue(self, cluster_dir: str, fault_ids: set[str]) -> dict[str, list[Any]]:
        """chaosd's leftovers on the host (root only); none is told apart per cluster."""
        if cluster_dir:
            return {}
        return {"chaosd": leftovers() if os.geteuid() == 0 else []}

    def sweep(self, cluster_dir: str) -> tuple[list[str], list[str]]:
        """What chaosd's recovered network attacks left, host-wide only (root only)."""
        if cluster_dir or os.geteuid() != 0:
            return [], []
        return remove_leftovers(), []


#: the chaosd engine's revert handler (:mod:`chaosdb.core.faultrecords.handlers`)
REVERT_HANDLER = ChaosdRevertHandler()
