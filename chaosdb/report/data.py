"""Samples as numpy arrays for the reporter.

Reads the pack's own format (``samples-*.csv`` in a directory, see
:mod:`chaosdb.workloads.samples`) and plain CSV files from other tools with at
least the columns ``start_ts`` (Unix epoch seconds), ``latency_ms``, ``name``
and ``outcome``; in a plain CSV ``ok`` (or the pack's ``committed``/``rollback``)
is a success and anything else a failed attempt.

Columns become arrays sorted by start time: ``ts`` (float64), ``lat`` (float64 ms),
``ok`` (bool), ``name`` and ``outcome`` (small int codes with their labels).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from chaosdb.core.errors import ChaosDBError
from chaosdb.workloads.outcomes import SUCCESS

__all__ = ["Samples", "load_samples"]

REQUIRED = ("start_ts", "latency_ms", "name", "outcome")


@dataclass
class Samples:
    ts: np.ndarray
    lat: np.ndarray
    ok: np.ndarray
    name: np.ndarray
    outcome: np.ndarray
    names: list[str]
    outcomes: list[str]
    sources: list[str]
    #: what was worked out from these samples once and is asked again (e.g. their completion order)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.ts.size)

    @property
    def longest_s(self) -> float:
        """The longest latency, in seconds (how far before a time a transaction that ended after it can have
        started)."""
        if "longest_s" not in self.cache:
            self.cache["longest_s"] = float(self.lat.max()) / 1000.0 if self.lat.size else 0.0
        return float(self.cache["longest_s"])

    def ending_after(self, start: float, end: float = np.inf) -> slice:
        """The rows (in start order) among which every transaction that completed in [*start*, *end*] is: from
        the first that may have been in flight at *start* to the last that started by *end*. Lets a question
        about a span of a long run look at that span only."""
        lo = int(np.searchsorted(self.ts, start - self.longest_s - 1e-6, side="left"))
        hi = int(np.searchsorted(self.ts, end, side="right")) if end < np.inf else self.ts.size
        return slice(lo, hi)

    def touching(self, spans: list[tuple[float, float]]) -> "Samples":
        """A copy of the rows among which is every transaction that completed within one of the *spans*
        (:meth:`ending_after`), in start order, each row once."""
        ranges: list[list[int]] = []
        for start, end in sorted(spans):
            rows = self.ending_after(start, end)
            if ranges and rows.start <= ranges[-1][1]:
                ranges[-1][1] = max(ranges[-1][1], rows.stop)
            elif rows.stop > rows.start:
                ranges.append([rows.start, rows.stop])
        index = np.concatenate([np.arange(a, b) for a, b in ranges]) if ranges else np.array([], dtype=np.intp)
        return Samples(self.ts[index], self.lat[index], self.ok[index], self.name[index], self.outcome[index],
                       self.names, self.outcomes, self.sources)

    def completions(self, start: float, end: float) -> np.ndarray:
        """Sorted completion times of the successful transactions that completed in [*start*, *end*]."""
        rows = self.ending_after(start, end)
        ok = self.ok[rows]
        done = self.ts[rows][ok] + self.lat[rows][ok] / 1000.0
        done = done[(done >= start) & (done <= end)]
        done.sort()
        return done

    def subset(self, mask: np.ndarray) -> "Samples":
        """The samples where *mask* is true."""
        return Samples(self.ts[mask], self.lat[mask], self.ok[mask], self.name[mask], self.outcome[mask],
                       self.names, self.outcomes, self.sources)

    def rows(self, rows: slice) -> "Samples":
        """The samples of a range of rows (views, no copy)."""
        return Samples(self.ts[rows], self.lat[rows], self.ok[rows], self.name[rows], self.outcome[rows],
                       self.names, self.outcomes, self.sources)

    def between(self, start: float, end: float) -> "Samples":
        """The samples that started in [*start*, *end*) (they are sorted by start)."""
        lo, hi = np.searchsorted(self.ts, [start, end], side="left")
        return Samples(self.ts[lo:hi], self.lat[lo:hi], self.ok[lo:hi], self.name[lo:hi], self.outcome[lo:hi],
                       self.names, self.outcomes, self.sources)


def _files(location: Path) -> list[Path]:
    if location.is_dir():
        files = sorted(location.glob("samples-*.csv")) or sorted(location.glob("*.csv"))
        return [f for f in files if not f.name.startswith("locust")]
    if location.is_file():
        return [location]
    raise ChaosDBError(f"no samples at {location}")


#: bytes parsed at a time: a block's parsed rows stay a few megabytes whatever the length of the run
BLOCK_BYTES = 4 << 20


def _blocks(f: Path, size: int) -> Iterator[bytes]:
    """The complete lines after the header among the file's first *size* bytes, in blocks of about
    :data:`BLOCK_BYTES` that end at a newline (an incomplete last line, still being written, is left out; so is
    whatever the writer appended after *size* was taken)."""
    with open(f, "rb") as fh:
        fh.readline()
        left = size - fh.tell()
        carry = b""
        while left > 0:
            chunk = fh.read(min(BLOCK_BYTES, left))
            left -= len(chunk)
            if not chunk:
                return
            chunk = carry + chunk
            cut = chunk.rfind(b"\n") + 1
            carry = chunk[cut:]
            if cut:
                yield chunk[:cut]


def _rows(f: Path, size: int) -> int:
    """How many complete lines the file's first *size* bytes hold after its header (an upper bound of its rows)."""
    return sum(block.count(b"\n") for block in _blocks(f, size))


