"""A probe's tolerance in words, as the report prints it beside the probe's result.

Chaos Toolkit checks a probe's output against its tolerance by the tolerance's type (chaoslib's
``within_tolerance``): a boolean, a number or a text must be equal; a list of two values is a range (both ends
included), a longer or shorter list the values allowed; an object is a ``range`` (``range``: [low, high]), a
``regex`` (``pattern`` found in the output), a ``jsonpath`` (``path`` finds values; ``count`` of them, or exactly
``expect``) or a ``probe`` (another activity judges the output). ``target`` names the field of the output that is
checked. Anything else is shown as it is written.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["tolerance_in_words"]


def _number(v: Any) -> str:
    """A bound as a person writes it: 3, 0.01, 1e-06 (no trailing zeros, no thousands separator)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _value(v)
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:g}" if isinstance(v, float) else str(v)


def _value(v: Any) -> str:
    """An exact value: true/false, a number, a quoted text, or compact JSON."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return _number(v)
    if isinstance(v, str):
        return f"'{v}'"
    return json.dumps(v, separators=(", ", ": "))


def _between(low: Any, high: Any) -> str:
    return f"between {_number(low)} and {_number(high)}"


def _of_target(target: Any, words: str) -> str:
    return f"its '{target}' {words}" if target else words


def _object_in_words(tol: dict[str, Any]) -> str:
    kind = tol.get("type")
    target = tol.get("target")
    if kind == "range":
        bounds = tol.get("range")
        if isinstance(bounds, (list, tuple)) and len(bounds) == 2:
            return _of_target(target, _between(bounds[0], bounds[1]))
    elif kind == "regex" and tol.get("pattern") is not None:
        return _of_target(target, f"matches the regular expression {tol['pattern']}")
    elif kind == "jsonpath" and tol.get("path") is not None:
        path = tol["path"]
        if "expect" in tol:
            expect = tol["expect"]
            found = (", ".join(_value(x) for x in expect) if isinstance(expect, list) else _value(expect))
            words = f"JSON path {path} finds exactly {found}"
        elif tol.get("count") is not None:
            words = f"JSON path {path} finds {_number(tol['count'])} value(s)"
        else:
            words = f"JSON path {path} finds at least one value"
        return _of_target(target, words)
    elif kind == "probe":
        provider = tol.get("provider") or {}
        func = provider.get("func") or provider.get("path") or provider.get("url") or "?"
        name = tol.get("name")
        return f"probe '{name}' ({func}) accepts it" if name else f"the probe {func} accepts it"
    return json.dumps(tol, separators=(", ", ": "))


def tolerance_in_words(tol: Any) -> str:
    """A tolerance as the report prints it: ``between 0 and 3``, ``true``, ``equal to 0``, ``one of 200, 201``,
    ``matches the regular expression ^ok``, ``JSON path $.x finds exactly 1``; "–" when there is none."""
    if tol is None:
        return "–"
    if isinstance(tol, bool):
        return _value(tol)
    if isinstance(tol, (int, float, str)):
        return f"equal to {_value(tol)}"
    if isinstance(tol, (list, tuple)):
        if len(tol) == 2:  # chaoslib reads a list of two as a range, ends included
            return _between(tol[0], tol[1])
        return "one of " + ", ".join(_value(x) for x in tol) if tol else "one of nothing (never met)"
    if isinstance(tol, dict):
        return _object_in_words(tol)
    return str(tol)
