"""Plumbing shared by the pack's Locust users: options, per-process samples file, terminal numbers.

Terminal (client) numbers are ``local_index * workers + worker_index`` so that
clients are spread evenly across worker processes (``--processes N``). In
master/worker mode across machines the master forwards its option values to the
workers: give ``--chaosdb-workers N``, ``--chaosdb-ship-samples`` (and the other
``--chaosdb-*`` options) to the master; each worker takes the DSN from its own
``CHAOSDB_LOAD_DSN`` and ships its samples to the master (:mod:`chaosdb.load.distributed`).
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

from chaosdb.core.settings import env_value
from chaosdb.load.distributed import MasterCollector, ShippingWriter
from chaosdb.workloads.outcomes import SUCCESS, is_success
from chaosdb.workloads.samples import Sample, SampleWriter

__all__ = ["add_common_options", "ProcessState", "TransactionFailed", "report", "resolve_dsn", "Pacer"]


class TransactionFailed(Exception):
    """Reported to Locust for a failed attempt: the outcome and SQLSTATE."""


def add_common_options(parser: Any) -> None:
    """Options every chaosdb locustfile understands (Locust's parser knows is_secret)."""
    parser.add_argument("--chaosdb-dsn", env_var="CHAOSDB_LOAD_DSN", default="", is_secret=True,
                        help="libpq DSN (multi-host with target_session_attrs=read-write)")
    parser.add_argument("--chaosdb-samples-dir", env_var="CHAOSDB_SAMPLES_DIR", default="samples",
                        help="directory for samples-*.csv")
    parser.add_argument("--chaosdb-isolation", default="default",
                        choices=["default", "read_committed", "repeatable_read", "serializable"])
    parser.add_argument("--chaosdb-max-retries", type=int, default=5, help="retries of 40001/40P01")
    parser.add_argument("--chaosdb-rate", type=float, default=0.0,
                        help="cap the total offered rate (transactions/s over all users); 0 = unlimited")
    parser.add_argument("--chaosdb-seed", type=int, default=None, help="repeatable random choices")
    parser.add_argument("--chaosdb-workers", type=int, default=0, help="worker processes in master/worker mode")
    parser.add_argument("--chaosdb-ship-samples", action="store_true", default=False,
                        help="master/worker mode: workers send their samples to the master, which writes them")


class NullWriter(SampleWriter):
    """Counts samples without writing them (benchmark baseline only)."""

    def __init__(self) -> None:  # noqa: D107 - no file
        self.count = 0
        self._f = None
        self._buf = []

    def add(self, sample: Sample) -> None:
        """Count the sample, keep nothing (a calibration step that needs no samples)."""
        self.count += 1

    def flush(self) -> None:
        """Nothing to write."""
        pass

    def close(self) -> None:
        """Nothing to close."""
        pass


class ProcessState:
    """What one Locust process shares between its users: the samples writer and numbering."""

    def __init__(self) -> None:
        self.writer: SampleWriter | None = None
        self.worker_index = 0
        self.workers = 1
        self._local = itertools.count()
        self.extra: dict[str, Any] = {}
        self.collector: MasterCollector | None = None

    def setup(self, environment: Any, prefix: str = "samples") -> None:
        """Once per Locust process: this worker's index and count, and the writer of its samples (a file, or shipped to
        the master)."""
        if self.writer is not None:
            return
        opts = environment.parsed_options
        self.worker_index = max(0, getattr(environment.runner, "worker_index", 0) or 0)
        workers = opts.chaosdb_workers or getattr(opts, "processes", 0) or 1
        self.workers = max(1, os.cpu_count() or 1) if workers < 0 else max(1, workers)
        path = os.path.join(opts.chaosdb_samples_dir, f"{prefix}-w{self.worker_index}-{os.getpid()}.csv")
        # CHAOSDB_SAMPLES_DISABLED=1 exists only for the benchmark that measures what recording costs
        if env_value("CHAOSDB_SAMPLES_DISABLED") == "1":
            self.writer = NullWriter()
        elif getattr(opts, "chaosdb_ship_samples", False) and _is_worker(environment.runner):
            self.writer = ShippingWriter(environment.runner)  # type: ignore[assignment]
        else:
            self.writer = SampleWriter(path)

    def attach(self, events: Any) -> None:
        """Flush the samples when the test stops and close the file when Locust quits; on a master whose
        workers ship their samples, collect them (:mod:`chaosdb.load.distributed`)."""
        events.test_stop.add_listener(lambda environment, **_kw: self.flush())
        events.quitting.add_listener(lambda environment, **_kw: self.close())
        events.init.add_listener(self._on_init)

    def _on_init(self, environment: Any, **_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is None or not getattr(opts, "chaosdb_ship_samples", False) or not _is_master(environment.runner):
            return
        import gevent  # noqa: PLC0415 - Locust's own dependency, only on a master

        self.collector = MasterCollector(environment.runner, opts.chaosdb_samples_dir)
        gevent.spawn(self.collector.run)

    def next_terminal(self) -> int:
        """The next terminal number of this process, unique across the workers."""
        return next(self._local) * self.workers + self.worker_index

    def flush(self) -> None:
        """Write the process's buffered samples."""
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        """Write and close the process's samples."""
        if self.writer is not None:
            self.writer.close()


def _is_worker(runner: Any) -> bool:
    return type(runner).__name__ == "WorkerRunner"


def _is_master(runner: Any) -> bool:
    return type(runner).__name__ == "MasterRunner"


def resolve_dsn(opts: Any, workload: str) -> str:
    """The DSN option, else this process's CHAOSDB_LOAD_DSN (in master/worker mode the master's option
    values replace the worker's); exits with a message when there is none."""
    opts.chaosdb_dsn = opts.chaosdb_dsn or env_value("CHAOSDB_LOAD_DSN")
    if not opts.chaosdb_dsn:
        raise SystemExit(f"chaosdb {workload}: no DSN: pass --chaosdb-dsn or set CHAOSDB_LOAD_DSN")
    return opts.chaosdb_dsn


def report(environment: Any, state: ProcessState, sample: Sample, request_type: str) -> None:
    """Record *sample* in the samples file and as a Locust request: a success counted in Locust's statistics
    directly when nothing but Locust's own runner listens to its request event (a third of the cost of firing the
    event, per operation), else, and for every failure, the event fired with the outcome as its context."""
    assert state.writer is not None
    state.writer.add(sample)
    if sample.outcome in SUCCESS and len(getattr(environment.events.request, "_handlers", ())) == 1 \
            and environment.runner is not None:
        environment.runner.stats.log_request(request_type, sample.name, sample.latency_ms, 0)
        return
    environment.events.request.fire(
        request_type=request_type, name=sample.name, response_time=sample.latency_ms, response_length=0,
        context={"outcome": sample.outcome}, start_time=sample.start_ts,
        exception=None if is_success(sample.outcome) else TransactionFailed(f"{sample.outcome} {sample.sqlstate}".strip()),
    )


class Pacer:
    """Caps the offered rate: each user starts a transaction every ``users / rate`` seconds.

    A user that fell behind (a slow transaction) catches up with up to ``max_backlog_s`` of
    missed starts, so short hiccups do not lower the offered rate; a longer stall is forgotten.
    """

    def __init__(self, max_backlog_s: float = 1.0) -> None:
        self._time = time
        self.max_backlog_s = max_backlog_s
        self.next_due: float | None = None

    def wait(self, rate: float, users: int) -> None:
        """Sleep so that *users* users together offer *rate* operations per second (no wait when *rate* is 0)."""
        if rate <= 0:
            return
        now = self._time.monotonic()
        interval = max(1, users) / rate
        self.next_due = now + interval if self.next_due is None else self.next_due + interval
        self.next_due = max(self.next_due, now - self.max_backlog_s)
        if self.next_due > now:
            self._time.sleep(self.next_due - now)
