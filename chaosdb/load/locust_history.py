"""Locust user class of the history workloads (``locust -f load/locust_history.py``): every operation recorded in a
history (:mod:`chaosdb.workloads.histories`) as well as a sample.

Options: the common ``--chaosdb-*`` options (see :mod:`chaosdb.load.locust_tpcc`; ``--chaosdb-isolation`` is the
transactions' isolation level) and ``--history-model list-append|rw-register|register`` (register: the DSN is a
comma-separated list of etcd client URLs), ``--history-keys N`` (keys in play at a time), ``--history-window-s S``
(how long a set of keys is in play), ``--history-ops N`` (micro-operations per transaction, at most).
Each process writes ``history-w<worker>-<pid>.jsonl`` beside its ``samples-*.csv``.
"""

from __future__ import annotations

import os
import time

import locust
from locust import User, constant, events, task

from chaosdb.history.recording import HistoryWriter
from chaosdb.load.locust_common import Pacer, ProcessState, add_common_options, report, resolve_dsn
from chaosdb.workloads.histories import MODELS, EtcdRegisterClient, SqlHistoryClient

__all__ = ["HistoryUser"]

_process = ProcessState()
_process.attach(events)


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    add_common_options(parser)
    parser.add_argument("--history-model", choices=list(MODELS), default="list-append",
                        help="list-append / rw-register (PostgreSQL) or register (etcd; the DSN = etcd client URLs)")
    parser.add_argument("--history-keys", type=int, default=0, help="keys in play at a time (0: the model's default)")
    parser.add_argument("--history-window-s", type=float, default=0.0,
                        help="seconds a set of keys is in play (0: the model's default)")
    parser.add_argument("--history-ops", type=int, default=4, help="micro-operations per transaction, at most")
    parser.add_argument("--history-run", type=int, default=0,
                        help="the run's start (Unix seconds): its keys start there (0: this process's start)")


def _writer(environment) -> HistoryWriter:
    writer = _process.extra.get("history")  # this process's history file: one writer for its users
    if writer is None:
        opts = environment.parsed_options
        path = os.path.join(opts.chaosdb_samples_dir, f"history-w{_process.worker_index}-{os.getpid()}.jsonl")
        writer = _process.extra["history"] = HistoryWriter(path)
        events.test_stop.add_listener(lambda **_kw: writer.flush())
        events.quitting.add_listener(lambda **_kw: writer.close())
    return writer


def _run(opts) -> int:
    """The run's start as every user of this process sees it (the option, else this process's first look)."""
    if not opts.history_run:
        opts.history_run = int(time.time())
    return int(opts.history_run)


class HistoryUser(User):
    """One client of a history workload."""

    wait_time = constant(0)

    def on_start(self) -> None:
        """A client of the model's database with a number of its own, writing to this process's history."""
        opts = self.environment.parsed_options
        resolve_dsn(opts, "history")
        _process.setup(self.environment)
        number = _process.next_terminal()
        seed = None if opts.chaosdb_seed is None else opts.chaosdb_seed * 1009 + number
        writer = _writer(self.environment)
        self.client: EtcdRegisterClient | SqlHistoryClient
        if opts.history_model == "register":
            self.client = EtcdRegisterClient(opts.chaosdb_dsn, number, writer, keys=opts.history_keys or 8,
                                             window_s=opts.history_window_s or 2.0, seed=seed, run=_run(opts))
        else:
            self.client = SqlHistoryClient(opts.history_model, opts.chaosdb_dsn, number, writer,
                                           isolation=opts.chaosdb_isolation, keys=opts.history_keys or 16,
                                           window_s=opts.history_window_s or 1.0, max_ops=opts.history_ops,
                                           seed=seed, run=_run(opts))
        self.pacer = Pacer()

    def on_stop(self) -> None:
        """Close the client, write the samples and the history."""
        self.client.close()
        _process.flush()
        writer = _process.extra.get("history")
        if writer is not None:
            writer.flush()

    @task
    def operation(self) -> None:
        """The next operation, recorded, paced to the run's rate."""
        environment = self.environment
        report(environment, _process, self.client.execute(), "history")
        rate = environment.parsed_options.chaosdb_rate
        if rate:
            runner = environment.runner
            self.pacer.wait(rate, runner.user_count if runner else 1)


assert locust  # locust must be imported before psycopg so that gevent patches select first
