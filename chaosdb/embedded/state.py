"""Where an embedded cluster lives and what it is made of (``cluster.json``).

A cluster directory holds::

    cluster.json          layout: nodes, addresses, ports, binaries, user (no secrets)
    secrets.json          passwords (mode 0600, owned by whoever ran ``cluster up``)
    pgpass                libpq password file for the DSNs printed by ``cluster up`` (0600)
    tls/                  a secure cluster's CA and the experiments' client certificate (``--secure``)
    runtime/              binaries staged where the unprivileged user can reach them (root only)
    node1/                patroni.yml, data/ (PostgreSQL), etcd/, log/, run/
    node2/ ...

The default directory is ``$CHAOSDB_HOME/<name>``; ``CHAOSDB_HOME`` defaults to
``/var/lib/chaosdb`` for root and ``~/.local/state/chaosdb`` for other users.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import DEFAULT_CLUSTER, cluster_dir_for, default_home, resolve_cluster_dir
from chaosdb.core.local_cluster import publish_endpoints
from chaosdb.core.tls import ClientTls

__all__ = [
    "NodeLayout",
    "ClusterLayout",
    "default_home",
    "cluster_dir_for",
    "load_layout",
    "load_secrets",
    "resolve_cluster_dir",
    "DEFAULT_CLUSTER",
]

STATE_FILE = "cluster.json"
SECRETS_FILE = "secrets.json"




@dataclass
class NodeLayout:
    name: str
    host: str
    pg_port: int
    api_port: int
    etcd_client_port: int
    etcd_peer_port: int
    dir: str
    user: str = ""  # the node's own user; empty: the cluster's run_as
    uid: int = -1
    gid: int = -1
    tls: bool = False  # a secure cluster: HTTPS, client certificates, hostssl only (chaosdb.embedded.tls)

    @property
    def path(self) -> Path:
        """The node's folder."""
        return Path(self.dir)

    @property
    def tls_dir(self) -> Path:
        """The node's CA copy, certificate and key (``ca.crt``, ``node.crt``, ``node.key``), owned by its user."""
        return self.path / "tls"

    @property
    def scheme(self) -> str:
        """``https`` for a secure cluster, else ``http``."""
        return "https" if self.tls else "http"

    @property
    def data_dir(self) -> Path:
        """PostgreSQL's data folder."""
        return self.path / "data"

    @property
    def etcd_dir(self) -> Path:
        """etcd's data folder."""
        return self.path / "etcd"

    @property
    def log_dir(self) -> Path:
        """The servers' logs."""
        return self.path / "log"

    @property
    def run_dir(self) -> Path:
        """Sockets and pid files."""
        return self.path / "run"

    @property
    def patroni_config(self) -> Path:
        """The node's ``patroni.yml``."""
        return self.path / "patroni.yml"

    @property
    def api_url(self) -> str:
        """Patroni's REST API URL."""
        return f"{self.scheme}://{self.host}:{self.api_port}"

    @property
    def etcd_client_url(self) -> str:
        """etcd's client URL."""
        return f"{self.scheme}://{self.host}:{self.etcd_client_port}"

    @property
    def etcd_peer_url(self) -> str:
        """etcd's peer URL."""
        return f"{self.scheme}://{self.host}:{self.etcd_peer_port}"


