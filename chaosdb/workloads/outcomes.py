"""How every attempted transaction ended, and which errors may be retried.

=============  ===============================================================
outcome        meaning
=============  ===============================================================
``committed``  COMMIT returned successfully
``rollback``   rolled back on purpose by the workload (TPC-C New-Order 1 %)
``aborted``    serialization failure / deadlock (40001, 40P01) after retries
``conn_error`` no connection, or it broke before COMMIT was sent: not applied
``ambiguous``  the outcome of COMMIT is unknown (connection lost during
               COMMIT, 40003, 08007): never retried blindly
``error``      any other database error (the message is kept as SQLSTATE)
=============  ===============================================================

``committed`` and ``rollback`` are successes (the spec counts rolled-back
New-Orders as completed); everything else is a failed attempt.
"""

from __future__ import annotations

__all__ = ["OUTCOMES", "SUCCESS", "RETRYABLE", "AMBIGUOUS", "classify", "is_success"]

OUTCOMES = ("committed", "rollback", "aborted", "conn_error", "ambiguous", "error")
SUCCESS = frozenset({"committed", "rollback"})
RETRYABLE = frozenset({"40001", "40P01"})
AMBIGUOUS = frozenset({"40003", "08007"})
#: server-side states after which the connection must be dropped and re-established
RECONNECT = frozenset({"57P01", "57P02", "57P03", "25006", "08000", "08001", "08003", "08004", "08006"})


def is_success(outcome: str) -> bool:
    """Whether a transaction's outcome counts as a success (committed)."""
    return outcome in SUCCESS


def classify(sqlstate: str | None, during_commit: bool, connection_broken: bool) -> str:
    """Outcome of a failed attempt from its SQLSTATE and where it happened.

    Retryable errors are reported as ``aborted`` here; the caller retries them
    while it has retries left.
    """
    if sqlstate in AMBIGUOUS:
        return "ambiguous"
    if during_commit and (connection_broken or sqlstate is None or sqlstate in RECONNECT):
        return "ambiguous"
    if sqlstate in RETRYABLE:
        return "aborted"
    if connection_broken or sqlstate is None or sqlstate in RECONNECT or (sqlstate or "").startswith("08"):
        return "conn_error"
    return "error"
