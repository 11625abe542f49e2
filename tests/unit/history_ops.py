"""Helpers the history checker tests share: transactions written as short literals, invocation/completion pairs."""

from __future__ import annotations

from typing import Any


def txn(*mops: tuple[Any, ...], process: Any = 0, outcome: str = "ok", index: int | None = None) -> dict[str, Any]:
    """A completed transaction event with these micro-ops."""
    op: dict[str, Any] = {"type": outcome, "process": process, "f": "txn", "value": [list(m) for m in mops]}
    if index is not None:
        op["index"] = index
    return op


def invoked(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """[invocation, completion]: the invocation carries the same micro-ops, with reads not yet known (null)."""
    invocation = dict(completion, type="invoke",
                      value=[[m[0], m[1], None] if m[0] == "r" else list(m) for m in completion["value"]])
    return [invocation, completion]


def numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with their ``index`` set to their position."""
    return [dict(e, index=i) for i, e in enumerate(events)]


def indexes(example: dict[str, Any]) -> list[Any]:
    """The history indexes of an example's transactions."""
    return [t["index"] for t in example["transactions"]]
