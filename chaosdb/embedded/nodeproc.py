"""Starting and stopping one node's servers (etcd, Patroni and the PostgreSQL it runs) as the node's user,
after checking that their ports are free."""

from __future__ import annotations

import signal
import socket
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.servers import spawn_server
from chaosdb.embedded.config import etcd_argv, node_run_as, patroni_env
from chaosdb.embedded.processes import node_processes, signal_pids, wait_gone
from chaosdb.embedded.runtime import RunAs
from chaosdb.embedded.state import (
    ClusterLayout,
    NodeLayout,
)


def _port_free(host: str, port: int) -> bool:
    # like the servers themselves, ignore connections lingering in TIME_WAIT
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(items: list[tuple[str, int, str]]) -> None:
    """Refuse (:class:`ChaosDBError` listing them) when any of *items* (host, port, what) is already in use."""
    busy = [f"{h}:{p} ({what})" for h, p, what in items if not _port_free(h, p)]
    if busy:
        raise ChaosDBError(
            "port in use: " + ", ".join(busy) + ". Another program (or another cluster) listens there: stop it, "
            "or choose other addresses/ports with --address-base, --pg-port, --api-port, --etcd-port, "
            "--etcd-peer-port"
        )


def spawn(argv: list[str], node: NodeLayout, log_name: str, run_as: RunAs, env: dict[str, str]) -> int:
    """One of the node's servers, as the node's user, with exactly *env*."""
    return spawn_server(argv, node.path, node.log_dir / log_name, env, whole_env=True, user=(run_as.uid, run_as.gid))


def components_running(node: NodeLayout) -> dict[str, list[int]]:
    """The pids of a node's etcd, Patroni, postmaster and other postgres processes running now."""
    procs = node_processes(node.path, node.data_dir)
    out: dict[str, list[int]] = {"etcd": [], "patroni": [], "postmaster": [], "postgres": []}
    for p in procs:
        out.setdefault(p.kind, []).append(p.pid)
    return out


def start_node(layout: ClusterLayout, name: str, components: tuple[str, ...] = ("etcd", "patroni")) -> dict[str, Any]:
    """Start whatever of *components* is not running on node *name*; return what was started."""
    node = layout.node(name)
    run_as = node_run_as(layout, node)
    running = components_running(node)
    stopped = [p for p in node_processes(node.path, node.data_dir) if p.state == "T"]
    if stopped:
        signal_pids([p.pid for p in stopped], signal.SIGCONT)
    started: dict[str, int] = {}
    if "etcd" in components and not running["etcd"]:
        check_ports([(node.host, node.etcd_client_port, f"etcd client of {name}"),
                      (node.host, node.etcd_peer_port, f"etcd peer of {name}")])
        env = {"PATH": "/usr/bin:/bin", "HOME": str(node.path)}
        started["etcd"] = spawn(etcd_argv(layout, node), node, "etcd.log", run_as, env)
    if "patroni" in components and not running["patroni"]:
        checks = [(node.host, node.api_port, f"Patroni REST API of {name}")]
        if not running["postmaster"]:
            checks.append((node.host, node.pg_port, f"PostgreSQL of {name}"))
        check_ports(checks)
        argv = [layout.binaries["python"], "-m", "patroni", str(node.patroni_config)]
        started["patroni"] = spawn(argv, node, "patroni.out", run_as, patroni_env(layout, node))
    return {"node": name, "started": started,
            "resumed_pids": [p.pid for p in stopped]}


def stop_node(layout: ClusterLayout, name: str, graceful: bool = True, timeout: float = 30.0,
              components: tuple[str, ...] = ("patroni", "etcd")) -> dict[str, Any]:
    """Stop node *name*: SIGTERM (Patroni stops PostgreSQL with a fast shutdown and
    hands over leadership), then SIGKILL whatever is left after *timeout*."""
    node = layout.node(name)
    procs = node_processes(node.path, node.data_dir)
    signal_pids([p.pid for p in procs if p.state == "T"], signal.SIGCONT)
    killed: list[int] = []
    order = [c for c in ("patroni", "etcd") if c in components]
    for comp in order:
        procs = node_processes(node.path, node.data_dir)
        if comp == "patroni":
            group = [p.pid for p in procs if p.kind in ("patroni", "postmaster", "postgres", "other")]
            lead = [p.pid for p in procs if p.kind == "patroni"] or group
        else:
            group = lead = [p.pid for p in procs if p.kind == "etcd"]
        if not group:
            continue
        if graceful:
            signal_pids(lead, signal.SIGTERM)
            left = wait_gone(group, timeout)
        else:
            left = group
        if left:
            killed += signal_pids(left, signal.SIGKILL)
            wait_gone(left, 5)
    remaining = [p.pid for p in node_processes(node.path, node.data_dir)
                 if (p.kind == "etcd" and "etcd" in components) or (p.kind != "etcd" and "patroni" in components)]
    if remaining:
        signal_pids(remaining, signal.SIGKILL)
        wait_gone(remaining, 5)
    return {"node": name, "sigkilled": killed}


# ---------------------------------------------------------------------------
# health


