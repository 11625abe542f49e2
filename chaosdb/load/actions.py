"""Actions that prepare or drive the load."""

from typing import Any, Dict

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments, number
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.load.dsn import resolve_dsn
from chaosdb.workloads.tpcc import loader
from chaosdb.workloads.tpcc.rand import Scale

__all__ = ["load_tpcc_data"]


@action_result
def load_tpcc_data(warehouses: int = 1, scale_down: int = 1, workers: int = 2, drop: bool = False, dsn: str = "",
                   configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Create the TPC-C schema and load what is missing (idempotent, resumable). ``scale_down``
    divides items and customers per district for quick runs (1 = the spec's sizes); NURand and
    C_LAST semantics are kept for the reduced sizes."""

    try:
        scale = Scale.reduced(int(warehouses), int(scale_down))
    except ValueError as exc:
        raise ChaosDBError(str(exc)) from None
    return {"targets": [], **loader.load(resolve_dsn(dsn, configuration, secrets), scale, workers=workers, drop=drop)}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), extras=("postgres",), warehouses=number("warehouses", 1, integer=True),
                scale_down=number("scale_down", 1, integer=True), workers=number("workers", 1, integer=True))
