"""Steady-state probes over the live load samples.

Each probe reads the samples of the last ``window_s`` seconds (ending 2 s before
now, see :mod:`chaosdb.load.window`) of the load started by
:mod:`chaosdb.load.control` in this ``chaos run`` (or of ``samples`` /
configuration ``chaosdb_samples_dir``) and returns a plain number for a
``range`` tolerance, e.g. ``{"type": "range", "range": [0, 250]}`` on the p99.
Filter by transaction with ``transaction`` (``new_order``, ``payment``, ...).
When the window holds no (successful) transaction the probe fails with a
message that says so, which makes the hypothesis fail: it never returns null.
"""

import time
from typing import Any

from chaoslib.types import Configuration

from chaosdb.core.errors import ChaosDBError
from chaosdb.load import window as w
from chaosdb.load.state import samples_dir_for
from chaosdb.workloads.samples import read_recent

__all__ = ["latency_percentile", "error_rate", "throughput_tps", "tpmc", "transactions_in_window"]


def _window(window_s: float, samples: str, configuration: Any, transaction: str):
    if window_s <= 0:
        raise ChaosDBError("window_s must be > 0")
    location = samples_dir_for(samples, configuration)
    bounds = w.window_bounds(time.time(), window_s)
    chosen = w.select(read_recent(location, bounds.start), bounds, transaction)
    if not chosen:
        what = f" {transaction}" if transaction else ""
        raise ChaosDBError(f"no{what} transaction started in the last {window_s:g}s (window ends 2 s ago) in "
                           f"{location}: is the load running?")
    return chosen, bounds


def latency_percentile(percentile: float = 99.0, window_s: float = 10.0, transaction: str = "",
                       samples: str = "", configuration: Configuration = None) -> float:
    """Latency percentile in milliseconds (nearest rank) of the transactions that succeeded in the
    window. Fails when none succeeded (an outage is not a fast p99)."""
    if not 0 < percentile <= 100:
        raise ChaosDBError("percentile must be in (0, 100]")
    chosen, _ = _window(window_s, samples, configuration, transaction)
    try:
        return round(w.latency_percentile(chosen, percentile), 3)
    except ValueError:
        raise ChaosDBError(f"none of the {len(chosen)} transactions in the last {window_s:g}s succeeded") from None


def error_rate(window_s: float = 10.0, transaction: str = "", samples: str = "",
               configuration: Configuration = None) -> float:
    """Failed attempts / all attempts in the window, between 0 and 1 (failed = aborted, conn_error,
    ambiguous or error; business rollbacks are successes)."""
    chosen, _ = _window(window_s, samples, configuration, transaction)
    return round(w.error_rate(chosen), 6)


def throughput_tps(window_s: float = 10.0, transaction: str = "", samples: str = "",
                   configuration: Configuration = None) -> float:
    """Successful transactions per second in the window."""
    chosen, bounds = _window(window_s, samples, configuration, transaction)
    return round(w.throughput(chosen, bounds), 3)


def tpmc(window_s: float = 30.0, samples: str = "", configuration: Configuration = None) -> float:
    """Committed New-Order transactions per minute in the window (tpmC)."""
    chosen, bounds = _window(window_s, samples, configuration, "")
    return round(w.tpmc(chosen, bounds), 1)


def transactions_in_window(window_s: float = 10.0, transaction: str = "", samples: str = "",
                           configuration: Configuration = None) -> int:
    """How many transactions (any outcome) started in the window; fails when none did."""
    chosen, _ = _window(window_s, samples, configuration, transaction)
    return len(chosen)
