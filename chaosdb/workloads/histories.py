"""Workloads that record an operation history (:mod:`chaosdb.history.recording`) for the checkers of
:mod:`chaosdb.history`: every operation is written when it is sent and when it ends, with what it read.

* ``list-append`` (PostgreSQL): transactions of 1 to ``ops`` micro-operations, each an append of a unique value to a
  key's list (``["append", k, v]``) or a read of a key's whole list (``["r", k, [...]]``); table
  ``chaosdb_list_append(k bigint primary key, v text)``, the list as comma-separated values, an append an upsert.
* ``rw-register`` (PostgreSQL): the same transactions of writes of unique values (``["w", k, v]``) and reads
  (``["r", k, v]``); table ``chaosdb_rw_register(k bigint primary key, v bigint)``.
* ``register`` (etcd): single-key reads, writes and compare-and-sets of the values 0 to 4 (Knossos's register) on
  keys ``/chaosdb/register/<k>``, each operation's value keyed (``[k, v]``; a cas ``[k, [old, new]]``).

Keys contend on purpose: ``keys`` keys are in play at a time, a new set every ``window_s`` seconds (so a list stays
short); a run's keys start at the second it started times a billion (``run``, the same for every process of the
load), so a run never meets an earlier run's keys;
reads go to the current keys, or, one in four, to a key of the last ``lookback_s`` seconds (60 for SQL), so that what a key held
before a fault is read again after it. A transaction runs at the load's isolation level, once (no retry: a retry is
a new operation). Its end decides its type: committed is ``ok``; an error before COMMIT, a serialization failure or
a refused connection is ``fail`` (PostgreSQL rolled it back); a connection lost while COMMIT (or an etcd write) was
in flight is ``info``, and the client then takes a new process number.
"""

from __future__ import annotations

import base64
import http.client
import random
import time
from typing import Any

from chaosdb.history.recording import PROCESS_STRIDE, HistoryWriter
from chaosdb.workloads.executor import Executor
from chaosdb.workloads.kv import EtcdError, EtcdKV
from chaosdb.workloads.samples import Sample

__all__ = ["KeyWindows", "SqlHistoryClient", "EtcdRegisterClient", "MODELS", "TABLES", "RUN_STRIDE", "outcome_type"]

#: the history workloads and the database each runs on
MODELS = {"list-append": "postgresql", "rw-register": "postgresql", "register": "etcd"}
#: the table of each SQL model
TABLES = {"list-append": "chaosdb_list_append", "rw-register": "chaosdb_rw_register"}
_SCHEMA = {
    "list-append": "CREATE TABLE IF NOT EXISTS chaosdb_list_append (k bigint PRIMARY KEY, v text NOT NULL)",
    "rw-register": "CREATE TABLE IF NOT EXISTS chaosdb_rw_register (k bigint PRIMARY KEY, v bigint NOT NULL)",
}
_APPEND = ("INSERT INTO chaosdb_list_append AS t (k, v) VALUES (%s, %s) "
           "ON CONFLICT (k) DO UPDATE SET v = t.v || ',' || EXCLUDED.v")
