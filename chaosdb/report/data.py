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
from dataclasses import dataclass
from pathlib import Path

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

    def __len__(self) -> int:
        return int(self.ts.size)

    def subset(self, mask: np.ndarray) -> "Samples":
        """The samples where *mask* is true."""
        return Samples(self.ts[mask], self.lat[mask], self.ok[mask], self.name[mask], self.outcome[mask],
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


def _codes(column: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a byte-string column with few distinct values (vectorised comparisons)."""
    probe = np.unique(np.concatenate((column[:5000], column[-5000:], column[:: max(1, column.size // 5000)])))
    codes = np.full(column.size, -1, dtype=np.int16)
    labels: list[bytes] = []
    for value in probe:
        codes[column == value] = len(labels)
        labels.append(value)
    missing = codes < 0
    if missing.any():  # a rare value the probe missed: fall back to a full unique over the rest
        extra, inverse = np.unique(column[missing], return_inverse=True)
        codes[missing] = inverse.astype(np.int16) + len(labels)
        labels.extend(extra)
    return codes, [v.decode("utf-8", "replace") for v in labels]


def _fast_read(f: Path, header: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str],
                                                      np.ndarray, list[str]] | None:
    """numpy's C parser over the complete lines; None when the file needs the tolerant reader."""

    data = f.read_bytes()
    data = data[: data.rfind(b"\n") + 1]  # drop an incomplete last line
    cols = tuple(header.index(c) for c in REQUIRED)
    dtype = np.dtype([("ts", "f8"), ("lat", "f8"), ("name", "S40"), ("out", "S24")])
    try:
        arr = np.loadtxt(io.BytesIO(data), delimiter=",", skiprows=1, usecols=cols, dtype=dtype, ndmin=1,
                         comments=None)
    except ValueError:
        return None
    name_codes, names = _codes(arr["name"])
    out_codes, outs = _codes(arr["out"])
    return arr["ts"], arr["lat"], name_codes, names, out_codes, outs


def load_samples(location: Path | str) -> Samples:
    """Read every samples file at *location* (a file or a directory)."""
    location = Path(location)
    files = _files(location)
    if not files:
        raise ChaosDBError(f"no samples files (samples-*.csv or *.csv) in {location}")
    ts_parts, lat_parts, name_parts, out_parts = [], [], [], []
    name_codes: dict[str, int] = {}
    out_codes: dict[str, int] = {}
    for f in files:
        with open(f, newline="") as fh:
            header = fh.readline().strip().split(",")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise ChaosDBError(f"{f} lacks the column(s) {', '.join(missing)}: a samples CSV needs "
                               f"{', '.join(REQUIRED)}")
        fast = _fast_read(f, header)
        if fast is not None:
            ts, lat, ncodes, nlabels, ocodes, olabels = fast
            nmap = np.array([name_codes.setdefault(x, len(name_codes)) for x in nlabels] or [0], dtype=np.int16)
            omap = np.array([out_codes.setdefault(x, len(out_codes)) for x in olabels] or [0], dtype=np.int16)
            ts_parts.append(ts)
            lat_parts.append(lat)
            name_parts.append(nmap[ncodes] if ncodes.size else ncodes)
            out_parts.append(omap[ocodes] if ocodes.size else ocodes)
            continue
        with open(f, newline="") as fh:
            fh.readline()
            i_ts, i_lat, i_name, i_out = (header.index(c) for c in REQUIRED)
            need = max(i_ts, i_lat, i_name, i_out)
            ts_l, lat_l, names_l, outs_l = [], [], [], []
            for row in csv.reader(fh):
                if len(row) <= need:
                    continue  # an incomplete last line
                try:
                    t, latency = float(row[i_ts]), float(row[i_lat])
                except ValueError:
                    continue
                ts_l.append(t)
                lat_l.append(latency)
                names_l.append(name_codes.setdefault(row[i_name], len(name_codes)))
                outs_l.append(out_codes.setdefault(row[i_out], len(out_codes)))
        ts_parts.append(np.asarray(ts_l, dtype=np.float64))
        lat_parts.append(np.asarray(lat_l, dtype=np.float64))
        name_parts.append(np.asarray(names_l, dtype=np.int16))
        out_parts.append(np.asarray(outs_l, dtype=np.int16))
    ts_all = np.concatenate(ts_parts)
    if ts_all.size == 0:
        raise ChaosDBError(f"the samples at {location} hold no rows")
    order = np.argsort(ts_all, kind="stable")
    outcomes = [k for k, _ in sorted(out_codes.items(), key=lambda kv: kv[1])]
    success_codes = np.array([o in SUCCESS or o == "ok" for o in outcomes], dtype=bool)
    out_all = np.concatenate(out_parts)[order]
    return Samples(
        ts=ts_all[order], lat=np.concatenate(lat_parts)[order], ok=success_codes[out_all],
        name=np.concatenate(name_parts)[order], outcome=out_all,
        names=[k for k, _ in sorted(name_codes.items(), key=lambda kv: kv[1])], outcomes=outcomes,
        sources=[str(f) for f in files],
    )
