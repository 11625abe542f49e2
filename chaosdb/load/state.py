"""The load running in this process (shared by the control, the live probes and the pause helpers): the load's part
of the run context (:class:`chaosdb.experiment.context.LoadRun`), read and written through these functions."""

from __future__ import annotations

import subprocess
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.experiment.context import LoadRun, active_run, run_context
from chaosdb.load.progress import Progress

__all__ = ["current", "process", "workers", "set_current", "watch", "take_observer", "progress", "stop_progress", "samples_dir_for", "pause_group"]


def _load() -> LoadRun:
    """The load of the run in progress (an empty one between runs: nothing is created by reading)."""
    ctx = active_run()
    return ctx.load if ctx is not None else LoadRun()


def set_current(record: dict[str, Any], proc: subprocess.Popen | None,
                workers: list[subprocess.Popen] | None = None) -> None:
    """The running load: its record, its (master) process and the worker processes started with it."""
    ctx = run_context()
    ctx.load = LoadRun(record, proc, list(workers or []), progress=ctx.load.progress)
    if record.get("samples_dir"):
        ctx.output_folders["samples"] = str(record["samples_dir"])


def progress() -> Progress:
    """The progress lines of the run's load and the run's phase (the run's context is made when there is none: the
    load control's hooks say the phase)."""
    load = run_context().load
    if load.progress is None:
        load.progress = Progress()
    return load.progress


def stop_progress() -> None:
    """No more progress lines (nothing is made when none were written)."""
    if _load().progress is not None:
        _load().progress.stop()


def watch(observer: Any) -> None:
    """Start *observer* (:class:`chaosdb.load.observer.Observer`), the watcher of the running load's database."""
    _load().observer = observer
    observer.start()


def take_observer() -> Any:
    """The watcher of the running load's database, handed over once to whoever stops it (None: none)."""
    load = _load()
    observer, load.observer = load.observer, None
    return observer


def workers() -> list[subprocess.Popen]:
    """Worker processes the control started on this machine (master/worker mode), else none."""
    return _load().workers


def pause_group() -> list[int]:
    """Process group ids that pausing the load must stop: the load and the workers started here. Workers on
    other machines cannot be paused (``remote_workers`` in the settings says how many there are)."""
    load = _load()
    procs = [p for p in [load.process, *load.workers] if p is not None and p.poll() is None]
    return [p.pid for p in procs]


def current() -> dict[str, Any]:
    """The record of this process's load (settings, times, the actions seen), empty when none ran."""
    return _load().record


def process() -> subprocess.Popen | None:
    """The Locust process of this process's load, None when none runs."""
    return _load().process


def samples_dir_for(samples: str = "", configuration: dict[str, Any] | None = None) -> str:
    """Where live probes read samples: argument, configuration ``chaosdb_samples_dir``, the running load."""

    if samples:
        return samples
    if configuration and configuration.get("chaosdb_samples_dir"):
        return str(configuration["chaosdb_samples_dir"])
    record = current()
    if record.get("samples_dir"):
        return str(record["samples_dir"])
    raise ChaosDBError("no samples to read: run the load with the chaosdb.load.control control, or set "
                       "configuration 'chaosdb_samples_dir' (or pass 'samples')")