_READ_LIST = "SELECT v FROM chaosdb_list_append WHERE k = %s"
_WRITE = ("INSERT INTO chaosdb_rw_register AS t (k, v) VALUES (%s, %s) "
          "ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
_READ_REGISTER = "SELECT v FROM chaosdb_rw_register WHERE k = %s"
#: the advisory lock that makes concurrent first clients create a table once
_SCHEMA_LOCK = 734_110_042
REGISTER_PREFIX = "/chaosdb/register/"
#: the keys of one run: a run that starts at Unix second S uses keys from S * RUN_STRIDE (a billion keys a run)
RUN_STRIDE = 1_000_000_000


def outcome_type(outcome: str) -> str:
    """The history type of a sample's outcome: ``ok`` (committed), ``info`` (ambiguous: it may have taken effect),
    ``fail`` (anything else: the database did not apply it)."""
    if outcome in ("committed", "rollback"):
        return "ok"
    return "info" if outcome == "ambiguous" else "fail"


class KeyWindows:
    """The keys in play: ``keys`` of them per window of ``window_s`` seconds from the run's start (see the module's
    docstring); a run's keys are ``run * RUN_STRIDE + window * keys + place``, so no two runs share one."""

    def __init__(self, keys: int, window_s: float, lookback_s: float, rng: random.Random, run: int = 0,
                 clock: Any = time.time) -> None:
        self.keys = max(1, int(keys))
        self.window_s = max(0.05, float(window_s))
        self.lookback = max(0, int(lookback_s / self.window_s))
        self.rng = rng
        self.clock = clock
        self.run = int(run) or int(clock())
        self.base = self.run * RUN_STRIDE

    def _window(self) -> int:
        return max(0, int((self.clock() - self.run) / self.window_s))

    def write_key(self) -> int:
        """A key of the current window."""
        return self.base + self._window() * self.keys + self.rng.randrange(self.keys)

    def read_key(self) -> int:
        """A key of the current window, or one time in four, of one of the windows of the lookback (never before
        the run's first)."""
        window = self._window()
        if self.lookback and window and self.rng.random() < 0.25:
            window = max(0, window - self.rng.randint(1, self.lookback))
        return self.base + window * self.keys + self.rng.randrange(self.keys)


class _Client:
    """What every history client has: its number, its process number (a new one after an ``info``), its writer."""

    def __init__(self, client: int, writer: HistoryWriter) -> None:
        self.client = client
        self.process = client
        self.writer = writer

    def _ended(self, kind: str, f: str, value: Any, node: str) -> None:
        self.writer.complete(kind, self.process, f, value, node)
        if kind == "info":
            self.process += PROCESS_STRIDE


class SqlHistoryClient(_Client):
    """One PostgreSQL client of the ``list-append`` or ``rw-register`` workload: :meth:`execute` runs the next
    transaction, records it in the history and returns its sample."""

    def __init__(self, model: str, dsn: str, client: int, writer: HistoryWriter, *, isolation: str = "default",
                 keys: int = 16, window_s: float = 1.0, lookback_s: float = 60.0, max_ops: int = 4,
                 seed: int | None = None, run: int = 0) -> None:
        if model not in TABLES:
            raise ValueError(f"model must be one of {', '.join(TABLES)}, got {model!r}")
        super().__init__(client, writer)
        self.model = model
        self.rng = random.Random(seed)
        self.windows = KeyWindows(keys, window_s, lookback_s, self.rng, run)
        self.max_ops = max(1, int(max_ops))
        self.executor = Executor(dsn, isolation, max_retries=0, seed=seed, application_name="chaosdb-history")
        self.write_f = "append" if model == "list-append" else "w"
        self._seq = 0
        self._schema_ready = False
        self.node = ""

    def next_transaction(self) -> list[list[Any]]:
        """The micro-operations of the next transaction (reads with ``None`` for what they will see)."""
        txn: list[list[Any]] = []
        for _ in range(self.rng.randint(1, self.max_ops)):
            if self.rng.random() < 0.5:
                txn.append(["r", self.windows.read_key(), None])
            else:
                self._seq += 1
                txn.append([self.write_f, self.windows.write_key(), self._seq * PROCESS_STRIDE + self.client])
        return txn

    def _ensure_schema(self) -> bool:
        import psycopg  # noqa: PLC0415 - needs the postgres extra

        try:
            conn = self.executor.connection()
            conn.autocommit = False
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(_SCHEMA[self.model])
            conn.commit()
            self._schema_ready = True
        except psycopg.Error:
            self.executor.close()
        return self._schema_ready

    def _body(self, txn: list[list[Any]], done: list[list[Any]]) -> Any:
        append = self.model == "list-append"

        def run(conn: Any) -> str:
            info = conn.info
            self.node = f"{info.host}:{info.port}"
            for f, k, v in txn:
                if f == "r":
                    row = conn.execute(_READ_LIST if append else _READ_REGISTER, (k,)).fetchone()
                    if append:
                        seen: Any = [int(x) for x in row[0].split(",")] if row and row[0] else []
                    else:
                        seen = None if row is None else int(row[0])
                    done.append(["r", k, seen])
                else:
                    conn.execute(_APPEND if append else _WRITE, (k, str(v) if append else v))
                    done.append([f, k, v])
            return ""

        return run

    def execute(self) -> Sample:
        """Run the next transaction once: recorded in the history (invoke, then ok / fail / info) and returned as a
        sample named ``txn``."""
        if not self._schema_ready and not self._ensure_schema():
            return Sample(time.time(), 0.0, "txn", "conn_error", "schema", 0, self.client, "")
        txn = self.next_transaction()
        self.node = ""
        self.writer.invoke(self.process, "txn", txn)
        done: list[list[Any]] = []
        sample = self.executor.run("txn", self._body(txn, done), self.client)
        kind = outcome_type(sample.outcome)
        self._ended(kind, "txn", done if kind == "ok" else txn, self.node)
        return sample

    def close(self) -> None:
        """Close the connection."""
        self.executor.close()


class EtcdRegisterClient(_Client):
    """One etcd client of the ``register`` workload: :meth:`execute` runs the next read, write or compare-and-set
    of a key, records it in the history (keyed values) and returns its sample."""

    #: gRPC codes after which the next operation tries another endpoint (unavailable, deadline exceeded)
    UNAVAILABLE = {14, 4}

    def __init__(self, dsn: str, client: int, writer: HistoryWriter, *, keys: int = 8, window_s: float = 2.0,
                 timeout_s: float = 5.0, seed: int | None = None, run: int = 0) -> None:
        super().__init__(client, writer)
        self.kv = EtcdKV.of(dsn, timeout_s, start=client)
        self.rng = random.Random(seed)
        self.windows = KeyWindows(keys, window_s, 0.0, self.rng, run)

    def _run(self, f: str, key: int, value: Any) -> tuple[str, Any]:
        path = f"{REGISTER_PREFIX}{key}"
        if f == "read":
            kv = self.kv.get(path)
            return "ok", None if kv is None else int(base64.b64decode(kv["value"]))
        if f == "write":
            self.kv.put(path, str(value))
            return "ok", value
        old, new = value
        return ("ok" if self.kv.compare_and_put(path, str(old), str(new)) else "fail"), value

    def execute(self) -> Sample:
        """One operation, recorded in the history and returned as a sample named after it."""
        roll = self.rng.random()
        f = "read" if roll < 0.5 else "write" if roll < 0.75 else "cas"
        key = self.windows.read_key() if f == "read" else self.windows.write_key()
        value: Any = None if f == "read" else self.rng.randrange(5) if f == "write" else \
            [self.rng.randrange(5), self.rng.randrange(5)]
        node = self.kv.endpoint
        self.writer.invoke(self.process, f, [key, value])
        start_ts, t0 = time.time(), time.perf_counter()
        outcome, code, kind, seen = "committed", "", "ok", value
        try:
            kind, seen = self._run(f, key, value)
            if kind == "fail":
                outcome = "rollback"  # the compare did not hold: answered, nothing written
        except EtcdError as exc:
            maybe_applied = exc.code == 4 or any(t in str(exc) for t in ("timed out", "leader changed"))
            kind = "info" if f != "read" and maybe_applied else "fail"
            outcome, code = ("ambiguous" if kind == "info" else "error"), f"etcd{exc.code}"
            if exc.code in self.UNAVAILABLE:
                self.kv.rotate()
        except (OSError, http.client.HTTPException) as exc:
            kind = "info" if f != "read" and getattr(exc, "sent", False) else "fail"
            outcome, code = ("ambiguous" if kind == "info" else "conn_error"), type(exc).__name__
            self.kv.rotate()
        self._ended(kind, f, [key, seen], node)
        return Sample(start_ts, (time.perf_counter() - t0) * 1000.0, f, outcome, code, 0, self.client, "")

    def close(self) -> None:
        """Close the connection."""
        self.kv.close()
