"""Where the load goes: the DSN (argument, secret ``load_dsn``, ``CHAOSDB_LOAD_DSN``, the embedded cluster the
configuration names), completed with the PostgreSQL TLS keys and password; for the etcd KV load, the client URLs and
their TLS. The DSN is handed to Locust in its environment, never on its command line, and never written to the
journal."""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.libpq import with_libpq_tls
from chaosdb.core.local_cluster import local_endpoints, names_local_cluster
from chaosdb.core.settings import env_value
from chaosdb.core.tls import ClientTls, client_tls
from chaosdb.load.options import ETCD_WORKLOADS

__all__ = ["resolve_dsn", "etcd_endpoints", "etcd_tls"]


def resolve_dsn(dsn: str, configuration: dict[str, Any] | None, secrets: dict[str, Any] | None,
                workload: str = "tpcc") -> str:
    """The load's DSN (the etcd URLs for ``ycsb-etcd`` and ``register-etcd``): *dsn*, else the secret ``load_dsn``, else
    CHAOSDB_LOAD_DSN, else the embedded cluster the configuration names; refused when there is none."""
    found = _given_dsn(dsn, configuration, secrets, workload)
    # the PostgreSQL TLS keys and password (chaosdb.core.libpq) fill what the DSN does not say
    return found if workload in ETCD_WORKLOADS else with_libpq_tls(found, configuration, secrets)


def _given_dsn(dsn: str, configuration: dict[str, Any] | None, secrets: dict[str, Any] | None,
               workload: str = "tpcc") -> str:
    if dsn:
        return dsn
    if workload in ETCD_WORKLOADS:  # the etcd client URLs: configuration etcd_urls, else the embedded cluster's
        return etcd_endpoints(configuration)
    for scope in (secrets or {}).values():
        if isinstance(scope, dict) and scope.get("load_dsn"):
            return str(scope["load_dsn"])
    if secrets and isinstance(secrets.get("load_dsn"), str):
        return str(secrets["load_dsn"])
    if env_value("CHAOSDB_LOAD_DSN"):
        return env_value("CHAOSDB_LOAD_DSN")
    if names_local_cluster(configuration, environment=False):
        return str(local_endpoints(configuration)["dsn"])
    raise ChaosDBError("no DSN for the load: pass 'dsn', a secret 'load_dsn', CHAOSDB_LOAD_DSN, "
                       "or configuration 'chaosdb_cluster'")


def etcd_endpoints(configuration: dict[str, Any] | None) -> str:
    """etcd client URLs for the KV load: configuration ``etcd_urls`` (list or comma-separated), else
    the embedded cluster's members."""
    configuration = configuration or {}
    urls = configuration.get("etcd_urls")
    if urls:
        return urls if isinstance(urls, str) else ",".join(map(str, urls))
    if names_local_cluster(configuration, environment=False):
        return ",".join(local_endpoints(configuration)["etcd_urls"])
    raise ChaosDBError("no etcd endpoints for the KV load: pass 'dsn' (http://host:2379,...), configuration "
                       "'etcd_urls', or 'chaosdb_cluster'")


def etcd_tls(configuration: dict[str, Any] | None) -> ClientTls | None:
    """TLS of the KV load's etcd client: the etcd keys of the configuration, over the embedded cluster's own CA and
    client certificate."""
    tls = client_tls("etcd", configuration)
    if names_local_cluster(configuration, environment=False) and not (configuration or {}).get("etcd_urls"):
        return tls.over(local_endpoints(configuration).get("etcd_tls"))
    return tls if tls.given else None
