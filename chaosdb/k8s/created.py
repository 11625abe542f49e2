"""What this process created on Kubernetes (chaos objects, Litmus engines), so that the control can delete
what a run left behind when it ended without its rollbacks (Ctrl-C, SIGTERM from a CronJob deadline, a failed
activity after an injection)."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["remember", "forget", "pending"]

_LOCK = threading.Lock()
_CREATED: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}


def remember(kind: str, name: str, namespace: str, configuration: dict[str, Any] | None,
             secrets: dict[str, Any] | None) -> None:
    """Note an object this run created, so the after-experiment control deletes it if nothing else does."""
    with _LOCK:
        _CREATED[(kind, namespace, name)] = (dict(configuration or {}), dict(secrets or {}))


def forget(kind: str, name: str, namespace: str) -> None:
    """The object was deleted: nothing left to do for it after the run."""
    with _LOCK:
        _CREATED.pop((kind, namespace, name), None)


def pending() -> list[tuple[str, str, str, dict[str, Any], dict[str, Any]]]:
    """(kind, namespace, name, configuration, secrets) of everything created and not deleted yet."""
    with _LOCK:
        return [(k, ns, n, c, s) for (k, ns, n), (c, s) in _CREATED.items()]
