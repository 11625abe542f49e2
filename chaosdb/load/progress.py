"""The load's progress in the run's log: a line every few seconds with the run's phase, the time since the load
started, and the last seconds' tx/s, p99 and errors; a lost worker said once. While the load is paused on
purpose (the replica-convergence check stops it so that the replicas can catch up), the line says so instead of
"no transactions", and a line whose seconds were partly paused says how many."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from chaosdb.load import window as w
from chaosdb.load.distributed import lost_workers, read_workers
from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import read_recent

__all__ = ["Progress"]


class Progress:
    """A line every few seconds: phase, elapsed time, and the last seconds' tx/s, p99 and errors."""

    def __init__(self) -> None:
        self.phase = ""
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: pauses on purpose: [why, start, end (None while it lasts)]
        self._pauses: list[list[Any]] = []

    def paused(self, why: str) -> None:
        """The load is paused on purpose from now on, for *why* (``the integrity check``)."""
        self._pauses = [*self._pauses[-9:], [why, time.time(), None]]

    def resumed(self) -> None:
        """The pause :meth:`paused` began is over."""
        for pause in self._pauses:
            if pause[2] is None:
                pause[2] = time.time()

    def pause_note(self, start: float, end: float, now: float) -> tuple[bool, str]:
        """(paused now?, what the line says about the pauses between *start* and *end*): ``load paused for the
        integrity check (12 s so far)`` while one lasts, else ``paused 3 of these 5 s for the integrity check``, else
        nothing."""
        for why, since, until in reversed(self._pauses):
            if until is None:
                return True, f"load paused for {why} ({now - since:.0f} s so far)"
        overlap = {why: min(end, until) - max(start, since) for why, since, until in self._pauses
                   if min(end, until) > max(start, since)}
        if not overlap:
            return False, ""
        why = max(overlap, key=lambda k: overlap[k])
        return False, f"(paused {sum(overlap.values()):.0f} of these {end - start:.0f} s for {why})"

    def start(self, samples_dir: Path, every_s: float) -> None:
        """A line every *every_s* seconds from the samples in *samples_dir* (none when *every_s* is 0)."""
        if every_s <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._t0 = time.time()
        self._thread = threading.Thread(target=self._run, args=(samples_dir, every_s), name="chaosdb-progress",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No more lines."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._thread = None

    def _run(self, samples_dir: Path, every_s: float) -> None:
        log = logging.getLogger("chaostoolkit")
        told: set[str] = set()
        while not self._stop.wait(every_s):
            now = time.time()
            for gone in lost_workers(read_workers(samples_dir)):  # master/worker mode only
                if gone["id"] not in told:
                    told.add(gone["id"])
                    log.warning("[load] worker %s (index %s) %s %.0f s ago: its users stopped; transactions it ran "
                                "after its last batch of samples are missing", gone["id"], gone.get("index"),
                                "was lost (no heartbeat)" if gone["gone"] == "lost" else "quit",
                                now - float(gone.get("gone_ts") or now))
            bounds = w.window_bounds(now, every_s, lag_s=1.5)
            paused, note = self.pause_note(bounds.start, bounds.end, now)
            rows = [] if paused else w.select(read_recent(samples_dir, bounds.start), bounds)
            if paused:
                line = note
            elif rows:
                ok = [s for s in rows if is_success(s.outcome)]
                p99 = f"{w.latency_percentile(rows, 99):.0f} ms" if ok else "-"
                line = (f"{len(ok) / bounds.seconds:7.1f} tx/s  p99 {p99:>8}  errors "
                        f"{w.error_rate(rows) * 100:5.1f} %" + (f"  {note}" if note else ""))
            else:
                line = f"no transactions in the last seconds {note}" if note else "no transactions in the last seconds"
            log.info("[load] %5.0fs  %-40s %s", now - self._t0, self.phase[:40], line)