@dataclass
class ClusterLayout:
    name: str
    kind: str
    dir: str
    run_as: str
    uid: int
    gid: int
    nodes: list[NodeLayout]
    binaries: dict[str, str] = field(default_factory=dict)  # postgres_bin, etcd, python, pythonpath, ld_path
    replication: str = "sync"
    database: str = "chaosdb"
    app_user: str = "chaosdb"
    timings: dict[str, int] = field(default_factory=dict)
    #: who created the cluster: ``{"by": "command"}`` (``chaosdb cluster up``: a person's), ``{"by": "run" |
    #: "gameday", "pid", "start", "at"}`` (made for runs); empty for a cluster made before this was recorded
    created_by: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        """The cluster's folder."""
        return Path(self.dir)

    def node_user(self, node: NodeLayout) -> tuple[str, int, int]:
        """(user, uid, gid) that *node*'s processes run as."""
        if node.uid >= 0:
            return node.user, node.uid, node.gid
        return self.run_as, self.uid, self.gid

    def node(self, name: str) -> NodeLayout:
        """The node called *name*; refused with every node's name when there is none."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise ChaosDBError(f"cluster {self.name!r} has no node {name!r} (nodes: "
                           f"{', '.join(n.name for n in self.nodes)})")

    @property
    def secure(self) -> bool:
        """Whether the cluster speaks TLS (``--secure``)."""
        return any(n.tls for n in self.nodes)

    @property
    def tls_dir(self) -> Path:
        """The cluster's CA (``ca.crt``; ``ca.key`` stays here) and the client certificate experiments use
        (``client.crt``, ``client.key``)."""
        return self.path / "tls"

    def client_tls(self, service: str) -> ClientTls | None:
        """What a client of *service* (``patroni``, ``etcd``) needs to reach a secure cluster; None otherwise."""
        if not self.secure:
            return None
        d = self.tls_dir
        return ClientTls(service, str(d / "ca.crt"), str(d / "client.crt"), str(d / "client.key"))

    def tls_params(self) -> list[str]:
        """libpq parameters of a secure cluster's DSNs (the server's certificate is checked against its CA)."""
        return ["sslmode=verify-full", f"sslrootcert={self.tls_dir / 'ca.crt'}"] if self.secure else []

    @property
    def patroni_urls(self) -> list[str]:
        """Every node's Patroni REST API URL."""
        return [n.api_url for n in self.nodes]

    @property
    def etcd_urls(self) -> list[str]:
        """Every node's etcd client URL."""
        return [n.etcd_client_url for n in self.nodes]

    def dsn(self, user: str | None = None, database: str | None = None, read_write: bool = True,
            connect_timeout: int = 3) -> str:
        """libpq multi-host URL; the password comes from the cluster's pgpass file."""
        hosts = ",".join(f"{n.host}:{n.pg_port}" for n in self.nodes)
        params = [f"connect_timeout={connect_timeout}", f"passfile={self.path / 'pgpass'}", *self.tls_params()]
        if read_write:
            params.insert(0, "target_session_attrs=read-write")
        return f"postgresql://{user or self.app_user}@{hosts}/{database or self.database}?{'&'.join(params)}"

    def node_dsn(self, node: str, user: str = "postgres", database: str = "postgres") -> str:
        """A DSN of one node's PostgreSQL (not the cluster's primary), with the pgpass file and TLS parameters."""
        n = self.node(node)
        return (f"postgresql://{user}@{n.host}:{n.pg_port}/{database}"
                f"?connect_timeout=3&passfile={self.path / 'pgpass'}" + "".join(f"&{p}" for p in self.tls_params()))

    def to_json(self) -> dict[str, Any]:
        """The layout as JSON (what ``cluster.json`` holds)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ClusterLayout":
        """The layout ``cluster.json`` holds."""
        data = dict(data)
        data["nodes"] = [NodeLayout(**n) for n in data["nodes"]]
        return cls(**data)

    def save(self) -> None:
        """Write ``cluster.json`` (through a temporary file, so a reader never sees half of it) and the endpoints a
        client finds the cluster by (:mod:`chaosdb.core.local_cluster`)."""
        path = self.path / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        os.replace(tmp, path)
        publish_endpoints(self.path, self.kind, self.endpoints())

    def endpoints(self) -> dict[str, Any]:
        """Where a client finds the cluster's services (no password: Patroni's is named by its file and key, the
        DSNs name the pgpass file)."""
        return {"patroni_urls": self.patroni_urls, "etcd_urls": self.etcd_urls, "dsn": self.dsn(),
                "admin_dsn": self.dsn(user="postgres", database="postgres"),
                "patroni_user": "patroni", "patroni_password_file": SECRETS_FILE,
                "patroni_password_key": "patroni_password",
                "patroni_tls": self.client_tls("patroni"), "etcd_tls": self.client_tls("etcd")}


def load_layout(path: Path | str) -> ClusterLayout:
    """The cluster in folder *path* (its ``cluster.json``); refused with how to start one when there is none."""
    path = Path(path)
    state = path / STATE_FILE
    if not state.is_file():
        raise ChaosDBError(
            f"no embedded cluster at {path} (missing {STATE_FILE}): start one with "
            f"'chaosdb cluster up --dir {path}' or point chaosdb_cluster_dir at an existing one"
        )
    try:
        return ClusterLayout.from_json(json.loads(state.read_text()))
    except (ValueError, TypeError, KeyError) as exc:
        raise ChaosDBError(f"{state} is not a chaosdb cluster description: {exc}") from None


def load_secrets(path: Path | str) -> dict[str, str]:
    """The cluster's passwords (``secrets.json``); refused when the file is missing."""
    f = Path(path) / SECRETS_FILE
    try:
        return json.loads(f.read_text())
    except FileNotFoundError:
        raise ChaosDBError(f"{f} is missing: the cluster's passwords are unknown") from None
    except PermissionError:
        raise ChaosDBError(f"{f} is not readable by this user: run as the user who started the cluster") from None
