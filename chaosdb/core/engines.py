"""Fault engines, found by convention: what a database package reaches for when one of its own actions acts
through an engine (CockroachDB's pod deletion on Kubernetes, TiKV's store kill on this machine), and what a control
reaches for to undo another engine's objects. A plug-in package is an engine when its ``__init__`` sets ``ENGINE`` to the
engine's name (:mod:`chaosdb.core.plugins`); its actions are in its ``actions`` module. Nothing names them here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.plugins import package_attribute

__all__ = ["engines", "engine_action"]


def engines() -> dict[str, str]:
    """Engine name -> the module holding its actions."""
    return {str(name): f"{package}.actions" for package, name in package_attribute("ENGINE").items()}


def engine_action(engine: str, name: str) -> Callable[..., Any]:
    """The action *name* of *engine* (imported on first use)."""
    module = engines().get(engine)
    if module is None:
        raise ChaosDBError(f"no fault engine {engine!r}; known: {', '.join(sorted(engines()))}")
    action = getattr(importlib.import_module(module), name, None)
    if not callable(action):
        raise ChaosDBError(f"{module} has no action {name!r}")
    return action

