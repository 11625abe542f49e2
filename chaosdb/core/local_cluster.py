"""A local cluster's endpoints as data: the ``endpoints.json`` its launcher writes into the cluster's folder, read by the
clients of Patroni, etcd and the load when a configuration names a cluster (``chaosdb_cluster`` /
``chaosdb_cluster_dir`` / ``CHAOSDB_CLUSTER_DIR``) instead of giving ``patroni_urls``, ``etcd_urls`` or a DSN.

The database packages find a local cluster by reading this file, never by importing the package that starts it, so
no loop runs through a launcher at run time. The file holds no password: Patroni's is read from the file it names
each time a client is made, and the DSNs name the cluster's pgpass file.

The file, written by :func:`publish_endpoints`::

    {"kind": "postgres-ha",
     "patroni_urls": ["https://127.0.0.11:8008", ...], "etcd_urls": ["https://127.0.0.11:2379", ...],
     "dsn": "postgresql://chaosdb@...?passfile=...", "admin_dsn": "postgresql://postgres@...",
     "patroni_user": "patroni", "patroni_password_file": "secrets.json", "patroni_password_key": "patroni_password",
     "patroni_tls": {"ca_file": ..., "cert_file": ..., "key_file": ...} or null, "etcd_tls": ... or null}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import resolve_cluster_dir
from chaosdb.core.settings import env_value
from chaosdb.core.tls import ClientTls

__all__ = ["ENDPOINTS_FILE", "names_local_cluster", "local_endpoints", "local_cluster_dir", "publish_endpoints",
           "split_urls"]

#: the file in a cluster's folder that says where its services are
ENDPOINTS_FILE = "endpoints.json"


def split_urls(value: Any) -> list[str]:
    """URLs from a list or a comma-separated string."""
    if not value:
        return []
    if isinstance(value, str):
        return [u.strip() for u in value.split(",") if u.strip()]
    return [str(u).strip() for u in value if str(u).strip()]


def names_local_cluster(configuration: dict[str, Any] | None, environment: bool = True) -> bool:
    """Whether the configuration (``chaosdb_cluster`` / ``chaosdb_cluster_dir``), or with *environment*
    ``CHAOSDB_CLUSTER_DIR``, names a local cluster."""
    configuration = configuration or {}
    return bool(configuration.get("chaosdb_cluster") or configuration.get("chaosdb_cluster_dir")
                or (environment and env_value("CHAOSDB_CLUSTER_DIR")))


def _read(folder: Path) -> dict[str, Any]:
    path = folder / ENDPOINTS_FILE
    try:
        return dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise ChaosDBError(f"no local cluster at {folder} (missing {ENDPOINTS_FILE}): start one with "
                           f"'chaosdb cluster up --dir {folder}' or point chaosdb_cluster_dir at an existing one") from None
    except PermissionError:
        raise ChaosDBError(f"{path} is not readable by this user: run as the user who started the cluster") from None
    except ValueError as exc:
        raise ChaosDBError(f"{path} is not the JSON a cluster's launcher writes ({exc}): restart the cluster with "
                           f"'chaosdb cluster up --dir {folder}'") from None


def _tls(service: str, value: Any) -> ClientTls | None:
    if not value:
        return None
    return ClientTls(service, str(value.get("ca_file", "")), str(value.get("cert_file", "")),
                     str(value.get("key_file", "")))


def _password(folder: Path, found: dict[str, Any]) -> str:
    name = found.get("patroni_password_file")
    if not name:
        return ""
    path = folder / str(name)
    try:
        return str(json.loads(path.read_text())[str(found.get("patroni_password_key", "patroni_password"))])
    except FileNotFoundError:
        raise ChaosDBError(f"{path} is missing: the cluster's passwords are unknown") from None
    except PermissionError:
        raise ChaosDBError(f"{path} is not readable by this user: run as the user who started the cluster") from None
    except (KeyError, ValueError):
        raise ChaosDBError(f"{path} holds no Patroni password: restart the cluster with "
                           f"'chaosdb cluster up --dir {folder}'") from None


def local_endpoints(configuration: dict[str, Any] | None) -> dict[str, Any]:
    """``patroni_urls``, ``patroni_auth`` (user, password; only ever handed to a client), ``patroni_tls``,
    ``etcd_urls``, ``etcd_tls``, ``dsn`` (the application's) and ``admin_dsn`` of the local cluster the configuration
    names; refused with how to start one when its folder holds none."""
    folder = resolve_cluster_dir("", "", configuration or {})
    found = _read(folder)
    user = str(found.get("patroni_user") or "")
    return {"patroni_urls": split_urls(found.get("patroni_urls")), "etcd_urls": split_urls(found.get("etcd_urls")),
            "patroni_auth": (user, _password(folder, found)) if user else None,
            "patroni_tls": _tls("patroni", found.get("patroni_tls")), "etcd_tls": _tls("etcd", found.get("etcd_tls")),
            "dsn": str(found.get("dsn") or ""), "admin_dsn": str(found.get("admin_dsn") or "")}


def local_cluster_dir(cluster: str = "", cluster_dir: str = "", configuration: dict[str, Any] | None = None) -> str:
    """The folder of the local cluster the arguments, the configuration or ``CHAOSDB_CLUSTER_DIR`` name; "" when none
    of them names one; :class:`ChaosDBError` when the one named holds no cluster."""
    if not (cluster or cluster_dir or names_local_cluster(configuration)):
        return ""
    folder = resolve_cluster_dir(cluster, cluster_dir, configuration or {})
    _read(folder)
    return str(folder)


def publish_endpoints(folder: Path | str, kind: str, endpoints: dict[str, Any]) -> None:
    """Write *folder*'s ``endpoints.json`` (through a temporary file, so a reader never sees half of it): what a
    launcher calls whenever its cluster's addresses or TLS change. *endpoints* holds the keys above but ``kind``;
    ``ClientTls`` values are written as their three paths."""
    body: dict[str, Any] = {"kind": kind}
    for key, value in endpoints.items():
        if isinstance(value, ClientTls):
            value = {"ca_file": value.ca_file, "cert_file": value.cert_file, "key_file": value.key_file}
        body[key] = value
    path = Path(folder) / ENDPOINTS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)
