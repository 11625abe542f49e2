"""Processes on this machine as ``/proc`` shows them: command line, state, start time, CPU time, signals,
and which server process listens on an address.

Shared by every local engine and adapter (the embedded cluster, local CockroachDB and TiKV nodes, the fault
engine); nothing here knows a database. Reading another user's ``/proc/PID/cwd`` or ``environ`` needs that
uid or root.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

__all__ = ["read_proc", "argv_of", "proc_state", "start_time", "cmdline", "cpu_time_s", "pid_alive", "same_process",
           "stop_process", "signal_pids", "wait_gone", "pids_under", "listen_addresses", "processes_serving"]

_ADDR_FLAGS = ("--listen-addr", "--advertise-addr", "--addr", "--advertise-host", "--host")
_LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0", ""}


def read_proc(path: str) -> str:
    """The text of a ``/proc`` file ('' when the process is gone or the file unreadable)."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def argv_of(pid: int) -> list[str]:
    """The argument vector of *pid* ([] if gone)."""
    return [a for a in read_proc(f"/proc/{pid}/cmdline").split("\0") if a]


def _stat_fields(pid: int) -> list[str]:
    """Fields of ``/proc/PID/stat`` from the state on (comm may hold spaces and parens: cut at the last ')')."""
    stat = read_proc(f"/proc/{pid}/stat")
    idx = stat.rfind(")")
    return stat[idx + 2:].split() if idx != -1 else []


def proc_state(pid: int) -> str:
    """The state letter of *pid* (R, S, D, T, Z ...), ``?`` when it is gone."""
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
    return read_proc(f"/proc/{pid}/cmdline").replace("\0", " ")



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
    state = proc_state(pid)
    return state not in ("?", "Z", "X")



def same_process(entry: dict[str, Any]) -> bool:
    """Whether ``{"pid", "start"}`` (a pid and its start time, as recorded) is still that very process."""
    pid = int(entry.get("pid", 0))
    return pid > 0 and bool(entry.get("start")) and start_time(pid) == entry.get("start")


def stop_process(entry: dict[str, Any], timeout: float = 3.0) -> bool:
    """SIGTERM the recorded process ``{"pid", "start"}``, SIGKILL after *timeout*; False when it was already gone
    (or is this process)."""
    if not same_process(entry) or int(entry["pid"]) == os.getpid():
        return False
    pid = int(entry["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and same_process(entry):
        time.sleep(0.02)
    if same_process(entry):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return True


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


def pids_under(directory: str | os.PathLike[str]) -> list[int]:
    """Every live process (not this one, no zombie) whose working directory is *directory* or below it, sorted.

    Servers started with their own folder as cwd are found this way after orphaning and pid reuse, with no
    bookkeeping."""
    root = os.path.realpath(directory)
    me = os.getpid()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        try:
            cwd = os.path.realpath(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if (cwd == root or cwd.startswith(root + os.sep)) and proc_state(pid) not in ("Z", "X", "?"):
            found.append(pid)
    return sorted(found)


def _norm(addr: str, default_port: str = "26257") -> tuple[str, str]:
    addr = addr.strip()
    if addr.startswith("["):
        host, _, port = addr[1:].partition("]")
        port = port.lstrip(":")
    elif addr.count(":") == 1:
        host, port = addr.split(":")
    else:
        host, port = addr, ""
    host = "127.0.0.1" if host in _LOCAL else host
    return host, port or default_port


def listen_addresses(argv: list[str]) -> set[tuple[str, str]]:
    """Addresses a server's argv listens on or advertises (its ``--listen-addr``, ``--advertise-addr``, ``--addr``,
    ``--advertise-host``, ``--host`` and ``--port`` flags), as (host, port)."""
    vals: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        for flag in (*_ADDR_FLAGS, "--port"):
            if a == flag and i + 1 < len(argv):
                vals[flag] = argv[i + 1]
                i += 1
            elif a.startswith(flag + "="):
                vals[flag] = a.split("=", 1)[1]
        i += 1
    port = vals.get("--port", "26257")
    return {_norm(vals[f], port) for f in _ADDR_FLAGS if f in vals}


def processes_serving(address: str, is_server: Callable[[list[str]], bool]) -> list[int]:
    """Live processes (not this one) whose argv *is_server* accepts and whose address flags name *address*
    (host:port; ``localhost`` and ``0.0.0.0`` count as ``127.0.0.1``)."""
    want = _norm(address)
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        argv = argv_of(pid)
        if argv and is_server(argv) and want in listen_addresses(argv) and pid_alive(pid):
            out.append(pid)
    return sorted(out)
