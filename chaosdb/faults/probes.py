"""Probes of the local fault engine: what is active, and whether anything is left behind."""

from typing import Any, Dict, List

from chaoslib.types import Configuration

from chaosdb.core.arguments import check_arguments
from chaosdb.core.faultrecords.records import load_records
from chaosdb.faults import engine

__all__ = ["active_faults", "fault_residue", "no_fault_residue"]


def active_faults(configuration: Configuration = None) -> List[Dict[str, Any]]:
    """Every active local fault with what it has done so far (throttling, memory use and OOM kills,
    packets dropped, bytes shaped). An empty list when none is active."""
    out = []
    for rec in load_records():
        out.append({**rec.summary(), "stats": engine.fault_stats(rec)})
    return out


def fault_residue(configuration: Configuration = None) -> Dict[str, Any]:
    """Everything of the fault engine on the host: records, iptables chains/rules tagged ``CHAOSDB-`` /
    ``chaosdb:``, cgroups under ``chaosdb/``, the tc qdisc ``cdb:`` on lo, proxy and reverter
    processes; ``clean`` is true when there is none."""
    return engine.residue()


def no_fault_residue(configuration: Configuration = None) -> bool:
    """True when the fault engine has nothing on the host (use after rollbacks: tolerance true)."""
    return bool(engine.residue()["clean"])


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals())
