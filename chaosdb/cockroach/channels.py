"""Asking a CockroachDB cluster for its nodes: SQL, HTTP or the ``cockroach`` CLI.

Configuration (experiment ``configuration``; secrets in ``secrets``):

======================== ============================================================
``cockroach_channel``    ``sql`` (default when ``cockroach_url`` is set), ``http``, ``cli``
``cockroach_url``        ``postgresql://root@host:26257/defaultdb?sslmode=...`` (SQL; CLI ``--url``)
``cockroach_http_url``   DB Console base URL (``http://host:8080``); ``cockroach_http_urls``: one per
                         node, for the per-node ``/_status/vars`` range counts
``cockroach_bin``        the CLI (default ``cockroach`` on PATH)
``cockroach_cli_prefix`` argv put before it, e.g. ``["kubectl", "exec", "-n", "crdb", "cockroachdb-client",
                         "-c", "client", "--"]`` (the thesis's client pod as gateway)
``cockroach_host``       ``--host`` for the CLI (used before ``cockroach_url``, which may hold a password)
``cockroach_certs_dir``  ``--certs-dir``; else ``cockroach_insecure: true`` adds ``--insecure``. SQL connections
                         take ``ca.crt`` and ``client.<user>.crt/.key`` from it (``sslmode=verify-full``) where
                         ``cockroach_url`` does not name its own files; HTTP takes ``ca.crt`` from it
``cockroach_ca_file``    HTTP: the CA of the DB Console's certificate (default: ``<certs dir>/ca.crt``);
``cockroach_cert_file``  ``cockroach_key_file``: a client certificate for HTTP; ``cockroach_tls_verify``
======================== ============================================================

Secrets: ``cockroach_username`` / ``cockroach_password`` (HTTP login). Commands are argv lists,
never shell strings; user input is never interpolated into a shell.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse
from typing import Any

from chaosdb.cockroach.records import (
    health_summary,
    normalise_api_nodes,
    normalise_cli_rows,
    parse_cli_output,
    range_metrics,
)
from chaosdb.cockroach.sql import parse_sql_csv
from chaosdb.cockroach.version import features_of
from chaosdb.core.commands import run_argv, run_argv_full
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError, request
from chaosdb.core.tls import ClientTls, client_tls, secret_value

__all__ = ["channel_of", "cli_argv", "cli_node_status", "http_node_status", "sql_node_status", "node_status",
           "http_health", "NODE_STATUS_SQL", "run_cli", "cli_version", "cluster_version",
           "settings", "run_sql", "cli_pod", "run_cli_full", "http_tls", "sql_url"]


SECRET_KEYS = ("cockroach_url",)


def settings(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """The configuration, plus ``cockroach_url`` when it is kept in the secrets (flat, or in any secret
    scope: ``{"cockroach": {"cockroach_url": {"type": "env", "key": "COCKROACH_URL"}}}``), so a URL with a
    password never has to be in the configuration (which journals keep)."""
    cfg = dict(configuration or {})
    for key in SECRET_KEYS:
        if not cfg.get(key) and secret_value(secrets, key, environment=False):
            cfg[key] = secret_value(secrets, key, environment=False)
    return cfg


def channel_of(configuration: dict[str, Any]) -> str:
    """How to reach CockroachDB: ``cockroach_channel`` when set, else ``sql`` with a ``cockroach_url``, ``http`` with
    HTTP URLs, else the ``cli``."""
    ch = str(configuration.get("cockroach_channel") or "").lower()
    if not ch:
        ch = "sql" if configuration.get("cockroach_url") else "http" if (
            configuration.get("cockroach_http_url") or configuration.get("cockroach_http_urls")) else "cli"
    if ch not in ("sql", "http", "cli"):
        raise ChaosDBError(f"cockroach_channel must be sql, http or cli, got {ch!r}")
    return ch


def cli_prefix(configuration: dict[str, Any]) -> list[str]:
    """``cockroach_cli_prefix`` as a list (a JSON list in a string is accepted: environment variables)."""
    prefix = configuration.get("cockroach_cli_prefix") or []
    if isinstance(prefix, str) and prefix.strip().startswith("["):  # a JSON list, e.g. from an environment variable
        try:
            prefix = json.loads(prefix)
        except ValueError:
            raise ChaosDBError("cockroach_cli_prefix is not a valid JSON list of arguments") from None
    if isinstance(prefix, str) or not all(isinstance(a, str) for a in prefix):
        raise ChaosDBError("cockroach_cli_prefix must be a list of arguments (or a JSON list), not a shell string")
    return list(prefix)


def cli_pod(configuration: dict[str, Any]) -> tuple[str, str, str] | None:
    """``cockroach_cli_pod`` (``pod`` or ``namespace/pod``) as (namespace, pod, container): the CLI then runs
    inside that pod through the Kubernetes API (the official client's exec; no kubectl), in container
    ``k8s_container``."""
    value = str(configuration.get("cockroach_cli_pod") or "").strip()
    if not value:
        return None
    if cli_prefix(configuration):
        raise ChaosDBError("give cockroach_cli_pod or cockroach_cli_prefix, not both")
    ns, _, pod = value.rpartition("/")
    return ns or str(configuration.get("k8s_namespace") or "default"), pod, str(configuration.get("k8s_container")
                                                                                 or "")


def run_cli_full(configuration: dict[str, Any], argv: list[str], timeout: float | None = 30.0) -> tuple[str, str]:
    """Run a CLI argv (never a shell) here, or in ``cockroach_cli_pod`` through the Kubernetes engine; (stdout,
    stderr), or an error with the last lines it printed."""
    where = cli_pod(configuration)
    if where is None:
        return run_argv_full(argv, timeout)
    ns, pod, container = where
    done = engine_action("kubernetes", "exec_in_pod")(ns, pod, container, argv, timeout,
                                                      configuration=configuration)
    return done["stdout"], done["stderr"]


def cli_argv(configuration: dict[str, Any], *command: str) -> list[str]:
    """``[prefix...] cockroach <command...> <connection flags>`` as an argv list."""
    prefix = cli_prefix(configuration)
    binary = str(configuration.get("cockroach_bin") or "cockroach")
    if not prefix and not cli_pod(configuration) and not shutil.which(binary):
        raise ChaosDBError(f"the cockroach CLI ({binary}) is not on PATH: install it, set cockroach_bin, or use "
                           "cockroach_channel sql/http")
    argv = [*map(str, prefix), binary, *command]
    if configuration.get("cockroach_host"):  # preferred: keeps a password in the URL off the command line
        argv.append(f"--host={configuration['cockroach_host']}")
    elif configuration.get("cockroach_url"):
        argv.append(f"--url={configuration['cockroach_url']}")
    if configuration.get("cockroach_certs_dir"):
        argv.append(f"--certs-dir={configuration['cockroach_certs_dir']}")
    elif str(configuration.get("cockroach_insecure", "")).lower() in ("1", "true", "yes"):
        argv.append("--insecure")
    return argv


def run_cli(argv: list[str], timeout: float = 30.0) -> str:
    """Run a CLI argv (never a shell); its stdout, or an error with the last lines it printed."""
    return run_argv(argv, timeout)


_VERSIONS: dict[tuple, Any] = {}


def cli_version(configuration: dict[str, Any]) -> Any:
    """Features of the ``cockroach`` binary the CLI channel runs (``cockroach version``), or of
    ``cockroach_version`` when the configuration states it."""

    if configuration.get("cockroach_version"):
        return features_of(str(configuration["cockroach_version"]))
    prefix = tuple(cli_prefix(configuration))
    key = ("cli", prefix, str(configuration.get("cockroach_bin") or "cockroach"), cli_pod(configuration))
    if key not in _VERSIONS:
        argv = [*prefix, key[2], "version"]
        if not prefix and not key[3] and not shutil.which(key[2]):
            raise ChaosDBError(f"the cockroach CLI ({key[2]}) is not on PATH: install it or set cockroach_bin")
        out = run_cli_full(configuration, argv, 30.0)[0]
        tag = next((ln.split(":", 1)[1] for ln in out.splitlines() if ln.lower().startswith("build tag")), out)
        _VERSIONS[key] = features_of(tag)
    return _VERSIONS[key]


def cluster_version(configuration: dict[str, Any]) -> Any:
    """Features of the cluster (``SELECT version()``), or of ``cockroach_version`` when stated."""

    if configuration.get("cockroach_version"):
        return features_of(str(configuration["cockroach_version"]))
    rows = run_sql(configuration, "SELECT version() AS version")
    if not rows:
        raise ChaosDBError("SELECT version() returned nothing")
    return features_of(rows[0]["version"])


def cli_node_status(configuration: dict[str, Any], timeout: float = 30.0) -> list[dict[str, Any]]:
    """``cockroach node status --all --format=csv`` (CSV exists in every version; JSON only since v23.2)."""
    argv = cli_argv(configuration, "node", "status", "--all", "--format=csv")
    return parse_cli_output(run_cli_full(configuration, argv, timeout)[0], "csv")


def http_tls(configuration: dict[str, Any] | None) -> ClientTls:
    """TLS of the HTTP channel: ``cockroach_ca_file`` (default ``<cockroach_certs_dir>/ca.crt``),
    ``cockroach_cert_file`` / ``cockroach_key_file``, ``cockroach_tls_verify``."""
    cfg = dict(configuration or {})
    certs = str(cfg.get("cockroach_certs_dir") or "")
    if certs and not cfg.get("cockroach_ca_file") and os.path.isfile(os.path.join(certs, "ca.crt")):
        cfg["cockroach_ca_file"] = os.path.join(certs, "ca.crt")
    return client_tls("cockroach", cfg)


def sql_url(configuration: dict[str, Any]) -> str:
    """``cockroach_url`` with the TLS files of ``cockroach_certs_dir`` it does not name itself (what the cockroach CLI
    does with ``--certs-dir``): ``ca.crt``, ``client.<user>.crt`` and ``.key``, ``sslmode=verify-full``."""
    url = str(configuration.get("cockroach_url") or "")
    certs = str(configuration.get("cockroach_certs_dir") or "")
    if not url or not certs:
        return url
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415 - needs the postgres extra

    have = conninfo_to_dict(url)
    user = str(have.get("user") or "root")
    wanted = {"sslrootcert": os.path.join(certs, "ca.crt"), "sslcert": os.path.join(certs, f"client.{user}.crt"),
              "sslkey": os.path.join(certs, f"client.{user}.key"), "sslmode": "verify-full"}
    extra = {k: v for k, v in wanted.items() if k not in have and (k == "sslmode" or os.path.isfile(v))}
    if "sslrootcert" not in have and "sslrootcert" not in extra:
        raise ChaosDBError(f"cockroach_certs_dir {certs} has no ca.crt (the CA of the cluster)")
    return make_conninfo(url, **extra) if extra else url


class _Http:
    def __init__(self, base: str, secrets: dict[str, Any] | None, timeout: float, tls: ClientTls | None = None):
        self.base = base.rstrip("/")
        self.secrets = secrets or {}
        self.timeout = timeout
        self.tls = tls
        self.session: str | None = None

    def request(self, path: str, data: bytes | None = None, headers: dict[str, str] | None = None
                ) -> tuple[int, str]:
        try:
            resp = request("POST" if data is not None else "GET", self.base + path, data=data,
                           timeout=self.timeout, headers=headers, tls=self.tls, url_key="cockroach_http_url")
        except HttpError as e:
            raise ChaosDBError(str(e)) from None
        return resp.status, resp.body

    def login(self) -> str:
        user, password = secret_value(self.secrets, "cockroach_username"), secret_value(self.secrets,
                                                                                        "cockroach_password")
        if not user or not password:
            raise ChaosDBError("/api/v2/nodes/ needs a login: set secrets cockroach_username and cockroach_password "
                               "(a SQL user with the admin role)")
        body = urllib.parse.urlencode({"username": user, "password": password}).encode()
        status, text = self.request("/api/v2/login/", body, {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise ChaosDBError(f"login to {self.base} failed (HTTP {status}): check cockroach_username/password")
        try:
            self.session = json.loads(text)["session"]
        except (ValueError, KeyError):
            raise ChaosDBError(f"login to {self.base} returned no session") from None
        return self.session

    def get_json(self, path: str) -> Any:
        headers = {"X-Cockroach-API-Session": self.session} if self.session else {}
        status, text = self.request(path, headers=headers)
        if status == 401 and not self.session:
            self.login()
            status, text = self.request(path, headers={"X-Cockroach-API-Session": self.session or ""})
        if status != 200:
            raise ChaosDBError(f"GET {self.base}{path}: HTTP {status} {text.strip()[:200]}")
        try:
            return json.loads(text)
        except ValueError:
            raise ChaosDBError(f"GET {self.base}{path} did not return JSON") from None


def _http_urls(configuration: dict[str, Any]) -> list[str]:
    urls = configuration.get("cockroach_http_urls") or []
    if isinstance(urls, str):
        urls = [u.strip() for u in urls.split(",") if u.strip()]
    if configuration.get("cockroach_http_url"):
        urls = [configuration["cockroach_http_url"], *[u for u in urls if u != configuration["cockroach_http_url"]]]
    if not urls:
        raise ChaosDBError("set cockroach_http_url (the DB Console, e.g. http://host:8080) for the http channel")
    return [str(u) for u in urls]


def http_node_status(configuration: dict[str, Any], secrets: dict[str, Any] | None = None,
                     timeout: float = 10.0) -> list[dict[str, Any]]:
    """``/api/v2/nodes/`` (login with the secrets), range counts from each reachable node's ``/_status/vars``."""
    urls = _http_urls(configuration)
    tls = http_tls(configuration)
    tls.check_urls(urls, "cockroach_http_url")
    api = _Http(urls[0], secrets, timeout, tls)
    body = api.get_json("/api/v2/nodes/")
    metrics: dict[int, dict[str, float]] = {}
    for url in urls:
        try:
            status, text = _Http(url, secrets, timeout, tls).request("/_status/vars")
        except ChaosDBError:
            continue  # a dead node's metrics are simply missing
        if status == 200:
            for nid, m in range_metrics(text).items():
                metrics.setdefault(nid, m)
    return normalise_api_nodes(body, metrics)


def http_health(url: str, timeout: float = 5.0, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """``/health?ready=1`` of one node: ready or why not; a refused connection means the node is down (a TLS
    failure is an error: it says nothing about the node)."""
    tls = http_tls(configuration)
    tls.check_urls([url], "url")
    try:
        status, text = _Http(url, None, timeout, tls).request("/health?ready=1")
    except ChaosDBError as exc:
        return {"ready": False, "status": None, "reason": str(exc)}
    return health_summary(status, text)


#: what ``cockroach node status --all`` runs (pkg/cli/node.go), with the range sums of ``--ranges`` (its column
#: ``ranges`` is the sum of the store metric ``replicas``), plus the store metric ``ranges`` the CLI does not print
NODE_STATUS_SQL = """
SELECT l.node_id AS id, n.address, n.sql_address, n.build_tag AS build, n.started_at::STRING AS started_at,
       l.updated_at::STRING AS updated_at, n.locality,
       CASE WHEN split_part(l.expiration, ',', 1)::DECIMAL > now()::DECIMAL THEN true ELSE false END AS is_available,
       ifnull(n.is_live, false) AS is_live, s.leaders AS replicas_leaders, s.leaseholders AS replicas_leaseholders,
       s.ranges, s.unavailable AS ranges_unavailable, s.underreplicated AS ranges_underreplicated,
       s.store_ranges, l.decommissioning AS is_decommissioning, l.membership, l.draining AS is_draining
FROM crdb_internal.gossip_liveness l
LEFT JOIN crdb_internal.gossip_nodes n USING (node_id)
LEFT JOIN (SELECT node_id,
                  sum((metrics->>'replicas.leaders')::DECIMAL)::INT AS leaders,
                  sum((metrics->>'replicas.leaseholders')::DECIMAL)::INT AS leaseholders,
                  sum((metrics->>'replicas')::DECIMAL)::INT AS ranges,
                  sum((metrics->>'ranges.unavailable')::DECIMAL)::INT AS unavailable,
                  sum((metrics->>'ranges.underreplicated')::DECIMAL)::INT AS underreplicated,
                  sum((metrics->>'ranges')::DECIMAL)::INT AS store_ranges
           FROM crdb_internal.kv_store_status GROUP BY node_id) s USING (node_id)
ORDER BY id
"""


def sql_node_status(configuration: dict[str, Any], timeout: float = 10.0) -> list[dict[str, Any]]:
    """The same query as ``node status --all --ranges`` through psycopg (needs the admin role)."""
    url = configuration.get("cockroach_url")
    if not url:
        raise ChaosDBError("set cockroach_url (postgresql://user@host:26257/defaultdb?sslmode=...) for the sql channel")
    import psycopg  # noqa: PLC0415 - needs the postgres extra
    from psycopg.rows import dict_row  # noqa: PLC0415 - needs the postgres extra

    try:
        with psycopg.connect(sql_url(configuration), connect_timeout=int(timeout), autocommit=True,
                             row_factory=dict_row) as conn:
            rows = conn.execute(NODE_STATUS_SQL).fetchall()
    except psycopg.Error as exc:
        raise ChaosDBError(f"node status over SQL failed: {str(exc).strip()}") from None
    return normalise_cli_rows([{k: (None if v is None else str(v).lower() if isinstance(v, bool) else str(v))
                                for k, v in r.items()} for r in rows])


def node_status(configuration: dict[str, Any], secrets: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every node's status, normalised to one record shape, through the configured channel (:func:`channel_of`)."""
    ch = channel_of(configuration)
    if ch == "sql":
        return sql_node_status(configuration)
    if ch == "http":
        return http_node_status(configuration, secrets)
    return cli_node_status(configuration)


def run_sql(configuration: dict[str, Any], statement: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Rows (column -> value as text, None for NULL) of one statement, over the channel the configuration
    picks: SQL when ``cockroach_url`` is set, else the CLI (``cockroach sql -e ... --format=csv``)."""

    ch = channel_of(configuration)
    if ch == "http" and not configuration.get("cockroach_url"):
        ch = "cli"  # the DB Console has no stable SQL endpoint across versions: use the CLI
    if ch == "sql" or (ch == "http" and configuration.get("cockroach_url")):
        import psycopg  # noqa: PLC0415 - needs the postgres extra

        try:
            with psycopg.connect(sql_url(configuration), connect_timeout=int(timeout), autocommit=True) as conn:
                cur = conn.execute(statement)
                cols = [d.name for d in cur.description or []]
                return [{c: (None if v is None else _sql_text(v)) for c, v in zip(cols, row, strict=False)} for row in cur.fetchall()]
        except psycopg.Error as exc:
            raise ChaosDBError(f"{statement.split(' FOR ROW')[0][:80]}: {str(exc).strip()}") from None
    argv = cli_argv(configuration, "sql", "-e", statement, "--format=csv")
    return parse_sql_csv(run_cli_full(configuration, argv, timeout)[0])


def _sql_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "{" + ",".join(str(x) for x in v) + "}"
    return str(v)
