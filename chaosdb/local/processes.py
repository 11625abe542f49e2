"""Finding and signalling the processes of one embedded-cluster node.

A node's processes are recognised by their working directory: etcd and Patroni
are started with the node directory as cwd, and PostgreSQL (postmaster and every
backend) ``chdir``s into its data directory, which lies below it. This survives
orphaning and pid reuse and needs no bookkeeping, so any fresh process (a
rollback after a crash, ``chaosdb local cleanup``) finds the same processes.
Reading ``/proc/PID/cwd`` needs the same uid or root, which is what starts them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NodeProcess", "node_processes", "postmaster_pid", "signal_pids", "wait_gone", "pid_alive", "cmdline",
           "start_time", "cpu_time_s"]


@dataclass
class NodeProcess:
    pid: int
    kind: str  # etcd | patroni | postgres | postmaster | other
    state: str  # R S D T Z ... from /proc/PID/stat

    def as_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "kind": self.kind, "state": self.state}


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _stat_fields(pid: int) -> list[str]:
    """Fields of ``/proc/PID/stat`` from the state on (comm may hold spaces and parens: cut at the last ')')."""
    stat = _read(f"/proc/{pid}/stat")
    idx = stat.rfind(")")
    return stat[idx + 2:].split() if idx != -1 else []


def _proc_state(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[0] if fields else "?"


def start_time(pid: int) -> int:
    """Start time of *pid* in clock ticks since boot (0 if gone): tells a process from a later one with its pid."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return 0


def cmdline(pid: int) -> str:
    """The command line of *pid*, arguments joined by spaces ('' if gone)."""
    return _read(f"/proc/{pid}/cmdline").replace("\0", " ")


def cpu_time_s(pids: list[int]) -> float:
    """utime + stime of *pids* (and their reaped children) in seconds."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if len(fields) >= 15:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    state = _proc_state(pid)
    return state not in ("?", "Z", "X")


def postmaster_pid(data_dir: Path) -> int | None:
    """Pid from ``postmaster.pid`` when that process is alive and runs in *data_dir*."""
    text = _read(str(Path(data_dir) / "postmaster.pid"))
    if not text:
        return None
    try:
        pid = int(text.splitlines()[0])
    except (ValueError, IndexError):
        return None
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    if pid_alive(pid) and os.path.realpath(cwd) == os.path.realpath(data_dir):
        return pid
    return None


def _kind(pid: int, cmdline: str, pm: int | None) -> str:
    if pm is not None and pid == pm:
        return "postmaster"
    argv0 = os.path.basename(cmdline.split("\0", 1)[0]) if cmdline else ""
    if "patroni" in cmdline and argv0.startswith("python"):
        return "patroni"
    if argv0 == "etcd":
        return "etcd"
    if cmdline.startswith("postgres") or "/postgres\0" in cmdline or argv0 == "postgres":
        return "postgres"
    return "other"


def node_processes(node_dir: Path, data_dir: Path | None = None) -> list[NodeProcess]:
    """Every live process whose cwd is *node_dir* or below it, classified."""
    root = os.path.realpath(node_dir)
    data_dir = Path(data_dir) if data_dir else Path(node_dir) / "data"
    pm = postmaster_pid(data_dir)
    found: list[NodeProcess] = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == me:
            continue
        try:
            cwd = os.path.realpath(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if cwd != root and not cwd.startswith(root + os.sep):
            continue
        state = _proc_state(pid)
        if state in ("Z", "X", "?"):
            continue
        cmd = _read(f"/proc/{pid}/cmdline")
        found.append(NodeProcess(pid, _kind(pid, cmd, pm), state))
    return sorted(found, key=lambda p: p.pid)


def signal_pids(pids: list[int], sig: int) -> list[int]:
    """Send *sig* to each pid; return those that received it."""
    sent = []
    for pid in pids:
        try:
            os.kill(pid, sig)
            sent.append(pid)
        except ProcessLookupError:
            continue
    return sent


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until none of *pids* is alive; return those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if pid_alive(p)]
    return alive

