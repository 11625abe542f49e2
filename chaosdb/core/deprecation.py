"""Old activity and argument names keep working for one release, with a warning naming what replaces them (the
CHANGELOG lists them)."""

from __future__ import annotations

import logging
import warnings

__all__ = ["warn_deprecated"]

logger = logging.getLogger("chaostoolkit")


def warn_deprecated(old: str, new: str) -> None:
    """Say, in the run's log and as a :class:`DeprecationWarning`, that *old* is deprecated for *new*."""
    message = f"{old} is deprecated and will be removed in the next release: use {new}"
    logger.warning("chaosdb: %s", message)
    warnings.warn(message, DeprecationWarning, stacklevel=3)
