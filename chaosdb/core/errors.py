"""Errors raised by chaosdb.

Every failure an activity reports is a :class:`chaoslib.exceptions.ActivityFailed`
(so ``chaos run`` records it in the journal); :class:`ChaosDBError` is the same
class so that code outside Chaos Toolkit (the CLI, benchmarks) can catch one type.
"""

from __future__ import annotations

from chaoslib.exceptions import ActivityFailed

__all__ = ["ChaosDBError", "UnsafeFault", "ActivityFailed"]


class ChaosDBError(ActivityFailed):
    """A failure with a message that tells a person what to do about it."""


class UnsafeFault(ChaosDBError):
    """Refused before anything was injected because the fault would break a safety rule."""
