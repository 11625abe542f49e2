"""The embedded cluster's endpoints for an experiment's configuration (``chaosdb_cluster`` /
``chaosdb_cluster_dir`` / ``CHAOSDB_CLUSTER_DIR``): what :func:`chaosdb.core.embedded.embedded_endpoints`
answers."""

from __future__ import annotations

from typing import Any

from chaosdb.embedded.state import load_layout, load_secrets, resolve_cluster_dir

__all__ = ["endpoints", "cluster_dir"]


def endpoints(configuration: dict[str, Any]) -> dict[str, Any]:
    """The embedded cluster the configuration names: Patroni and etcd URLs and their client TLS, the application and
    admin DSNs, Patroni's credentials."""
    layout = load_layout(resolve_cluster_dir("", "", configuration))
    return {"patroni_urls": layout.patroni_urls,
            "patroni_auth": ("patroni", load_secrets(layout.path)["patroni_password"]),
            "patroni_tls": layout.client_tls("patroni"), "etcd_tls": layout.client_tls("etcd"),
            "etcd_urls": layout.etcd_urls, "dsn": layout.dsn(),
            "admin_dsn": layout.dsn(user="postgres", database="postgres")}


def cluster_dir(cluster: str, folder: str, configuration: dict[str, Any] | None) -> str:
    """The folder of the embedded cluster the arguments (name or folder), the configuration or the environment name;
    :class:`ChaosDBError` when there is none."""
    return load_layout(resolve_cluster_dir(cluster, folder, configuration)).dir
