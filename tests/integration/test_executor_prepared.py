"""The executor's straight-to-libpq path (YCSB's reads and updates) on the real cluster: the same outcomes as the
psycopg path, an error raised as psycopg's with its SQLSTATE, a connection killed under it reconnected and its
statements prepared again, and the session's idle-in-transaction limit set on the server."""

from __future__ import annotations

import psycopg
import pytest

from chaosdb.workloads import ycsb
from chaosdb.workloads.executor import Executor

pytestmark = pytest.mark.integration


def test_prepared_statements_read_update_fail_and_reconnect_like_the_psycopg_path(pg_cluster, healthy):
    dsn = pg_cluster.dsn()
    ycsb.load(dsn, 200)
    backend = ycsb.SqlBackend(dsn, client=1, seed=3)
    try:
        update = backend.execute(ycsb.Operation("update", "user7", 3, "x" * 100), 1)
        read = backend.execute(ycsb.Operation("read", "user7"), 1)
        assert (update.outcome, update.key, read.outcome, read.key) == ("committed", "user7", "committed", "")
        with psycopg.connect(dsn) as check:
            assert check.execute("SELECT field3 FROM usertable WHERE ycsb_key = 'user7'").fetchone() == ("x" * 100,)
        # the session asks the server to end a transaction left idle (a load client cut off mid-transaction)
        pid = backend.executor.conn.info.backend_pid
        assert backend.executor.conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == "10s"

        # a failing statement: psycopg's error with its SQLSTATE, an outcome like any other error's
        ex = backend.executor
        with pytest.raises(psycopg.errors.UndefinedTable):
            ex.exec_prepared(ex.connection(), "SELECT * FROM no_such_table WHERE k = $1", ("a",))
        failed = ex.run("bad", lambda c: ex.exec_prepared(c, "UPDATE no_such_table SET v = $1", ("a",)) and "",
                        1, single_statement="write")
        assert failed.outcome != "committed" and failed.sqlstate == "42P01"

        # the server ends the session under the client: the next write is not committed, the one after reconnects
        # and prepares its statement again on the new connection
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        lost = backend.execute(ycsb.Operation("update", "user8", 1, "y" * 100), 1)
        assert lost.outcome in ("ambiguous", "conn_error", "error"), lost
        again = backend.execute(ycsb.Operation("update", "user8", 1, "z" * 100), 1)
        assert again.outcome == "committed" and backend.executor.conn.info.backend_pid != pid
        with psycopg.connect(dsn) as check:
            assert check.execute("SELECT field1 FROM usertable WHERE ycsb_key = 'user8'").fetchone() == ("z" * 100,)
    finally:
        backend.close()


def test_the_idle_limit_can_be_left_to_the_server(pg_cluster, healthy):
    """``server_idle_tx_timeout_s=0``: the session keeps the server's own setting."""
    ex = Executor(pg_cluster.dsn(), server_idle_tx_timeout_s=0.0)
    try:
        assert ex.connection().execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == "0"
    finally:
        ex.close()
