"""CPU quota and memory limit for a set of processes, with cgroup v1 or v2.

A fault's group is ``<hierarchy>/chaosdb/<fault id>``. Processes are moved in
(``cgroup.procs``: the whole thread group; children forked later are born
inside), and moved back to the group they came from when the fault is reverted;
then the group is removed. Nothing else of the host's cgroup tree is changed.
"""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any, Iterable

from chaosdb.core.errors import ChaosDBError
from chaosdb.faults.host import CgroupHost

__all__ = ["PARENT", "group_path", "create_group", "set_cpu_quota", "set_memory_limit", "move_into",
           "release_group", "group_stats", "origin_of", "tagged_groups"]

PARENT = "chaosdb"


def group_path(host: CgroupHost, controller: str, fault_id: str) -> Path:
    """The cgroup folder of fault *fault_id* under the engine's parent group of *controller*."""
    return host.hierarchy(controller) / PARENT / fault_id


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def create_group(host: CgroupHost, controller: str, fault_id: str) -> Path:
    """Create fault *fault_id*'s cgroup of *controller* (and the engine's parent group on first use); its folder."""
    parent = host.hierarchy(controller) / PARENT
    if not parent.exists():
        parent.mkdir()
    if host.version == 2:
        # the controller must be enabled on the way down for the leaf to offer its files
        for d in (host.root, parent):
            enabled = _read(d / "cgroup.subtree_control").split()
            if controller not in enabled:
                _write(d / "cgroup.subtree_control", f"+{controller}")
    path = parent / fault_id
    path.mkdir(exist_ok=True)
    return path


def set_cpu_quota(host: CgroupHost, path: Path, quota_s: float, period_s: float) -> dict[str, int]:
    """Limit the group to *quota_s* of CPU per *period_s* (cgroup v1 ``cfs_quota_us``/``cfs_period_us`` or v2
    ``cpu.max``); the values written."""
    period_us = int(round(period_s * 1_000_000))
    quota_us = int(round(quota_s * 1_000_000))
    if host.version == 2:
        _write(path / "cpu.max", f"{quota_us} {period_us}")
    else:
        _write(path / "cpu.cfs_period_us", str(period_us))
        _write(path / "cpu.cfs_quota_us", str(quota_us))
    return {"quota_us": quota_us, "period_us": period_us}


def set_memory_limit(host: CgroupHost, path: Path, limit_bytes: int) -> dict[str, Any]:
    """Cap memory (and swap, so that pressure ends in reclaim or the OOM killer, not in swapping)."""
    applied: dict[str, Any] = {"limit_bytes": limit_bytes}
    if host.version == 2:
        _write(path / "memory.max", str(limit_bytes))
        if (path / "memory.swap.max").exists():
            _write(path / "memory.swap.max", "0")
            applied["swap"] = 0
    else:
        if (path / "memory.move_charge_at_immigrate").exists():
            try:  # move already-charged pages with the process (deprecated on new kernels: best effort)
                _write(path / "memory.move_charge_at_immigrate", "3")
                applied["move_charge"] = True
            except OSError:
                applied["move_charge"] = False
        _write(path / "memory.limit_in_bytes", str(limit_bytes))
        memsw = path / "memory.memsw.limit_in_bytes"
        if memsw.exists():
            _write(memsw, str(limit_bytes))
            applied["swap"] = 0
    return applied


def origin_of(host: CgroupHost, controller: str, pid: int) -> str:
    """The group (relative to the hierarchy) *pid* is in now, from ``/proc/PID/cgroup``."""
    text = _read(Path(f"/proc/{pid}/cgroup"))
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if host.version == 2 and parts[0] == "0":
            return parts[2]
        if host.version == 1 and controller in parts[1].split(","):
            return parts[2]
    return "/"


def move_into(path: Path, pids: Iterable[int]) -> list[int]:
    """Move each process (thread group) into *path*; return the pids moved (gone ones are skipped)."""
    moved = []
    for pid in pids:
        try:
            _write(path / "cgroup.procs", str(pid))
            moved.append(pid)
        except OSError as exc:
            if exc.errno in (errno.ESRCH, errno.ENOENT):
                continue
            raise ChaosDBError(f"could not move pid {pid} into {path}: {exc}") from None
    return moved


