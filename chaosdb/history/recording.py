"""Operation histories written while a run goes, in Jepsen's history form as elle-cli reads it, and read back.

A history is a list of operations, one object per event::

    {"index": 12, "type": "invoke", "process": 3, "f": "txn", "value": [["append", 7, 31], ["r", 8, null]],
     "time": 1795318599123456789}
    {"index": 15, "type": "ok", "process": 3, "f": "txn", "value": [["append", 7, 31], ["r", 8, [4, 9]]],
     "time": 1795318599125012345, "node": "127.0.0.21:5432"}

``type`` is ``invoke`` when the client sends the operation and ``ok`` (it took effect), ``fail`` (it certainly did
not) or ``info`` (its outcome is unknown: a timeout, a connection lost while it committed, a failover) when it
ends. ``time`` is the Unix epoch in nanoseconds (one clock for every process of one machine). ``node`` (an addition
of this pack's; checkers ignore it) names the server that answered. A process runs one operation at a time; a
client whose operation ended ``info`` takes a new process number, as Jepsen's clients do.

While the load runs, each Locust process writes its own ``history-*.jsonl`` (JSON Lines) beside its samples; each
event is made its line at once and the lines are written out once a second, so recording costs a client about as
much as a sample.
:func:`read_history` reads one such folder (the files merged in time order, ``index`` given in that order), a
JSON Lines file or a JSON array; :func:`write_history` writes either form.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

import orjson

from chaosdb.core.errors import ChaosDBError

__all__ = ["HistoryWriter", "history_files", "read_history", "write_history", "PROCESS_STRIDE"]

#: a client's process numbers are ``client + k * PROCESS_STRIDE`` (k: how many of its operations ended ``info``);
#: at most 10,000 clients run one load
PROCESS_STRIDE = 10_000

_now_ns = time.time_ns
_dumps = orjson.dumps
_NEWLINE = orjson.OPT_APPEND_NEWLINE


class HistoryWriter:
    """The history of one load process, buffered: :meth:`invoke` when an operation is sent, :meth:`complete` when it
    ends; written to *path* (JSON Lines) at most ``flush_every_s`` later and on :meth:`close`.

    Each event becomes its JSON line at once (orjson, a few hundred nanoseconds) in a byte buffer: nothing is kept
    per event, so a long run's writer holds no objects for the garbage collector to walk."""

    def __init__(self, path: Path | str, flush_every_s: float = 1.0, flush_bytes: int = 1 << 20) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.flush_every_s = flush_every_s
        self.flush_bytes = flush_bytes
        self.count = 0
        self._buf = bytearray()
        self._last = time.monotonic()
        self._f: IO[bytes] | None = open(self.path, "ab", buffering=0)

    def invoke(self, process: Any, f: str, value: Any) -> None:
        """Record that *process* sends operation *f* with *value* (reads not yet known: ``None``)."""
        self._buf += _dumps({"type": "invoke", "process": process, "f": f, "value": value, "time": _now_ns()},
                            None, _NEWLINE)

    def complete(self, kind: str, process: Any, f: str, value: Any, node: str = "") -> None:
        """Record how *process*'s operation ended: *kind* ``ok``, ``fail`` or ``info``, with the *value* it ended
        with (reads filled in for ``ok``) and the server that answered (*node*, ``host:port``; '' unknown)."""
        buf = self._buf
        if node:
            buf += _dumps({"type": kind, "process": process, "f": f, "value": value, "time": _now_ns(), "node": node},
                          None, _NEWLINE)
        else:
            buf += _dumps({"type": kind, "process": process, "f": f, "value": value, "time": _now_ns()},
                          None, _NEWLINE)
        self.count += 1
        if len(buf) >= self.flush_bytes or time.monotonic() - self._last >= self.flush_every_s:
            self.flush()

    def flush(self) -> None:
        """Write the events recorded so far."""
        self._last = time.monotonic()
        if self._f is None or not self._buf:
            return
        self._f.write(self._buf)
        self._buf = bytearray()

    def close(self) -> None:
        """Write what is left and close the file."""
        if self._f is not None:
            self.flush()
            self._f.close()
            self._f = None


def history_files(location: Path | str) -> list[Path]:
    """The history files a run's folder holds (``history-*.jsonl``), or the one file *location* names."""
    p = Path(location)
    if p.is_dir():
        return sorted(p.glob("history-*.jsonl"))
    return [p] if p.exists() else []


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if not line.endswith("\n"):
                return  # the last line of a file still being written
            try:
                op = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ChaosDBError(f"{path}, line {number}: not a JSON object ({exc})") from None
            if not isinstance(op, dict):
                raise ChaosDBError(f"{path}, line {number}: an operation must be a JSON object, got {line[:60]!r}")
            yield op


def _one_file(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        start = fh.read(4096).lstrip()
    if start.startswith("["):
        try:
            ops = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise ChaosDBError(f"{path}: not a JSON array of operations ({exc})") from None
        bad = next((i for i, op in enumerate(ops) if not isinstance(op, dict)), None)
        if bad is not None:
            raise ChaosDBError(f"{path}: operation {bad} is not a JSON object: {ops[bad]!r}")
        return ops
    return list(_jsonl(path))


def read_history(location: Path | str) -> list[dict[str, Any]]:
    """The operations of a history: a JSON array file, a JSON Lines file, or a folder of a run's
    ``history-*.jsonl`` files (merged in ``time`` order). Every operation gets its ``index`` (its position) when
    it has none; :class:`ChaosDBError` when there is nothing to read or a line is not an operation."""
    files = history_files(location)
    if not files:
        where = "no history-*.jsonl in the folder" if Path(location).is_dir() else "no such file"
        raise ChaosDBError(f"no history at {location}: {where}")
    if len(files) == 1 and not Path(location).is_dir():
        ops = _one_file(files[0])
    else:
        ops = [op for f in files for op in _jsonl(f)]
        ops.sort(key=lambda op: op.get("time", 0))
        for i, op in enumerate(ops):
            op["index"] = i
        return ops
    for i, op in enumerate(ops):
        op.setdefault("index", i)
    return ops


def write_history(ops: Iterable[dict[str, Any]], path: Path | str, *, lines: bool | None = None) -> Path:
    """Write *ops* to *path*: JSON Lines when *lines* (default: when the name ends ``.jsonl``), else one JSON
    array; returns the path."""
    out = Path(path)
    as_lines = out.suffix == ".jsonl" if lines is None else lines
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        if as_lines:
            for op in ops:
                fh.write(_dumps(op, None, _NEWLINE))
        else:
            fh.write(b"[")
            for i, op in enumerate(ops):
                fh.write((b",\n" if i else b"\n") + _dumps(op))
            fh.write(b"\n]\n")
    tmp.replace(out)
    return out
