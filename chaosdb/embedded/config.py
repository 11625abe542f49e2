"""What the embedded cluster's servers read: Patroni's YAML, etcd's command line, their environments, the
cluster's secrets and pgpass file, and the node directories they need (owned by the node users)."""

from __future__ import annotations

import json
import os
import secrets as _secrets
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.layout import DEFAULT_TIMINGS
from chaosdb.embedded.runtime import RunAs
from chaosdb.embedded.state import (
    ClusterLayout,
    NodeLayout,
)
from chaosdb.embedded.tls import NODE_CA, NODE_CERT, NODE_KEY, ensure_node_certificate, node_file


def _secure_patroni(cfg: dict[str, Any], layout: ClusterLayout, node: NodeLayout) -> dict[str, Any]:
    """A secure cluster's Patroni: HTTPS with client-certificate checks, etcd over TLS, PostgreSQL hostssl only."""
    ca, crt, key = (node_file(node, f) for f in (NODE_CA, NODE_CERT, NODE_KEY))
    cfg["restapi"].update(certfile=crt, keyfile=key, cafile=ca, verify_client="required")
    cfg["ctl"] = {"certfile": crt, "keyfile": key, "cacert": ca}  # what Patroni presents to the other members
    cfg["etcd3"].update(protocol="https", cacert=ca, cert=crt, key=key)
    pg = cfg["postgresql"]
    pg["parameters"].update(ssl="on", ssl_cert_file=crt, ssl_key_file=key, ssl_ca_file=ca,
                            password_encryption="scram-sha-256")
    for role in pg["authentication"].values():
        role.update(sslmode="verify-full", sslrootcert=ca)
    pg["pg_hba"] = [line.replace("host ", "hostssl ", 1) if line.startswith("host ") else line
                    for line in pg["pg_hba"]]
    return cfg


def _patroni_config(layout: ClusterLayout, node: NodeLayout, secrets: dict[str, str]) -> dict[str, Any]:
    cfg = _plain_patroni_config(layout, node, secrets)
    return _secure_patroni(cfg, layout, node) if node.tls else cfg


def _plain_patroni_config(layout: ClusterLayout, node: NodeLayout, secrets: dict[str, str]) -> dict[str, Any]:
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
                        # a replica reports its position every second (default 10 s): its lag is seen at once,
                        # and a network fault cuts an asynchronous replica's stream within a second (the fault
                        # engine tells a connection's opener from the opener's next packet)
                        "wal_receiver_status_interval": "1s",
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


def etcd_argv(layout: ClusterLayout, node: NodeLayout) -> list[str]:
    """The argv of a node's etcd: its name, data folder, URLs and the initial cluster (TLS flags when secure)."""
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
        *_etcd_tls_argv(node),
    ]


def _etcd_tls_argv(node: NodeLayout) -> list[str]:
    """A secure node's etcd: TLS on both ports, and only clients and peers with a certificate of the cluster's CA."""
    if not node.tls:
        return []
    ca, crt, key = (node_file(node, f) for f in (NODE_CA, NODE_CERT, NODE_KEY))
    return ["--cert-file", crt, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth",
            "--peer-cert-file", crt, "--peer-key-file", key, "--peer-trusted-ca-file", ca, "--peer-client-cert-auth"]


def patroni_env(layout: ClusterLayout, node: NodeLayout) -> dict[str, str]:
    """The exact environment of a node's Patroni: PATH to the staged PostgreSQL binaries, HOME (and its Python paths)."""
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


def prepare_dirs(layout: ClusterLayout, cluster_user: RunAs | None = None) -> None:
    """Create the node directories for their users; refuse ones that belong to somebody else."""
    for node in layout.nodes:
        run_as = node_run_as(layout, node)
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
        if node.tls:
            ensure_node_certificate(layout, node)


def write_private(path: Path, text: str, uid: int | None = None, gid: int | None = None) -> None:
    """Write *text* to *path* readable only by its owner (mode 0600), owned by *uid*/*gid* when given."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    if uid is not None and os.geteuid() == 0:
        os.chown(path, uid, gid if gid is not None else -1)


def write_configs(layout: ClusterLayout, secrets: dict[str, str]) -> None:
    """Write every node's etcd and Patroni configuration (passwords from *secrets*) as the node's user."""
    for node in layout.nodes:
        run_as = node_run_as(layout, node)
        cfg = _patroni_config(layout, node, secrets)
        # JSON is YAML: Patroni reads it as is
        write_private(node.patroni_config, json.dumps(cfg, indent=2) + "\n", run_as.uid, run_as.gid)


def new_secrets() -> dict[str, str]:
    """Fresh random passwords of a new cluster: postgres, replication, Patroni's REST API, the application's."""
    return {k: _secrets.token_urlsafe(18) for k in
            ("postgres_password", "replication_password", "patroni_password", "app_password")}


def write_pgpass(layout: ClusterLayout, secrets: dict[str, str]) -> None:
    """The cluster's pgpass file (owner-only): the DSNs the pack hands out never carry a password."""
    lines = [
        f"*:*:*:postgres:{secrets['postgres_password']}",
        f"*:*:*:{layout.app_user}:{secrets['app_password']}",
        f"*:*:*:replicator:{secrets['replication_password']}",
    ]
    write_private(layout.path / "pgpass", "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# per-node lifecycle


def run_as_of(layout: ClusterLayout) -> RunAs:
    """Who runs the cluster's servers; :class:`ChaosDBError` when this process may not act for the cluster's user."""
    if os.geteuid() != 0 and os.geteuid() != layout.uid:
        raise ChaosDBError(
            f"the cluster at {layout.dir} runs as {layout.run_as!r} (uid {layout.uid}); "
            "manage it as that user or as root"
        )
    return RunAs(layout.run_as, layout.uid, layout.gid)


def node_run_as(layout: ClusterLayout, node: NodeLayout) -> RunAs:
    """The user a node's servers run as (after :func:`run_as_of` checked this process may act for them)."""
    run_as_of(layout)
    return RunAs(*layout.node_user(node))
