"""A chaosd next to the embedded cluster (``chaosdb cluster up --chaosd <binary>``), for the chaosd engine
(:mod:`chaosdb.chaosd.actions`) and Chaos Mesh's PhysicalMachineChaos.

chaosd keeps its state (``chaosd.dat``, sqlite) beside its binary and finds its helpers (``FileTool``,
``PortOccupyTool``, ``memStress``, ``stress-ng``) in ``tools/`` there: each cluster gets its own copy of the binary
and its tools in ``<cluster>/chaosd/``, so two clusters' chaosd never share state. It runs as root (ptrace for the
clock skew, iptables, signals to the node users' processes) and listens on a loopback address no node uses
(:func:`chaosd_address`).
``down`` stops it and removes the chains and ipsets chaosd's network attacks leave after their recovery, and the
PhysicalMachines registered for the cluster's nodes (:func:`chaosdb.chaosmesh.physical.register_machines`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from chaosdb.core.chaosd import MACHINES_FILE, SERVER_FILE, Chaosd, remove_leftovers
from chaosdb.core.detach import spawn_detached
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import same_process, stop_process
from chaosdb.core.processes import start_time as process_start_time

__all__ = ["start_chaosd", "stop_chaosd", "chaosd_address", "HELPERS"]

logger = logging.getLogger("chaostoolkit")

#: chaosd's helper programs, looked up in ``tools/`` beside its binary
HELPERS = ("FileTool", "PortOccupyTool", "memStress", "stress-ng")


def chaosd_address(layout: Any) -> str:
    """Where the cluster's chaosd listens: a loopback address none of the nodes uses (a partition of a node's
    address must not cut chaosd off from recovering it)."""
    used = {n.host for n in layout.nodes}
    for candidate in ("127.0.0.1", "127.0.0.254", "127.0.0.253"):
        if candidate not in used:
            return candidate
    raise ChaosDBError("every candidate address for chaosd is a node's address: give the nodes other addresses")


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _state(cluster_dir: str) -> dict[str, Any]:
    try:
        return dict(json.loads((Path(cluster_dir) / SERVER_FILE).read_text()))
    except (OSError, ValueError):
        return {}


def start_chaosd(cluster_dir: str, binary: str, address: str, port: int = 0, timeout_s: float = 30.0,
                 tls: dict[str, str] | None = None) -> dict[str, Any]:
    """Start (or find running) the cluster's chaosd from *binary*; its ``url``, ``pid`` and folder. With *tls*
    (``cert_file``, ``key_file``, ``ca_file``) chaosd serves its attacks over mutual TLS only (``url`` is https;
    its plain port answers health checks alone)."""
    if os.geteuid() != 0:
        raise ChaosDBError("chaosd must run as root (ptrace, iptables, signals to the database's processes)")
    state = _state(cluster_dir)
    if same_process(state):
        return state
    source = Path(binary)
    if not source.is_file() or not os.access(source, os.X_OK):
        raise ChaosDBError(f"--chaosd {binary}: not an executable file (the chaosd binary of a chaosd release)")
    folder = Path(cluster_dir) / "chaosd"
    (folder / "tools").mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, folder / "chaosd")
    missing = []
    for helper in HELPERS:
        found = source.parent / "tools" / helper
        path = str(found) if found.is_file() else shutil.which(helper)
        if path:
            target = folder / "tools" / helper
            if not target.exists():
                os.symlink(os.path.realpath(path), target)
        else:
            missing.append(helper)
    port = port or _free_port(address)
    health_url = url = f"http://{address}:{port}"
    https = ""
    if tls:
        https_port = _free_port(address)
        url = f"https://{address}:{https_port}"
        https = (f' --https-port {https_port} --cert "{tls["cert_file"]}" --key "{tls["key_file"]}"'
                 f' --CA "{tls["ca_file"]}"')
    log = folder / "chaosd.log"
    pid = spawn_detached(["/bin/sh", "-c", f'cd "{folder}" && exec ./chaosd server -a {address} -p {port}{https} '
                                           f'>> "{log}" 2>&1'])
    state = {"url": url, "health_url": health_url, "pid": pid, "start": process_start_time(pid), "folder": str(folder),
             "missing_helpers": missing}
    (folder / "server.json").write_text(json.dumps(state, indent=2) + "\n")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            Chaosd(health_url).health()
            return state
        except ChaosDBError:
            if not same_process(state) or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                stop_chaosd(cluster_dir)
                raise ChaosDBError(f"chaosd did not start at {url}; its log ends with:\n{tail}") from None
            time.sleep(0.1)


def stop_chaosd(cluster_dir: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """Stop the cluster's chaosd (if one runs) and remove what its network attacks left; what was stopped."""
    state = _state(cluster_dir)
    stopped = stop_process(state, timeout_s) if state else False
    removed = remove_leftovers() if state else []
    out: dict[str, Any] = {"stopped": stopped, "removed": removed}
    if (Path(cluster_dir) / MACHINES_FILE).exists():
        from chaosdb.chaosmesh.physical import unregister_machines  # noqa: PLC0415 - needs the k8s extra

        try:
            out["unregistered"] = unregister_machines(cluster_dir)
        except ChaosDBError as exc:  # Kubernetes gone first: the PhysicalMachines outlive the cluster, say so
            out["left_physical_machines"] = str(exc)
            logger.warning("chaosdb: the cluster's PhysicalMachines could not be deleted: %s", exc)
    return out