def _procs(path: Path) -> list[int]:
    return [int(x) for x in _read(path / "cgroup.procs").split()]


def release_group(host: CgroupHost, controller: str, path: Path, origin: str = "/",
                  timeout: float = 5.0) -> list[int]:
    """Move every process of *path* back to *origin* (or the root when it is gone) and remove the group.

    Returns the pids moved back. Missing groups are fine (idempotent)."""
    if not path.exists():
        return []
    hierarchy = host.hierarchy(controller)
    dest = hierarchy / origin.lstrip("/")
    if not (dest / "cgroup.procs").exists() or dest == path:
        dest = hierarchy
    if controller == "cpu":  # lifted first: a throttled process moved out waits for its period's refill otherwise
        for name, unlimited in (("cpu.max", "max"), ("cpu.cfs_quota_us", "-1")):
            try:
                _write(path / name, unlimited)
            except OSError:
                pass
    moved: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        pids = _procs(path)
        for pid in pids:
            try:
                _write(dest / "cgroup.procs", str(pid))
                moved.append(pid)
            except OSError as exc:
                if exc.errno not in (errno.ESRCH, errno.ENOENT):
                    raise ChaosDBError(f"could not move pid {pid} out of {path}: {exc}") from None
        try:
            path.rmdir()
            break
        except FileNotFoundError:
            break
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise ChaosDBError(f"could not remove cgroup {path}: {exc}") from None
            time.sleep(0.02)  # a process forked while we moved the others, or a dying one
    parent = path.parent
    if parent.name == PARENT:
        try:
            parent.rmdir()  # only when no other fault uses it
        except OSError:
            pass
    return moved


def _kv(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def group_stats(host: CgroupHost, controller: str, path: Path) -> dict[str, Any]:
    """What the limit did so far: CPU throttling, memory usage and OOM kills (plain JSON values)."""
    if not path.exists():
        return {}
    stats: dict[str, Any] = {"processes": len(_procs(path))}
    if controller == "cpu":
        cpu = _kv(_read(path / "cpu.stat"))
        stats["periods"] = cpu.get("nr_periods", 0)
        stats["throttled_periods"] = cpu.get("nr_throttled", 0)
        if host.version == 2:
            stats["throttled_s"] = round(cpu.get("throttled_usec", 0) / 1e6, 3)
            stats["usage_s"] = round(cpu.get("usage_usec", 0) / 1e6, 3)
        else:
            stats["throttled_s"] = round(cpu.get("throttled_time", 0) / 1e9, 3)
    else:
        if host.version == 2:
            events = _kv(_read(path / "memory.events"))
            stats["usage_bytes"] = int(_read(path / "memory.current") or 0)
            peak = _read(path / "memory.peak")
            stats["max_usage_bytes"] = int(peak) if peak.strip().isdigit() else stats["usage_bytes"]
            stats["limit_hits"] = events.get("max", 0)
            stats["oom_events"] = events.get("oom", 0)
            stats["oom_kills"] = events.get("oom_kill", 0)
        else:
            oom = _kv(_read(path / "memory.oom_control"))
            stats["usage_bytes"] = int(_read(path / "memory.usage_in_bytes") or 0)
            stats["max_usage_bytes"] = int(_read(path / "memory.max_usage_in_bytes") or 0)
            # with swap capped too, the memory+swap counter is the one that hits the limit first
            stats["limit_hits"] = int(_read(path / "memory.failcnt") or 0) + int(
                _read(path / "memory.memsw.failcnt") or 0)
            stats["oom_kills"] = oom.get("oom_kill", 0)
            stats["under_oom"] = bool(oom.get("under_oom", 0))
    return stats


def tagged_groups(host: CgroupHost) -> list[str]:
    """Every fault group on the host (``.../chaosdb/<id>``), whether or not a record knows it."""
    found = []
    for controller in sorted(host.controllers):
        parent = host.hierarchy(controller) / PARENT
        if parent.is_dir():
            found += [str(p) for p in sorted(parent.iterdir()) if p.is_dir()]
            if not any(p.is_dir() for p in parent.iterdir()):
                found.append(str(parent))
    return found
