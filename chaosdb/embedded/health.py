"""Asking the embedded cluster how it is: clients for its Patroni and etcd, waiting until it is healthy, its
status (roles, lag, timelines, processes, suspended nodes), and the server logs that explain a failure."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.nodeproc import components_running
from chaosdb.embedded.processes import nodes_processes
from chaosdb.embedded.state import (
    ClusterLayout,
    NodeLayout,
    load_secrets,
)
from chaosdb.etcd.client import EtcdClient
from chaosdb.postgres.patroni import PatroniClient


def patroni_client(layout: ClusterLayout, timeout: float = 2.0) -> PatroniClient:
    """A Patroni REST client for the cluster, with its password and client certificate."""
    secrets = load_secrets(layout.path)
    return PatroniClient(layout.patroni_urls, auth=("patroni", secrets["patroni_password"]), timeout=timeout,
                         tls=layout.client_tls("patroni"))


def etcd_client(layout: ClusterLayout, timeout: float = 1.5, urls: list[str] | None = None) -> EtcdClient:
    """An etcd client for the cluster (or for *urls*), with its client certificate."""
    return EtcdClient(urls or layout.etcd_urls, timeout=timeout, tls=layout.client_tls("etcd"))


def tail(path: Path, lines: int = 20) -> str:
    """The last *lines* lines of a log file ('' when it cannot be read), to explain a failure."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64_000))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(data.splitlines()[-lines:])


