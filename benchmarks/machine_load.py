"""What the machine was doing while a benchmark measured, and a busy machine on demand.

* :class:`Burners` (``tests/busy.py``'s, which runs the test suite beside them): CPU-bound processes at normal
  priority beside the drivers (``--burners 2``: how a shared CI runner or game-day host feels);
* :class:`MachineWatch`: around one measured run, the machine's load as it was: the 1-minute load average at
  start and end, the mean number of runnable threads (``procs_running``, sampled twice a second), the cores the
  whole machine kept busy (psutil's CPU times), and the cores the burners got;
* :class:`ProcessCpu`: CPU snapshots of one process during its run, for the steady-state figure beside the
  whole-process one (start-up and shutdown left out).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaosdb.core.processes import cpu_time_s  # noqa: E402
from tests.busy import Burners  # noqa: E402

__all__ = ["Burners", "MachineWatch", "ProcessCpu", "machine_busy_s", "tree_cpu_s"]


def machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of all cores since boot (idle and iowait count as idle)."""
    t = psutil.cpu_times()
    total = sum(t)
    return total - t.idle - getattr(t, "iowait", 0.0), total


def _procs_running() -> int:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running"):
                return int(line.split()[1])
    return 0


class MachineWatch:
    """The machine's load during one measured run (a ``with`` block); :meth:`result` after it."""

    def __init__(self, burners: Burners | None = None, interval_s: float = 0.5) -> None:
        self.burners = burners
        self.interval_s = interval_s
        self._runnable: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._result: dict = {}

    def __enter__(self) -> MachineWatch:
        self._t0 = time.monotonic()
        self._load0 = os.getloadavg()[0]
        self._busy0 = machine_busy_s()
        self._burn0 = self.burners.cpu_s() if self.burners else 0.0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._runnable.append(_procs_running())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        elapsed = time.monotonic() - self._t0
        busy1, total1 = machine_busy_s()
        busy, total = busy1 - self._busy0[0], total1 - self._busy0[1]
        cores = os.cpu_count() or 1
        burned = (self.burners.cpu_s() - self._burn0) if self.burners else 0.0
        self._result = {
            "load_avg_1m_start": round(self._load0, 2), "load_avg_1m_end": round(os.getloadavg()[0], 2),
            "runnable_threads_mean": round(sum(self._runnable) / len(self._runnable), 2) if self._runnable else None,
            "machine_busy_cores": round(busy / total * cores, 2) if total else None,
            "burners": len(self.burners.procs) if self.burners else 0,
            "burner_cores": round(burned / elapsed, 2) if elapsed > 0 else None,
        }

    def result(self) -> dict:
        """The load figures of the finished block."""
        return self._result


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of *pid* and of its live descendants (a Locust master and its worker processes)."""
    try:
        pids = [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return 0.0
    return cpu_time_s(pids)


class ProcessCpu:
    """Snapshots of one process tree's CPU seconds (and any other counter given) at chosen moments of its run."""

    def __init__(self, pid: int, *counters) -> None:
        self.pid = pid
        self.counters = counters
        self.snapshots: list[tuple[float, float, tuple]] = []

    def snapshot(self, mark: float | None = None) -> None:
        """Record (mark or now's wall time, the process's CPU seconds, each counter's value)."""
        self.snapshots.append((time.time() if mark is None else mark, tree_cpu_s(self.pid),
                               tuple(c() for c in self.counters)))
