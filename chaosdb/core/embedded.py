"""Where the embedded cluster is, for the packages that fall back to it when an experiment's configuration names
no cluster of its own (Patroni and etcd URLs, the DSN of the load).

The embedded cluster is the default cluster kind (:mod:`chaosdb.core.clusterkinds`), built from the etcd and
Patroni clients; this module asks that kind's module for its endpoints, found by convention as every kind is, so
those packages never import it and nothing imports in a circle.
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.clusterkinds import DEFAULT_KIND, kind_module
from chaosdb.core.settings import env_value

__all__ = ["names_embedded_cluster", "embedded_endpoints", "embedded_cluster_dir", "split_urls"]

def split_urls(value: Any) -> list[str]:
    """URLs from a list or a comma-separated string."""
    if not value:
        return []
    if isinstance(value, str):
        return [u.strip() for u in value.split(",") if u.strip()]
    return [str(u).strip() for u in value if str(u).strip()]


def names_embedded_cluster(configuration: dict[str, Any] | None, environment: bool = True) -> bool:
    """Whether the configuration (``chaosdb_cluster`` / ``chaosdb_cluster_dir``), or with *environment*
    ``CHAOSDB_CLUSTER_DIR``, points at an embedded cluster."""
    configuration = configuration or {}
    return bool(configuration.get("chaosdb_cluster") or configuration.get("chaosdb_cluster_dir")
                or (environment and env_value("CHAOSDB_CLUSTER_DIR")))


def embedded_endpoints(configuration: dict[str, Any] | None) -> dict[str, Any]:
    """``patroni_urls``, ``patroni_auth``, ``etcd_urls``, ``dsn`` (the application's) and ``admin_dsn`` of the
    embedded cluster the configuration names (passwords stay in its pgpass file; ``patroni_auth`` is only ever
    handed to a client)."""
    return kind_module(DEFAULT_KIND).endpoints(configuration or {})


def embedded_cluster_dir(cluster: str = "", cluster_dir: str = "", configuration: dict[str, Any] | None = None) -> str:
    """The folder of the embedded cluster the arguments, the configuration or ``CHAOSDB_CLUSTER_DIR`` name; "" when
    none of them names one; :class:`ChaosDBError` when the one named is not there."""
    if not (cluster or cluster_dir or names_embedded_cluster(configuration)):
        return ""
    return str(kind_module(DEFAULT_KIND).cluster_dir(cluster, cluster_dir, configuration or {}))
