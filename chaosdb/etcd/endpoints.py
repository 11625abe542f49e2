"""Where an etcd cluster is: configuration ``etcd_urls`` (a list, or comma-separated), else the embedded cluster
the configuration names (``chaosdb_cluster`` / ``chaosdb_cluster_dir`` / ``CHAOSDB_CLUSTER_DIR``)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.local_cluster import local_endpoints, names_local_cluster, split_urls
from chaosdb.core.tls import client_tls, credentials
from chaosdb.etcd.client import EtcdClient

__all__ = ["etcd_client"]


def etcd_client(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None = None) -> EtcdClient:
    """A client with the TLS keys ``etcd_ca_file``, ``etcd_cert_file``, ``etcd_key_file``, ``etcd_tls_verify``
    and the secrets ``etcd_username`` / ``etcd_password`` (:mod:`chaosdb.core.tls`); an embedded cluster's own CA
    and client certificate fill what they do not set."""
    tls = client_tls("etcd", configuration)
    auth = credentials("etcd", secrets)
    urls = split_urls((configuration or {}).get("etcd_urls"))
    if urls:
        return EtcdClient(tls.check_urls(urls, "etcd_urls"), tls=tls, auth=auth)
    if not names_local_cluster(configuration):
        raise ChaosDBError("no etcd cluster configured: set configuration 'etcd_urls' "
                           "(or 'chaosdb_cluster' for the embedded cluster)")
    embedded = local_endpoints(configuration)
    return EtcdClient(embedded["etcd_urls"], tls=tls.over(embedded.get("etcd_tls")), auth=auth)
