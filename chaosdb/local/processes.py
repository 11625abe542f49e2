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
from dataclasses import dataclass
from pathlib import Path

from chaosdb.core.processes import (
    cmdline,
    cpu_time_s,
    pid_alive,
    pids_under,
    proc_state,
    read_proc,
    signal_pids,
    start_time,
    wait_gone,
)

__all__ = ["NodeProcess", "node_processes", "postmaster_pid", "signal_pids", "wait_gone", "pid_alive", "cmdline",
           "start_time", "cpu_time_s"]


@dataclass
class NodeProcess:
    pid: int
    kind: str  # etcd | patroni | postgres | postmaster | other
    state: str  # R S D T Z ... from /proc/PID/stat

    def as_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "kind": self.kind, "state": self.state}


def postmaster_pid(data_dir: Path) -> int | None:
    """Pid from ``postmaster.pid`` when that process is alive and runs in *data_dir*."""
    text = read_proc(str(Path(data_dir) / "postmaster.pid"))
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
    data_dir = Path(data_dir) if data_dir else Path(node_dir) / "data"
    pm = postmaster_pid(data_dir)
    found = []
    for pid in pids_under(node_dir):
        state = proc_state(pid)
        if state in ("Z", "X", "?"):
            continue
        found.append(NodeProcess(pid, _kind(pid, read_proc(f"/proc/{pid}/cmdline"), pm), state))
    return found


