"""Local cluster kinds, found by convention: what ``chaosdb cluster up|status|down --kind KIND`` reaches.

A kind is the ``cluster_command`` module of a plug-in package (:mod:`chaosdb.core.plugins`); nothing names them.
Each says its name (``KIND``), one line for ``--kind``'s help (``HELP``), which file marks its cluster folder
(``STATE_FILE``), its default first address (``DEFAULT_ADDRESS``), the extras its ``up`` needs (``EXTRAS``), adds
its own options to ``cluster up`` (``add_arguments(group)``, an argparse argument group titled by the kind) and
runs the command (``run(args, directory, name) -> exit status``). The CLI never names one.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from chaosdb.core.deprecation import warn_deprecated
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.plugins import modules_named

__all__ = ["DEFAULT_KIND", "cluster_kinds", "kind_module", "kind_of_folder", "add_kind_arguments",
           "forget_kinds"]

#: the kind ``chaosdb cluster`` means when none is named and the folder holds no cluster yet
DEFAULT_KIND = "postgres-ha"
#: what every kind's module must define
_REQUIRED = ("KIND", "HELP", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "run")


@functools.cache
def _kinds() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for name in modules_named("cluster_command"):
        module = importlib.import_module(name)
        missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
        if missing:
            raise ChaosDBError(f"{name} is a cluster_command module without {', '.join(missing)}")
        if module.KIND in found:
            raise ChaosDBError(f"two cluster kinds are called {module.KIND!r}: {found[module.KIND].__name__} and "
                               f"{name}")
        found[module.KIND] = module
    if DEFAULT_KIND not in found:
        raise ChaosDBError(f"no plug-in brings the default cluster kind {DEFAULT_KIND!r}")
    # the default first, then by name
    return {kind: found[kind] for kind in [DEFAULT_KIND, *sorted(set(found) - {DEFAULT_KIND})]}


def cluster_kinds() -> list[str]:
    """Every kind's name, the default first."""
    return list(_kinds())


def kind_module(kind: str) -> ModuleType:
    """The ``cluster_command`` module of *kind*."""
    found = _kinds()
    if kind not in found:
        raise ChaosDBError(f"no cluster kind {kind!r}; known: {', '.join(found)}")
    return found[kind]


def kind_of_folder(directory: Path) -> str | None:
    """The kind whose state file is in *directory* (a cluster made before), or None."""
    for kind, module in _kinds().items():
        if (Path(directory) / module.STATE_FILE).exists():
            return kind
    return None


def add_kind_arguments(parser: argparse.ArgumentParser) -> None:
    """``--kind`` with every kind's help line, and each kind's own options in a group of its own."""
    parser.add_argument("--kind", default=None, choices=cluster_kinds(), metavar="KIND",
                        help="which cluster, one of " + "; ".join(f"{k}: {m.HELP}" for k, m in _kinds().items())
                        + f" (default: the kind of the cluster in the folder, else {DEFAULT_KIND})")
    for kind, module in _kinds().items():
        module.add_arguments(parser.add_argument_group(f"--kind {kind}"))


def forget_kinds() -> None:
    """Find the kinds anew on the next call (after :func:`chaosdb.core.plugins.refresh`)."""
    _kinds.cache_clear()


def __getattr__(name: str) -> Any:
    """``CLUSTER_KINDS`` (deprecated): the kinds are found by convention now."""
    if name == "CLUSTER_KINDS":
        warn_deprecated("chaosdb.core.clusterkinds.CLUSTER_KINDS", "chaosdb.core.clusterkinds.cluster_kinds()")
        return {kind: module.__name__ for kind, module in _kinds().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
