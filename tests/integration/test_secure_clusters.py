"""The pack against secure clusters it starts itself (``chaosdb cluster up --secure``), real servers throughout:

* the embedded PostgreSQL HA cluster: PostgreSQL TLS-only (hostssl) with scram-sha-256, Patroni's REST API over HTTPS
  asking for client certificates and basic auth, etcd with client-certificate authentication on client and peer
  ports; then a shipped etcd fault experiment runs on it with its KV load over HTTPS, and nothing secret is found in
  what the run left;
* PD v8.5.7 with ``--cacert/--cert/--key`` (members only: pd-simulator has no TLS client), and a shipped TiKV
  experiment refused before its method with each wrong setting.

Every refusal is checked before any fault: plain HTTP, an unknown CA, a missing client certificate, a wrong password.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.clusters.pd import simulated_cluster
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.processes import node_processes
from chaosdb.embedded.state import load_layout, load_secrets
from chaosdb.etcd import probes as etcd
from chaosdb.postgres import actions as pg_actions
from chaosdb.postgres import probes as pg
from chaosdb.tikv import probes as tikv
from chaosdb.workloads import kv
from tests.conftest import removed_afterwards
from tests.realservers import real_binaries
from tests.tlsserver import make_pki

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ADDRESS = "127.0.0.86"
NAME = "secure"


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "chaosdb"), *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def secure():
    """``chaosdb cluster up --secure``, as a user types it; purged at the end."""
    pytest.importorskip("patroni")
    with removed_afterwards("chaosdb-secure-") as home:
        yield from _secure_cluster(home)


def _secure_cluster(home: Path):
    env = dict(os.environ, CHAOSDB_HOME=str(home))
    up = _cli("cluster", "up", "--secure", "--name", NAME, "--address-base", ADDRESS, env=env)
    layout = load_layout(home / NAME) if (home / NAME / "cluster.json").exists() else None
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield {"layout": layout, "out": up.stdout, "env": env, "secrets": load_secrets(home / NAME), "home": home}
    finally:
        if layout is not None:
            _cli("cluster", "down", "--name", NAME, "--purge", env=env)
            assert not node_processes(home / NAME), "processes of the secure cluster left behind"


def _keys(layout) -> dict[str, str]:
    t = layout.tls_dir
    tls = {"ca_file": str(t / "ca.crt"), "cert_file": str(t / "client.crt"), "key_file": str(t / "client.key")}
    return {**{f"patroni_{k}": v for k, v in tls.items()}, **{f"etcd_{k}": v for k, v in tls.items()},
            "patroni_urls": ",".join(layout.patroni_urls), "etcd_urls": ",".join(layout.etcd_urls),
            "postgres_ca_file": tls["ca_file"]}


def test_cluster_up_secure_prints_its_ca_and_client_certificate_and_keeps_keys_private(secure):
    layout, out = secure["layout"], secure["out"]
    assert layout.secure and all(u.startswith("https://") for u in layout.patroni_urls + layout.etcd_urls)
    for name in ("ca.crt", "client.crt", "client.key"):
        assert str(layout.tls_dir / name) in out
    assert "sslmode=verify-full" in out and "sslrootcert=" in out
    assert stat.S_IMODE((layout.tls_dir / "client.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((layout.tls_dir / "ca.key").stat().st_mode) == 0o600
    for node in layout.nodes:
        key = node.tls_dir / "node.key"
        assert key.stat().st_uid == node.uid and stat.S_IMODE(key.stat().st_mode) == 0o600
    # a second --secure on the running cluster changes nothing; --secure on a plain cluster is refused (unit level)
    again = _cli("cluster", "up", "--secure", "--name", NAME, env=secure["env"])
    assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr


def test_probes_and_a_switchover_over_tls_with_the_documented_keys(secure):
    layout, passwords = secure["layout"], secure["secrets"]
    cfg = _keys(layout)
    secrets = {"patroni_username": "patroni", "patroni_password": passwords["patroni_password"],
               "postgres_dsn": "postgresql://postgres@" + ",".join(f"{n.host}:{n.pg_port}" for n in layout.nodes)
               + "/postgres", "postgres_password": passwords["postgres_password"]}
    primary = pg.current_primary(configuration=cfg, secrets=secrets)
    assert etcd.etcd_is_healthy(configuration=cfg) and etcd.etcd_leader(configuration=cfg)
    lag = pg.replication_lag(configuration=cfg, secrets=secrets)
    assert len(lag["replicas"]) == 2 and all(r["streaming"] for r in lag["replicas"]), lag
    assert passwords["postgres_password"] not in json.dumps(lag)
    # the same probes through the embedded cluster's name: its CA and client certificate are found by the pack
    assert pg.current_primary(configuration={"chaosdb_cluster_dir": str(layout.path)}) == primary
    # an action that changes the cluster: basic auth over HTTPS with a client certificate
    target = next(m["name"] for m in pg.cluster_members(configuration=cfg, secrets=secrets)
                  if m["role"] == "sync_standby")
    done = pg_actions.switchover(candidate=target, configuration=cfg, secrets=secrets)
    assert done["to"] == target and pg.current_primary(configuration=cfg, secrets=secrets) == target
    pg_actions.wait_until_healthy(timeout_s=90, expected_members=3, configuration=cfg, secrets=secrets)


def test_each_wrong_setting_is_refused_with_what_fixes_it_and_changes_nothing(secure, tmp_path):
    layout, passwords = secure["layout"], secure["secrets"]
    cfg = _keys(layout)
    other = make_pki(tmp_path / "other")  # a CA this cluster never heard of
    before = pg.current_primary(configuration=cfg)
    secrets = {"patroni_username": "patroni", "patroni_password": passwords["patroni_password"]}

    def refused(call) -> str:
        with pytest.raises(ChaosDBError) as exc:
            call()
        text = str(exc.value)
        assert all(p not in text for p in passwords.values()) and "wrong-canary" not in text, text
        return text

    plain = {"patroni_urls": ",".join(u.replace("https://", "http://") for u in layout.patroni_urls)}
    assert "use https:// in patroni_urls" in refused(lambda: pg.current_primary(configuration=plain))
    plain_etcd = {"etcd_urls": layout.etcd_urls[0].replace("https://", "http://")}
    assert "use https:// in etcd_urls" in refused(lambda: etcd.etcd_members(configuration=plain_etcd))
    text = refused(lambda: pg.current_primary(configuration=dict(cfg, patroni_ca_file=other.ca_crt)))
    assert "a CA this client does not trust: set patroni_ca_file" in text and layout.nodes[0].host in text
    no_cert = {k: v for k, v in cfg.items() if k not in ("etcd_cert_file", "etcd_key_file")}
    text = refused(lambda: etcd.etcd_leader(configuration=no_cert))
    assert "(etcd) failed" in text and "set etcd_cert_file and etcd_key_file" in text
    no_cert = {k: v for k, v in cfg.items() if k not in ("patroni_cert_file", "patroni_key_file")}
    assert "set patroni_cert_file and patroni_key_file" in refused(lambda: pg.current_primary(configuration=no_cert))
    text = refused(lambda: pg_actions.switchover(configuration=cfg, secrets=dict(secrets,
                                                                                patroni_password="wrong-canary-1")))
    assert "HTTP 401" in text and "patroni_password" in text
    dsn = "postgresql://postgres@" + ",".join(f"{n.host}:{n.pg_port}" for n in layout.nodes) + "/postgres"
    text = refused(lambda: pg.replication_lag(configuration=cfg, secrets={"postgres_dsn": dsn,
                                                                         "postgres_password": "wrong-canary-2"}))
    assert "password authentication failed" in text and "postgres_password" in text
    text = refused(lambda: pg.replication_lag(configuration={**cfg, "postgres_ca_file": "",
                                                             "postgres_sslmode": "disable"},
                                              secrets={"postgres_dsn": dsn,
                                                       "postgres_password": passwords["postgres_password"]}))
    assert "accepts TLS connections only" in text
    # the KV load's client: https with the cluster's certificates works, without a client certificate it is refused
    ok = kv.EtcdKV.of(layout.etcd_urls[0], tls=layout.client_tls("etcd"))
    try:
        assert ok.count("/") >= 0
    finally:
        ok.close()
    # nothing changed: the same primary, the cluster healthy
    assert pg.current_primary(configuration=cfg) == before
    assert pg.cluster_is_healthy(expected_members=3, configuration=cfg)


def test_a_shipped_etcd_fault_experiment_runs_on_the_secure_cluster_and_leaks_no_secret(secure):
    if importlib.util.find_spec("locust") is None:  # find, do not import: locust patches this process (gevent)
        pytest.skip("locust is not installed")
    layout, passwords, home = secure["layout"], secure["secrets"], secure["home"]
    report = home / "etcd-run"
    env = dict(secure["env"], CHAOSDB_CLUSTER=NAME, CHAOSDB_SECURE="true", CHAOSDB_ADDRESS_BASE=ADDRESS,
               CHAOSDB_REPORT_DIR=str(report), CHAOSDB_BASELINE_S="8")
    run = subprocess.run([str(BIN / "chaos"), "--log-file", str(home / "chaostoolkit.log"), "run",
                          str(ROOT / "experiments" / "etcd" / "kill-follower.json"),
                          "--journal-path", str(home / "journal.json")],
                         env=env, cwd=home, capture_output=True, text=True, timeout=900)
    out = run.stdout + run.stderr
    journal = json.loads((home / "journal.json").read_text())
    assert journal["status"] in ("completed", "failed"), out[-3000:]
    actions = [r["activity"]["name"] for r in journal["run"] if r["activity"]["type"] == "action"]
    assert actions, ("the fault was not injected", out[-3000:])
    load = journal["chaosdb_load"]
    assert load["by_outcome"].get("committed", 0) > 100, load  # the KV load spoke HTTPS to etcd all along
    # nothing secret in what the run left: passwords and the client key
    needles = [p for p in passwords.values()] + [(layout.tls_dir / "client.key").read_text().splitlines()[1]]
    files = [home / "journal.json", home / "chaostoolkit.log", *report.rglob("*")]
    for f in files:
        if f.is_file():
            data = f.read_bytes()
            assert not any(n.encode() in data for n in needles), f"a secret is in {f}"
    assert not any(n in out for n in needles)


@pytest.fixture(scope="module")
def secure_pd(tmp_path_factory):
    bins = real_binaries(tmp_path_factory, ["pd-server"])
    d = tmp_path_factory.mktemp("secure-pd")
    res = simulated_cluster.up(d, "pytest-secure-pd", members=3, address_base="127.0.40.31", bin_dir=bins, secure=True)
    try:
        yield {"dir": d, "cfg": res["configuration"]}
    finally:
        simulated_cluster.down(d, purge=True)
        assert not node_processes(d), "PD processes left behind"


def test_pd_members_over_mutual_tls_and_a_shipped_experiment_refused_before_its_method(secure_pd, tmp_path):
    cfg = secure_pd["cfg"]
    assert cfg["pd_url"].startswith("https://")
    health = tikv.pd_health(configuration=cfg)
    assert len(health) == 3 and all(m["healthy"] for m in health)
    assert tikv.pd_members(configuration=cfg)["leader"]
    other = make_pki(tmp_path / "other")
    wrong = {
        "plain HTTP": ({"CHAOSDB_PD_URL": cfg["pd_url"].replace("https://", "http://"), "CHAOSDB_PD_CA_FILE": "",
                        "CHAOSDB_PD_CERT_FILE": "", "CHAOSDB_PD_KEY_FILE": ""}, "use https:// in pd_url"),
        "TLS keys with a plain URL": ({"CHAOSDB_PD_URL": cfg["pd_url"].replace("https://", "http://")},
                                      "has plain http:// URLs"),
        "unknown CA": ({"CHAOSDB_PD_CA_FILE": other.ca_crt}, "set pd_ca_file"),
        "no client certificate": ({"CHAOSDB_PD_CERT_FILE": "", "CHAOSDB_PD_KEY_FILE": ""},
                                  "set pd_cert_file and pd_key_file"),
    }
    base = {"CHAOSDB_PD_URL": cfg["pd_url"], "CHAOSDB_PD_CA_FILE": cfg["pd_ca_file"],
            "CHAOSDB_PD_CERT_FILE": cfg["pd_cert_file"], "CHAOSDB_PD_KEY_FILE": cfg["pd_key_file"]}
    for case, (change, fix) in wrong.items():
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHAOSDB_PD")}
        env.update(base, **change)
        journal = tmp_path / f"{case.replace(' ', '-')}.json"
        run = subprocess.run([str(BIN / "chaos"), "--no-log-file", "run",
                              str(ROOT / "experiments" / "tikv" / "evict-leader.json"), "--journal-path", str(journal)],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        data = json.loads(journal.read_text())
        assert run.returncode != 0 and data["run"] == [], (case, run.stdout[-2000:])  # the method never ran
        assert fix in json.dumps(data["steady_states"]) or fix in run.stdout + run.stderr, (case, run.stdout[-2000:])


@pytest.fixture(scope="module")
def etcd_with_login(tmp_path_factory):
    """One real etcd member with its authentication on (root user and role, then ``auth/enable``)."""
    from chaosdb.core.http import request_json
    from chaosdb.embedded.runtime import find_binaries
    from tests.polling import poll

    d = tmp_path_factory.mktemp("etcd-auth")
    url, peer = "http://127.0.0.97:2379", "http://127.0.0.97:2380"  # not a node of ADDRESS's cluster (.86-.88)
    proc = subprocess.Popen([find_binaries(None, None).etcd, "--name", "a", "--data-dir", str(d / "data"),
                             "--listen-client-urls", url, "--advertise-client-urls", url, "--listen-peer-urls", peer,
                             "--initial-advertise-peer-urls", peer, "--initial-cluster", f"a={peer}",
                             "--log-level", "warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert poll(lambda: etcd.etcd_is_healthy(configuration={"etcd_urls": url}), 60, 0.2), "etcd did not start"
        for path, body in (("role/add", {"name": "root"}), ("user/add", {"name": "root", "password": "pw-canary-9"}),
                           ("user/grant", {"user": "root", "role": "root"}), ("enable", {})):
            request_json("POST", f"{url}/v3/auth/{path}", body)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def test_etcd_login_with_username_and_password(etcd_with_login, monkeypatch):
    url = etcd_with_login
    cfg = {"etcd_urls": url}
    good = {"etcd_username": "root", "etcd_password": "pw-canary-9"}
    assert etcd.etcd_leader(configuration=cfg, secrets=good) == "a"
    with pytest.raises(ChaosDBError) as exc:
        etcd.etcd_leader(configuration=cfg, secrets=dict(good, etcd_password="wrong-canary-3"))
    assert "refused the login of 'root': check the secrets etcd_username and etcd_password" in str(exc.value)
    assert "wrong-canary-3" not in str(exc.value)
    # the KV load's client: refused without a login, served with one from the secrets or the environment
    with pytest.raises(ChaosDBError, match="user name is empty"):
        kv.load_etcd(url, 20)
    assert kv.load_etcd(url, 20, auth=("root", "pw-canary-9"))["records"] == 20
    monkeypatch.setenv("CHAOSDB_ETCD_USERNAME", "root")
    monkeypatch.setenv("CHAOSDB_ETCD_PASSWORD", "pw-canary-9")
    assert kv.lost_acknowledged_puts(url, {"user1": 1})["missing"] == 0
