"""Where an etcd cluster is: configuration ``etcd_urls`` (a list, or comma-separated), else the embedded cluster
the configuration names (``chaosdb_cluster`` / ``chaosdb_cluster_dir`` / ``CHAOSDB_CLUSTER_DIR``)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.embedded import embedded_endpoints, names_embedded_cluster, split_urls
from chaosdb.core.errors import ChaosDBError
from chaosdb.etcd.client import EtcdClient

__all__ = ["etcd_client"]


def etcd_client(configuration: dict[str, Any] | None) -> EtcdClient:
    urls = split_urls((configuration or {}).get("etcd_urls"))
    if urls:
        return EtcdClient(urls)
    if not names_embedded_cluster(configuration):
        raise ChaosDBError("no etcd cluster configured: set configuration 'etcd_urls' "
                           "(or 'chaosdb_cluster' for the embedded cluster)")
    return EtcdClient(embedded_endpoints(configuration)["etcd_urls"])
