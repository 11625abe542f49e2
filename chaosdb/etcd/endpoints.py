"""Where an etcd cluster is: configuration ``etcd_urls`` (a list, or comma-separated; for the embedded cluster the
control :mod:`chaosdb.clusters.postgres_ha.control` sets it, with its TLS files, when the run starts)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import missing_key, split_urls
from chaosdb.core.tls import client_tls, credentials
from chaosdb.etcd.client import EtcdClient

__all__ = ["etcd_client"]


def etcd_client(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None = None) -> EtcdClient:
    """A client of ``etcd_urls`` with the TLS keys ``etcd_ca_file``, ``etcd_cert_file``, ``etcd_key_file``,
    ``etcd_tls_verify`` and the secrets ``etcd_username`` / ``etcd_password`` (:mod:`chaosdb.core.tls`)."""
    urls = split_urls((configuration or {}).get("etcd_urls"))
    if not urls:
        raise ChaosDBError(missing_key("etcd_urls", "etcd cluster", configuration))
    tls = client_tls("etcd", configuration)
    return EtcdClient(tls.check_urls(urls, "etcd_urls"), tls=tls, auth=credentials("etcd", secrets))
