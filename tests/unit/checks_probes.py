"""Probes for tests/unit/test_checks.py: Python providers a checks file names as ``tests.unit.checks_probes``."""

from __future__ import annotations

from typing import Any


def constant(value: Any = True) -> Any:
    """Return *value* as given."""
    return value


def boom(message: str = "the database is on fire") -> Any:
    """Raise with *message*."""
    raise RuntimeError(message)


def leak(secrets: dict[str, Any] = None, configuration: dict[str, Any] = None) -> dict[str, Any]:
    """Return what a careless probe might: the secrets it was given and a sentence quoting one."""
    secrets = secrets or {}
    return {"given": dict(secrets), "note": f"connected with {secrets.get('password')}"}


def leak_and_fail(secrets: dict[str, Any] = None) -> Any:
    """Fail with a message quoting the password it was given."""
    raise RuntimeError(f"login refused for password {(secrets or {}).get('password')}")


def configured(key: str, configuration: dict[str, Any] = None) -> Any:
    """The configuration's value for *key*."""
    return (configuration or {}).get(key)


def is_even(value: Any) -> bool:
    """A tolerance probe: whether the probe's value is even."""
    return value % 2 == 0


def passes_from_call(counter: str, call: int) -> bool:
    """True from the *call*-th call on (the calls counted in the file *counter*): a database coming back."""
    from pathlib import Path

    path = Path(counter)
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count >= call
