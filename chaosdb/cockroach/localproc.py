"""The ``cockroach start`` process serving a node on this machine: find it by its address, signal it,
and start it again exactly as it was (command line, working directory, user, environment).

A node is matched when one of its listen/advertise flags (``--listen-addr``, ``--advertise-addr``,
``--addr``, ``--host``/``--port`` of old versions) names the node's address; ``localhost`` and
``127.0.0.1`` are the same host. Before a kill the process's command line is saved under
``$CHAOSDB_HOME/cockroach/killed/`` (mode 0600: the environment is kept whole) so ``restart_node`` can bring it back after the process is gone.
"""

from __future__ import annotations

import json
import os
import signal as _signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from chaosdb.core.errors import ChaosDBError
from chaosdb.local import processes
from chaosdb.local.state import default_home

__all__ = ["node_address_flags", "processes_serving", "find_node_process", "signal_node", "restart_saved", "saved_path", "save_process",
           "saved_nodes"]

_ADDR_FLAGS = ("--listen-addr", "--advertise-addr", "--addr", "--advertise-host", "--host")
_LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0", ""}


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


def node_address_flags(argv: list[str]) -> set[tuple[str, str]]:
    """Addresses a ``cockroach start`` argv listens on / advertises, as (host, port)."""
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


def _is_cockroach_start(argv: list[str]) -> bool:
    if not argv:
        return False
    names = [os.path.basename(a) for a in argv[:3]]
    return any(n.startswith("cockroach") for n in names) and any(a in ("start", "start-single-node") for a in argv)


def processes_serving(address: str, is_server: Callable[[list[str]], bool]) -> list[int]:
    """Live processes (not this one) whose argv *is_server* accepts and whose address flags name *address*
    (host:port; ``localhost`` and ``0.0.0.0`` count as ``127.0.0.1``). Shared by CockroachDB and TiKV."""
    want = _norm(address)
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        argv = [a for a in processes._read(f"/proc/{pid}/cmdline").split("\0") if a]
        if argv and is_server(argv) and want in node_address_flags(argv) and processes.pid_alive(pid):
            out.append(pid)
    return sorted(out)


def find_node_process(address: str) -> int | None:
    """The pid of the local ``cockroach start`` serving *address* (host:port), or None."""
    found = processes_serving(address, _is_cockroach_start)
    return found[0] if found else None


def saved_path(node_id: int) -> Path:
    return default_home() / "cockroach" / "killed" / f"n{node_id}.json"


def save_process(node_id: int, pid: int) -> dict[str, Any]:
    argv = [a for a in processes._read(f"/proc/{pid}/cmdline").split("\0") if a]
    env = {}
    for item in processes._read(f"/proc/{pid}/environ").split("\0"):
        k, sep, v = item.partition("=")
        if sep:  # the whole environment: the node must start as it ran (file is private, 0600)
            env[k] = v
    st = os.stat(f"/proc/{pid}")
    rec = {"node": node_id, "pid": pid, "argv": argv, "cwd": os.readlink(f"/proc/{pid}/cwd"),
           "uid": st.st_uid, "gid": st.st_gid, "env": env, "saved_at": time.time()}
    path = saved_path(node_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return rec


def signal_node(node_id: int, address: str, sig: str, wait_s: float = 10.0) -> dict[str, Any]:
    """Send *sig* to the node's process (saving how to start it again first); report whether it exited."""
    pid = find_node_process(address)
    if pid is None:
        raise ChaosDBError(f"no local 'cockroach start' process serves n{node_id} ({address}); is the node on this "
                           "machine? (on Kubernetes set k8s_namespace and k8s_container)")
    signum = getattr(_signal, "SIG" + sig)
    saved = save_process(node_id, pid) if sig in ("KILL", "TERM", "INT", "QUIT") else None
    t0 = time.monotonic()
    os.kill(pid, signum)
    gone = False
    if saved is not None:
        left = processes.wait_gone([pid], wait_s)
        gone = not left
    return {"pid": pid, "signal": sig, "exited": gone, "exit_wait_s": round(time.monotonic() - t0, 3),
            "restartable": saved is not None}


def saved_nodes() -> list[int]:
    d = saved_path(0).parent
    return sorted(int(p.stem[1:]) for p in d.glob("n*.json")) if d.is_dir() else []


def restart_saved(node_id: int) -> dict[str, Any]:
    """Start the saved command line of a killed node again (as its user, from its directory)."""
    path = saved_path(node_id)
    if not path.exists():
        raise ChaosDBError(f"n{node_id} was not killed by chaosdb on this machine (nothing saved in {path})")
    rec = json.loads(path.read_text())
    pid = find_node_process_from_argv(rec["argv"])
    if pid is not None:
        path.unlink()
        return {"node": node_id, "pid": pid, "started": False, "reason": "already running"}
    if not os.path.exists(rec["argv"][0]) and not any(
            os.path.exists(os.path.join(d, rec["argv"][0])) for d in os.environ.get("PATH", "").split(os.pathsep)):
        raise ChaosDBError(f"cannot restart n{node_id}: {rec['argv'][0]} no longer exists")
    env = dict(rec["env"])
    kwargs: dict[str, Any] = {}
    if os.geteuid() == 0 and rec["uid"] != 0:
        kwargs.update(user=rec["uid"], group=rec["gid"], extra_groups=[])
    proc = subprocess.Popen(rec["argv"], cwd=rec["cwd"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, **kwargs)
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    path.unlink()
    return {"node": node_id, "pid": proc.pid, "started": True}


def find_node_process_from_argv(argv: list[str]) -> int | None:
    addrs = node_address_flags(argv)
    for host, port in addrs:
        pid = find_node_process(f"{host}:{port}")
        if pid is not None:
            return pid
    return None
