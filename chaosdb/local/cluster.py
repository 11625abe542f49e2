"""The embedded HA PostgreSQL cluster: N nodes of etcd + Patroni + PostgreSQL.

Every node binds its own loopback address (``127.0.0.11``, ``.12``, ... by
default) so that network faults can later hit exactly one node, and uses the
standard ports on it:

=====================  ======  ==========================
component              port    option
=====================  ======  ==========================
PostgreSQL             5432    ``--pg-port``
Patroni REST API       8008    ``--api-port``
etcd client            2379    ``--etcd-port``
etcd peer              2380    ``--etcd-peer-port``
=====================  ======  ==========================

With ``--single-address`` every node binds ``127.0.0.1`` instead and node *i*
uses port + *i* - 1.

Patroni timings (``ttl`` 20 s, the minimum Patroni accepts; ``loop_wait`` 1 s;
``retry_timeout`` 5 s) trade a little CPU for fast detection: after a hard
leader failure a new leader is elected once the leader key's lease expires,
that is within ``ttl`` seconds. Replication is synchronous by default
(``synchronous_mode: true``, not strict) so that a failover never loses an
acknowledged commit; ``--replication async`` shows what asynchronous
replication loses.
"""

from __future__ import annotations

import json
import os
import secrets as _secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError
from chaosdb.etcd.client import EtcdClient
from chaosdb.local.processes import node_processes, pid_alive, signal_pids, wait_gone
from chaosdb.local.runtime import RunAs, find_binaries, node_users, prepare_runtime, resolve_run_as
from chaosdb.local.state import (
    SECRETS_FILE,
    STATE_FILE,
    ClusterLayout,
    NodeLayout,
    load_layout,
    load_secrets,
)
from chaosdb.postgres.patroni import PatroniClient

__all__ = [
    "plan_layout",
    "up",
    "down",
    "status",
    "start_node",
    "stop_node",
    "wait_healthy",
    "patroni_client",
    "etcd_client",
    "tail",
    "DEFAULT_TIMINGS",
]

DEFAULT_TIMINGS = {"ttl": 20, "loop_wait": 1, "retry_timeout": 5}
SUPPORTED_KINDS = ("postgres-ha",)


# ---------------------------------------------------------------------------
# layout


def parse_ipv4(addr: str) -> list[int]:
    try:
        parts = [int(p) for p in addr.split(".")]
    except ValueError:
        parts = []
    if len(parts) != 4 or any(not 0 <= p <= 255 for p in parts):
        raise ChaosDBError(f"{addr!r} is not an IPv4 address")
    if parts[0] != 127:
        raise ChaosDBError(f"{addr} is not a loopback address: embedded clusters bind 127.0.0.0/8 only")
    return parts


def plan_layout(
    name: str,
    directory: Path,
    nodes: int = 3,
    address_base: str = "127.0.0.11",
    single_address: bool = False,
    pg_port: int = 5432,
    api_port: int = 8008,
    etcd_port: int = 2379,
    etcd_peer_port: int = 2380,
    run_as: RunAs | None = None,
    replication: str = "sync",
    kind: str = "postgres-ha",
    users: list[RunAs] | None = None,
) -> ClusterLayout:
    """Decide names, addresses, ports and directories; validate the request."""
    if kind not in SUPPORTED_KINDS:
        raise ChaosDBError(f"unknown cluster kind {kind!r}: supported kinds are {', '.join(SUPPORTED_KINDS)}")
    if not 1 <= nodes <= 9:
        raise ChaosDBError(f"--nodes must be between 1 and 9, got {nodes}")
    if replication not in ("sync", "async"):
        raise ChaosDBError(f"--replication must be 'sync' or 'async', got {replication!r}")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ChaosDBError(f"cluster name {name!r} may contain only letters, digits, '-' and '_'")
    ports = {"--pg-port": pg_port, "--api-port": api_port, "--etcd-port": etcd_port,
             "--etcd-peer-port": etcd_peer_port}
    for opt, port in ports.items():
        if not 1024 <= port <= 65535 - nodes:
            raise ChaosDBError(f"{opt} {port} is outside 1024..{65535 - nodes}")
    base = parse_ipv4(address_base)
    if not single_address and base[3] + nodes - 1 > 254:
        raise ChaosDBError(f"--address-base {address_base} leaves no room for {nodes} nodes")
    if single_address:
        span = {p: set(range(p, p + nodes)) for p in ports.values()}
        values = list(span.values())
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                if a & b:
                    raise ChaosDBError("with --single-address the port ranges of the components overlap: "
                                       "space the ports at least --nodes apart")
    elif len(set(ports.values())) != len(ports):
        raise ChaosDBError("the four component ports must differ")
    run_as = run_as or resolve_run_as(None)
    layout_nodes = []
    for i in range(nodes):
        host = "127.0.0.1" if single_address else ".".join(map(str, base[:3] + [base[3] + i]))
        off = i if single_address else 0
        user = users[i] if users else run_as
        layout_nodes.append(NodeLayout(
            name=f"node{i + 1}", host=host, pg_port=pg_port + off, api_port=api_port + off,
            etcd_client_port=etcd_port + off, etcd_peer_port=etcd_peer_port + off,
            dir=str(directory / f"node{i + 1}"), user=user.user, uid=user.uid, gid=user.gid,
        ))
    return ClusterLayout(
        name=name, kind=kind, dir=str(directory), run_as=run_as.user, uid=run_as.uid, gid=run_as.gid,
        nodes=layout_nodes, replication=replication, timings=dict(DEFAULT_TIMINGS),
    )


