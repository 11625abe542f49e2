"""Why a control stopped the run: said once, read by the verdict.

A control that refuses input, or cannot start what the experiment needs, raises :func:`refused` instead of a bare
:class:`InterruptExecution`: the verdict then says "Refused: <why>" (or "Nothing was started: <why>" when nothing
had started yet) instead of calling the run interrupted by a signal.
"""

from __future__ import annotations

from chaoslib.exceptions import InterruptExecution

__all__ = ["refused", "reason", "forget"]

_reasons: list[str] = []


def refused(message: str) -> InterruptExecution:
    """The exception a control raises to stop the run, with *message* kept for the verdict."""
    _reasons.append(message)
    return InterruptExecution(message)


def reason() -> str:
    """The first refusal of this run, or ""."""
    return _reasons[0] if _reasons else ""


def forget() -> None:
    """A new run starts (the experiment control's configure step)."""
    _reasons.clear()
