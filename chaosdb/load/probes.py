"""Steady-state probes over the live load samples.

Each probe reads the samples of the last ``window_s`` seconds (ending 2 s before
now, see :mod:`chaosdb.load.window`) of the load started by
:mod:`chaosdb.load.control` in this ``chaos run`` (or of ``samples`` /
configuration ``chaosdb_samples_dir``) and returns a plain number for a
``range`` tolerance, e.g. ``{"type": "range", "range": [0, 250]}`` on the p99.

An absolute latency limit holds on one machine and not on a busier one. ``latency_ratio_to_baseline``
compares the window with the baseline the load control measured in the same run (the steady load between
the warm-up and the hypothesis): a tolerance ``[0, 3]`` reads "p99 at most three times what this cluster
showed on this machine a moment ago", which a healthy cluster meets anywhere.
Filter by transaction with ``transaction`` (``new_order``, ``payment``, ...).
When the window holds no (successful) transaction the probe fails with a
message that says so, which makes the hypothesis fail: it never returns null.
"""

import logging
import time
from typing import Any

from chaoslib.types import Configuration

from chaosdb.core.arguments import check_arguments
from chaosdb.core.errors import ChaosDBError
from chaosdb.load import state as load_state
from chaosdb.load import window as w
from chaosdb.load.state import samples_dir_for
from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import read_recent

logger = logging.getLogger("chaostoolkit")

__all__ = ["latency_percentile", "latency_ratio_to_baseline", "error_rate", "throughput_tps", "tpmc",
           "transactions_in_window"]


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


def _baseline(samples: str, configuration: Any, transaction: str) -> tuple[list, w.Window]:
    record = load_state.current()
    start, end = record.get("warmup_end_ts"), record.get("baseline_end_ts")
    if not (start and end and end > start):
        raise ChaosDBError("no baseline to compare with: the load control of this run measures one (set its "
                           "baseline_s > 0), or use latency_percentile with an absolute limit")
    location = samples_dir_for(samples, configuration)
    bounds = w.Window(float(start), float(end))
    chosen = w.select(read_recent(location, bounds.start), bounds, transaction)
    if not any(is_success(x.outcome) for x in chosen):
        raise ChaosDBError(f"no transaction succeeded during the baseline ({bounds.seconds:.0f} s) in {location}")
    return chosen, bounds


def latency_ratio_to_baseline(percentile: float = 99.0, window_s: float = 10.0, transaction: str = "",
                              samples: str = "", configuration: Configuration = None) -> float:
    """The latency percentile of the last ``window_s`` seconds divided by the same percentile over this run's
    baseline (1.0 = as fast as the baseline; tolerance e.g. ``[0, 3]``). Both over successful transactions;
    fails when the window has none (an outage is not a fast p99) or the run measured no baseline."""
    if not 0 < percentile <= 100:
        raise ChaosDBError("percentile must be in (0, 100]")
    base, _ = _baseline(samples, configuration, transaction)
    chosen, _ = _window(window_s, samples, configuration, transaction)
    try:
        now = w.latency_percentile(chosen, percentile)
    except ValueError:
        raise ChaosDBError(f"none of the {len(chosen)} transactions in the last {window_s:g}s succeeded") from None
    reference = w.latency_percentile(base, percentile)
    ratio = now / reference if reference > 0 else float("inf")
    logger.info("chaosdb: p%g %.1f ms in the last %gs vs %.1f ms in the baseline: %.2fx", percentile, now, window_s,
                reference, ratio)
    return round(ratio, 3)


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


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals())
