"""Where a Patroni/PostgreSQL/etcd cluster is, from Chaos Toolkit configuration and secrets.

Configuration keys (any cluster):

* ``patroni_urls``: Patroni REST API base URLs (list, or comma-separated string)
* ``etcd_urls``: etcd client URLs (list, or comma-separated string)

Secrets keys (declare them in the experiment's ``secrets`` and list the scope
in the activity's provider ``secrets``):

* ``patroni_username`` / ``patroni_password``: Patroni ``restapi.authentication``
* ``postgres_dsn``: a libpq DSN to the primary (multi-host with
  ``target_session_attrs=read-write`` recommended); its password never
  appears in returned values, logs or errors

Without those, the embedded cluster named by ``chaosdb_cluster`` /
``chaosdb_cluster_dir`` (or ``CHAOSDB_CLUSTER_DIR``) is used.
"""

from __future__ import annotations

import os
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.etcd.client import EtcdClient
from chaosdb.local.cluster import patroni_client as embedded_client
from chaosdb.local.state import load_layout, resolve_cluster_dir
from chaosdb.postgres.patroni import PatroniClient

__all__ = ["patroni_client", "etcd_client", "postgres_dsn", "split_urls", "secret_values"]


def split_urls(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [u.strip() for u in value.split(",") if u.strip()]
    return [str(u).strip() for u in value if str(u).strip()]


def _embedded(configuration: dict[str, Any] | None):
    configuration = configuration or {}
    if not (configuration.get("chaosdb_cluster") or configuration.get("chaosdb_cluster_dir")
            or os.environ.get("CHAOSDB_CLUSTER_DIR")):
        return None
    return load_layout(resolve_cluster_dir("", "", configuration))


def patroni_client(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> PatroniClient:
    configuration, secrets = configuration or {}, secrets or {}
    urls = split_urls(configuration.get("patroni_urls"))
    auth = None
    if secrets.get("patroni_username") and secrets.get("patroni_password"):
        auth = (str(secrets["patroni_username"]), str(secrets["patroni_password"]))
    if urls:
        return PatroniClient(urls, auth=auth)
    layout = _embedded(configuration)
    if layout is None:
        raise ChaosDBError("no Patroni cluster configured: set configuration 'patroni_urls' "
                           "(or 'chaosdb_cluster' for the embedded cluster)")

    return embedded_client(layout)


def etcd_client(configuration: dict[str, Any] | None) -> EtcdClient:
    urls = split_urls((configuration or {}).get("etcd_urls"))
    if urls:
        return EtcdClient(urls)
    layout = _embedded(configuration)
    if layout is None:
        raise ChaosDBError("no etcd cluster configured: set configuration 'etcd_urls' "
                           "(or 'chaosdb_cluster' for the embedded cluster)")
    return EtcdClient(layout.etcd_urls)


def postgres_dsn(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> str:
    if secrets and secrets.get("postgres_dsn"):
        return str(secrets["postgres_dsn"])
    if configuration and configuration.get("postgres_dsn"):
        raise ChaosDBError("'postgres_dsn' belongs in secrets, not configuration: it carries a password")
    layout = _embedded(configuration)
    if layout is None:
        raise ChaosDBError("no PostgreSQL DSN: set the secret 'postgres_dsn' "
                           "(or configuration 'chaosdb_cluster' for the embedded cluster)")
    return layout.dsn(user="postgres", database="postgres")


def secret_values(secrets: dict[str, Any] | None) -> list[str]:
    """Every string secret plus the password inside a DSN, for redaction."""
    out = []
    for v in (secrets or {}).values():
        if isinstance(v, str):
            out.append(v)
            try:
                from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - needs the postgres extra

                pw = conninfo_to_dict(v).get("password")
                if pw:
                    out.append(str(pw))
            except Exception:  # not a DSN
                pass
    return out
