"""chaostoolkit-db: Chaos Toolkit activities for distributed databases.

``discover()`` is what ``chaos discover chaostoolkit-db`` calls: it lists every
probe and action of the modules in :data:`ACTIVITY_MODULES` with their
docstrings and typed arguments.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from chaoslib.discovery.discover import (
    discover_actions,
    discover_probes,
    initialize_discovery_result,
)

try:
    __version__ = version("chaostoolkit-db")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["discover", "__version__", "ACTIVITY_MODULES"]

#: Modules whose ``__all__`` functions are Chaos Toolkit activities, by kind.
ACTIVITY_MODULES: dict[str, list[str]] = {
    "probe": [
        "chaosdb.local.probes",
        "chaosdb.postgres.probes",
        "chaosdb.etcd.probes",
        "chaosdb.load.probes",
        "chaosdb.load.integrity",
        "chaosdb.report.probes",
        "chaosdb.faults.probes",
        "chaosdb.cockroach.probes",
        "chaosdb.tikv.probes",
        "chaosdb.chaosmesh.probes",
        "chaosdb.litmus.probes",
        "chaosdb.k8s.probes",
    ],
    "action": [
        "chaosdb.local.actions",
        "chaosdb.postgres.actions",
        "chaosdb.load.actions",
        "chaosdb.faults.actions",
        "chaosdb.chaosd.actions",
        "chaosdb.cockroach.actions",
        "chaosdb.tikv.actions",
        "chaosdb.chaosmesh.actions",
        "chaosdb.litmus.actions",
        "chaosdb.k8s.actions",
    ],
}


def discover(discover_system: bool = True) -> dict[str, Any]:
    """Describe this extension and its activities for ``chaos discover``."""

    discovery = initialize_discovery_result("chaostoolkit-db", __version__, "database")
    for module in ACTIVITY_MODULES["probe"]:
        discovery["activities"].extend(discover_probes(module))
    for module in ACTIVITY_MODULES["action"]:
        discovery["activities"].extend(discover_actions(module))
    return discovery
