"""The load running in this process (shared by the control, the live probes and the pause helpers)."""

from __future__ import annotations

import subprocess
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["current", "process", "set_current", "samples_dir_for"]

_record: dict[str, Any] = {}
_proc: subprocess.Popen | None = None


def set_current(record: dict[str, Any], proc: subprocess.Popen | None) -> None:
    global _record, _proc
    _record, _proc = record, proc


def current() -> dict[str, Any]:
    return _record


def process() -> subprocess.Popen | None:
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
