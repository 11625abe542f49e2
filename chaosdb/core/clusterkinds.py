"""Local cluster kinds, found by name: what ``chaosdb cluster up|status|down --kind KIND`` reaches. Each kind's
module (its ``cluster_command``) says which file marks its cluster folder (``STATE_FILE``), its default first
address (``DEFAULT_ADDRESS``), the extras its ``up`` needs (``EXTRAS``) and runs the command
(``run(args, directory, name) -> exit status``); the CLI never names one."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from chaosdb.core.errors import ChaosDBError

__all__ = ["CLUSTER_KINDS", "DEFAULT_KIND", "kind_module", "kind_of_folder"]

#: kind -> the module holding its command; the first is the default
CLUSTER_KINDS: dict[str, str] = {
    "postgres-ha": "chaosdb.local.cluster_command",
    "cockroach": "chaosdb.cockroach.cluster_command",
    "pd": "chaosdb.tikv.pd_cluster_command",
    "kubernetes": "chaosdb.localkube.cluster_command",
}
DEFAULT_KIND = "postgres-ha"


def kind_module(kind: str) -> ModuleType:
    """The command module of *kind* (imported on first use)."""
    module = CLUSTER_KINDS.get(kind)
    if module is None:
        raise ChaosDBError(f"no cluster kind {kind!r}; known: {', '.join(CLUSTER_KINDS)}")
    return importlib.import_module(module)


def kind_of_folder(directory: Path) -> str | None:
    """The kind whose state file is in *directory* (a cluster made before), or None."""
    for kind in CLUSTER_KINDS:
        if (Path(directory) / kind_module(kind).STATE_FILE).exists():
            return kind
    return None
