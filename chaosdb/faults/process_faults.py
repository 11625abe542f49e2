"""Process faults of the host engine: a target's processes signalled (a crash, SIGKILL; a graceful stop, SIGTERM;
nothing to revert: the database, its supervisor or a restart action brings them back), or stopped (SIGSTOP: they
keep their sockets and answer nothing) and continued (SIGCONT) when the fault is reverted, by its rollback, its timer
or the faults control. Each stopped process is recorded with its start time before it is signalled, so a revert
never continues a later process that got the same pid."""

from __future__ import annotations

import signal
import time
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.lifecycle import checked_duration, inject
from chaosdb.core.faultrecords.records import FaultRecord, new_record
from chaosdb.core.processes import signal_pids, start_time, wait_gone
from chaosdb.faults.targets import ProcessGroup

__all__ = ["inject_suspend", "signal_processes"]


def inject_suspend(groups: list[ProcessGroup], duration_s: float = 0, cluster_dir: str = "",
                   params: dict | None = None) -> FaultRecord:
    """Stop every process of each target (processes forked while they are listed are stopped too); with
    *duration_s* > 0 a detached timer continues them then, even when the run that stopped them is gone."""
    duration_s = checked_duration(duration_s)
    if not groups:
        raise ChaosDBError("no target to suspend")
    empty = [g.target.get("name") for g in groups if not g.pids()]
    if empty:
        raise ChaosDBError(f"target(s) {', '.join(map(str, empty))} have no running process to suspend: start them "
                           "first (cluster up / restart_nodes)")
    rec = new_record("suspend", targets=[g.target for g in groups], params=dict(params or {}),
                     cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        for g in groups:
            done: set[int] = set()
            for _ in range(4):  # a process forked while the others are stopped is found by the next listing
                pids = [p for p in g.pids() if p not in done]
                if not pids:
                    break
                rec.stopped += [{"pid": p, "start": start_time(p), "target": g.target["name"]} for p in pids]
                rec.save()  # recorded before it is signalled: a revert from any process finds it
                done.update(signal_pids(pids, signal.SIGSTOP))

    return inject(rec, steps, duration_s)


def signal_processes(groups: list[ProcessGroup], sig: signal.Signals, wait_s: float = 0) -> dict[str, Any]:
    """Send *sig* to every process of each target at once (listed first: a target with none is refused before any
    is signalled); with *wait_s* > 0 wait up to that long for them to exit. Returns the pids signalled per target,
    those still alive at the deadline and how long the wait took."""
    if not groups:
        raise ChaosDBError("no target to signal")
    listed = {str(g.target.get("name")): g.pids() for g in groups}
    empty = [name for name, pids in listed.items() if not pids]
    if empty:
        raise ChaosDBError(f"target(s) {', '.join(empty)} have no running process to signal: start them first "
                           "(cluster up / restart_nodes)")
    t0 = time.monotonic()
    signalled = {name: signal_pids(pids, sig) for name, pids in listed.items()}
    survivors = wait_gone([p for pids in signalled.values() for p in pids], wait_s) if wait_s > 0 else []
    return {"signalled": signalled, "survivors": survivors, "exited": not survivors if wait_s > 0 else None,
            "exit_wait_s": round(time.monotonic() - t0, 3) if wait_s > 0 else None}
