"""Per-transaction samples: one CSV row per attempted transaction.

Format (header included; one file per load process, ``samples-*.csv`` in a directory)::

    start_ts,latency_ms,name,outcome,sqlstate,retries,terminal,key
    1795318599.123456,12.345,new_order,committed,,0,7,1:3:3012

* ``start_ts``: Unix epoch seconds when the transaction started, microsecond precision
* ``latency_ms``: wall time of the whole attempt including retries, milliseconds (3 decimals)
* ``name``: transaction name; ``outcome``: see :mod:`chaosdb.workloads.outcomes`
* ``sqlstate``: the error's SQLSTATE ('' on success); ``retries``: retries used
* ``terminal``: terminal number; ``key``: what a write touched (TPC-C New-Order: ``w:d:o``)

The reporter also reads plain CSVs that have at least ``start_ts``, ``latency_ms``,
``name`` and ``outcome`` (``ok`` = success, anything else = failure).

Rows are buffered and written every second (or every 2,000 rows), so the
driver never waits on the disk per transaction; readers skip an incomplete
last line.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

__all__ = ["Sample", "SampleBatcher", "SampleWriter", "HEADER", "read_samples", "read_recent", "sample_files"]

HEADER = "start_ts,latency_ms,name,outcome,sqlstate,retries,terminal,key\n"


@dataclass(slots=True)
class Sample:
    start_ts: float
    latency_ms: float
    name: str
    outcome: str
    sqlstate: str = ""
    retries: int = 0
    terminal: int = 0
    key: str = ""

    def to_line(self) -> str:
        """The sample as one CSV line of a samples file."""
        return (f"{self.start_ts:.6f},{self.latency_ms:.3f},{self.name},{self.outcome},{self.sqlstate},"
                f"{self.retries},{self.terminal},{self.key}\n")


class SampleBatcher:
    """Samples queued as CSV lines and handed on in batches (:meth:`ship`): when ``flush_rows`` are queued or
    ``flush_every_s`` has passed since the last batch. The file writer and a worker's shipper to its master are
    this with their own :meth:`ship`."""

    def __init__(self, flush_every_s: float, flush_rows: int) -> None:
        self.flush_every_s = flush_every_s
        self.flush_rows = flush_rows
        self.count = 0
        self._buf: list[str] = []
        self._last = time.monotonic()

    def add(self, sample: Sample) -> None:
        """Queue a sample; hand the queue on when it is full or old enough."""
        self._buf.append(sample.to_line())
        self.count += 1
        if len(self._buf) >= self.flush_rows or time.monotonic() - self._last >= self.flush_every_s:
            self.flush()

    def flush(self) -> None:
        """Hand the queued samples on now."""
        self._last = time.monotonic()
        if self._buf:
            lines, self._buf = self._buf, []
            self.ship(lines)

    def ship(self, lines: list[str]) -> None:
        """Where a batch goes (a file, the master)."""
        raise NotImplementedError

    def close(self) -> None:
        """Hand on what is left."""
        self.flush()


class SampleWriter(SampleBatcher):
    """Buffered CSV writer; call :meth:`add` per transaction and :meth:`close` at the end (rows are written at
    the next flush, at most ``flush_every_s`` later)."""

    def __init__(self, path: Path | str, flush_every_s: float = 1.0, flush_rows: int = 2000) -> None:
        super().__init__(flush_every_s, flush_rows)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._f: IO[str] | None = open(self.path, "a", buffering=1 << 16)
        if new:
            self._f.write(HEADER)
            self._f.flush()

    def flush(self) -> None:
        """Write the buffered samples."""
        if self._f is None:
            return
        super().flush()
        self._f.flush()

    def ship(self, lines: list[str]) -> None:
        """Append the lines to the file."""
        assert self._f is not None
        self._f.write("".join(lines))

    def close(self) -> None:
        """Write what is left and close the file."""
        if self._f is not None:
            self.flush()
            self._f.close()
            self._f = None


def sample_files(location: Path | str) -> list[Path]:
    """A samples file, or every ``samples-*.csv`` in a directory."""
    p = Path(location)
    if p.is_dir():
        return sorted(p.glob("samples-*.csv"))
    return [p] if p.exists() else []


def _parse(line: str) -> Sample | None:
    parts = line.rstrip("\n").split(",")
    if len(parts) < 4 or parts[0] == "start_ts":
        return None
    try:
        return Sample(float(parts[0]), float(parts[1]), parts[2], parts[3],
                      parts[4] if len(parts) > 4 else "", int(parts[5]) if len(parts) > 5 and parts[5] else 0,
                      int(parts[6]) if len(parts) > 6 and parts[6] else 0, parts[7] if len(parts) > 7 else "")
    except ValueError:
        return None


def read_samples(location: Path | str) -> Iterator[Sample]:
    """Every complete row of every samples file (in file order, not time order)."""
    for f in sample_files(location):
        with open(f) as fh:
            for line in fh:
                if line.endswith("\n"):
                    s = _parse(line)
                    if s is not None:
                        yield s


def read_recent(location: Path | str, since_ts: float, block: int = 1 << 16, slack_s: float = 60.0) -> list[Sample]:
    """Rows that started at or after *since_ts*, reading each file backwards from its end.

    Rows are appended when a transaction ends, so they are in start order only
    roughly; reading stops ``slack_s`` seconds before *since_ts*. Cost is
    proportional to the window, not to the length of the run. An incomplete
    last line (being written) is ignored.
    """
    out: list[Sample] = []
    for f in sample_files(location):
        with open(f, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            pos = fh.tell()
            carry = b""
            first = True
            done = False
            while pos > 0 and not done:
                step = min(block, pos)
                pos -= step
                fh.seek(pos)
                lines = (fh.read(step) + carry).split(b"\n")
                if first:
                    lines.pop()  # after the last newline: empty, or a row still being written
                    first = False
                carry = lines.pop(0) if pos > 0 else b""
                for raw in reversed(lines):
                    s = _parse(raw.decode("utf-8", "replace")) if raw else None
                    if s is None:
                        continue
                    if s.start_ts < since_ts - slack_s:
                        done = True
                        break
                    if s.start_ts >= since_ts:
                        out.append(s)
    return out
