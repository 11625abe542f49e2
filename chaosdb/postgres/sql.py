"""SQL on the primary with psycopg 3; errors never carry the password."""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.libpq import explain_libpq_failure
from chaosdb.core.redact import redact, redact_dsn

__all__ = ["query_primary"]


def query_primary(dsn: str, sql: str, params: tuple[Any, ...] = (), secrets: list[str] | None = None,
                  timeout_s: float = 5.0) -> list[tuple[Any, ...]]:
    """Run *sql* on a read-write server reached through *dsn* and return all rows."""
    try:
        import psycopg  # noqa: PLC0415 - needs the postgres extra
    except ImportError:
        raise ChaosDBError("psycopg is not installed: pip install 'chaostoolkit-db[postgres]'") from None
    try:
        with psycopg.connect(dsn, connect_timeout=max(2, int(timeout_s)), autocommit=True,
                             target_session_attrs="read-write") as conn:
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(int(timeout_s * 1000)),))
            return conn.execute(sql, params).fetchall()
    except psycopg.Error as exc:
        message = redact(explain_libpq_failure(str(exc)), (secrets or []) + [dsn])
        raise ChaosDBError(f"query on the primary ({redact_dsn(dsn)}) failed: {message}") from None
