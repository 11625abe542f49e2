"""Fault engines, found by name: what a database package reaches for when an old activity name of its own
forwards to the engine that now does the job (see :mod:`chaosdb.core.deprecation`). Nothing else needs it:
experiments name the engine's module directly."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["ENGINE_MODULES", "engine_action"]

#: engine name -> the module holding its actions
ENGINE_MODULES: dict[str, str] = {
    "local": "chaosdb.faults.actions",
    "kubernetes": "chaosdb.k8s.actions",
    "chaosmesh": "chaosdb.chaosmesh.actions",
    "litmus": "chaosdb.litmus.actions",
}


def engine_action(engine: str, name: str) -> Callable[..., Any]:
    """The action *name* of *engine* (imported on first use)."""
    module = ENGINE_MODULES.get(engine)
    if module is None:
        raise ChaosDBError(f"no fault engine {engine!r}; known: {', '.join(sorted(ENGINE_MODULES))}")
    action = getattr(importlib.import_module(module), name, None)
    if not callable(action):
        raise ChaosDBError(f"{module} has no action {name!r}")
    return action
