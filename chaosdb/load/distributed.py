"""Locust's master/worker mode for the pack's load: every worker's samples reach the master, and the master
keeps a record of its workers.

Workers may run on other machines, so they do not write samples files of their own: each worker ships its
samples to the master as a Locust custom message (``chaosdb_samples``) about twice a second and when its
users stop, and the master appends them to ``samples-<worker>.csv`` in its own samples directory. The load
control, the probes and the reporter read that directory as in single-process mode.

The master also writes ``workers.json`` there: for each worker that ever connected, its Locust id and index,
when it connected, its last state, the samples received, the last batch's time, and when and how it left
(``lost``: it stopped sending heartbeats, Locust's ``missing``; ``quit``: it said so) and whether that was
before the load was stopped (``mid_run``). A worker lost mid-run is therefore reported by the load control and the report, never silently dropped: its transactions
after its last batch are not in the samples.

Stopping: the control writes ``stop.request`` into the samples directory; the master stops the test, waits
(up to 10 s) until every worker has stopped its users and sent its last samples, and writes ``stopped``; then
the control ends the master. Without it a remote worker's last batch could arrive after the master quit.

Option values reach the workers from the master (Locust forwards them with each spawn message), so a worker
needs only ``--worker --master-host``; its DSN is its own (``CHAOSDB_LOAD_DSN`` on that machine). The master is
never given a DSN, so none travels over the wire.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from chaosdb.workloads.samples import HEADER, SampleBatcher

__all__ = ["SAMPLES_MESSAGE", "WORKERS_FILE", "STOP_REQUEST", "STOPPED", "ShippingWriter", "MasterCollector",
           "read_workers", "lost_workers"]

SAMPLES_MESSAGE = "chaosdb_samples"
WORKERS_FILE = "workers.json"
STOP_REQUEST = "stop.request"
STOPPED = "stopped"


class ShippingWriter(SampleBatcher):
    """The samples writer of a worker in master/worker mode: the same interface as
    :class:`chaosdb.workloads.samples.SampleWriter`, but rows go to the master."""

    def __init__(self, runner: Any, flush_every_s: float = 0.5, flush_rows: int = 2000) -> None:
        super().__init__(flush_every_s, flush_rows)
        self.runner = runner
        self.sent = 0
        self._batch = 0

    def ship(self, lines: list[str]) -> None:
        """Send the lines to the master as one numbered batch."""
        self._batch += 1
        self.runner.send_message(SAMPLES_MESSAGE, {"lines": "".join(lines), "rows": len(lines),
                                                   "batch": self._batch, "sent_ts": time.time()})
        self.sent += len(lines)


def _file_name(worker_id: str, index: int | None) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", worker_id)[-60:]
    return f"samples-m{index if index is not None else 'x'}-{safe}.csv"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


class MasterCollector:
    """On the master: appends each worker's shipped samples to its file and keeps ``workers.json``."""

    def __init__(self, runner: Any, samples_dir: str | Path, poll_s: float = 0.5) -> None:
        self.runner = runner
        self.dir = Path(samples_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.poll_s = poll_s
        self.workers: dict[str, dict[str, Any]] = {}
        self._files: dict[str, Any] = {}
        self._dirty = True
        runner.register_message(SAMPLES_MESSAGE, self.on_samples)

    # -- samples -------------------------------------------------------------------------------
    def _worker(self, worker_id: str) -> dict[str, Any]:
        w = self.workers.get(worker_id)
        if w is None:
            index = self.runner.worker_indexes.get(worker_id) if hasattr(self.runner, "worker_indexes") else None
            w = self.workers[worker_id] = {"id": worker_id, "index": index, "connected_ts": round(time.time(), 6),
                                           "state": "connected", "samples": 0, "batches": 0,
                                           "last_batch_ts": None, "gone_ts": None, "gone": None,
                                           "file": _file_name(worker_id, index)}
            self._dirty = True
        return w

    def on_samples(self, environment: Any, msg: Any, **_kw: Any) -> None:
        """A worker's samples arrived: append them to its own file, note its count and when it was last heard of."""
        w = self._worker(msg.node_id)
        f = self._files.get(msg.node_id)
        if f is None:
            path = self.dir / w["file"]
            new = not path.exists() or path.stat().st_size == 0
            f = self._files[msg.node_id] = open(path, "a", buffering=1 << 16)
            if new:
                f.write(HEADER)
        f.write(msg.data["lines"])
        f.flush()
        w["samples"] += int(msg.data.get("rows") or 0)
        w["batches"] += 1
        w["last_batch_ts"] = round(time.time(), 6)
        self._dirty = True

    # -- workers -------------------------------------------------------------------------------
    def poll(self) -> None:
        """Compare Locust's worker list with the record; called every ``poll_s`` by :meth:`run`."""
        now = round(time.time(), 6)
        present = {c.id: c for c in self.runner.clients.all}
        for wid, node in present.items():
            w = self._worker(wid)
            state = str(node.state)
            if w["state"] != state:
                if state == "missing" and w["gone"] is None:
                    w["missing_since_ts"] = now
                w["state"] = state
                self._dirty = True
        for wid, w in self.workers.items():
            if w["gone"] is not None:
                continue
            if wid not in present or w["state"] == "missing":
                # Locust deletes a worker that quit at once, a missing one (no heartbeat for 3 s) after a minute
                w["gone"] = "lost" if w["state"] == "missing" else "quit"
                w["gone_ts"] = w.get("missing_since_ts") or now
                w["mid_run"] = not self.stop_requested()
                self._dirty = True
        if self._dirty:
            _write_json(self.dir / WORKERS_FILE, {"updated_ts": now, "workers": list(self.workers.values())})
            self._dirty = False

    def stop_requested(self) -> bool:
        """Whether the load control asked the master to stop (its request file exists)."""
        return (self.dir / STOP_REQUEST).exists()

    def drain(self, timeout_s: float = 10.0) -> None:
        """Stop the test and wait until every connected worker stopped its users and sent its last batch."""
        import gevent  # noqa: PLC0415 - needs the load extra (Locust)

        self.runner.stop()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            busy = [c for c in self.runner.clients.all if str(c.state) in ("running", "spawning", "stopping")]
            if not busy:
                break
            gevent.sleep(0.1)
        gevent.sleep(0.3)  # batches sent just before the stopped state
        self.poll()
        self.close()
        (self.dir / STOPPED).write_text(f"{time.time():.6f}\n")

    def run(self) -> None:
        """The master's watch loop (a greenlet): keep ``workers.json`` and answer a stop request."""
        import gevent  # noqa: PLC0415 - needs the load extra (Locust)

        while True:
            self.poll()
            if self.stop_requested() and not (self.dir / STOPPED).exists():
                self.drain()
            gevent.sleep(self.poll_s)

    def close(self) -> None:
        """Close every worker's samples file."""
        for f in self._files.values():
            f.close()
        self._files.clear()


def read_workers(samples_dir: str | Path) -> list[dict[str, Any]]:
    """The master's record of its workers (empty when the load did not run in master/worker mode)."""
    try:
        return list(json.loads((Path(samples_dir) / WORKERS_FILE).read_text()).get("workers") or [])
    except (OSError, ValueError):
        return []


def lost_workers(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The workers that left before the load was stopped: lost (no heartbeat) or quit on their own."""
    return [w for w in workers if w.get("gone") and w.get("mid_run")]
