"""Wall-clock timestamps as they appear in fault records and journals."""

from __future__ import annotations

import time
from datetime import datetime, timezone

__all__ = ["now_iso", "iso_from_epoch", "Stopwatch"]


def iso_from_epoch(ts: float) -> str:
    """ISO 8601 with an explicit UTC offset, like Chaos Toolkit >= 1.43.1 journals."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


def now_iso() -> str:
    return iso_from_epoch(time.time())


class Stopwatch:
    """Start and end of an injection, as epoch seconds and ISO strings."""

    def __init__(self) -> None:
        self.start = time.time()
        self.end: float | None = None

    def stop(self) -> "Stopwatch":
        self.end = time.time()
        return self

    def as_dict(self) -> dict[str, object]:
        end = self.end if self.end is not None else time.time()
        return {
            "started_at": iso_from_epoch(self.start),
            "ended_at": iso_from_epoch(end),
            "start_ts": round(self.start, 6),
            "end_ts": round(end, 6),
            "duration_s": round(end - self.start, 3),
        }
