"""Why a control stopped the run: said once, read by the verdict and by every control's after-experiment hook.

A control that refuses input, or cannot start what the experiment needs, raises :func:`refused` instead of a bare
:class:`InterruptExecution`. Two kinds:

* ``nothing_started=True``: the input was refused before any control started anything. The run ends with status
  ``refused``, the verdict says "Nothing was started: <why>", and the controls' after hooks leave everything as it
  was: no report, no copied journal, no cluster stopped.
* otherwise: something the run needed could not start (a cluster, the load). The verdict says "Refused: <why>"; the
  controls stop what *they* started, as after any run.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar, cast

from chaoslib.exceptions import InterruptExecution

from chaosdb.experiment.context import Refusal, active_run, run_context

__all__ = ["refused", "reason", "forget", "nothing_started", "stops_the_run", "record_in"]

F = TypeVar("F", bound=Callable[..., Any])


def _reasons() -> list[Refusal]:
    """The refusals of the run in progress (kept in its context, :mod:`chaosdb.experiment.context`)."""
    ctx = active_run()
    return ctx.refusals if ctx is not None else []


def refused(message: str, nothing_started: bool = False) -> InterruptExecution:
    """The exception a control raises to stop the run, with *message* kept for the verdict (*nothing_started*: the
    input was refused before anything started)."""
    run_context().refusals.append(Refusal(message, nothing_started))
    return InterruptExecution(message)


def reason() -> str:
    """The first refusal of this run, or ""."""
    reasons = _reasons()
    return reasons[0].message if reasons else ""


def nothing_started() -> bool:
    """Whether this run was refused before anything started (its controls then leave everything as it was)."""
    reasons = _reasons()
    return bool(reasons) and reasons[0].nothing_started


def record_in(state: Any) -> None:
    """Put this run's refusal in the journal (*state*) with status ``refused``: every control of the pack that ends a
    run calls it, so a refused run is journalled as refused even without the experiment control (which also writes
    the verdict)."""
    reasons = _reasons()
    if reasons and isinstance(state, dict):
        state["chaosdb_refused"] = reasons[0].message
        state["chaosdb_nothing_started"] = reasons[0].nothing_started
        if state.get("status") in (None, "interrupted"):
            state["status"] = "refused"


def forget() -> None:
    """Forget the refusals of the run in progress (the experiment control starts a new run context instead)."""
    _reasons().clear()


def stops_the_run(what: str) -> Callable[[F], F]:
    """Decorate a control's before-experiment hook: an error it did not expect stops the run with a refusal naming
    *what* failed and why, instead of Chaos Toolkit's default for a control that raises (a line at DEBUG level, and
    the run going on without what the control should have started)."""

    def decorate(hook: F) -> F:
        @functools.wraps(hook)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                return hook(*args, **kwargs)
            except InterruptExecution:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever it was, the run must not go on without it
                raise refused(f"{what}: {type(exc).__name__}: {exc}") from exc

        return cast(F, wrapped)

    return decorate
