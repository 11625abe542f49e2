"""A history's events paired into transactions: one integer id per transaction, its outcome, micro-ops and places.

A history is Jepsen's: a list of operation dicts with ``type`` (invoke, ok, fail, info), ``process``, ``f`` and
``value`` (a list of micro-ops ``[f, key, value]``). Each process runs one operation at a time, so an invocation's
completion is the next completion of the same process. Operations whose ``f`` is set and is not ``txn`` (a nemesis's)
are ignored; histories of completions alone (no invocations) are fine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["OK", "INFO", "FAIL", "Transactions", "parse_transactions"]

OK, INFO, FAIL = 0, 1, 2
_OUTCOMES = {"ok": OK, "info": INFO, "fail": FAIL}
_OUTCOME_NAMES = ("ok", "info", "fail")


@dataclass
class Transactions:
    """The transactions of a history, by integer id in order of completion.

    ``ops[t]`` is the completion event (the dict of the history), ``outcome[t]`` OK/INFO/FAIL, ``mops[t]`` its
    micro-ops (the invocation's for an info or fail completion that carries none), ``invoked_at[t]`` and
    ``completed_at[t]`` the positions of its events in the history (-1: no invocation seen), ``invocations[t]`` its
    invocation event (when there is one).
    """

    ops: list[dict[str, Any]] = field(default_factory=list)
    outcome: bytearray = field(default_factory=bytearray)
    mops: list[list[Any]] = field(default_factory=list)
    invoked_at: list[int] = field(default_factory=list)
    completed_at: list[int] = field(default_factory=list)
    invocations: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ops)

    def count(self, outcome: int) -> int:
        """How many transactions had this outcome."""
        return self.outcome.count(outcome)

    def index(self, t: int) -> Any:
        """The history index of transaction ``t``'s completion (its ``index`` field, else its position)."""
        op = self.ops[t]
        return op.get("index", self.completed_at[t])

    def invocation_index(self, t: int) -> Any:
        """The history index of transaction ``t``'s invocation (its position if it has no ``index``), or None."""
        op = self.invocations.get(t)
        return None if op is None else op.get("index", self.invoked_at[t])

    def invocation_time(self, t: int) -> Any:
        """The ``time`` of transaction ``t``'s invocation, or None."""
        op = self.invocations.get(t)
        return None if op is None else op.get("time")

    def describe(self, t: int) -> dict[str, Any]:
        """A JSON-ready summary of transaction ``t``: index, process, outcome and micro-ops."""
        op = self.ops[t]
        return {"index": self.index(t), "process": op.get("process"), "type": _OUTCOME_NAMES[self.outcome[t]],
                "value": self.mops[t]}

    def short(self, t: int) -> str:
        """Transaction ``t`` in a few words, e.g. ``{index 7, process 2: [["append", 3, 1], ["r", 4, [1]]]}``."""
        op = self.ops[t]
        mops = ", ".join(_mop_text(m) for m in self.mops[t])
        return f"{{index {self.index(t)}, process {op.get('process')}, {_OUTCOME_NAMES[self.outcome[t]]}: [{mops}]}}"


def _mop_text(mop: Sequence[Any]) -> str:
    value = mop[2] if len(mop) > 2 else None
    shown = "nil" if value is None else repr(value)
    return f"{mop[0]} {mop[1]!r} {shown}"


def _bad(position: int, what: str) -> ChaosDBError:
    return ChaosDBError(f"The history's event at position {position} is malformed: {what}.")


def _check_mops(value: Any, position: int, reads_and: frozenset[str]) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(position, f"its value should be a list of micro-ops, not {type(value).__name__}")
    for mop in value:
        if not isinstance(mop, (list, tuple)) or len(mop) not in (2, 3) or mop[0] not in reads_and \
                or (len(mop) == 2 and mop[0] != "r"):
            raise _bad(position, f"micro-op {mop!r} is not one of {sorted(reads_and)} as [f, key, value]")
    return value


def parse_transactions(history: Sequence[dict[str, Any]], micro_ops: frozenset[str]) -> Transactions:
    """Pairs the history's invocations and completions per process into :class:`Transactions`.

    ``micro_ops`` are the micro-op names allowed (e.g. ``{"r", "append"}``). An invocation never completed counts
    as an info transaction (it may or may not have committed). Raises ChaosDBError for a malformed event.
    """
    if not isinstance(history, (list, tuple)):
        raise ChaosDBError(f"A history is a list of operations, not {type(history).__name__}.")
    txns = Transactions()
    pending: dict[Any, tuple[int, list[Any]]] = {}
    for position, op in enumerate(history):
        if not isinstance(op, dict):
            raise _bad(position, f"an operation is a dict, not {type(op).__name__}")
        f = op.get("f", "txn")
        if f != "txn":
            continue
        kind = op.get("type")
        process = op.get("process")
        if kind == "invoke":
            pending[process] = (position, _check_mops(op.get("value"), position, micro_ops))
            continue
        outcome = _OUTCOMES.get(kind)  # type: ignore[arg-type]
        if outcome is None:
            raise _bad(position, f"type {kind!r} is not invoke, ok, fail or info")
        invoked_at, invoked_mops = pending.pop(process, (-1, None))
        if invoked_at >= 0:
            txns.invocations[len(txns.ops)] = history[invoked_at]
        value = op.get("value")
        if value is None and outcome != OK:  # a crash or failure may carry no value: the invocation's, or none
            value = invoked_mops if invoked_mops is not None else []
        txns.ops.append(op)
        txns.outcome.append(outcome)
        txns.mops.append(_check_mops(value, position, micro_ops))
        txns.invoked_at.append(invoked_at)
        txns.completed_at.append(position)
    end = len(history)
    for process, (invoked_at, mops) in pending.items():  # never completed: unknown outcome
        txns.invocations[len(txns.ops)] = history[invoked_at]
        txns.ops.append({"type": "info", "process": process, "f": "txn", "value": mops,
                         "index": history[invoked_at].get("index", invoked_at)})
        txns.outcome.append(INFO)
        txns.mops.append(mops)
        txns.invoked_at.append(invoked_at)
        txns.completed_at.append(end)
        end += 1
    return txns
