"""CPU and memory faults: the target's processes moved into a cgroup of the fault's own with a quota or a limit
(cgroup v1 ``cpu``/``memory`` or v2), and moved back on revert."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.lifecycle import checked_duration, inject
from chaosdb.core.faultrecords.records import FaultRecord, new_record
from chaosdb.faults import cgroups
from chaosdb.faults.host import cgroup_host, require_root
from chaosdb.faults.targets import ProcessGroup


def _move_all(path: Path, group: ProcessGroup, rounds: int = 6) -> list[int]:
    """Move the group's processes in until a listing finds none outside (forks race with us)."""
    inside: set[int] = set()
    for _ in range(rounds):
        pids = [p for p in group.pids() if p not in inside]
        if not pids:
            break
        inside.update(cgroups.move_into(path, pids))
    return sorted(inside)


def _inject_cgroup(kind: str, controller: str, groups: list[ProcessGroup], limit: Callable[[Any, Path], dict],
                   params: dict[str, Any], duration_s: float, cluster_dir: str) -> FaultRecord:
    require_root(f"a {kind} fault")
    host = cgroup_host()
    host.hierarchy(controller)  # raises when the controller is missing
    duration_s = checked_duration(duration_s)
    if not groups:
        raise ChaosDBError(f"no target for the {kind} fault")
    empty = [g.target.get("name") for g in groups if not g.pids()]
    if empty:
        raise ChaosDBError(f"target(s) {', '.join(map(str, empty))} have no running process to limit: "
                           "start them first (cluster up / restart_nodes)")
    rec = new_record(kind, targets=[g.target for g in groups], params=params, cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        for g in groups:
            first = g.pids()[0]
            origin = cgroups.origin_of(host, controller, first)
            path = cgroups.group_path(host, controller, f"{rec.id}-{g.target['name']}")
            rec.cgroups.append({"controller": controller, "path": str(path), "origin": origin,
                                "target": g.target["name"]})
            rec.save()
            cgroups.create_group(host, controller, path.name)
            applied = limit(host, path)
            rec.cgroups[-1]["applied"] = applied
            rec.cgroups[-1]["pids"] = _move_all(path, g)
            rec.save()

    return inject(rec, steps, duration_s)


def inject_cpu_quota(groups: list[ProcessGroup], quota_s: float, period_s: float = 1.0, duration_s: float = 0,
                     cluster_dir: str = "") -> FaultRecord:
    """Each target's processes together get *quota_s* of CPU time per *period_s*."""
    try:
        quota_s, period_s = float(quota_s), float(period_s)
    except (TypeError, ValueError):
        raise ChaosDBError("quota_s and period_s must be numbers of seconds") from None
    if not 0.001 <= period_s <= 1.0:
        raise ChaosDBError(f"period_s must be between 0.001 and 1 s (the kernel's range), got {period_s}")
    if not 0.001 <= quota_s:
        raise ChaosDBError(f"quota_s must be at least 0.001 s, got {quota_s}")
    params = {"quota_s": quota_s, "period_s": period_s, "cpus": round(quota_s / period_s, 4)}
    return _inject_cgroup("cpu", "cpu", groups, lambda h, p: cgroups.set_cpu_quota(h, p, quota_s, period_s),
                          params, duration_s, cluster_dir)


def inject_memory_limit(groups: list[ProcessGroup], limit_mb: float, duration_s: float = 0,
                        cluster_dir: str = "") -> FaultRecord:
    """Each target's processes together may use at most *limit_mb* MiB (no swap)."""
    try:
        limit_mb = float(limit_mb)
    except (TypeError, ValueError):
        raise ChaosDBError(f"limit_mb must be a number of MiB, got {limit_mb!r}") from None
    if limit_mb < 8:
        raise ChaosDBError(f"limit_mb must be at least 8 MiB, got {limit_mb}")
    limit_bytes = int(limit_mb * 1024 * 1024)
    return _inject_cgroup("memory", "memory", groups, lambda h, p: cgroups.set_memory_limit(h, p, limit_bytes),
                          {"limit_mb": limit_mb}, duration_s, cluster_dir)
