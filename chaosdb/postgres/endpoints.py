"""Where a Patroni/PostgreSQL/etcd cluster is, from Chaos Toolkit configuration and secrets.

Configuration keys (any cluster):

* ``patroni_urls``: Patroni REST API base URLs (list, or comma-separated string)
* ``etcd_urls``: etcd client URLs (list, or comma-separated string)

Secrets keys (declare them in the experiment's ``secrets`` and list the scope
in the activity's provider ``secrets``):

* ``patroni_username`` / ``patroni_password``: Patroni ``restapi.authentication``
* ``postgres_dsn``: a libpq DSN to the primary (multi-host with
  ``target_session_attrs=read-write`` recommended); its password never
  appears in returned values, logs or errors. A DSN without a password (one that
  names a ``passfile``) may be configuration instead.

For the embedded cluster, the control :mod:`chaosdb.clusters.postgres_ha.control` sets them when the run starts
(Patroni's credentials in the secret scope ``embedded_cluster``).
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.libpq import with_libpq_tls
from chaosdb.core.redact import redact_dsn
from chaosdb.core.settings import missing_key, split_urls
from chaosdb.core.tls import client_tls, credentials
from chaosdb.etcd.endpoints import etcd_client
from chaosdb.postgres.patroni import PatroniClient

__all__ = ["patroni_client", "etcd_client", "postgres_dsn", "split_urls", "secret_values"]


def patroni_client(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> PatroniClient:
    """A client of ``patroni_urls`` with the TLS keys ``patroni_ca_file``, ``patroni_cert_file``,
    ``patroni_key_file``, ``patroni_tls_verify`` and the secrets ``patroni_username`` / ``patroni_password``."""
    configuration = configuration or {}
    urls = split_urls(configuration.get("patroni_urls"))
    if not urls:
        raise ChaosDBError(missing_key("patroni_urls", "Patroni cluster", configuration))
    tls = client_tls("patroni", configuration)
    return PatroniClient(tls.check_urls(urls, "patroni_urls"), auth=credentials("patroni", secrets), tls=tls)


def postgres_dsn(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> str:
    """The secret ``postgres_dsn`` (else a configuration ``postgres_dsn`` without a password, as the embedded
    cluster's control sets it), with the TLS keys and the secret ``postgres_password`` it does not set itself
    (:mod:`chaosdb.core.libpq`)."""
    return with_libpq_tls(_dsn(configuration, secrets), configuration, secrets)


def _dsn(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> str:
    if secrets and secrets.get("postgres_dsn"):
        return str(secrets["postgres_dsn"])
    given = str((configuration or {}).get("postgres_dsn") or "")
    if given and redact_dsn(given) != given:
        raise ChaosDBError("'postgres_dsn' belongs in secrets, not configuration: it carries a password")
    if given:
        return given
    raise ChaosDBError(missing_key("postgres_dsn", "PostgreSQL DSN", configuration, secret=True))


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
