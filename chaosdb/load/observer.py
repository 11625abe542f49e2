"""The run's watcher of the database: what the database says about itself, beside the transactions.

While the load runs, one thread per source (Patroni, etcd, PD, the TiKV stores: whatever the configuration names,
:func:`chaosdb.core.adapters.watched_sources`) asks the database's own view every ``every_s`` seconds and appends
the changes (:func:`chaosdb.core.dbevents.changes`: leader lost or elected, timeline or term changed, a member
leaving or rejoining, replicas caught up or behind, the source not answering) to ``events.jsonl`` in the samples
folder, so that a report can be rebuilt from that folder alone. An event happened between its ``since_ts`` and its
``ts`` (the previous and this answer): the resolution is one interval plus the time an answer takes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from chaosdb.core.adapters import DatabaseAdapter, load_adapter, watched_sources
from chaosdb.core.dbevents import EVENTS_FILE, View, carry, changes
from chaosdb.core.errors import ChaosDBError

__all__ = ["Observer", "chosen_sources", "read_events"]

logger = logging.getLogger("chaostoolkit")


def chosen_sources(observe: str, configuration: dict[str, Any] | None) -> list[tuple[DatabaseAdapter, str]]:
    """``auto``: every source the configuration names; ``none`` (or empty): nothing; else a comma-separated list
    of ``adapter:source`` or ``source`` names (``patroni``, ``etcd``, ``tikv:pd``), each checked now."""
    text = str(observe or "").strip()
    if text in ("", "none"):
        return []
    if text == "auto":
        return watched_sources(configuration)
    found = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, source = item.rpartition(":")
        candidates = [load_adapter(name)] if name else [a for a, _ in watched_sources(configuration)]
        adapter = next((a for a in candidates if source in a.sources(dict(configuration or {}))), None)
        if adapter is None:
            known = ", ".join(f"{a.name}:{s}" for a, s in watched_sources(configuration)) or "none"
            raise ChaosDBError(f"observe: the configuration names no {item!r} to watch (it names: {known})")
        found.append((adapter, source))
    return found


class Observer:
    """Threads that watch the chosen sources and write their changes to ``<samples_dir>/events.jsonl``."""

    def __init__(self, samples_dir: Path | str, sources: list[tuple[DatabaseAdapter, str]],
                 configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, every_s: float = 0.5) -> None:
        self.path = Path(samples_dir) / EVENTS_FILE
        self.sources = sources
        self.configuration, self.secrets = dict(configuration or {}), secrets
        self.every_s = max(0.1, float(every_s))
        self.count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """A watching thread per source."""
        for adapter, source in self.sources:
            th = threading.Thread(target=self._watch, args=(adapter, source), name=f"chaosdb-observe-{source}",
                                  daemon=True)
            th.start()
            self._threads.append(th)

    def stop(self) -> dict[str, Any]:
        """Stop watching; what was watched, where the events are and how many there were."""
        self._stop.set()
        for th in self._threads:
            th.join(timeout=10)
        return {"file": str(self.path), "sources": [f"{a.name}:{s}" for a, s in self.sources], "events": self.count,
                "every_s": self.every_s}

    def _write(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        with self._lock, open(self.path, "a") as fh:
            for e in events:
                fh.write(json.dumps(e, default=str) + "\n")
            self.count += len(events)

    def _watch(self, adapter: DatabaseAdapter, source: str) -> None:
        previous: View | None = None
        answered_ts: float | None = None
        failing: str | None = None
        while not self._stop.is_set():
            asked = time.time()
            try:
                view = adapter.view(source, self.configuration, self.secrets)
            except Exception as exc:  # noqa: BLE001 - a watcher never stops the run; it says what failed
                now = time.time()
                if failing is None:
                    failing = str(exc)[:300]
                    self._write([{"ts": round(now, 3), "since_ts": round(answered_ts or asked, 3), "source": source,
                                  "event": "unreachable", "error": failing}])
            else:
                now = time.time()
                view = carry(previous, view)
                events = changes(previous, view, answered_ts, now)
                if failing is not None:
                    events.insert(0, {"ts": round(now, 3), "since_ts": round(asked, 3), "source": source,
                                      "event": "reachable"})
                    failing = None
                self._write(events)
                previous, answered_ts = view, now
            self._stop.wait(max(0.0, self.every_s - (time.time() - asked)))


def read_events(location: Path | str) -> list[dict[str, Any]]:
    """The events of a run's samples folder (or of an ``events.jsonl`` file), in time order; none when the run
    watched nothing. A line cut short by a crash is left out."""
    path = Path(location)
    path = path / EVENTS_FILE if path.is_dir() else path
    if path.name != EVENTS_FILE or not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("ts"), (int, float)):
            out.append(item)
    return sorted(out, key=lambda e: e["ts"])
