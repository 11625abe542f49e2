"""Locust user class for the TPC-C workload (``locust -f load/tpcc.py``).

One Locust user is one TPC-C terminal with a home warehouse and district.
Terminal numbers are ``local_index * workers + worker_index``, so terminals are
spread evenly across warehouses and across worker processes (``--processes N``
sets ``workers`` to N; in master/worker mode across machines pass
``--tpcc-workers N`` to every worker).

Options (command line, or the environment variable in brackets)::

    --tpcc-dsn DSN            [CHAOSDB_LOAD_DSN]  libpq DSN, multi-host with target_session_attrs=read-write
    --tpcc-samples-dir DIR    [CHAOSDB_SAMPLES_DIR] where samples-*.csv go (default ./samples)
    --tpcc-isolation LEVEL    default | read_committed | repeatable_read | serializable
    --tpcc-wait FRACTION      0 = no keying/think time (default); 1 = the spec's times
    --tpcc-max-retries N      retries of 40001/40P01 (default 5)
    --tpcc-rate TPS           cap the total offered rate (transactions/s over all users); 0 = as fast as possible
    --tpcc-seed N             make the terminals' random choices repeatable
    --tpcc-workers N          worker processes in master/worker mode

Every transaction becomes a Locust request (type ``TPCC``, name = transaction,
failure = any outcome other than committed/rollback) and a row in the samples
file of this process.
"""

from __future__ import annotations

import itertools
import os
import time

import locust
from locust import User, constant, events, task

from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import SampleWriter
from chaosdb.workloads.tpcc.rand import Scale
from chaosdb.workloads.tpcc.terminal import Terminal, TerminalConfig

__all__ = ["TpccUser"]

_state: dict[str, object] = {}
_local_index = itertools.count()


class TransactionFailed(Exception):
    """Reported to Locust for a failed attempt: the outcome and SQLSTATE."""


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    group = parser  # Locust's own parser: it knows is_secret / include_in_web_ui
    group.add_argument("--tpcc-dsn", env_var="CHAOSDB_LOAD_DSN", default="", is_secret=True,
                       help="libpq DSN (multi-host with target_session_attrs=read-write)")
    group.add_argument("--tpcc-samples-dir", env_var="CHAOSDB_SAMPLES_DIR", default="samples")
    group.add_argument("--tpcc-isolation", default="default",
                       choices=["default", "read_committed", "repeatable_read", "serializable"])
    group.add_argument("--tpcc-wait", type=float, default=0.0)
    group.add_argument("--tpcc-max-retries", type=int, default=5)
    group.add_argument("--tpcc-rate", type=float, default=0.0)
    group.add_argument("--tpcc-seed", type=int, default=None)
    group.add_argument("--tpcc-workers", type=int, default=0)


def _setup(environment) -> None:
    if "config" in _state:
        return
    import psycopg

    from chaosdb.workloads.tpcc.loader import read_meta

    opts = environment.parsed_options
    dsn = opts.tpcc_dsn or os.environ.get("CHAOSDB_LOAD_DSN", "")
    if not dsn:
        raise SystemExit("chaosdb TPC-C: no DSN: pass --tpcc-dsn or set CHAOSDB_LOAD_DSN")
    with psycopg.connect(dsn, connect_timeout=10, target_session_attrs="read-write") as conn:
        meta = read_meta(conn)
    if not meta:
        raise SystemExit("chaosdb TPC-C: the database holds no TPC-C data: run 'chaosdb load tpcc-load' first")
    scale = Scale(int(meta["warehouses"]), int(meta["items"]), int(meta["customers_per_district"]))
    _state["config"] = TerminalConfig(dsn=dsn, scale=scale, c_load=int(meta["c_load"]),
                                      isolation=opts.tpcc_isolation, max_retries=opts.tpcc_max_retries,
                                      wait=opts.tpcc_wait, seed=opts.tpcc_seed)
    runner = environment.runner
    worker_index = max(0, getattr(runner, "worker_index", 0) or 0)
    workers = opts.tpcc_workers or getattr(opts, "processes", 0) or 1
    if workers < 0:  # --processes -1 = one per core
        workers = os.cpu_count() or 1
    _state["worker_index"], _state["workers"] = worker_index, max(1, workers)
    name = f"samples-w{worker_index}-{os.getpid()}.csv"
    _state["writer"] = SampleWriter(os.path.join(opts.tpcc_samples_dir, name))


@events.test_stop.add_listener
def _flush(environment, **_kw) -> None:
    writer = _state.get("writer")
    if isinstance(writer, SampleWriter):
        writer.flush()


@events.quitting.add_listener
def _close(environment, **_kw) -> None:
    writer = _state.get("writer")
    if isinstance(writer, SampleWriter):
        writer.close()


class TpccUser(User):
    """One TPC-C terminal."""

    wait_time = constant(0)

    def on_start(self) -> None:
        _setup(self.environment)
        local = next(_local_index)
        number = local * int(_state["workers"]) + int(_state["worker_index"])
        self.terminal = Terminal(number, _state["config"])  # type: ignore[arg-type]
        self.writer: SampleWriter = _state["writer"]  # type: ignore[assignment]
        self._next_due = time.monotonic()

    def on_stop(self) -> None:
        self.terminal.close()
        self.writer.flush()

    def _pace(self) -> None:
        rate = self.environment.parsed_options.tpcc_rate
        if rate <= 0:
            return
        users = max(1, self.environment.runner.user_count if self.environment.runner else 1)
        interval = users / rate
        self._next_due = max(self._next_due + interval, time.monotonic())
        delay = self._next_due - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    @task
    def transaction(self) -> None:
        name = self.terminal.next_transaction()
        if self.terminal.config.wait:
            time.sleep(self.terminal.keying_time(name))
        sample = self.terminal.run(name)
        self.writer.add(sample)
        self.environment.events.request.fire(
            request_type="TPCC", name=name, response_time=sample.latency_ms, response_length=0,
            context={"outcome": sample.outcome}, start_time=sample.start_ts,
            exception=None if is_success(sample.outcome) else TransactionFailed(
                f"{sample.outcome} {sample.sqlstate}".strip()),
        )
        if self.terminal.config.wait:
            time.sleep(self.terminal.think_time(name))
        self._pace()


assert locust  # locust must be imported before psycopg so that gevent patches select first
