"""Locust user class for YCSB workload A on SQL (``locust -f load/ycsb.py``).

Options: the common ``--chaosdb-*`` options (see :mod:`chaosdb.load.locust_tpcc`) and
``--ycsb-records N`` (records loaded with ``chaosdb load ycsb-load``; default 10000) and
``--ycsb-backend sql|etcd`` (etcd: the DSN is a comma-separated list of etcd client URLs; see
:mod:`chaosdb.workloads.kv`).
Samples have the TPC-C format with names ``read`` / ``update``; an update's key is the
YCSB key it wrote.
"""

from __future__ import annotations

import locust
from locust import User, constant, events, task

from chaosdb.load.locust_common import Pacer, ProcessState, add_common_options, report, resolve_dsn
from chaosdb.workloads.kv import EtcdBackend
from chaosdb.workloads.ycsb import SqlBackend, WorkloadA

__all__ = ["YcsbUser"]

_process = ProcessState()
_process.attach(events)


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    add_common_options(parser)
    parser.add_argument("--ycsb-records", type=int, default=10000, help="number of records in usertable")
    parser.add_argument("--ycsb-backend", choices=["sql", "etcd"], default="sql",
                        help="sql (usertable over psycopg) or etcd (keys /ycsb/user<n>; DSN = etcd client URLs)")


class YcsbUser(User):
    """One YCSB client."""

    wait_time = constant(0)

    def on_start(self) -> None:
        """A backend (SQL or etcd) and a workload A generator of its own."""
        opts = self.environment.parsed_options
        resolve_dsn(opts, "YCSB")
        _process.setup(self.environment)
        self.client_number = _process.next_terminal()
        seed = None if opts.chaosdb_seed is None else opts.chaosdb_seed * 1009 + self.client_number
        self.workload = WorkloadA(opts.ycsb_records, seed)
        self.backend: EtcdBackend | SqlBackend
        if opts.ycsb_backend == "etcd":
            self.backend = EtcdBackend(opts.chaosdb_dsn, self.client_number, seed)
        else:
            self.backend = SqlBackend(opts.chaosdb_dsn, self.client_number, opts.chaosdb_isolation,
                                      opts.chaosdb_max_retries, seed)
        self.pacer = Pacer()

    def on_stop(self) -> None:
        """Close the backend, write the samples."""
        self.backend.close()
        _process.flush()

    @task
    def operation(self) -> None:
        """The next read or update, recorded as a sample, paced to the run's rate."""
        report(self.environment, _process, self.backend.execute(self.workload.next(), self.client_number), "YCSB")
        runner = self.environment.runner
        self.pacer.wait(self.environment.parsed_options.chaosdb_rate, runner.user_count if runner else 1)


assert locust  # locust must be imported before psycopg so that gevent patches select first
