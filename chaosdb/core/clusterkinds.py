"""Local cluster kinds, found by convention: what ``chaosdb cluster up|status|down --kind KIND`` reaches.

A kind is the ``cluster_command`` module of a plug-in package (:mod:`chaosdb.core.plugins`); nothing names them.
Each says its name (``KIND``), one line for ``--kind``'s help (``HELP``), what its clusters are called in a
sentence (``TITLE``), which file marks its cluster folder (``STATE_FILE``), its default first address
(``DEFAULT_ADDRESS``), the extras its ``up`` needs (``EXTRAS``), adds its own options to ``cluster up``
(``add_arguments(group)``, an argparse argument group titled by the kind), does the work (``up(args, directory,
name)``, ``status(args, directory)``, ``down(args, directory)``, each a JSON-able dict; ``status`` says
``healthy``; a kind without ``status``/``down`` has a module ``CLUSTER`` whose ``status(directory)`` and
``down(directory, purge, timeout)`` do it) and says the result to a person (``show_up(result)``,
``show_status(result)``, optionally ``show_down(result)``). :func:`run_command` is the one command body of every kind; the CLI never names one.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from pathlib import Path
from types import ModuleType

from chaosdb.core.console import print_json, print_stopped
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.plugins import modules_named

__all__ = ["DEFAULT_KIND", "cluster_kinds", "kind_module", "kind_of_folder", "add_kind_arguments", "run_command",
           "forget_kinds"]

#: the kind ``chaosdb cluster`` means when none is named and the folder holds no cluster yet
DEFAULT_KIND = "postgres-ha"
#: what every kind's module must define
_REQUIRED = ("KIND", "HELP", "TITLE", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "up", "show_up",
             "show_status")


@functools.cache
def _kinds() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for name in modules_named("cluster_command"):
        module = importlib.import_module(name)
        missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
        missing += [attr for attr in ("status", "down") if not hasattr(module, attr) and not hasattr(module, "CLUSTER")]
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


def run_command(kind: str, args: argparse.Namespace, directory: Path, name: str) -> int:
    """``chaosdb cluster up|status|down`` of *kind*: the work, the result as JSON (``--json``) or in the kind's
    own words, and the exit status (1 for ``status --check`` of a cluster that is not healthy)."""
    module = kind_module(kind)
    command = args.cluster_command
    if command == "up":
        result = module.up(args, directory, name)
    elif command == "status":
        result = module.status(args, directory) if hasattr(module, "status") else module.CLUSTER.status(directory)
    elif hasattr(module, "down"):
        result = module.down(args, directory)
    else:
        result = module.CLUSTER.down(directory, purge=args.purge, timeout=args.timeout)
    if getattr(args, "json", False):
        print_json(result)
    elif command == "down" and not hasattr(module, "show_down"):
        print_stopped(result, f"{module.TITLE} {result['cluster']}")
    else:
        getattr(module, f"show_{command}")(result)
    return 1 if command == "status" and getattr(args, "check", False) and not result.get("healthy") else 0


def forget_kinds() -> None:
    """Find the kinds anew on the next call (after :func:`chaosdb.core.plugins.refresh`)."""
    _kinds.cache_clear()

