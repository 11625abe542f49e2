"""One check evaluated as Chaos Toolkit would judge its probe in a steady-state hypothesis, as one plain JSON dict.

The probe runs through ``chaoslib.activity.run_activity`` and its value is judged by
``chaoslib.hypothesis.within_tolerance`` (a string tolerance substituted first, as ``chaos run`` does), so a check
passes exactly when the same probe in a hypothesis would. The result::

    {"check": "has-primary", "ok": false, "value": false,
     "reason": "the probe returned false, which is not exactly true",
     "latency_ms": 12.4, "at": "2026-11-27T04:00:54.123+00:00"}

A probe that raises (Chaos Toolkit's ``ActivityFailed`` or any other exception) is a failed check whose reason is
its message, never a traceback. What a failing probe warned on Chaos Toolkit's logger while it ran (this pack's
``cluster_is_healthy`` says there why it returns false) ends its reason instead of going to standard error. Every
secret value is masked (``***``) in the value and the reason (:func:`chaosdb.core.redact.redact`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from chaoslib import substitute
from chaoslib.activity import run_activity
from chaoslib.hypothesis import within_tolerance

from chaosdb.checks.spec import Check, CheckSet
from chaosdb.core.redact import redact

__all__ = ["evaluate", "evaluate_all", "json_safe", "describe_tolerance"]

#: the most of a value a reason quotes
_QUOTED = 200


def json_safe(value: Any) -> Any:
    """*value* as JSON can say it: mappings with string keys, lists, numbers (a NaN or an infinity as text), text
    (bytes decoded), and anything else as its text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    return str(value)


def _quoted(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= _QUOTED else text[:_QUOTED - 1] + "…"


def describe_tolerance(tolerance: Any, value: Any = None) -> str:
    """What a tolerance accepts, in words (``exactly true``, ``between 0 and 1048576``, ``matching the pattern
    '^pd'``...); an HTTP or a process probe's *value* is judged by its ``status``, as Chaos Toolkit does."""
    status = isinstance(value, dict) and "status" in value and isinstance(tolerance, (int, list)) \
        and not isinstance(tolerance, bool)
    if status:
        return f"a status of {tolerance}" if isinstance(tolerance, int) else f"a status in {_quoted(tolerance)}"
    if isinstance(tolerance, (bool, str, int)):
        return f"exactly {json.dumps(tolerance)}"
    if isinstance(tolerance, list):
        if len(tolerance) == 2:
            return f"between {json.dumps(tolerance[0])} and {json.dumps(tolerance[1])}"
        return f"one of {_quoted(tolerance)}"
    if isinstance(tolerance, dict):
        kind, target = tolerance.get("type"), tolerance.get("target")
        of = f" (its {target!r})" if target else ""
        if kind == "range":
            low, high = (list(tolerance.get("range") or []) + [None, None])[:2]
            return f"between {low} and {high}{of}"
        if kind == "regex":
            return f"matching the pattern {tolerance.get('pattern')!r}{of}"
        if kind == "jsonpath":
            what = f"matched by the JSON path {tolerance.get('path')!r}{of}"
            if "expect" in tolerance:
                what += f" with the value(s) {_quoted(tolerance['expect'])}"
            if tolerance.get("count") is not None:
                what += f" exactly {tolerance['count']} time(s)"
            return what
        if kind == "probe":
            return f"accepted by the tolerance probe {tolerance.get('name', '?')!r}"
    return f"within the tolerance {_quoted(json_safe(tolerance))}"


#: the type Chaos Toolkit writes before the message of an exception a Python probe raised (``pkg.mod.Error: ...``)
_QUALIFIED_TYPE = re.compile(r"^((?:\w+\.)+)(\w+): ")


def _message(exc: BaseException) -> str:
    """An exception's message on one line: this pack's errors are sentences of their own (their type left out),
    another's keeps its type's short name (``ConnectionError: ...``)."""
    text = " ".join(str(exc).split())
    qualified = _QUALIFIED_TYPE.match(text)
    if qualified:
        text = text[qualified.end():] if qualified.group(1).startswith("chaosdb.") else text[len(qualified.group(1)):]
    return text or type(exc).__name__


class _Said(logging.Handler):
    """The warnings this thread logs on Chaos Toolkit's logger while a probe runs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.lines.append(" ".join(record.getMessage().split()))


@contextlib.contextmanager
def _what_the_probe_says() -> Iterator[_Said]:
    said, logger = _Said(), logging.getLogger("chaostoolkit")
    logger.addHandler(said)
    try:
        yield said
    finally:
        logger.removeHandler(said)


def evaluate(check: Check, configuration: dict[str, Any] | None = None, secrets: dict[str, Any] | None = None,
             mask: Iterable[str] = (), clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """Run *check*'s probe and judge its value against its tolerance: ``{"check", "ok", "value", "reason",
    "latency_ms", "at"}`` (``reason`` null when it passes); every string of *mask* is masked in the result."""
    configuration, secrets, mask = dict(configuration or {}), dict(secrets or {}), list(mask)
    probe = copy.deepcopy(check.probe)  # a probe tolerance is handed the value in its own arguments
    at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    started = clock()
    value: Any = None
    with _what_the_probe_says() as said:
        try:
            raw = run_activity(probe, configuration, secrets)
        except Exception as exc:  # noqa: BLE001 - a probe that raises is a failed check, its message the reason
            ok, reason = False, f"the probe failed: {_message(exc)}"
        else:
            value = redact(json_safe(raw), mask)  # what is shown; the tolerance judges what the probe returned
            tolerance = probe.get("tolerance")
            if isinstance(tolerance, str):
                tolerance = substitute(tolerance, configuration, secrets)
            try:
                ok = bool(within_tolerance(tolerance, raw, configuration=configuration, secrets=secrets))
            except Exception as exc:  # noqa: BLE001 - a value the tolerance cannot judge fails the check
                ok, reason = False, (f"the probe returned {_quoted(value)}, which the tolerance could not judge: "
                                     f"{_message(exc)}")
            else:
                reason = "" if ok else \
                    f"the probe returned {_quoted(value)}, which is not {describe_tolerance(tolerance, value)}"
    if not ok and said.lines:
        reason += f" (it said: {'; '.join(dict.fromkeys(said.lines))})"
    latency_ms = round((clock() - started) * 1000, 3)
    return {"check": check.name, "ok": ok, "value": value, "reason": redact(reason, mask) or None,
            "latency_ms": latency_ms, "at": at}


def evaluate_all(checks: CheckSet, names: Sequence[str] = (), clock: Callable[[], float] = time.perf_counter
                 ) -> dict[str, Any]:
    """Every check *names* selects (all when none), one at a time: ``{"ok", "checks": [results], "latency_ms"}``
    (``ok`` when every one passes; ``latency_ms`` the whole evaluation's)."""
    selected, mask = checks.select(names), checks.mask()
    started = clock()
    results = [evaluate(c, checks.configuration, checks.secrets, mask, clock) for c in selected]
    return {"ok": all(r["ok"] for r in results), "checks": results,
            "latency_ms": round((clock() - started) * 1000, 3)}
