"""A fault's life on this machine: its record written before anything changes, the changes added to it, a
detached reverter for a timed fault, and ``revert`` working from the record alone, in any process, any number of
times (with what the fault did: packets matched, limit hits). The kinds of faults are in their own modules."""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from chaosdb.core.chaosd import recover_entry, remove_leftovers, undo_without_chaosd
from chaosdb.core.detach import spawn_detached
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import same_process, signal_pids, stop_process
from chaosdb.core.processes import start_time as process_start_time
from chaosdb.faults import cgroups, netfilter, traffic
from chaosdb.faults.host import cgroup_host
from chaosdb.faults.records import (
    FaultRecord,
    RunScope,
    faults_dir,
    load_records,
    same_cluster,
)

NETWORK_KINDS = ("partition", "loss", "bursty-loss", "bandwidth", "delay")
FAULT_KINDS = ("cpu", "memory", "suspend", *NETWORK_KINDS)

PROXY_MARK = 0x10000000
#: the engine's detached helpers (``python -m``): delay proxies and reverters, found again by ``residue``
HELPER_MODULES = ("chaosdb.faults.netproxy", "chaosdb.faults.reverter")


@dataclass
class ProcessGroup:
    """A fault target whose processes can be listed again at any moment (new backends appear)."""

    target: dict[str, Any]  # name and details, as recorded
    pids: Callable[[], list[int]]


# ---------------------------------------------------------------------------
# helpers


def spawn_helper(argv: list[str], pass_fds: tuple[int, ...] = ()) -> dict[str, Any]:
    """Start *argv* detached, as a helper (a reverter, a delay proxy) that outlives this process and finds the same
    fault records; what a record keeps of it (``pid`` and ``start``, so that only that very process is stopped)."""
    pid = spawn_detached(argv, {"CHAOSDB_FAULTS_DIR": str(faults_dir())}, pass_fds)
    return {"pid": pid, "start": process_start_time(pid)}


def _schedule(rec: FaultRecord, duration_s: float) -> None:
    if duration_s and duration_s > 0:
        rec.deadline = rec.created + float(duration_s)
        rec.reverter = spawn_helper([sys.executable, "-m", "chaosdb.faults.reverter", "--fault-id", rec.id,
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
    """What the fault did so far: cgroup counters, packets dropped, bytes shaped."""
    stats: dict[str, Any] = {}
    if rec.cgroups:
        host = cgroup_host()
        stats["cgroups"] = {c["target"]: cgroups.group_stats(host, c["controller"], Path(c["path"]))
                            for c in rec.cgroups}
    for ch in rec.chains:
        if ch["table"] == "filter" and ch["parent"] == "INPUT":
            counters = netfilter.chain_counters("filter", ch["chain"])
            stats["packets_matched"] = sum(c["packets"] for c in counters)
    if rec.tc:
        stats["tc"] = [traffic.class_stats(e) for e in rec.tc]
    return stats


def _recover_attack(attack: dict[str, Any]) -> bool:
    """Recover a chaosd attack: by deleting its PhysicalMachineChaos when Chaos Mesh carried it out, else by
    asking chaosd."""
    if attack.get("object"):
        from chaosdb.chaosmesh.physical import recover_object  # noqa: PLC0415 - needs the k8s extra

        return recover_object(attack)
    return recover_entry(attack)


def _continue_stopped(entries: list[dict[str, Any]]) -> dict[str, list[int]]:
    """SIGCONT every recorded stopped process that is still that very process (its start time checked), by target."""
    resumed: dict[str, list[int]] = {}
    for entry in entries:
        if same_process(entry) and signal_pids([int(entry["pid"])], signal.SIGCONT):
            resumed.setdefault(str(entry.get("target")), []).append(int(entry["pid"]))
    return resumed


def revert(rec: FaultRecord) -> dict[str, Any]:
    """Undo everything *rec* lists (idempotent); delete the record; return what was undone."""
    out: dict[str, Any] = {"id": rec.id, "kind": rec.kind, "targets": [t.get("name") for t in rec.targets]}
    errors: list[str] = []
    try:
        out["stats"] = fault_stats(rec)
    except Exception as exc:  # stats are a courtesy; reverting is the job
        out["stats"] = {"error": str(exc)}
    for entry in rec.processes:
        stop_process(entry)
    if rec.stopped:
        out["resumed"] = _continue_stopped(rec.stopped)
    for attack in rec.attacks:
        try:
            attack["recovered_now"] = _recover_attack(attack)
            if attack.get("kind") == "network":
                remove_leftovers(attack["uid"])
        except ChaosDBError as exc:
            undone = undo_without_chaosd(attack)
            if not undone:
                errors.append(f"{exc}; restart the process to end a {attack.get('action')} attack")
                continue
            attack["recovered_now"] = True
            rec.notes.append(f"{exc}: undone here instead ({undone})")
            out.setdefault("notes", []).append(rec.notes[-1])
    if rec.attacks:
        out["attacks"] = [{k: a.get(k) for k in ("uid", "action", "recovered_now")} for a in rec.attacks]
    try:  # hooks, then the chains (helper chains of bursty loss included) in one iptables-restore
        netfilter.remove_chains(rec.chains, rec.id)
    except ChaosDBError as exc:
        errors.append(str(exc))
    for entry in rec.tc:
        try:
            traffic.remove_class(entry)
        except ChaosDBError as exc:
            errors.append(str(exc))
    if rec.cgroups:
        host = cgroup_host()
        for c in rec.cgroups:
            try:
                cgroups.release_group(host, c["controller"], Path(c["path"]), c.get("origin", "/"))
            except ChaosDBError as exc:
                errors.append(str(exc))
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
