"""Revert handlers, found by convention: what undoes each engine's part of a fault record.

The record service (:mod:`chaosdb.core.faultrecords`) knows no engine. Each engine that writes fault records brings
one handler: the module ``revert_handler`` of its plug-in package (:mod:`chaosdb.core.plugins`, the package's
``__init__`` setting ``ENGINE``) defines ``REVERT_HANDLER``, an instance of a :class:`RevertHandler` subclass named
after the engine. Nothing names them here; they are imported when a record is first reverted, listed or swept, so a
handler's module stays light (what needs an optional extra is imported where it is used).
"""

from __future__ import annotations

import functools
import importlib
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.records import FaultRecord
from chaosdb.core.plugins import modules_named, package_attribute

__all__ = ["RevertHandler", "revert_handlers", "forget_revert_handlers"]


class RevertHandler(ABC):
    """What one engine undoes of a fault record, and what of it is left on this machine without a record."""

    #: the engine's name, as its package's ``ENGINE`` says (``host``, ``chaosd``, ``chaosmesh``)
    engine: ClassVar[str]
    #: modules the engine runs as detached helpers (``python -m <module>``), listed by ``residue`` and stopped by
    #: ``cleanup`` with the service's own reverters
    helper_modules: ClassVar[tuple[str, ...]] = ()

    def stats(self, rec: FaultRecord) -> dict[str, Any]:
        """What the engine's part of *rec* did so far (counters, packets dropped); none by default."""
        return {}

    @abstractmethod
    def revert(self, rec: FaultRecord, out: dict[str, Any]) -> list[str]:
        """Undo the engine's part of *rec* (idempotent: nothing when it has none), adding what it undid to *out*
        (the revert's result); the errors of what could not be undone (the record is then kept)."""

    def residue(self, cluster_dir: str, fault_ids: set[str]) -> dict[str, list[Any]]:
        """What of the engine is on this machine now, by kind (``iptables``, ``cgroups``, ...); with *cluster_dir*,
        only what belongs to that cluster (*fault_ids*: its records). Nothing by default."""
        return {}

    def sweep(self, cluster_dir: str) -> tuple[list[str], list[str]]:
        """Remove what of the engine is left without a record (with *cluster_dir*, only what is that cluster's
        beyond doubt): what was removed, and the errors. Nothing by default."""
        return [], []


@functools.cache
def _registry() -> tuple[RevertHandler, ...]:
    engines = package_attribute("ENGINE")
    found: dict[str, RevertHandler] = {}
    for module in modules_named("revert_handler"):
        handler = getattr(importlib.import_module(module), "REVERT_HANDLER", None)
        if not isinstance(handler, RevertHandler):
            raise ChaosDBError(f"{module} does not define REVERT_HANDLER, an instance of a RevertHandler subclass")
        engine = engines.get(module.rsplit(".", 1)[0])
        if engine is None or handler.engine != engine or engine in found:
            raise ChaosDBError(f"{module}: a revert handler belongs to an engine's package and is named after it "
                               f"(its package's ENGINE is {engine!r}, the handler says {handler.engine!r})")
        found[engine] = handler
    return tuple(found.values())


def revert_handlers() -> tuple[RevertHandler, ...]:
    """Every engine's revert handler, in plug-in order (their modules imported on the first call)."""
    return _registry()


def forget_revert_handlers() -> None:
    """Find the handlers anew on the next call (after :func:`chaosdb.core.plugins.refresh`)."""
    _registry.cache_clear()
