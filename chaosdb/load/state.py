"""The load running in this process (shared by the control, the live probes and the pause helpers)."""

from __future__ import annotations

import subprocess
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["current", "process", "workers", "set_current", "samples_dir_for", "pause_group"]

_record: dict[str, Any] = {}
_proc: subprocess.Popen | None = None
_workers: list[subprocess.Popen] = []


def set_current(record: dict[str, Any], proc: subprocess.Popen | None,
                workers: list[subprocess.Popen] | None = None) -> None:
    """The running load: its record, its (master) process and the worker processes started with it."""
    global _record, _proc, _workers
    _record, _proc, _workers = record, proc, list(workers or [])


def workers() -> list[subprocess.Popen]:
    """Worker processes the control started on this machine (master/worker mode), else none."""
    return _workers


def pause_group() -> list[int]:
    """Process group ids that pausing the load must stop: the load and the workers started here. Workers on
    other machines cannot be paused (``remote_workers`` in the settings says how many there are)."""
    procs = [p for p in [_proc, *_workers] if p is not None and p.poll() is None]
    return [p.pid for p in procs]


def current() -> dict[str, Any]:
    """The record of this process's load (settings, times, the actions seen), empty when none ran."""
    return _record


def process() -> subprocess.Popen | None:
    """The Locust process of this process's load, None when none runs."""
    return _proc


def samples_dir_for(samples: str = "", configuration: dict[str, Any] | None = None) -> str:
    """Where live probes read samples: argument, configuration ``chaosdb_samples_dir``, the running load."""

    if samples:
        return samples
    if configuration and configuration.get("chaosdb_samples_dir"):
        return str(configuration["chaosdb_samples_dir"])
    if _record.get("samples_dir"):
        return str(_record["samples_dir"])
    raise ChaosDBError("no samples to read: run the load with the chaosdb.load.control control, or set "
                       "configuration 'chaosdb_samples_dir' (or pass 'samples')")
