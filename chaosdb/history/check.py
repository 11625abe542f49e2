"""One entry to the checkers: a history (a file, a run's folder, or operations in memory) checked against a model and
a consistency model, with the model found from the operations when it is not given.

============== ============================================ =================================================
model          operations                                   checker
============== ============================================ =================================================
list-append    ``txn`` of ``["append", k, v]`` / ``["r", k, [..]]``  :mod:`chaosdb.history.list_append` (Elle's)
rw-register    ``txn`` of ``["w", k, v]`` / ``["r", k, v]``  :mod:`chaosdb.history.rw_register` (Elle's)
register       ``read`` / ``write`` / ``cas``, keyed or not     :mod:`chaosdb.history.linearizable`
============== ============================================ =================================================

The result is the checker's (``valid``: true, false or ``"unknown"``; ``anomaly_types``; ``anomalies`` with
examples explained), plus, for a list-append history checked under a model with real-time order, ``lost_appends``
(acknowledged appends a later read misses, each named as a ``lost-append``: :mod:`chaosdb.history.lost_appends`), ``operations`` (events read), ``info`` (operations whose outcome is unknown) and, where the
operations say which server answered (``node``), the servers each example's operations were served by.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from chaosdb.core.arguments import did_you_mean
from chaosdb.core.errors import ChaosDBError
from chaosdb.history.recording import read_history

__all__ = ["MODELS", "TRANSACTIONAL", "check_history", "detect_model", "anomaly_counts"]

#: the models a history can be checked as
MODELS = ("list-append", "rw-register", "register", "cas-register")
#: the models checked for isolation anomalies (the others for linearizability)
TRANSACTIONAL = ("list-append", "rw-register")


def detect_model(ops: Iterable[Mapping[str, Any]]) -> str:
    """The model the operations are written in: ``list-append`` (a transaction appends), ``rw-register`` (a
    transaction writes), ``cas-register`` (reads, writes, compare-and-sets); :class:`ChaosDBError` when nothing
    tells (only reads, or no operation at all)."""
    fs: set[str] = set()
    for op in ops:
        f = op.get("f")
        if f == "txn" or (f is None and isinstance(op.get("value"), list)):  # elle-cli's files may leave f out
            for mop in op.get("value") or ():
                if isinstance(mop, (list, tuple)) and mop and mop[0] in ("append", "w"):
                    return "list-append" if mop[0] == "append" else "rw-register"
                fs.add("txn")
        elif f in ("read", "write", "cas"):
            fs.add(str(f))
    if fs & {"write", "cas"}:
        return "cas-register"
    raise ChaosDBError("cannot tell the history's model from its operations (no append, write or cas): give "
                       f"--model, one of {', '.join(MODELS)}")


def _served_by(result: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """Add to each example the server that answered each of its operations, when the history records it."""
    nodes = {op.get("index"): op["node"] for op in ops if op.get("node")}
    if not nodes:
        return
    for examples in (result.get("anomalies") or {}).values():
        for example in examples if isinstance(examples, list) else ():
            if not isinstance(example, dict):
                continue
            found = {i: nodes[i] for i in _indexes(example) if i in nodes}
            if found:
                example["served_by"] = {str(i): found[i] for i in sorted(found)}


def _indexes(value: Any) -> Iterable[int]:
    """Every ``index`` of an operation mentioned anywhere in an example."""
    if isinstance(value, dict):
        if isinstance(value.get("index"), int) and "type" in value:
            yield value["index"]
        for v in value.values():
            yield from _indexes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _indexes(v)


def check_history(history: str | Path | list[dict[str, Any]], model: str | None = None,
                  consistency_model: str = "serializable", *, max_examples: int = 8,
                  time_limit_s: float = 60.0, max_states: int = 5_000_000) -> dict[str, Any]:
    """Check *history* (a file, a run's folder of ``history-*.jsonl``, or the operations) as *model* (None: found
    from the operations). Transactional models are checked against *consistency_model* (Elle's names:
    ``read-committed``, ``repeatable-read``, ``snapshot-isolation``, ``serializable``, ``strict-serializable``,
    ...); registers for linearizability, giving up with ``"unknown"`` past *time_limit_s* or *max_states* per key."""
    ops = history if isinstance(history, list) else read_history(history)
    chosen = model or detect_model(ops)
    if chosen not in MODELS:
        raise ChaosDBError(f"unknown model {chosen!r}{did_you_mean(chosen, MODELS)}; one of {', '.join(MODELS)}")
    if chosen == "list-append":
        from chaosdb.history.list_append import check_list_append  # noqa: PLC0415 - only the checker asked for

        result = _transactional(check_list_append, ops, consistency_model, max_examples, lost_appends=True)
    elif chosen == "rw-register":
        from chaosdb.history.rw_register import check_rw_register  # noqa: PLC0415 - only the checker asked for

        result = _transactional(check_rw_register, ops, consistency_model, max_examples)
    else:
        from chaosdb.history.linearizable import check_register  # noqa: PLC0415 - only the checker asked for

        # a register's operations may include compare-and-set (Knossos's cas-register, what the etcd workload runs)
        result = check_register(ops, model="cas-register", max_states=max_states, time_limit_s=time_limit_s)
        result.setdefault("consistency_model", "linearizable")
    result["operations"] = len(ops)
    result.setdefault("info", sum(1 for op in ops if op.get("type") == "info"))
    _served_by(result, ops)
    return result


def _transactional(checker: Any, ops: list[dict[str, Any]], consistency_model: str,
                   max_examples: int, **options: Any) -> dict[str, Any]:
    try:
        return dict(checker(ops, consistency_model, max_examples=max_examples, **options))
    except ValueError as exc:  # an unknown consistency model: the checker's sentence
        raise ChaosDBError(str(exc)) from None


def anomaly_counts(result: Mapping[str, Any]) -> dict[str, int]:
    """How many of each anomaly a result found (its ``counts``; else the examples it holds): what a game day
    compares across runs."""
    counts = dict(result.get("counts") or {})
    for name, examples in (result.get("anomalies") or {}).items():
        counts.setdefault(name, len(examples) if isinstance(examples, list) else 1)
    return dict(sorted(counts.items()))