# ---------------------------------------------------------------------------
# configuration files


def _patroni_config(layout: ClusterLayout, node: NodeLayout, secrets: dict[str, str]) -> dict[str, Any]:
    t = layout.timings or DEFAULT_TIMINGS
    return {
        "scope": layout.name,
        "namespace": "/chaosdb/",
        "name": node.name,
        "log": {"dir": str(node.log_dir), "level": "INFO", "file_num": 3, "file_size": 10_000_000},
        "restapi": {
            "listen": f"{node.host}:{node.api_port}",
            "connect_address": f"{node.host}:{node.api_port}",
            "authentication": {"username": "patroni", "password": secrets["patroni_password"]},
        },
        "etcd3": {"hosts": [f"{n.host}:{n.etcd_client_port}" for n in layout.nodes], "protocol": "http"},
        "bootstrap": {
            "dcs": {
                "ttl": t["ttl"],
                "loop_wait": t["loop_wait"],
                "retry_timeout": t["retry_timeout"],
                "maximum_lag_on_failover": 1048576,
                "synchronous_mode": layout.replication == "sync",
                "synchronous_mode_strict": False,
                "postgresql": {
                    "use_pg_rewind": True,
                    "use_slots": True,
                    "parameters": {
                        "max_connections": 200,
                        "max_wal_senders": 10,
                        "max_replication_slots": 10,
                        "wal_level": "replica",
                        "hot_standby": "on",
                        "wal_keep_size": "256MB",
                        "wal_log_hints": "on",
                    },
                },
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C"}, "data-checksums"],
        },
        "postgresql": {
            "listen": f"{node.host}:{node.pg_port}",
            "connect_address": f"{node.host}:{node.pg_port}",
            "data_dir": str(node.data_dir),
            "bin_dir": layout.binaries["postgres_bin"],
            "pgpass": str(node.run_dir / "pgpass"),
            # a new replica (scale-out, a wiped node) asks for an immediate checkpoint instead of waiting
            # for a spread one (up to checkpoint_timeout)
            "basebackup": [{"checkpoint": "fast"}],
            "authentication": {
                "superuser": {"username": "postgres", "password": secrets["postgres_password"]},
                "replication": {"username": "replicator", "password": secrets["replication_password"]},
            },
            "parameters": {
                "unix_socket_directories": str(node.run_dir),
                "shared_buffers": "64MB",
                "logging_collector": "on",
                "log_directory": str(node.log_dir / "postgresql"),
                "log_filename": "postgresql-%a.log",
                "log_truncate_on_rotation": "on",
                "log_line_prefix": "%m [%p] %q%u@%d ",
                "log_min_duration_statement": -1,
            },
            "pg_hba": [
                "local all all trust",
                "host replication replicator 127.0.0.0/8 scram-sha-256",
                "host all all 127.0.0.0/8 scram-sha-256",
            ],
        },
        "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False, "nosync": False},
    }


def _etcd_argv(layout: ClusterLayout, node: NodeLayout) -> list[str]:
    initial = ",".join(f"{n.name}={n.etcd_peer_url}" for n in layout.nodes)
    return [
        layout.binaries["etcd"],
        "--name", node.name,
        "--data-dir", str(node.etcd_dir),
        "--listen-client-urls", node.etcd_client_url,
        "--advertise-client-urls", node.etcd_client_url,
        "--listen-peer-urls", node.etcd_peer_url,
        "--initial-advertise-peer-urls", node.etcd_peer_url,
        "--initial-cluster", initial,
        "--initial-cluster-token", f"chaosdb-{layout.name}",
        "--initial-cluster-state", "new",
        "--log-level", "warn",
    ]


def _patroni_env(layout: ClusterLayout, node: NodeLayout) -> dict[str, str]:
    env = {
        "PATH": f"{layout.binaries['postgres_bin']}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(node.path),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if layout.binaries.get("pythonpath"):
        env["PYTHONPATH"] = layout.binaries["pythonpath"]
    if layout.binaries.get("ld_path"):
        env["LD_LIBRARY_PATH"] = layout.binaries["ld_path"]
    return env


# ---------------------------------------------------------------------------
# helpers


def patroni_client(layout: ClusterLayout, timeout: float = 2.0) -> PatroniClient:
    secrets = load_secrets(layout.path)
    return PatroniClient(layout.patroni_urls, auth=("patroni", secrets["patroni_password"]), timeout=timeout)


def etcd_client(layout: ClusterLayout, timeout: float = 1.5) -> EtcdClient:
    return EtcdClient(layout.etcd_urls, timeout=timeout)


def tail(path: Path, lines: int = 20) -> str:
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


def _port_free(host: str, port: int) -> bool:
    # like the servers themselves, ignore connections lingering in TIME_WAIT
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _check_ports(items: list[tuple[str, int, str]]) -> None:
    busy = [f"{h}:{p} ({what})" for h, p, what in items if not _port_free(h, p)]
    if busy:
        raise ChaosDBError(
            "port in use: " + ", ".join(busy) + ". Another program (or another cluster) listens there: stop it, "
            "or choose other addresses/ports with --address-base, --pg-port, --api-port, --etcd-port, "
            "--etcd-peer-port"
        )


def _spawn(argv: list[str], node: NodeLayout, log_name: str, run_as: RunAs, env: dict[str, str]) -> int:
    log_path = node.log_dir / log_name
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    try:
        if os.geteuid() == 0:
            os.fchown(fd, run_as.uid, run_as.gid)
        proc = subprocess.Popen(
            argv, cwd=str(node.path), stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
            env=env, start_new_session=True, close_fds=True, **run_as.popen_kwargs(),
        )
    finally:
        os.close(fd)
    # reap the child when it exits so that it never lingers as a zombie of a long-lived caller
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def _run_as_of(layout: ClusterLayout) -> RunAs:
    if os.geteuid() != 0 and os.geteuid() != layout.uid:
        raise ChaosDBError(
            f"the cluster at {layout.dir} runs as {layout.run_as!r} (uid {layout.uid}); "
            "manage it as that user or as root"
        )
    return RunAs(layout.run_as, layout.uid, layout.gid)


def _node_run_as(layout: ClusterLayout, node: NodeLayout) -> RunAs:
    _run_as_of(layout)
    return RunAs(*layout.node_user(node))


def _prepare_dirs(layout: ClusterLayout, cluster_user: RunAs | None = None) -> None:
    """Create the node directories for their users; refuse ones that belong to somebody else."""
    for node in layout.nodes:
        run_as = _node_run_as(layout, node)
        for d in (node.path, node.log_dir, node.log_dir / "postgresql", node.run_dir):
            if not d.exists():
                d.mkdir(parents=True)
                if os.geteuid() == 0:
                    os.chown(d, run_as.uid, run_as.gid)
                os.chmod(d, 0o700)
        for d in (node.path, node.log_dir, node.run_dir, node.data_dir, node.etcd_dir):
            if d.exists() and d.stat().st_uid != run_as.uid:
                raise ChaosDBError(
                    f"{d} belongs to uid {d.stat().st_uid}, not to {run_as.user!r} (uid {run_as.uid}) who runs "
                    f"the cluster: give it back with 'chown -R {run_as.user} {node.path}' or use another --dir"
                )


def _write_private(path: Path, text: str, uid: int | None = None, gid: int | None = None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    if uid is not None and os.geteuid() == 0:
        os.chown(path, uid, gid if gid is not None else -1)


def _write_configs(layout: ClusterLayout, secrets: dict[str, str]) -> None:
    for node in layout.nodes:
        run_as = _node_run_as(layout, node)
        cfg = _patroni_config(layout, node, secrets)
        # JSON is YAML: Patroni reads it as is
        _write_private(node.patroni_config, json.dumps(cfg, indent=2) + "\n", run_as.uid, run_as.gid)


def _new_secrets() -> dict[str, str]:
    return {k: _secrets.token_urlsafe(18) for k in
            ("postgres_password", "replication_password", "patroni_password", "app_password")}


def _write_pgpass(layout: ClusterLayout, secrets: dict[str, str]) -> None:
    lines = [
        f"*:*:*:postgres:{secrets['postgres_password']}",
        f"*:*:*:{layout.app_user}:{secrets['app_password']}",
        f"*:*:*:replicator:{secrets['replication_password']}",
    ]
    _write_private(layout.path / "pgpass", "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# per-node lifecycle


def _components_running(node: NodeLayout) -> dict[str, list[int]]:
    procs = node_processes(node.path, node.data_dir)
    out: dict[str, list[int]] = {"etcd": [], "patroni": [], "postmaster": [], "postgres": []}
    for p in procs:
        out.setdefault(p.kind, []).append(p.pid)
    return out


def start_node(layout: ClusterLayout, name: str, components: tuple[str, ...] = ("etcd", "patroni")) -> dict[str, Any]:
    """Start whatever of *components* is not running on node *name*; return what was started."""
    node = layout.node(name)
    run_as = _node_run_as(layout, node)
    running = _components_running(node)
    stopped = [p for p in node_processes(node.path, node.data_dir) if p.state == "T"]
    if stopped:
        signal_pids([p.pid for p in stopped], signal.SIGCONT)
    started: dict[str, int] = {}
    if "etcd" in components and not running["etcd"]:
        _check_ports([(node.host, node.etcd_client_port, f"etcd client of {name}"),
                      (node.host, node.etcd_peer_port, f"etcd peer of {name}")])
        env = {"PATH": "/usr/bin:/bin", "HOME": str(node.path)}
        started["etcd"] = _spawn(_etcd_argv(layout, node), node, "etcd.log", run_as, env)
    if "patroni" in components and not running["patroni"]:
        checks = [(node.host, node.api_port, f"Patroni REST API of {name}")]
        if not running["postmaster"]:
            checks.append((node.host, node.pg_port, f"PostgreSQL of {name}"))
        _check_ports(checks)
        argv = [layout.binaries["python"], "-m", "patroni", str(node.patroni_config)]
        started["patroni"] = _spawn(argv, node, "patroni.out", run_as, _patroni_env(layout, node))
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


def wait_etcd(layout: ClusterLayout, timeout: float) -> None:
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
                if _components_running(n)["patroni"]:
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


def _ensure_app_database(layout: ClusterLayout, secrets: dict[str, str]) -> None:
    try:
        import psycopg  # noqa: PLC0415 - needs the postgres extra
        from psycopg import sql  # noqa: PLC0415 - needs the postgres extra
    except ImportError:
        raise ChaosDBError("psycopg is not installed: pip install 'chaostoolkit-db[local]'") from None
    dsn = layout.dsn(user="postgres", database="postgres")
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (layout.app_user,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(layout.app_user), sql.Literal(secrets["app_password"])))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (layout.database,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(layout.database), sql.Identifier(layout.app_user)))


# ---------------------------------------------------------------------------
# cluster lifecycle


def up(
    directory: Path,
    name: str,
    nodes: int = 3,
    run_as: str | None = None,
    postgres_bin: str | None = None,
    etcd_bin: str | None = None,
    timeout: float = 120.0,
    **layout_options: Any,
) -> dict[str, Any]:
    """Create and start a cluster, or restart the stopped parts of an existing one.

    Idempotent: on a healthy running cluster it changes nothing.
    """
    directory = Path(directory).absolute()
    t0 = time.monotonic()
    created = False
    if (directory / STATE_FILE).exists():
        layout = load_layout(directory)  # an existing cluster keeps its own name and layout
        secrets = load_secrets(directory)
        ras = _run_as_of(layout)
    else:
        if directory.exists() and any(directory.iterdir()):
            raise ChaosDBError(f"{directory} exists, is not empty and holds no chaosdb cluster: choose another --dir")
        ras = resolve_run_as(run_as)
        layout = plan_layout(name, directory, nodes=nodes, run_as=ras,
                             users=node_users(ras, nodes, run_as, cluster=name), **layout_options)
        bins = find_binaries(postgres_bin, etcd_bin)
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o755)
        # check every port before anything starts: a clear error beats a half-started cluster
        items = []
        for n in layout.nodes:
            items += [(n.host, n.pg_port, f"PostgreSQL of {n.name}"), (n.host, n.api_port, f"Patroni of {n.name}"),
                      (n.host, n.etcd_client_port, f"etcd client of {n.name}"),
                      (n.host, n.etcd_peer_port, f"etcd peer of {n.name}")]
        try:
            _check_ports(items)
            layout.binaries = prepare_runtime(bins, ras, directory / "runtime").as_dict()
        except ChaosDBError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        secrets = _new_secrets()
        _write_private(directory / SECRETS_FILE, json.dumps(secrets, indent=2) + "\n")
        _write_pgpass(layout, secrets)
        layout.save()
        created = True
    _prepare_dirs(layout, ras)
    _write_configs(layout, secrets)
    started = {}
    for node in layout.nodes:
        started[node.name] = start_node(layout, node.name, components=("etcd",))["started"]
    wait_etcd(layout, timeout=min(timeout, 30))
    for node in layout.nodes:
        started[node.name].update(start_node(layout, node.name, components=("patroni",))["started"])
    health = wait_healthy(layout, timeout=timeout, fail_fast=True)
    _ensure_app_database(layout, secrets)
    return {
        "cluster": layout.name,
        "dir": str(directory),
        "created": created,
        "started": {k: v for k, v in started.items() if v},
        "leader": health["leader"],
        "seconds": round(time.monotonic() - t0, 2),
        "dsn": layout.dsn(),
        "admin_dsn": layout.dsn(user="postgres", database="postgres"),
        "patroni_urls": layout.patroni_urls,
        "etcd_urls": layout.etcd_urls,
    }


def _live_patroni_states(layout: ClusterLayout) -> dict[str, dict[str, Any]]:
    """``GET /patroni`` of every node at once (1 s timeout); nodes that do not answer are absent."""
    client = PatroniClient(layout.patroni_urls, timeout=1.0)
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
    try:
        for member in patroni_client(layout).members():
            members[member.name] = member
    except ChaosDBError as exc:
        patroni_error = str(exc)
    # processes first: they are the ground truth at this instant (network answers may take a while)
    procs_of = {node.name: node_processes(node.path, node.data_dir) for node in layout.nodes}
    etcd = etcd_client(layout)
    etcd_rows = {row["url"]: row for row in etcd.overview()["members"]}
    leader_ids = {r.get("leader_id") for r in etcd_rows.values() if r.get("leader_id") not in (None, "", "0")}
    live = _live_patroni_states(layout)
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


def down(layout: ClusterLayout, purge: bool = False, timeout: float = 30.0) -> dict[str, Any]:
    """Stop every process of every node (replicas first, the leader last, etcd at the end).

    ``purge`` also deletes the cluster directory (data, logs, staged runtime).
    """
    _run_as_of(layout)
    leader = None
    try:
        leader = patroni_client(layout, timeout=1.0).leader()
    except (ChaosDBError, HttpError):
        pass
    order = sorted(layout.nodes, key=lambda n: (leader is not None and n.name == leader.name, n.name))
    results = []
    threads = []
    stop_results: dict[str, Any] = {}

    def _stop(n: NodeLayout) -> None:
        stop_results[n.name] = stop_node(layout, n.name, graceful=True, timeout=timeout, components=("patroni",))

    replicas = [n for n in order if not (leader and n.name == leader.name)]
    for n in replicas:
        th = threading.Thread(target=_stop, args=(n,))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    for n in order:
        if n not in replicas:
            _stop(n)
    for n in layout.nodes:
        results.append(stop_node(layout, n.name, graceful=True, timeout=10, components=("etcd",)))
    leftovers = {n.name: [p.pid for p in node_processes(n.path, n.data_dir)] for n in layout.nodes}
    leftovers = {k: v for k, v in leftovers.items() if v}
    if leftovers:
        for pids in leftovers.values():
            signal_pids(pids, signal.SIGKILL)
            wait_gone(pids, 5)
        leftovers = {n.name: [p.pid for p in node_processes(n.path, n.data_dir) if pid_alive(p.pid)]
                     for n in layout.nodes}
        leftovers = {k: v for k, v in leftovers.items() if v}
    if leftovers:
        raise ChaosDBError(f"processes survived SIGKILL: {leftovers}")
    if purge:
        shutil.rmtree(layout.path, ignore_errors=False)
    return {"cluster": layout.name, "dir": layout.dir, "stopped": [n.name for n in layout.nodes], "purged": purge,
            "sigkilled": {k: v["sigkilled"] for k, v in stop_results.items() if v["sigkilled"]}}