def _latest_pg_log(node: NodeLayout) -> Path:
    logs = sorted((node.log_dir / "postgresql").glob("*.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else node.log_dir / "postgresql"


def _node_logs(node: NodeLayout, lines: int = 15) -> str:
    parts = []
    for label, path in (("patroni", node.log_dir / "patroni.log"), ("patroni stdout", node.log_dir / "patroni.out"),
                        ("etcd", node.log_dir / "etcd.log"), ("postgresql", _latest_pg_log(node))):
        if path.is_file() and path.stat().st_size:
            parts.append(f"--- {node.name} {label} ({path}) ---\n{tail(path, lines)}")
    return "\n".join(parts) or f"(no logs under {node.log_dir})"




def wait_etcd(layout: ClusterLayout, timeout: float) -> None:
    """Wait until a quorum of etcd members is healthy; refused with their logs after *timeout*."""
    client = etcd_client(layout)
    need = len(layout.nodes) // 2 + 1
    deadline = time.monotonic() + timeout
    while True:
        healthy = sum(1 for u in client.urls if client.health(u))
        if healthy >= need:
            return
        if time.monotonic() > deadline:
            logs = "\n".join(_node_logs(n) for n in layout.nodes)
            raise ChaosDBError(f"etcd did not reach quorum within {timeout:.0f}s ({healthy}/{need} healthy)\n{logs}")
        time.sleep(0.2)


def wait_healthy(layout: ClusterLayout, timeout: float = 90.0, max_lag_bytes: int = 1048576,
                 fail_fast: bool = False) -> dict[str, Any]:
    """Wait until every node's processes run, its Patroni answers live, one leader runs and every
    other node streams from it with lag <= *max_lag_bytes*.

    ``fail_fast``: give up as soon as a node's Patroni process has been gone for 3 s (it
    exited with a fatal error) instead of waiting for the timeout."""
    deadline = time.monotonic() + timeout
    last = "no status yet"
    gone_since: dict[str, float] = {}
    while True:
        if fail_fast:
            for n in layout.nodes:
                if components_running(n)["patroni"]:
                    gone_since.pop(n.name, None)
                elif time.monotonic() - gone_since.setdefault(n.name, time.monotonic()) > 3:
                    raise ChaosDBError(f"Patroni on {n.name} exited while the cluster was starting:\n"
                                       + _node_logs(n))
        try:
            st = status(layout)
            lagging = [n["name"] for n in st["nodes"]
                       if n["role"] not in ("leader", None) and (n["lag_bytes"] is None or n["lag_bytes"] > max_lag_bytes)]
            if st["healthy"] and not lagging:
                return {"leader": st["leader"], "members": st["nodes"]}
            last = "; ".join(f"{n['name']}={n['role']}/{n['state']}/lag={n['lag_bytes']}" for n in st["nodes"])
        except ChaosDBError as exc:
            last = str(exc)
            st = None
        if time.monotonic() > deadline:
            bad = [layout.node(n["name"]) for n in (st["nodes"] if st else [])
                   if n["state"] not in ("running", "streaming")] or layout.nodes
            logs = "\n".join(_node_logs(n) for n in bad)
            raise ChaosDBError(f"cluster {layout.name!r} not healthy within {timeout:.0f}s: {last}\n{logs}")
        time.sleep(0.3)


def _live_patroni_states(layout: ClusterLayout) -> dict[str, dict[str, Any]]:
    """``GET /patroni`` of every node at once (1 s timeout); nodes that do not answer are absent."""
    client = PatroniClient(layout.patroni_urls, timeout=1.0, tls=layout.client_tls("patroni"))
    out: dict[str, dict[str, Any]] = {}

    def ask(node: NodeLayout) -> None:
        try:
            out[node.name] = client.node_status(node.api_url)
        except ChaosDBError:
            pass

    threads = [threading.Thread(target=ask, args=(n,)) for n in layout.nodes]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


def status(layout: ClusterLayout) -> dict[str, Any]:
    """Every node: its processes, Patroni role/state/lag/timeline, and etcd membership/leadership."""
    members: dict[str, Any] = {}
    patroni_error = ""

    def ask_patroni() -> None:
        nonlocal patroni_error
        try:
            for member in patroni_client(layout).members():
                members[member.name] = member
        except ChaosDBError as exc:
            patroni_error = str(exc)

    found: dict[str, Any] = {}

    def ask_etcd() -> None:
        try:
            found["etcd"] = etcd_client(layout).overview()["members"]
        except Exception as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            found["error"] = exc

    def ask_live() -> None:
        try:
            found["live"] = _live_patroni_states(layout)
        except Exception as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            found["error"] = exc

    # the answers over the network asked at once (a fault's target is chosen from this: it is on the fault's path),
    # the processes listed meanwhile: they are the ground truth at this instant
    askers = [threading.Thread(target=f) for f in (ask_patroni, ask_etcd, ask_live)]
    for th in askers:
        th.start()
    procs_of = nodes_processes([(node.name, node.path, node.data_dir) for node in layout.nodes])
    for th in askers:
        th.join()
    if "error" in found:
        raise found["error"]
    etcd_rows = {row["url"]: row for row in found["etcd"]}
    leader_ids = {r.get("leader_id") for r in etcd_rows.values() if r.get("leader_id") not in (None, "", "0")}
    live = found["live"]
    etcd_leader = None
    nodes: list[dict[str, Any]] = []
    for node in layout.nodes:
        procs = procs_of[node.name]
        by_kind: dict[str, list[int]] = {}
        for p in procs:
            by_kind.setdefault(p.kind, []).append(p.pid)
        row = etcd_rows.get(node.etcd_client_url, {})
        m = members.get(node.name)
        api = live.get(node.name)
        suspended = any(p.state == "T" for p in procs)
        # Patroni keeps a dead member's key (and its last state) until the TTL expires, so the
        # state shown is what the node's own Patroni says now, and "down" when nothing runs
        if api and not suspended:
            state = api.get("replication_state") or api.get("state") or "unknown"
        elif not by_kind:
            state = "down"
        elif suspended:
            state = "suspended"
        elif not by_kind.get("patroni"):
            state = "stopped"
        else:
            state = "unreachable"
        alive = api is not None
        is_etcd_leader = bool(row.get("reachable") and row.get("member_id") in leader_ids)
        if is_etcd_leader:
            etcd_leader = node.name
        nodes.append({
            "name": node.name,
            "host": node.host,
            "pg_port": node.pg_port,
            "api_port": node.api_port,
            "etcd_port": node.etcd_client_port,
            "role": m.role if m and alive else None,
            "state": state,
            "lag_bytes": m.lag_bytes if m and alive else None,
            "timeline": (api or {}).get("timeline") if alive else None,
            "etcd": {"healthy": bool(row.get("healthy")), "leader": is_etcd_leader,
                     "member_id": row.get("member_id")},
            "pids": {
                "etcd": next(iter(by_kind.get("etcd", [])), None),
                "patroni": next(iter(by_kind.get("patroni", [])), None),
                "postmaster": next(iter(by_kind.get("postmaster", [])), None),
            },
            "suspended": suspended,
            "processes": len(procs),
        })
    leader = next((n["name"] for n in nodes if n["role"] in ("leader", "standby_leader")), None)
    healthy = (
        leader is not None
        and all(n["etcd"]["healthy"] and not n["suspended"]
                and (n["state"] == "running" if n["name"] == leader else n["state"] == "streaming")
                for n in nodes)
        # with synchronous replication a commit is only safe once a synchronous standby is chosen
        and (layout.replication != "sync" or len(nodes) < 2
             or any(n["role"] == "sync_standby" for n in nodes))
    )
    out = {
        "cluster": layout.name,
        "dir": layout.dir,
        "kind": layout.kind,
        "run_as": layout.run_as,
        "replication": layout.replication,
        "leader": leader,
        "etcd_leader": etcd_leader,
        "healthy": healthy,
        "nodes": nodes,
        "dsn": layout.dsn(),
    }
    if patroni_error:
        out["patroni_error"] = patroni_error
    return out


