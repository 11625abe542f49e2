"""Window arithmetic of the live-sample probes (pure functions, unit tested).

A window of ``window_s`` seconds ends ``lag_s`` seconds before *now*: the
samples writer flushes every second and a transaction is written when it
ends, so the most recent second is always incomplete. A sample belongs to the
window when its start time is in ``[end - window_s, end)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from chaosdb.core.stats import percentile
from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import Sample

__all__ = ["Window", "window_bounds", "select", "latency_percentile", "error_rate", "throughput", "tpmc"]

DEFAULT_LAG_S = 2.0


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    @property
    def seconds(self) -> float:
        """The window's length."""
        return self.end - self.start


def window_bounds(now: float, window_s: float, lag_s: float = DEFAULT_LAG_S) -> Window:
    """The window of *window_s* seconds ending *lag_s* before *now* (samples are written when a transaction ends)."""
    if window_s <= 0:
        raise ValueError("window_s must be > 0")
    end = now - lag_s
    return Window(end - window_s, end)


def select(samples: Iterable[Sample], window: Window, transaction: str = "") -> list[Sample]:
    """The samples that started inside *window* (of *transaction* only, when given)."""
    return [s for s in samples if window.start <= s.start_ts < window.end and (not transaction or s.name == transaction)]


def latency_percentile(samples: list[Sample], p: float, successful_only: bool = True) -> float:
    """Percentile of latency (ms) of the samples; by default of successful transactions only."""
    values = sorted(s.latency_ms for s in samples if is_success(s.outcome) or not successful_only)
    return percentile(values, p)


def error_rate(samples: list[Sample]) -> float:
    """Failed attempts / all attempts (0..1)."""
    if not samples:
        raise ValueError("no values")
    return sum(1 for s in samples if not is_success(s.outcome)) / len(samples)


def throughput(samples: list[Sample], window: Window) -> float:
    """Successful transactions per second over the window."""
    return sum(1 for s in samples if is_success(s.outcome)) / window.seconds


def tpmc(samples: list[Sample], window: Window) -> float:
    """Committed New-Order transactions per minute (TPC-C's tpmC, without its validity rules)."""
    return sum(1 for s in samples if s.name == "new_order" and s.outcome == "committed") * 60.0 / window.seconds
