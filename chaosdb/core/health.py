"""One rule for boolean health probes: a ``False`` says why in the run's log, and "healthy" may be given time.

A steady-state probe must return a plain value its tolerance can compare (``true``), so the reasons a
``*_health`` probe found would otherwise be lost: the journal only keeps ``false``. ``healthy_or_say_why``
logs each problem on the ``chaostoolkit`` logger (the console and ``chaostoolkit.log``) before returning.

``healthy_within`` asks again until the cluster is healthy or ``within_s`` has passed: "every store is Up, or
comes back within 30 s" is a hypothesis a cluster that is rebalancing after a fault can be held to, where one
reading taken while PD finishes an operator is not.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Mapping

logger = logging.getLogger("chaostoolkit")


def healthy_or_say_why(health: Mapping[str, Any], what: str) -> bool:
    """``health["healthy"]`` as a bool; when false, one warning naming ``what`` and every problem."""
    healthy = bool(health.get("healthy"))
    if not healthy:
        logger.warning("chaosdb: %s is not healthy: %s", what, _problems(health))
    return healthy


def healthy_within(read: Callable[[], Mapping[str, Any]], what: str, within_s: float = 0.0,
                   every_s: float = 1.0) -> bool:
    """Call ``read`` (a ``*_health`` result with ``healthy`` and ``problems``) until it is healthy or
    ``within_s`` seconds have passed since the first call; at least once. False logs the last problems;
    a health that came back logs how long it took and what was wrong first."""
    started = time.monotonic()
    health = read()
    first = health
    while not health.get("healthy") and time.monotonic() - started + every_s <= within_s:
        time.sleep(every_s)
        health = read()
    if health.get("healthy") and health is not first:
        logger.info("chaosdb: %s is healthy after %.1f s (first: %s)", what, time.monotonic() - started,
                    _problems(first))
    if not health.get("healthy") and within_s > 0:
        what = f"{what} (for {within_s:g} s)"
    return healthy_or_say_why(health, what)


def _problems(health: Mapping[str, Any]) -> str:
    return "; ".join(str(p) for p in (health.get("problems") or ["no problem named"]))
