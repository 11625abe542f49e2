"""A fault's life, whichever engine made it: its record written before anything changes, the changes added to it
by the engine, a detached reverter for a timed fault, and ``revert`` working from the record alone, in any process,
any number of times (with what the fault did: packets matched, limit hits). What undoes each part is the engine's
revert handler (:mod:`chaosdb.core.faultrecords.handlers`); the kinds of faults are in their engines."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from chaosdb.core.detach import spawn_detached
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.handlers import revert_handlers
from chaosdb.core.faultrecords.records import FaultRecord, RunScope, faults_dir, load_records, same_cluster
from chaosdb.core.processes import start_time as process_start_time
from chaosdb.core.processes import stop_process

__all__ = ["REVERTER_MODULE", "checked_duration", "inject", "spawn_helper", "fault_stats", "revert", "revert_all",
           "keep_timer_result", "take_timer_results"]

#: the detached reverter of a timed fault (``python -m``)
REVERTER_MODULE = "chaosdb.core.faultrecords.reverter"


def spawn_helper(argv: list[str], pass_fds: tuple[int, ...] = ()) -> dict[str, Any]:
    """Start *argv* detached, as a helper (a reverter, a delay proxy) that outlives this process and finds the same
    fault records; what a record keeps of it (``pid`` and ``start``, so that only that very process is stopped)."""
    pid = spawn_detached(argv, {"CHAOSDB_FAULTS_DIR": str(faults_dir())}, pass_fds)
    return {"pid": pid, "start": process_start_time(pid)}


def _schedule(rec: FaultRecord, duration_s: float) -> None:
    if duration_s and duration_s > 0:
        rec.deadline = rec.created + float(duration_s)
        rec.reverter = spawn_helper([sys.executable, "-m", REVERTER_MODULE, "--fault-id", rec.id,
                                     "--at", f"{rec.deadline:.3f}"])
        rec.save()


def checked_duration(duration_s: float) -> float:
    """``duration_s`` as seconds (0 = until rolled back); a negative or non-numeric value is refused."""
    try:
        d = float(duration_s or 0)
    except (TypeError, ValueError):
        raise ChaosDBError(f"duration_s must be a number of seconds, got {duration_s!r}") from None
    if d < 0:
        raise ChaosDBError(f"duration_s must be >= 0 (0 = until rolled back), got {d}")
    return d


def inject(rec: FaultRecord, steps: Callable[[FaultRecord], None], duration_s: float) -> FaultRecord:
    """Save *rec* before anything changes, run *steps* (which add what they change to the record), then schedule
    the detached reverter for a timed fault; any failure reverts what the steps did."""
    rec.save()
    try:
        steps(rec)
        _schedule(rec, duration_s)
    except BaseException:
        revert(rec)
        raise
    return rec


def fault_stats(rec: FaultRecord) -> dict[str, Any]:
    """What the fault did so far, as each engine's handler tells it: cgroup counters, packets dropped, bytes
    shaped."""
    stats: dict[str, Any] = {}
    for handler in revert_handlers():
        stats.update(handler.stats(rec))
    return stats


def revert(rec: FaultRecord) -> dict[str, Any]:
    """Undo everything *rec* lists, each engine's part by its handler (idempotent); delete the record; return what
    was undone."""
    out: dict[str, Any] = {"id": rec.id, "kind": rec.kind, "targets": [t.get("name") for t in rec.targets]}
    errors: list[str] = []
    try:
        out["stats"] = fault_stats(rec)
    except Exception as exc:  # stats are a courtesy; reverting is the job
        out["stats"] = {"error": str(exc)}
    for handler in revert_handlers():
        errors += handler.revert(rec, out)
    if rec.reverter:
        stop_process(rec.reverter)
    if errors:
        rec.notes.append("revert errors: " + "; ".join(errors))
        rec.save()
        raise ChaosDBError(f"fault {rec.id} ({rec.kind}) could not be fully reverted: " + "; ".join(errors)
                           + ". Run 'chaosdb faults cleanup'")
    rec.delete()
    out["reverted_at"] = round(time.time(), 3)
    return out


def _timer_dir() -> Path:
    return faults_dir() / "reverted"


def keep_timer_result(done: dict[str, Any], rec: FaultRecord | None = None) -> None:
    """Keep what a timed fault did when its detached reverter ended it: the next ``revert_faults``
    (the experiment's rollback) of the run that made it, or of its cluster, returns it, so the journal has the
    numbers."""
    d = _timer_dir()
    d.mkdir(parents=True, exist_ok=True)
    owner = {"owner_pid": rec.owner_pid, "owner_start": rec.owner_start, "cluster_dir": rec.cluster_dir} if rec \
        else {}
    (d / f"{done['id']}.json").write_text(json.dumps({**done, "reverted_by": "timer", "_owner": owner}) + "\n")


def take_timer_results(kinds: set[str] | None = None, targets: set[str] | None = None,
                       scope: RunScope | None = None) -> list[dict]:
    """The results detached timers wrote when they reverted faults (of *kinds*, on *targets*, of this run's *scope*),
    removed as they are taken, so a rollback can say the timer already did it."""
    out = []
    d = _timer_dir()
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            entry = json.loads(p.read_text())
        except (OSError, ValueError):
            p.unlink(missing_ok=True)
            continue
        if kinds and entry.get("kind") not in kinds:
            continue
        if targets and not targets & set(entry.get("targets") or []):
            continue
        owner = entry.pop("_owner", None) or {}
        if scope is not None and not scope.all_clusters and owner and not (
                scope.owns(owner.get("owner_pid", 0), owner.get("owner_start", 0))
                or same_cluster(owner.get("cluster_dir", ""), scope.cluster_dir)):
            continue  # another run's or another cluster's: its own rollback reports it
        out.append(entry)
        p.unlink(missing_ok=True)
    return out


def revert_all(kinds: Iterable[str] = (), owner_pid: int | None = None, targets: Iterable[str] = (),
               include_timed: bool = False, scope: RunScope | None = None) -> list[dict]:
    """Revert the matching active faults (with *scope*, only those it matches: this run's and its cluster's
    orphans); with *include_timed* also return (once) the results of faults their timers already reverted."""
    kinds, targets = set(kinds), set(targets)
    done = []
    for rec in load_records():
        if kinds and rec.kind not in kinds:
            continue
        if owner_pid is not None and rec.owner_pid != owner_pid:
            continue
        if scope is not None and not scope.matches(rec):
            continue
        if targets and not targets & {t.get("name") for t in rec.targets}:
            continue
        done.append(revert(rec))
    if include_timed:
        done += take_timer_results(kinds, targets, scope)
    return done
