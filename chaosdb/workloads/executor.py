"""One client connection that runs transactions with the pack's failure semantics.

Shared by every SQL workload (TPC-C terminals, YCSB clients):

* connect with the multi-host DSN (``target_session_attrs=read-write``) and a
  short ``connect_timeout``; a broken connection is dropped and the next
  transaction reconnects;
* serialization failures and deadlocks (40001, 40P01) are retried up to
  ``max_retries`` times with exponential backoff (base 10 ms, cap 1 s) and
  full jitter; the sample keeps the retries used;
* an error while COMMIT is in flight (connection lost, 40003, 08007) is
  ``ambiguous`` and never retried: the write may or may not be durable;
* a transaction of one statement (YCSB's read or update) may run in autocommit: one round trip instead of
  three (BEGIN, the statement, COMMIT); the statement is then its own commit, so an error while a write is
  in flight is ``ambiguous`` as it would be during COMMIT;
* the session asks the database to end a transaction left idle for 10 s (``idle_in_transaction_session_timeout``):
  a load client cut off mid-transaction (its host unplugged) must not hold its locks, stalling the others, until
  the server notices it is gone;
* a one-statement transaction may go straight to libpq (:meth:`Executor.run_statement`, through
  :meth:`Executor.exec_prepared`): the statement prepared once per connection under a name, then sent with its
  parameters as text and its result awaited without psycopg's cursor layer (about 7 µs of client CPU per round trip
  instead of 45; YCSB's reads and updates);
* in a Locust process the connection waits on watchers of gevent's loop kept for it
  (:mod:`chaosdb.workloads.waiting`), not psycopg's poll loop;
* every attempt becomes exactly one :class:`~chaosdb.workloads.samples.Sample`.
"""

from __future__ import annotations

import random
import select
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from chaosdb.workloads.outcomes import RETRYABLE, classify
from chaosdb.workloads.samples import Sample
from chaosdb.workloads.waiting import connect, socket_waiter

__all__ = ["Executor", "BusinessRollback", "ISOLATION", "TxnBody"]

ISOLATION = {"default": None, "read_committed": "READ COMMITTED", "repeatable_read": "REPEATABLE READ",
             "serializable": "SERIALIZABLE"}


class BusinessRollback(Exception):
    """The transaction rolled back on purpose (e.g. TPC-C New-Order with an invalid item)."""


#: a transaction body: runs statements on the connection (no commit) and returns the key it wrote ('' if none)
TxnBody = Callable[[Any], str]


