"""TLS and credentials of every client (chaosdb.core.tls, http, libpq), against a local HTTPS server that asks for a
client certificate: each failure named with the host, what failed and the key that fixes it, nothing secret in it.
The real secure clusters (Patroni, etcd, PostgreSQL, PD) are in tests/integration/test_secure_clusters.py."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chaosdb.cockroach import channels
from chaosdb.cockroach import probes as crdb
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError, request_json
from chaosdb.core.libpq import explain_libpq_failure, libpq_parameters, with_libpq_tls
from chaosdb.core.tls import ClientTls, client_tls, credentials
from chaosdb.experiment.checks import configuration_problems
from chaosdb.postgres.endpoints import patroni_client
from chaosdb.tikv.pd import pd_client
from tests.tlsserver import make_pki, serve_https
from tests.unit.test_cockroach import _Standin


class _Json(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"ok": True, "client": (self.connection.getpeercert() or {}).get("subject") is not None})
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def https(pki):
    with serve_https(_Json, pki) as url:
        yield url


def _tls(pki, **over):
    values = dict(ca_file=pki.ca_crt, cert_file=pki.client_crt, key_file=pki.client_key)
    values.update(over)
    return ClientTls("patroni", **values).check()


def _failure(url, tls, url_key="patroni_urls"):
    with pytest.raises(HttpError) as exc:
        request_json("GET", url + "/x", tls=tls, url_key=url_key)
    return str(exc.value)


def test_mutual_tls_works_and_each_failure_names_host_cause_and_key(https, pki):
    assert request_json("GET", https + "/x", tls=_tls(pki)).json() == {"ok": True, "client": True}
    where = https.removeprefix("https://")

    msg = _failure(https, _tls(pki, ca_file=pki.other_crt))
    assert where in msg and "Patroni REST API" in msg and "a CA this client does not trust" in msg
    assert "set patroni_ca_file" in msg and "certificate verify failed" in msg

    # TLS 1.3: the server's alert or, when it closes first, the end of the connection in the handshake
    refused = ("asks for a client certificate and none was sent", "refused this client's certificate",
               "closed the connection during the handshake")
    msg = _failure(https, _tls(pki, cert_file="", key_file=""))
    assert any(r in msg for r in refused) and "set patroni_cert_file and patroni_key_file" in msg, msg

    msg = _failure(https, _tls(pki, cert_file=pki.file("stranger.crt"), key_file=pki.file("stranger.key")))
    assert any(r in msg for r in refused[1:]) and "patroni_cert_file" in msg, msg

    msg = _failure(https.replace("127.0.0.1", "localhost"), _tls(pki))  # the certificate names 127.0.0.1 only
    assert "not made out to this host name" in msg and "in patroni_urls" in msg

    msg = _failure(https.replace("https://", "http://"), None)  # plain HTTP to a TLS port
    assert "use https:// in patroni_urls" in msg
    with serve_https(_Json, pki, certificate="expired") as expired:
        msg = _failure(expired, _tls(pki))
    assert "the server's certificate has expired" in msg and "renew the server's certificate" in msg, msg


def test_https_to_a_plain_server_and_verification_off(pki, caplog):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Json)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        msg = _failure(f"https://127.0.0.1:{server.server_address[1]}", _tls(pki), url_key="pd_url")
        assert "does not speak TLS" in msg and "use http:// in pd_url" in msg
    finally:
        server.shutdown()
        server.server_close()
    with serve_https(_Json, pki, client_cert=False) as url:
        with caplog.at_level(logging.WARNING, logger="chaostoolkit"):
            insecure = client_tls("pd", {"pd_tls_verify": "false"})
        assert request_json("GET", url + "/x", tls=insecure).json()["ok"]
        assert any("pd_tls_verify is false" in r.getMessage() and "NOT checked" in r.getMessage()
                   for r in caplog.records)


def test_settings_that_cannot_work_are_refused_before_anything_is_sent(pki, tmp_path):
    with pytest.raises(ChaosDBError, match="pd_cert_file is set but pd_key_file is not"):
        client_tls("pd", {"pd_cert_file": pki.client_crt})
    with pytest.raises(ChaosDBError, match="etcd_ca_file: .*does not exist"):
        client_tls("etcd", {"etcd_ca_file": str(tmp_path / "nope.crt")})
    with pytest.raises(ChaosDBError, match="patroni_tls_verify: 'maybe' is not true or false"):
        client_tls("patroni", {"patroni_tls_verify": "maybe"})
    with pytest.raises(ChaosDBError, match="pd_ca_file is set but pd_url has plain http:// URLs"):
        pd_client({"pd_url": "http://127.0.0.1:2379", "pd_ca_file": pki.ca_crt})
    with pytest.raises(ChaosDBError, match="patroni_ca_file is set but patroni_urls"):
        patroni_client({"patroni_urls": "http://a:8008", "patroni_ca_file": pki.ca_crt}, {})
    problems = configuration_problems({"etcd_cert_file": pki.client_crt, "postgres_sslmode": "sometimes",
                                       "pd_url": "http://x", "secure": "yes please"})
    assert problems == ["configuration: etcd_cert_file is set but etcd_key_file is not: a client certificate needs "
                        "both the certificate and its key",
                        "configuration: secure: 'yes please' is not true or false",
                        "configuration: postgres_sslmode 'sometimes' is not a libpq sslmode (disable, allow, prefer, "
                        "require, verify-ca, verify-full)"], problems
    assert configuration_problems({"pd_ca_file": "", "pd_tls_verify": ""}) == []


def test_credentials_come_from_the_secrets_else_the_environment(monkeypatch):
    assert credentials("patroni", {}) is None
    assert credentials("patroni", {"scope": {"patroni_username": "u", "patroni_password": "p"}}) == ("u", "p")
    monkeypatch.setenv("CHAOSDB_ETCD_USERNAME", "root")
    monkeypatch.setenv("CHAOSDB_ETCD_PASSWORD", "from-env")
    assert credentials("etcd", None) == ("root", "from-env")
    assert credentials("etcd", {"etcd_password": "from-secrets"}) == ("root", "from-secrets")
    with pytest.raises(ChaosDBError, match="patroni_password is set but patroni_username is not"):
        credentials("patroni", {"patroni_password": "x"})


def test_postgres_keys_fill_what_the_dsn_does_not_say(pki):
    cfg = {"postgres_ca_file": pki.ca_crt, "postgres_cert_file": pki.client_crt,
           "postgres_key_file": pki.client_key}
    assert libpq_parameters(cfg, {"postgres_password": "pw-canary"}) == {
        "sslrootcert": pki.ca_crt, "sslcert": pki.client_crt, "sslkey": pki.client_key, "sslmode": "verify-full",
        "password": "pw-canary"}
    assert libpq_parameters({"postgres_tls_verify": False}) == {"sslmode": "require"}
    dsn = with_libpq_tls("postgresql://app@db:5432/app?sslmode=require", cfg)
    assert "sslmode=require" in dsn and f"sslrootcert={pki.ca_crt}" in dsn and "verify-full" not in dsn
    assert with_libpq_tls("host=db user=app", {}) == "host=db user=app"
    text = ('connection failed: connection to server at "10.0.0.2", port 5432 failed: FATAL:  no pg_hba.conf entry '
            'for host "10.0.0.9", user "app", database "app", no encryption\nMultiple connection attempts failed. '
            'All failures were:\n- host: ...')
    explained = explain_libpq_failure(text)
    assert "Multiple" not in explained and "accepts TLS connections only: set postgres_ca_file" in explained


# --- CockroachDB's DB Console over HTTPS with client certificates (it cannot run here: the recorded stand-in) ---


@pytest.fixture
def crdb_https(pki, tmp_path):
    certs = tmp_path / "certs"  # a cockroach certs directory: ca.crt, client.root.crt/.key
    certs.mkdir()
    for src, dst in (("ca.crt", "ca.crt"), ("client.crt", "client.root.crt"), ("client.key", "client.root.key")):
        (certs / dst).write_bytes((pki.dir / src).read_bytes())
    (certs / "client.root.key").chmod(0o600)
    _Standin.sessions = set()
    _Standin.draining = False
    with serve_https(_Standin, pki) as url:
        yield url, certs


def test_cockroach_http_channel_over_mutual_tls(crdb_https, pki):
    url, certs = crdb_https
    secrets = {"cockroach_username": "root", "cockroach_password": "s3cret"}
    cfg = {"cockroach_channel": "http", "cockroach_http_url": url, "cockroach_certs_dir": str(certs),
           "cockroach_cert_file": str(certs / "client.root.crt"), "cockroach_key_file": str(certs / "client.root.key")}
    nodes = crdb.node_status(cfg, secrets)  # CA from <certs dir>/ca.crt, login, then /_status/vars
    assert sorted(n["id"] for n in nodes) == [1, 2, 3, 4, 6] and nodes[0]["replicas"] == 210
    assert crdb.node_is_ready(url, cfg)["ready"]
    with pytest.raises(ChaosDBError) as exc:
        crdb.node_status({k: v for k, v in cfg.items() if k not in ("cockroach_cert_file", "cockroach_key_file")},
                         secrets)
    assert "CockroachDB HTTP API" in str(exc.value) and "set cockroach_cert_file and cockroach_key_file" in str(exc.value)
    with pytest.raises(ChaosDBError) as exc:
        crdb.node_status(dict(cfg, cockroach_certs_dir="", cockroach_ca_file=pki.other_crt), secrets)
    assert "set cockroach_ca_file" in str(exc.value)
    with pytest.raises(ChaosDBError, match="login to .* failed .*check cockroach_username/password") as exc:
        crdb.node_status(cfg, dict(secrets, cockroach_password="wrong-canary-pw"))
    assert "wrong-canary-pw" not in str(exc.value)


def test_cockroach_sql_url_takes_the_certs_directory_like_the_cli(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    for name in ("ca.crt", "client.app.crt", "client.app.key"):
        (certs / name).write_text("x")
    url = channels.sql_url({"cockroach_url": "postgresql://app@db:26257/tpcc", "cockroach_certs_dir": str(certs)})
    assert f"sslrootcert={certs / 'ca.crt'}" in url and f"sslcert={certs / 'client.app.crt'}" in url
    assert "sslmode=verify-full" in url
    own = channels.sql_url({"cockroach_url": "postgresql://app@db:26257/tpcc?sslmode=require&sslrootcert=/my/ca",
                            "cockroach_certs_dir": str(certs)})
    assert "sslmode=require" in own and "sslrootcert=/my/ca" in own and str(certs / "ca.crt") not in own
    with pytest.raises(ChaosDBError, match="has no ca.crt"):
        channels.sql_url({"cockroach_url": "postgresql://app@db/tpcc", "cockroach_certs_dir": str(tmp_path)})
