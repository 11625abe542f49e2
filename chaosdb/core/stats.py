"""Statistics shared by the live probes and the reporter.

Percentiles are *nearest-rank* (the smallest value with at least p % of the
values at or below it): they are always one of the measured latencies, never
an interpolation, and the same definition is used everywhere in the pack.
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["percentile", "percentiles", "mean_std"]


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values (p in 0..100)."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0 <= p <= 100:
        raise ValueError("percentile must be between 0 and 100")
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def percentiles(values: Sequence[float], ps: Sequence[float]) -> dict[float, float]:
    """The nearest-rank percentile of *values* for each of *ps* (sorted once)."""
    ordered = sorted(values)
    return {p: percentile(ordered, p) for p in ps}


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / n
    return mean, math.sqrt(var)