@dataclass
class Executor:
    dsn: str
    isolation: str = "default"
    max_retries: int = 5
    connect_timeout_s: int = 2
    application_name: str = "chaosdb"
    seed: int | None = None
    sleep: Callable[[float], None] = time.sleep
    #: libpq TCP settings of a well-configured client: a peer that vanished (partition, dead host) is
    #: noticed in about 10 s instead of the kernel's minutes. Values in the DSN take precedence.
    tcp_options: dict = field(default_factory=lambda: {
        "keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3",
        "tcp_user_timeout": "10000"})
    #: the database ends a transaction of this client left idle this long (``idle_in_transaction_session_timeout``;
    #: 0: not asked). A running load never idles inside a transaction; a client whose host vanished mid-transaction
    #: would otherwise keep its row locks, stalling every other client, until the server noticed (hours with the
    #: kernel's keepalives, or a proxy's client timeout)
    server_idle_tx_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if self.isolation not in ISOLATION:
            raise ValueError(f"isolation must be one of {', '.join(ISOLATION)}")
        self.conn: Any = None
        self._tcp_extra: dict | None = None
        self._backoff = random.Random(self.seed)
        self._statements: dict[str, bytes] = {}  # statement -> its prepared name (the same on every connection)
        self._prepared: set[bytes] = set()  # names prepared on the current connection
        self._readable: Callable[[], None] = _unset_waiter  # waits until the current connection has data
        self._autocommit_conn: Any = None  # the connection last put in autocommit for one-statement transactions

    def connection(self) -> Any:
        """The open connection, or a new one after the last broke."""
        import psycopg  # noqa: PLC0415 - needs the postgres extra

        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.close()
        if self._tcp_extra is None:  # parsed once: reconnect loops during an outage are frequent
            from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - needs the postgres extra

            given = conninfo_to_dict(self.dsn)
            self._tcp_extra = {k: v for k, v in self.tcp_options.items() if k not in given}
        self._prepared, self._readable = set(), _unset_waiter
        self.conn = connect(self.dsn, connect_timeout=self.connect_timeout_s, target_session_attrs="read-write",
                            application_name=self.application_name, **self._tcp_extra)
        level = ISOLATION[self.isolation]
        if level:
            self.conn.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}")
            self.conn.commit()
        if self.server_idle_tx_timeout_s > 0:
            try:
                self.conn.execute(f"SET idle_in_transaction_session_timeout = {int(self.server_idle_tx_timeout_s * 1000)}")
                self.conn.commit()
            except psycopg.Error:  # a database or pooler without the setting: the load runs without it
                self.conn.rollback()
        return self.conn

    def exec_prepared(self, conn: Any, statement: str, params: Sequence[str]) -> Any:
        """Run *statement* (``$1``-style placeholders) with text *params* on *conn*, outside any transaction block
        (the caller's connection is in autocommit): prepared on first use on this connection, then one round trip
        through libpq. Returns the libpq result (``get_value(row, column)`` gives bytes); raises psycopg's error
        for a failed statement, as ``conn.execute`` would."""
        pgconn = conn.pgconn
        name = self._statements.get(statement)
        if name is None or name not in self._prepared:
            name = self._prepare(conn, statement)
        pgconn.send_query_prepared(name, [p.encode() for p in params])
        res = _result(pgconn, self._readable)
        if res is not None and res.status == _FATAL_ERROR:
            raise _psycopg()[0].error_from_result(res, encoding=conn.info.encoding)
        return res

    def _prepare(self, conn: Any, statement: str) -> bytes:
        """Prepare *statement* on *conn* under its name (the same on every connection); returns the name."""
        errors, pq = _psycopg()
        pgconn = conn.pgconn
        name = self._statements.get(statement)
        if name is None:
            name = self._statements[statement] = f"chaosdb_{len(self._statements)}".encode()
        if self._readable is _unset_waiter:
            self._readable = socket_waiter(pgconn.socket)
        pgconn.send_prepare(name, statement.encode(), None)
        failed = _result(pgconn, self._readable, pq.ExecStatus.COMMAND_OK)
        if failed is not None:
            raise errors.error_from_result(failed, encoding=conn.info.encoding)
        self._prepared.add(name)
        return name

    def close(self) -> None:
        """Close the connection (errors on closing a broken one are ignored)."""
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None
        self._autocommit_conn = None

    def _drop_broken(self) -> bool:
        broken = self.conn is None or self.conn.closed or self.conn.broken
        if not broken:
            try:
                self.conn.rollback()
            except Exception:
                broken = True
        if broken:
            self.close()
        return broken

    def run(self, name: str, body: TxnBody, terminal: int = 0, keep_key_for: tuple[str, ...] = (),
            single_statement: str = "", key: str = "") -> Sample:
        """Run *body* in a transaction with retries; the outcome is a sample, never an exception.

        ``keep_key_for``: outcomes whose key is recorded (by default committed and ambiguous writes).
        ``single_statement``: ``"read"`` or ``"write"`` when *body* runs exactly one statement, which then runs
        in autocommit as its own transaction; a ``"write"`` in flight when the connection breaks is ambiguous.
        ``key``: what the transaction writes, when known before it runs: kept for an ambiguous outcome even
        though the body never returned.
        """
        if single_statement not in ("", "read", "write"):
            raise ValueError("single_statement must be '', 'read' or 'write'")
        errors, _ = _psycopg()
        start_ts = time.time()
        t0 = time.perf_counter()
        retries = 0
        known_key = key
        outcome, sqlstate = "error", ""
        while True:
            key = known_key
            during_commit = False
            try:
                conn = self.connection()
                if conn.autocommit != bool(single_statement):
                    conn.autocommit = bool(single_statement)
                self._autocommit_conn = conn if single_statement else None
                if single_statement:
                    during_commit = single_statement == "write"
                    key = body(conn) or known_key
                    outcome, sqlstate = "committed", ""
                    break
                try:
                    key = body(conn) or known_key
                except BusinessRollback:
                    conn.rollback()
                    outcome, sqlstate = "rollback", ""
                    break
                during_commit = True
                conn.commit()
                outcome, sqlstate = "committed", ""
                break
            except errors.Error as exc:
                outcome, sqlstate, retry = self._failed(exc, during_commit, retries)
                if retry:
                    retries += 1
                    continue
                break
        latency_ms = (time.perf_counter() - t0) * 1000.0
        if outcome not in (keep_key_for or ("committed", "ambiguous")):
            key = ""
        return Sample(start_ts, latency_ms, name, outcome, sqlstate, retries, terminal, key)

    def run_statement(self, name: str, statement: str, params: Sequence[str], terminal: int = 0,
                      write: bool = False, key: str = "", fetch: bool = False) -> Sample:
        """*statement* alone as its own transaction, as :meth:`run` runs a one-statement body (autocommit, one
        round trip through :meth:`exec_prepared`; a write in flight when the connection breaks is ambiguous;
        40001/40P01 retried), without a body to call back: YCSB's reads and updates. A write's *key* is kept when
        it committed or is ambiguous; with *fetch*, the values of the first row are read as a client reads them."""
        errors, _ = _psycopg()
        start_ts = time.time()
        t0 = time.perf_counter()
        retries = 0
        while True:
            during_commit = False
            try:
                conn = self.conn
                if conn is None or conn is not self._autocommit_conn:
                    conn = self.connection()
                    if not conn.autocommit:
                        conn.autocommit = True
                    self._autocommit_conn = conn
                during_commit = write
                res = self.exec_prepared(conn, statement, params)
                if fetch and res is not None and res.ntuples:
                    value = res.get_value
                    for column in range(res.nfields):
                        value(0, column)
                outcome, sqlstate = "committed", ""
                break
            except errors.Error as exc:
                outcome, sqlstate, retry = self._failed(exc, during_commit, retries)
                if retry:
                    retries += 1
                    continue
                break
        return Sample(start_ts, (time.perf_counter() - t0) * 1000.0, name, outcome, sqlstate, retries, terminal,
                      key if write and (outcome == "committed" or outcome == "ambiguous") else "")

    def _failed(self, exc: Any, during_commit: bool, retries: int) -> tuple[str, str, bool]:
        """A failed attempt's (outcome, SQLSTATE or error name, whether to retry it); a broken connection is dropped,
        and a retry waits its backoff first."""
        sqlstate = exc.sqlstate or ""
        broken = self._drop_broken()
        outcome = classify(exc.sqlstate, during_commit, broken)
        if sqlstate in RETRYABLE and outcome == "aborted" and retries < self.max_retries:
            self.sleep(self._backoff.uniform(0, min(1.0, 0.01 * 2 ** (retries + 1))))
            return outcome, sqlstate, True
        return outcome, sqlstate or type(exc).__name__, False


