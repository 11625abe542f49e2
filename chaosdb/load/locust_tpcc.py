"""Locust user class for the TPC-C workload (``locust -f load/tpcc.py``).

One Locust user is one TPC-C terminal with a home warehouse and district;
terminals are spread evenly across warehouses and worker processes
(:mod:`chaosdb.load.locust_common`).

Options (command line, or the environment variable in brackets)::

    --chaosdb-dsn DSN          [CHAOSDB_LOAD_DSN]    libpq DSN, multi-host with target_session_attrs=read-write
    --chaosdb-samples-dir DIR  [CHAOSDB_SAMPLES_DIR] where samples-*.csv go (default ./samples)
    --chaosdb-isolation LEVEL  default | read_committed | repeatable_read | serializable (CockroachDB)
    --chaosdb-max-retries N    retries of 40001/40P01 (default 5)
    --chaosdb-rate TPS         cap the total offered rate; 0 = as fast as possible (default)
    --chaosdb-seed N           repeatable random choices
    --chaosdb-workers N        worker processes in master/worker mode
    --tpcc-wait FRACTION       0 = no keying/think time (default); 1 = the spec's times

Every transaction becomes a Locust request (type ``TPCC``, name = transaction,
failure = any outcome other than committed/rollback) and a row in the samples
file of this process.
"""

from __future__ import annotations

import time

import locust
from locust import User, constant, events, task

from chaosdb.load.locust_common import Pacer, ProcessState, add_common_options, report, resolve_dsn
from chaosdb.workloads.tpcc.loader import read_meta
from chaosdb.workloads.tpcc.rand import Scale
from chaosdb.workloads.tpcc.terminal import Terminal, TerminalConfig

__all__ = ["TpccUser"]

_process = ProcessState()
_process.attach(events)


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    add_common_options(parser)
    parser.add_argument("--tpcc-wait", type=float, default=0.0,
                        help="keying/think time as a fraction of the spec's (0 = none)")


def _config(environment) -> TerminalConfig:
    if "config" in _process.extra:
        return _process.extra["config"]
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    opts = environment.parsed_options
    with psycopg.connect(resolve_dsn(opts, "TPC-C"), connect_timeout=10, target_session_attrs="read-write") as conn:
        meta = read_meta(conn)
    if not meta:
        raise SystemExit("chaosdb TPC-C: the database holds no TPC-C data: run 'chaosdb load tpcc-load' first")
    scale = Scale(int(meta["warehouses"]), int(meta["items"]), int(meta["customers_per_district"]))
    _process.setup(environment)
    _process.extra["config"] = TerminalConfig(
        dsn=opts.chaosdb_dsn, scale=scale, c_load=int(meta["c_load"]), isolation=opts.chaosdb_isolation,
        max_retries=opts.chaosdb_max_retries, wait=opts.tpcc_wait, seed=opts.chaosdb_seed)
    return _process.extra["config"]


class TpccUser(User):
    """One TPC-C terminal."""

    wait_time = constant(0)

    def on_start(self) -> None:
        """A TPC-C terminal of its own, paced as the run asks."""
        config = _config(self.environment)
        self.terminal = Terminal(_process.next_terminal(), config)
        self.pacer = Pacer()

    def on_stop(self) -> None:
        """Close the terminal's connection, write the samples."""
        self.terminal.close()
        _process.flush()

    @task
    def transaction(self) -> None:
        """The deck's next transaction, with keying and think time when the run waits, recorded as a sample."""
        name = self.terminal.next_transaction()
        wait = self.terminal.config.wait
        if wait:
            time.sleep(self.terminal.keying_time(name))
        report(self.environment, _process, self.terminal.run(name), "TPCC")
        if wait:
            time.sleep(self.terminal.think_time(name))
        runner = self.environment.runner
        self.pacer.wait(self.environment.parsed_options.chaosdb_rate, runner.user_count if runner else 1)


assert locust  # locust must be imported before psycopg so that gevent patches select first
