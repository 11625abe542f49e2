"""Processes on this machine: command line, state, start time, CPU time, signals, and which server process
listens on an address, through psutil.

Shared by every local engine and adapter (the embedded cluster, local CockroachDB and TiKV nodes, the fault
engine); nothing here knows a database. Reading another user's working directory or environment needs that
uid or root.

Two things are read from ``/proc`` itself: :func:`start_time`, the kernel's start time in clock ticks, which fault
records keep to tell a process from a later one with its pid (psutil offers only seconds derived from it, a float
that depends on the boot time it reads, and records written before must keep matching); and the working-directory
links and owners :func:`pids_under_each` and :func:`uids_of_processes` read (one ``readlink`` or ``stat`` per
process: psutil builds a Process and parses its stat file for each, several times slower, and both are on a
fault's path, where every millisecond counts).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any, Sequence

import psutil

__all__ = ["read_proc", "argv_of", "proc_state", "start_time", "cmdline", "cpu_time_s", "pid_alive", "same_process",
           "stop_process", "signal_pids", "wait_gone", "pids_under", "pids_under_each", "uids_of_processes", "listen_addresses", "processes_serving",
           "cwd_of", "environ_of", "owner_of", "other_processes", "end_groups"]

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
    """The argument vector of *pid* ([] if gone, a kernel thread, or not readable)."""
    try:
        return [a for a in psutil.Process(pid).cmdline() if a]
    except (psutil.Error, OSError, ValueError):
        return []


#: psutil's status -> the state letter ``ps`` and ``/proc/PID/stat`` show
_STATE_LETTERS = {psutil.STATUS_RUNNING: "R", psutil.STATUS_SLEEPING: "S", psutil.STATUS_DISK_SLEEP: "D",
                  psutil.STATUS_STOPPED: "T", psutil.STATUS_TRACING_STOP: "t", psutil.STATUS_ZOMBIE: "Z",
                  psutil.STATUS_DEAD: "X", psutil.STATUS_IDLE: "I", psutil.STATUS_PARKED: "P"}


def proc_state(pid: int) -> str:
    """The state letter of *pid* (R, S, D, T, Z ...), ``?`` when it is gone."""
    try:
        return _STATE_LETTERS.get(psutil.Process(pid).status(), "?")
    except (psutil.Error, OSError, ValueError):
        return "?"


def start_time(pid: int) -> int:
    """Start time of *pid* in clock ticks since boot (0 if gone): tells a process from a later one with its pid.
    Read from ``/proc/PID/stat`` (field 22; the command name before it may hold spaces and parens, so the fields
    are cut after its last ')'), see the module's docstring for why not psutil."""
    stat = read_proc(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(")") + 2:].split() if ")" in stat else []
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return 0


def cmdline(pid: int) -> str:
    """The command line of *pid*, arguments joined by spaces ('' if gone)."""
    return " ".join(argv_of(pid))


def cpu_time_s(pids: list[int]) -> float:
    """User + system CPU time of *pids* and of their reaped children, in seconds."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except (psutil.Error, OSError, ValueError):
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def pid_alive(pid: int) -> bool:
    """Whether *pid* is a live process (not gone, not a zombie)."""
    if pid <= 0:
        return False
    return proc_state(pid) not in ("?", "Z", "X")


def cwd_of(pid: int) -> str | None:
    """The working directory of *pid*, symbolic links resolved; None when gone or not readable."""
    try:
        return os.path.realpath(psutil.Process(pid).cwd())
    except (psutil.Error, OSError, ValueError):
        return None


def environ_of(pid: int) -> dict[str, str]:
    """The environment *pid* started with ({} when gone or not readable)."""
    try:
        return dict(psutil.Process(pid).environ())
    except (psutil.Error, OSError, ValueError):
        return {}


def owner_of(pid: int) -> tuple[int, int] | None:
    """The effective uid and gid *pid* runs as; None when it is gone."""
    try:
        proc = psutil.Process(pid)
        return proc.uids().effective, proc.gids().effective
    except (psutil.Error, OSError, ValueError):
        return None


def other_processes(attrs: tuple[str, ...] = ()) -> Iterator[psutil.Process]:
    """Every process on this machine but this one, with *attrs* (psutil names: ``cmdline``, ``cwd`` ...) read at
    once into ``.info`` (None where unreadable)."""
    me = os.getpid()
    for proc in psutil.process_iter(list(attrs) or None, ad_value=None):
        if proc.pid != me:
            yield proc


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
    return pids_under_each([directory])[os.fspath(directory)]


def _proc_pids() -> list[int]:
    me = os.getpid()
    return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit() and int(e.name) != me]


def pids_under_each(directories: Sequence[str | os.PathLike[str]]) -> dict[str, list[int]]:
    """:func:`pids_under` for several folders with one pass over the processes (a cluster's nodes at once): folder
    (as given) -> sorted pids."""
    roots = {os.fspath(d): os.path.realpath(d) for d in directories}
    found: dict[str, list[int]] = {d: [] for d in roots}
    for pid in _proc_pids():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")  # the kernel's resolved path
        except OSError:
            continue
        for d, root in roots.items():
            if (cwd == root or cwd.startswith(root + os.sep)) and pid_alive(pid):
                found[d].append(pid)
    return {d: sorted(pids) for d, pids in found.items()}


def uids_of_processes() -> dict[int, int]:
    """Every process but this one -> its owner's uid (the owner of its ``/proc`` entry: the effective uid)."""
    out = {}
    for pid in _proc_pids():
        try:
            out[pid] = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            continue
    return out


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
    out = []
    for proc in other_processes(("cmdline",)):
        argv = [a for a in proc.info["cmdline"] or [] if a]
        if argv and is_server(argv) and want in listen_addresses(argv) and pid_alive(proc.pid):
            out.append(proc.pid)
    return sorted(out)


def end_groups(procs: list[subprocess.Popen], timeout_s: float) -> None:
    """End children started in sessions of their own: SIGCONT (a stopped one must be able to exit) and SIGTERM to
    each live one's process group, SIGKILL to the groups still there after *timeout_s* in all; each is reaped."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
