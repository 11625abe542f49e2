"""Finding and signalling the processes of one embedded-cluster node.

A node's processes are recognised by their working directory: etcd and Patroni
are started with the node directory as cwd, and PostgreSQL (postmaster and every
backend) ``chdir``s into its data directory, which lies below it. This survives
orphaning and pid reuse and needs no bookkeeping, so any fresh process (a
rollback after a crash, ``chaosdb faults cleanup``) finds the same processes.
Reading another process's working directory needs the same uid or root, which is what starts them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from chaosdb.core.processes import (
    argv_of,
    cmdline,
    cpu_time_s,
    cwd_of,
    pid_alive,
    pids_under,
    pids_under_each,
    proc_state,
    read_proc,
    signal_pids,
    start_time,
    wait_gone,
)

__all__ = ["NodeProcess", "node_processes", "nodes_processes", "postmaster_pid", "signal_pids", "wait_gone", "pid_alive", "cmdline",
           "start_time", "cpu_time_s"]


@dataclass
class NodeProcess:
    pid: int
    kind: str  # etcd | patroni | postgres | postmaster | other
    state: str  # R S D T Z ..., as ps shows it

    def as_dict(self) -> dict[str, object]:
        """The process as JSON: pid, kind, state."""
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
    cwd = cwd_of(pid)
    if cwd is not None and pid_alive(pid) and cwd == os.path.realpath(data_dir):
        return pid
    return None


def _kind(pid: int, argv: list[str], pm: int | None) -> str:
    """What a node's process is, from its argument vector (a backend's is its title, ``postgres: ...``)."""
    if pm is not None and pid == pm:
        return "postmaster"
    argv0 = os.path.basename(argv[0]) if argv else ""
    if argv0.startswith("python") and any("patroni" in a for a in argv):
        return "patroni"
    if argv0 == "etcd":
        return "etcd"
    if argv0 == "postgres" or (argv and argv[0].startswith("postgres")):
        return "postgres"
    return "other"


def node_processes(node_dir: Path, data_dir: Path | None = None, pids: list[int] | None = None) -> list[NodeProcess]:
    """Every live process whose cwd is *node_dir* or below it, classified (*pids*: those processes, when the caller
    listed several nodes' at once with :func:`nodes_processes`)."""
    data_dir = Path(data_dir) if data_dir else Path(node_dir) / "data"
    pm = postmaster_pid(data_dir)
    found = []
    for pid in pids_under(node_dir) if pids is None else pids:
        state = proc_state(pid)
        if state in ("Z", "X", "?"):
            continue
        found.append(NodeProcess(pid, _kind(pid, argv_of(pid), pm), state))
    return found


def nodes_processes(nodes: list[tuple[str, Path, Path]]) -> dict[str, list[NodeProcess]]:
    """:func:`node_processes` of several ``(name, node_dir, data_dir)`` with one pass over this machine's processes.
    """
    under = pids_under_each([d for _, d, _ in nodes])
    return {name: node_processes(d, data, under[os.fspath(d)]) for name, d, data in nodes}


