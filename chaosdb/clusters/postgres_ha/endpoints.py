"""The embedded cluster a configuration names (``chaosdb_cluster`` / ``chaosdb_cluster_dir`` /
``CHAOSDB_CLUSTER_DIR``) as plain keys, once at the start of a run (:mod:`.control`) or of a command: what the
database packages read, so none of them looks for the cluster itself.

* configuration (written to the journal, nothing secret): ``chaosdb_cluster_dir``, ``patroni_urls``,
  ``etcd_urls``, a secure cluster's ``patroni_ca_file`` / ``patroni_cert_file`` / ``patroni_key_file`` and
  ``etcd_ca_file`` / ``etcd_cert_file`` / ``etcd_key_file``, and the DSNs ``load_dsn`` (the application's) and
  ``postgres_dsn`` (the admin's), which carry no password (libpq reads it from the cluster's pgpass file);
* secrets (scope :data:`SECRETS_SCOPE`, masked in the journal and the log): Patroni's ``patroni_username`` /
  ``patroni_password`` (only an activity that declares the scope in its provider's ``secrets`` gets them: those that
  change the cluster through Patroni's REST API, a switchover, a failover, a reinitialize).

A key the user set is never replaced.
"""

from __future__ import annotations

from typing import Any

from chaosdb.embedded.state import ClusterLayout, load_layout, load_secrets, resolve_cluster_dir

__all__ = ["SECRETS_SCOPE", "run_keys", "secret_keys", "fill_run_keys"]

#: the secret scope the embedded cluster's credentials go into
SECRETS_SCOPE = "embedded_cluster"


def run_keys(configuration: dict[str, Any] | None, cluster: str = "", folder: str = "") -> dict[str, Any]:
    """The configuration keys of the embedded cluster the arguments (name or folder), else the configuration, else
    ``CHAOSDB_CLUSTER_DIR`` name; :class:`ChaosDBError` when it is not there."""
    layout = load_layout(resolve_cluster_dir(cluster, folder, configuration))
    keys: dict[str, Any] = {"chaosdb_cluster_dir": layout.dir, "patroni_urls": layout.patroni_urls,
                            "etcd_urls": layout.etcd_urls, "load_dsn": layout.dsn(),
                            "postgres_dsn": layout.dsn(user="postgres", database="postgres")}
    keys.update(_tls_keys(layout))
    return keys


def secret_keys(configuration: dict[str, Any] | None) -> dict[str, str]:
    """The secret keys of the embedded cluster the configuration names: Patroni's credentials."""
    layout = load_layout(resolve_cluster_dir("", "", configuration))
    return {"patroni_username": "patroni", "patroni_password": load_secrets(layout.path)["patroni_password"]}


def _tls_keys(layout: ClusterLayout) -> dict[str, str]:
    found: dict[str, str] = {}
    for service in ("patroni", "etcd"):
        tls = layout.client_tls(service)
        if tls is not None:
            found.update({f"{service}_ca_file": tls.ca_file, f"{service}_cert_file": tls.cert_file,
                          f"{service}_key_file": tls.key_file})
    return found


def fill_run_keys(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None) -> list[str]:
    """Puts the keys of the cluster *configuration* names into *configuration* and *secrets* (Chaos Toolkit's dicts
    of the run, which every later control and activity gets), each only where the user set none: its own
    ``patroni_urls`` (or ``etcd_urls``) keeps the whole service, TLS files included. The keys it set, by name."""
    if configuration is None:
        return []
    keys, secret = run_keys(configuration), secret_keys(configuration)
    filled = []
    for service in ("patroni", "etcd"):
        if configuration.get(f"{service}_urls"):  # the user's own endpoints: none of the cluster's for them
            keys = {k: v for k, v in keys.items() if not k.startswith(f"{service}_")}
            secret = {k: v for k, v in secret.items() if not k.startswith(f"{service}_")}
    for key, value in keys.items():
        if not configuration.get(key):
            configuration[key] = value
            filled.append(key)
    if secrets is not None and secret:
        given = [secrets, *[v for v in secrets.values() if isinstance(v, dict)]]
        if not any(s.get("patroni_password") or s.get("patroni_username") for s in given):
            secrets.setdefault(SECRETS_SCOPE, {}).update(secret)
            filled += list(secret)
    return filled