def _codes(column: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a byte-string column with few distinct values (vectorised comparisons)."""
    probe = np.unique(np.concatenate((column[:5000], column[-5000:], column[:: max(1, column.size // 5000)])))
    codes = np.full(column.size, -1, dtype=np.int32)
    labels: list[bytes] = []
    for value in probe:
        codes[column == value] = len(labels)
        labels.append(value)
    missing = codes < 0
    if missing.any():  # a rare value the probe missed: fall back to a full unique over the rest
        extra, inverse = np.unique(column[missing], return_inverse=True)
        codes[missing] = inverse + len(labels)
        labels.extend(extra)
    return codes, [v.decode("utf-8", "replace") for v in labels]


class _Columns:
    """The four columns of every file, filled block by block into arrays sized once (no list of rows, no copy
    per file): start times and latencies as float64, names and outcomes as codes into label lists shared by
    all files."""

    def __init__(self, rows: int) -> None:
        self.ts = np.empty(rows, dtype=np.float64)
        self.lat = np.empty(rows, dtype=np.float64)
        self.name = np.empty(rows, dtype=np.int16)
        self.outcome = np.empty(rows, dtype=np.int16)
        self.size = 0
        self.names: dict[str, int] = {}
        self.outcomes: dict[str, int] = {}

    def add(self, ts: np.ndarray, lat: np.ndarray, names: np.ndarray, outcomes: np.ndarray) -> None:
        """Append parsed rows; *names* and *outcomes* are byte strings."""
        n_codes, n_labels = _codes(names)
        o_codes, o_labels = _codes(outcomes)
        n_map = np.array([self.names.setdefault(x, len(self.names)) for x in n_labels] or [0], dtype=np.int32)
        o_map = np.array([self.outcomes.setdefault(x, len(self.outcomes)) for x in o_labels] or [0], dtype=np.int32)
        for column in ("name", "outcome"):  # more labels than an int16 holds: wider codes from now on
            if len(getattr(self, column + "s")) > np.iinfo(getattr(self, column).dtype).max + 1:
                setattr(self, column, getattr(self, column).astype(np.int32))
        end = self.size + ts.size
        self.ts[self.size:end] = ts
        self.lat[self.size:end] = lat
        self.name[self.size:end] = n_map[n_codes] if n_codes.size else n_codes
        self.outcome[self.size:end] = o_map[o_codes] if o_codes.size else o_codes
        self.size = end


def _read_block(block: bytes, cols: tuple[int, int, int, int]) -> tuple[np.ndarray, ...]:
    """A block's rows: numpy's C parser, or row by row (``csv``) when a row does not fit it (quotes, a short row,
    a value that is no number): such rows are skipped, as the writer's incomplete last line is."""
    dtype = np.dtype([("ts", "f8"), ("lat", "f8"), ("name", "S40"), ("out", "S24")])
    try:
        arr = np.loadtxt(io.BytesIO(block), delimiter=",", usecols=cols, dtype=dtype, ndmin=1, comments=None)
        return arr["ts"], arr["lat"], arr["name"], arr["out"]
    except ValueError:
        pass
    need = max(cols)
    ts_l, lat_l, names_l, outs_l = [], [], [], []
    for row in csv.reader(io.StringIO(block.decode("utf-8", "replace"), newline="")):
        if len(row) <= need:
            continue
        try:
            t, latency = float(row[cols[0]]), float(row[cols[1]])
        except ValueError:
            continue
        ts_l.append(t)
        lat_l.append(latency)
        names_l.append(row[cols[2]].encode())
        outs_l.append(row[cols[3]].encode())
    return (np.asarray(ts_l, dtype=np.float64), np.asarray(lat_l, dtype=np.float64),
            np.asarray(names_l, dtype=object).astype(bytes) if names_l else np.array([], dtype="S1"),
            np.asarray(outs_l, dtype=object).astype(bytes) if outs_l else np.array([], dtype="S1"))


def _small_codes(codes: np.ndarray, labels: int) -> np.ndarray:
    return codes.astype(np.int8 if labels <= 127 else np.int16 if labels <= 32767 else np.int32)


def load_samples(location: Path | str) -> Samples:
    """Read every samples file at *location* (a file or a directory).

    Memory stays near the columns' own size (21 bytes a row; 10 million rows about 210 MB): each file is parsed in
    blocks of a few megabytes into arrays sized from a first count of its lines, then sorted by start time."""
    location = Path(location)
    files = _files(location)
    if not files:
        raise ChaosDBError(f"no samples files (samples-*.csv or *.csv) in {location}")
    headers: list[tuple[int, int, int, int]] = []
    for f in files:
        with open(f, newline="") as fh:
            header = fh.readline().strip().split(",")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise ChaosDBError(f"{f} lacks the column(s) {', '.join(missing)}: a samples CSV needs "
                               f"{', '.join(REQUIRED)}")
        i_ts, i_lat, i_name, i_out = (header.index(c) for c in REQUIRED)
        headers.append((i_ts, i_lat, i_name, i_out))
    # files of a running load grow while they are read: each is read up to the size it had when counted
    sizes = [f.stat().st_size for f in files]
    columns = _Columns(sum(_rows(f, size) for f, size in zip(files, sizes, strict=True)))
    for f, cols, size in zip(files, headers, sizes, strict=True):
        for block in _blocks(f, size):
            columns.add(*_read_block(block, cols))
    if columns.size == 0:
        raise ChaosDBError(f"the samples at {location} hold no rows")
    n = columns.size
    order = np.argsort(columns.ts[:n], kind="stable")
    lat = columns.lat[:n][order]
    del columns.lat
    ts = columns.ts[:n]
    ts.sort(kind="stable")  # in place: the same values as ts[order]
    outcomes = [k for k, _ in sorted(columns.outcomes.items(), key=lambda kv: kv[1])]
    names = [k for k, _ in sorted(columns.names.items(), key=lambda kv: kv[1])]
    outcome = _small_codes(columns.outcome[:n][order], len(outcomes))
    del columns.outcome
    name = _small_codes(columns.name[:n][order], len(names))
    del columns.name, columns.ts, order
    success_codes = np.array([o in SUCCESS or o == "ok" for o in outcomes], dtype=bool)
    return Samples(ts=ts, lat=lat, ok=success_codes[outcome], name=name, outcome=outcome, names=names,
                   outcomes=outcomes, sources=[str(f) for f in files])
