"""The one shape of an action's result, as the journal records it.

Every action of the pack (the functions in an ``actions`` module's ``__all__``) returns a JSON object with

* ``action``: the function's name;
* ``targets``: what it acted on, a list of objects, each with ``name``, the value that would pick the same
  thing again as an action's ``target`` (a node or pod name, a CockroachDB node id or TiKV store id as a
  string, a Chaos Mesh or Litmus object's name), and what else is known of it (``roles``, ``address``,
  ``pod``, ``namespace``, ``kind``, ...); an empty list when it acted on a whole cluster, a whole kind of
  object, or found nothing to act on;
* ``started_at`` and ``ended_at`` (ISO 8601 with the UTC offset), ``start_ts`` and ``end_ts`` (epoch seconds)
  and ``duration_s``: when the action ran, from its own clock (an action that measures a narrower span,
  such as the injection itself, keeps its own);
* then what is particular to the action (a fault's ``fault_id``, a switchover's ``from`` and ``to``, ...).

:func:`action_result` gives a function that shape: it times the call, names the action, and checks that the
function said what it acted on. Activity modules apply it to each action; ``tests/unit/test_action_results.py``
holds every action of the pack to it. A SIGTERM that interrupts an action is sent again (:func:`sigterm_again`) so
that the run stops instead of sleeping through the action's pause.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
from typing import Any, Callable, Iterable, Mapping, TypeVar

from chaoslib.exceptions import InterruptExecution

from chaosdb.core.timeutil import Stopwatch

__all__ = ["RECORD_KEYS", "TIMING_KEYS", "SIGTERM_MESSAGE", "action_result", "as_record", "target",
           "is_action_result", "record_problems", "sigterm_again"]

logger = logging.getLogger("chaostoolkit")

#: the keys every action result has
TIMING_KEYS = ("started_at", "ended_at", "start_ts", "end_ts", "duration_s")
RECORD_KEYS = ("action", "targets", *TIMING_KEYS)

F = TypeVar("F", bound=Callable[..., Any])


def target(name: Any, **known: Any) -> dict[str, Any]:
    """One entry of ``targets``: *name* (as a string) and what else is known of it (None values left out)."""
    return {"name": str(name), **{k: v for k, v in known.items() if v is not None}}


def record_problems(result: Any) -> list[str]:
    """What keeps *result* from being an action result of the one shape (empty when it is one)."""
    if not isinstance(result, Mapping):
        return [f"an action returns a JSON object, not {type(result).__name__}"]
    problems = [f"no {k!r}" for k in RECORD_KEYS if k not in result]
    targets = result.get("targets")
    if "targets" in result and not (isinstance(targets, list)
                                    and all(isinstance(t, Mapping) and isinstance(t.get("name"), str)
                                            for t in targets)):
        problems.append(f"'targets' must be a list of objects with a string 'name', got {targets!r}")
    return problems


def as_record(action: str, result: Mapping[str, Any], watch: Stopwatch,
              targets: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """*result* in the one shape: ``action`` and ``targets`` first, then its own keys, then the timing (its own
    when it measured one)."""
    own = dict(result)
    own.pop("action", None)  # an action returning another action's record is named by itself
    listed = own.pop("targets", None)
    if listed is None:
        listed = list(targets or [])
    timing = {k: own.pop(k) for k in TIMING_KEYS if k in own}
    record: dict[str, Any] = {"action": action, "targets": listed, **own}
    record.update(watch.as_dict())
    record.update(timing)
    return record


#: what Chaos Toolkit's SIGTERM handler raises (``chaoslib.exit``)
SIGTERM_MESSAGE = "SIGTERM signal received"


def sigterm_again(after_s: float = 0.2) -> None:
    """Send SIGTERM to this process once more, *after_s* seconds from now.

    Chaos Toolkit stops a run on SIGTERM by raising ``InterruptExecution`` wherever the run is. When that is inside
    an action, its Python provider turns it into the action's failure, and the run then sleeps through the action's
    ``pauses.after`` before anything stops it. A pod's deadline sends SIGTERM once, then SIGKILL after the grace
    period: the rollbacks would never run. Sent again, the signal ends the pause (or whatever runs then) and the run
    stops there, its rollbacks included."""
    timer = threading.Timer(after_s, os.kill, (os.getpid(), signal.SIGTERM))
    timer.daemon = True
    timer.start()


def action_result(func: F) -> F:
    """Decorate an action so that it returns the one shape (see the module's docstring).

    The function returns a dict of what is particular to it and its ``targets`` (each made with
    :func:`target`). A result without ``targets`` is recorded with an empty list and a warning in the log: it
    is a defect of the action (the test of every action catches it), never a reason to fail a fault that was
    injected."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        watch = Stopwatch()
        try:
            result = func(*args, **kwargs)
        except InterruptExecution as exc:
            if str(exc) == SIGTERM_MESSAGE:
                sigterm_again()
            raise
        watch.stop()
        if not isinstance(result, Mapping):
            logger.warning("chaosdb: %s returned %s, not a JSON object", func.__name__, type(result).__name__)
            return result
        if "targets" not in result:
            logger.warning("chaosdb: %s did not say what it acted on (no 'targets')", func.__name__)
        return as_record(func.__name__, result, watch)

    wrapper.__chaosdb_action_result__ = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def is_action_result(func: Callable[..., Any]) -> bool:
    """Whether *func* returns the one shape (was decorated with :func:`action_result`)."""
    return bool(getattr(func, "__chaosdb_action_result__", False))
