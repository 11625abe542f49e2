"""The ``cockroach start`` process serving a node on this machine: find it by its address, signal it (through the
host fault engine), and start it again exactly as it was (command line, working directory, user, environment).

A node is matched when one of its listen/advertise flags (``--listen-addr``, ``--advertise-addr``,
``--addr``, ``--host``/``--port`` of old versions) names the node's address; ``localhost`` and
``127.0.0.1`` are the same host. Before a kill the process's command line is saved under
``$CHAOSDB_HOME/cockroach/killed/`` (mode 0600: the environment is kept whole) so ``restart_node`` can bring it back after the process is gone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import default_home
from chaosdb.core.processes import (
    argv_of,
    cwd_of,
    environ_of,
    listen_addresses,
    owner_of,
    processes_serving,
)
from chaosdb.core.servers import spawn_server
from chaosdb.core.settings import system_value
from chaosdb.core.signals import ENDING_SIGNALS

__all__ = ["find_node_process", "signal_node", "restart_saved", "saved_path", "save_process",
           "saved_nodes"]


def _is_cockroach_start(argv: list[str]) -> bool:
    if not argv:
        return False
    names = [os.path.basename(a) for a in argv[:3]]
    return any(n.startswith("cockroach") for n in names) and any(a in ("start", "start-single-node") for a in argv)


def find_node_process(address: str) -> int | None:
    """The pid of the local ``cockroach start`` serving *address* (host:port), or None."""
    found = processes_serving(address, _is_cockroach_start)
    return found[0] if found else None


def saved_path(node_id: int) -> Path:
    """Where the command line of node *node_id* is saved before it is killed (so it can be started again)."""
    return default_home() / "cockroach" / "killed" / f"n{node_id}.json"


def save_process(node_id: int, pid: int) -> dict[str, Any]:
    """Save how node *node_id*'s process *pid* runs (command line, working directory, user, environment) in a private
    file, before a kill."""
    argv = argv_of(pid)
    env = environ_of(pid)  # the whole environment: the node must start as it ran (file is private, 0600)
    owner, cwd = owner_of(pid), cwd_of(pid)
    if not argv or owner is None or cwd is None:
        raise ChaosDBError(f"CockroachDB node n{node_id} (pid {pid}) is gone or cannot be read: nothing to save")
    rec = {"node": node_id, "pid": pid, "argv": argv, "cwd": cwd,
           "uid": owner[0], "gid": owner[1], "env": env, "saved_at": time.time()}
    path = saved_path(node_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return rec


def signal_node(node_id: int, address: str, sig: str, wait_s: float = 10.0) -> dict[str, Any]:
    """Signal the node's process through the host fault engine (``signal_resolved``: STOP recorded as a suspension,
    CONT its revert), saving how to start it again first when the signal ends it and waiting up to *wait_s* for it
    to exit. Reports whether it exited."""
    pid = find_node_process(address)
    if pid is None:
        raise ChaosDBError(f"no local 'cockroach start' process serves n{node_id} ({address}); is the node on this "
                           "machine? (on Kubernetes set k8s_namespace and k8s_container)")
    name = f"n{node_id}"
    ending = sig in ENDING_SIGNALS
    saved = save_process(node_id, pid) if ending else None
    t0 = time.monotonic()
    done = engine_action("host", "signal_resolved")({"pids": [pid], "name": name}, sig,
                                                    wait_s=wait_s if ending else 0)
    exited = bool(done["exited"])
    return {"pid": pid, "signal": sig, "exited": exited, "exit_wait_s": round(time.monotonic() - t0, 3),
            "restartable": saved is not None}


def saved_nodes() -> list[int]:
    """The ids of the nodes whose command lines are saved (killed and not restarted yet)."""
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
            os.path.exists(os.path.join(d, rec["argv"][0])) for d in system_value("PATH").split(os.pathsep)):
        raise ChaosDBError(f"cannot restart n{node_id}: {rec['argv'][0]} no longer exists")
    pid = spawn_server(rec["argv"], rec["cwd"], None, dict(rec["env"]), whole_env=True,
                       user=(rec["uid"], rec["gid"]))  # exactly as it ran: same user, directory, environment
    path.unlink()
    return {"node": node_id, "pid": pid, "started": True}


def find_node_process_from_argv(argv: list[str]) -> int | None:
    """The live node process listening on an address that *argv*'s listen flags name, or None."""
    addrs = listen_addresses(argv)
    for host, port in addrs:
        pid = find_node_process(f"{host}:{port}")
        if pid is not None:
            return pid
    return None
