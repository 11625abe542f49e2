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

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.libpq import with_libpq_tls
from chaosdb.core.local_cluster import local_endpoints, names_local_cluster, split_urls
from chaosdb.core.tls import client_tls, credentials
from chaosdb.etcd.endpoints import etcd_client
from chaosdb.postgres.patroni import PatroniClient

__all__ = ["patroni_client", "etcd_client", "postgres_dsn", "split_urls", "secret_values"]


def patroni_client(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> PatroniClient:
    """A client with the TLS keys ``patroni_ca_file``, ``patroni_cert_file``, ``patroni_key_file``,
    ``patroni_tls_verify`` and the secrets ``patroni_username`` / ``patroni_password``; an embedded cluster's own
    CA, client certificate and password fill what they do not set."""
    configuration, secrets = configuration or {}, secrets or {}
    urls = split_urls(configuration.get("patroni_urls"))
    tls = client_tls("patroni", configuration)
    auth = credentials("patroni", secrets)
    if urls:
        return PatroniClient(tls.check_urls(urls, "patroni_urls"), auth=auth, tls=tls)
    if not names_local_cluster(configuration):
        raise ChaosDBError("no Patroni cluster configured: set configuration 'patroni_urls' "
                           "(or 'chaosdb_cluster' for the embedded cluster)")
    embedded = local_endpoints(configuration)
    return PatroniClient(embedded["patroni_urls"], auth=auth or embedded["patroni_auth"], timeout=2.0,
                         tls=tls.over(embedded.get("patroni_tls")))


def postgres_dsn(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> str:
    """The secret ``postgres_dsn`` (else the embedded cluster's), with the TLS keys and the secret
    ``postgres_password`` it does not set itself (:mod:`chaosdb.core.libpq`)."""
    return with_libpq_tls(_dsn(configuration, secrets), configuration, secrets)


def _dsn(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> str:
    if secrets and secrets.get("postgres_dsn"):
        return str(secrets["postgres_dsn"])
    if configuration and configuration.get("postgres_dsn"):
        raise ChaosDBError("'postgres_dsn' belongs in secrets, not configuration: it carries a password")
    if not names_local_cluster(configuration):
        raise ChaosDBError("no PostgreSQL DSN: set the secret 'postgres_dsn' "
                           "(or configuration 'chaosdb_cluster' for the embedded cluster)")
    return str(local_endpoints(configuration)["admin_dsn"])


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
