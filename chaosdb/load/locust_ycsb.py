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
from chaosdb.workloads.ycsb import Backend, SqlBackend, WorkloadA

__all__ = ["YcsbUser", "OPERATIONS_PER_TASK"]

#: operations a user runs per Locust task
OPERATIONS_PER_TASK = 16

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
        self.backend: Backend
        if opts.ycsb_backend == "etcd":
            from chaosdb.workloads.kv import EtcdBackend  # noqa: PLC0415 - etcd's client only where it is used

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
    def operations(self) -> None:
        """The next reads and updates, one after the other, each recorded as a sample and paced to the run's rate.
        :data:`OPERATIONS_PER_TASK` of them per Locust task: Locust's scheduling between tasks costs about as much
        client CPU as a YCSB operation itself (a stop waits for the task's last operation, a few milliseconds)."""
        environment, execute, workload, client = self.environment, self.backend.execute, self.workload, self.client_number
        rate = environment.parsed_options.chaosdb_rate
        runner = environment.runner
        for _ in range(OPERATIONS_PER_TASK):
            report(environment, _process, execute(workload.next(), client), "YCSB")
            if rate:
                self.pacer.wait(rate, runner.user_count if runner else 1)


assert locust  # locust must be imported before psycopg so that gevent patches select first