def _psycopg() -> tuple[Any, Any]:
    """psycopg's errors and pq modules (imported on first use: the postgres extra)."""
    global _PSYCOPG
    if _PSYCOPG is None:
        from psycopg import errors, pq  # noqa: PLC0415 - needs the postgres extra

        _PSYCOPG = (errors, pq)
    return _PSYCOPG


_PSYCOPG: tuple[Any, Any] | None = None
#: libpq's status of a failed statement (``PGRES_FATAL_ERROR``, psycopg's ``pq.ExecStatus.FATAL_ERROR``)
_FATAL_ERROR = 7


def _unset_waiter() -> None:
    raise RuntimeError("no statement was prepared on this connection yet")


def _result(pgconn: Any, readable: Callable[[], None], unless: Any = None) -> Any:
    """Send what libpq holds and wait for the statement's last result (*readable* waits for the socket); with
    *unless*, None when the result has that status."""
    while pgconn.flush():
        select.select([], [pgconn.socket], [])
    last = None
    while True:
        readable()  # nothing can have arrived before the statement was sent: no read attempt that would find nothing
        pgconn.consume_input()
        while not pgconn.is_busy():
            res = pgconn.get_result()
            if res is None:
                return None if unless is not None and last is not None and last.status == unless else last
            last = res
