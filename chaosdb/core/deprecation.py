"""Old activity and argument names keep working for one release, with a warning naming what replaces them (the
CHANGELOG lists them)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["warn_deprecated", "renamed_argument", "module_getattr"]

logger = logging.getLogger("chaostoolkit")


def warn_deprecated(old: str, new: str) -> None:
    """Say, in the run's log and as a :class:`DeprecationWarning`, that *old* is deprecated for *new*."""
    message = f"{old} is deprecated and will be removed in the next release: use {new}"
    logger.warning("chaosdb: %s", message)
    warnings.warn(message, DeprecationWarning, stacklevel=3)


def renamed_argument(value: Any, old_value: Any, old: str, new: str, where: str, default: Any) -> Any:
    """The value of an argument that was renamed: *new*'s, or *old*'s (with the warning) when only that was
    given, or *default*. Both at once is an error: which one did the experiment mean?"""
    if old_value is None:
        return default if value is None else value
    if value is not None:
        from chaosdb.core.errors import ChaosDBError  # noqa: PLC0415 - the detached helpers import this module

        raise ChaosDBError(f"{where}: give {new} only ({old} is its old name)")
    warn_deprecated(f"the {old} argument of {where}", new)
    return old_value


def module_getattr(module: str, old_names: dict[str, tuple[str, Callable[[], Any]]]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` that still answers names it no longer defines: *old_names* maps each to (what
    replaces it, a function giving its value now), with the warning; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        if name not in old_names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, value = old_names[name]
        warn_deprecated(f"{module}.{name}", new)
        return value()

    return __getattr__
