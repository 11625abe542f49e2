"""Wall-clock timestamps as they appear in fault records and journals."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

__all__ = ["now_iso", "iso_from_epoch", "Stopwatch", "GO_DURATION", "parse_go_duration"]


#: a Go duration as CLIs and APIs print it: ``1m30s``, ``500ms``, ``22h5m55.23s``
GO_DURATION = re.compile(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float | None:
    """Seconds of a Go duration (``"1m30s"`` -> 90.0); None when *text* is not one."""
    s = str(text).strip()
    if not GO_DURATION.fullmatch(s):
        return None
    return sum(float(n) * _UNIT_S[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", s))


def iso_from_epoch(ts: float) -> str:
    """ISO 8601 with an explicit UTC offset, like Chaos Toolkit >= 1.43.1 journals."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


def now_iso() -> str:
    """The time now as ISO 8601 in UTC."""
    return iso_from_epoch(time.time())


class Stopwatch:
    """Start and end of an injection, as epoch seconds and ISO strings."""

    def __init__(self) -> None:
        self.start = time.time()
        self.end: float | None = None

    def stop(self) -> "Stopwatch":
        """Note the end time; the stopwatch itself."""
        self.end = time.time()
        return self

    def as_dict(self) -> dict[str, object]:
        """``started_at``, ``ended_at`` (now, while running), their epoch seconds and the duration."""
        end = self.end if self.end is not None else time.time()
        return {
            "started_at": iso_from_epoch(self.start),
            "ended_at": iso_from_epoch(end),
            "start_ts": round(self.start, 6),
            "end_ts": round(end, 6),
            "duration_s": round(end - self.start, 3),
        }
