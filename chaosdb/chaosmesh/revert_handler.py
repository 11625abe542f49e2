"""What the Chaos Mesh engine undoes of a fault record: the chaosd attacks the Chaos Mesh controller carried out
(a PhysicalMachineChaos ``object`` per attack), recovered by deleting the object (:mod:`chaosdb.chaosmesh.physical`)
and undone here when that fails and this machine can. Chaos objects of its own actions are not fault records: the
Kubernetes control deletes those (:mod:`chaosdb.k8s.created`)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.chaosd import recover_attacks
from chaosdb.core.faultrecords.handlers import RevertHandler
from chaosdb.core.faultrecords.records import FaultRecord

__all__ = ["ChaosMeshRevertHandler", "REVERT_HANDLER"]


def _recover_object(entry: dict[str, Any]) -> bool:
    from chaosdb.chaosmesh.physical import recover_object  # noqa: PLC0415 - needs the k8s extra

    return recover_object(entry)


class ChaosMeshRevertHandler(RevertHandler):
    """PhysicalMachineChaos objects of a fault record deleted, and their attacks so recovered."""

    engine = "chaosmesh"

    def revert(self, rec: FaultRecord, out: dict[str, Any]) -> list[str]:
        """Delete the object of each attack of *rec* that Chaos Mesh carried out, waiting until it is gone."""
        return recover_attacks(rec, out, [a for a in rec.attacks if a.get("object")], _recover_object)


#: the Chaos Mesh engine's revert handler (:mod:`chaosdb.core.faultrecords.handlers`)
REVERT_HANDLER = ChaosMeshRevertHandler()
