from pathlib import Path

import pytest

from chaosdb.clusters.postgres_ha.cluster import plan_layout
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.runtime import RunAs
from chaosdb.embedded.state import ClusterLayout, resolve_cluster_dir

ME = RunAs("tester", 1000, 1000)


def test_per_node_loopback_addresses_and_standard_ports():
    layout = plan_layout("c", Path("/x"), nodes=3, run_as=ME)
    assert [n.host for n in layout.nodes] == ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
    assert {(n.pg_port, n.api_port, n.etcd_client_port, n.etcd_peer_port) for n in layout.nodes} == \
        {(5432, 8008, 2379, 2380)}
    assert layout.patroni_urls[1] == "http://127.0.0.12:8008"


def test_single_address_offsets_ports():
    layout = plan_layout("c", Path("/x"), nodes=3, single_address=True, pg_port=6000, api_port=7000,
                         etcd_port=8000, etcd_peer_port=9000, run_as=ME)
    assert {n.host for n in layout.nodes} == {"127.0.0.1"}
    assert [n.pg_port for n in layout.nodes] == [6000, 6001, 6002]
    with pytest.raises(ChaosDBError, match="overlap"):
        plan_layout("c", Path("/x"), nodes=3, single_address=True, pg_port=6000, api_port=6001, run_as=ME)


@pytest.mark.parametrize("kwargs,message", [
    ({"address_base": "192.168.1.10"}, "not a loopback"),
    ({"address_base": "127.0.0.253"}, "no room"),
    ({"nodes": 10}, "between 1 and 9"),
    ({"pg_port": 80}, "outside"),
    ({"replication": "semi"}, "sync"),
    ({"api_port": 5432}, "must differ"),
])
def test_invalid_layouts(kwargs, message):
    with pytest.raises(ChaosDBError, match=message):
        plan_layout("c", Path("/x"), run_as=ME, **kwargs)


def test_dsn_uses_passfile_and_read_write_and_round_trips():
    layout = plan_layout("c", Path("/data/c"), run_as=ME)
    dsn = layout.dsn()
    assert dsn.startswith("postgresql://chaosdb@127.0.0.11:5432,127.0.0.12:5432,127.0.0.13:5432/chaosdb?")
    assert "target_session_attrs=read-write" in dsn and "passfile=/data/c/pgpass" in dsn
    assert ClusterLayout.from_json(layout.to_json()) == layout


def test_cluster_dir_resolution_order(monkeypatch, tmp_path):
    monkeypatch.setenv("CHAOSDB_HOME", str(tmp_path))
    monkeypatch.delenv("CHAOSDB_CLUSTER_DIR", raising=False)
    assert resolve_cluster_dir() == tmp_path / "chaosdb"
    monkeypatch.setenv("CHAOSDB_CLUSTER_DIR", "/env/dir")
    assert resolve_cluster_dir() == Path("/env/dir")
    assert resolve_cluster_dir(configuration={"chaosdb_cluster": "qs"}) == tmp_path / "qs"
    assert resolve_cluster_dir(configuration={"chaosdb_cluster_dir": "/cfg"}) == Path("/cfg")
    assert resolve_cluster_dir(cluster_dir="/arg", configuration={"chaosdb_cluster_dir": "/cfg"}) == Path("/arg")


def test_node_users_are_the_clusters_own_and_fit_a_user_name():
    from chaosdb.embedded.runtime import node_user_name

    assert node_user_name("chaosdb", 1) == "chaosdb-n1"  # the default cluster keeps its historic names
    assert node_user_name("pytest", 3) == "chaosdb-pytest-n3"
    assert node_user_name("Game Day #2", 1) == "chaosdb-game-day-2-n1"
    long = [node_user_name("a-cluster-name-far-too-long-for-a-user-" + s, 9) for s in ("x", "y")]
    assert all(len(n) <= 32 for n in long) and long[0] != long[1]  # shortened, still told apart


def test_the_launcher_fills_the_keys_once_and_the_packages_read_only_them(tmp_path, monkeypatch):
    """A named embedded cluster becomes plain keys at the start of a run (clusters.postgres_ha.endpoints, called by
    its control): non-secret ones in the configuration, Patroni's credentials in the secrets (masked in the journal
    and the log); the clients of Patroni, etcd and the load read only those keys, and say which one is missing."""
    import json

    from chaosdb.clusters.postgres_ha.endpoints import SECRETS_SCOPE, fill_run_keys
    from chaosdb.core.settings import split_urls
    from chaosdb.embedded.state import SECRETS_FILE
    from chaosdb.etcd.endpoints import etcd_client
    from chaosdb.experiment.secrets import mask_journal, secret_values
    from chaosdb.load.control import etcd_endpoints
    from chaosdb.load.dsn import resolve_dsn
    from chaosdb.postgres.endpoints import patroni_client, postgres_dsn

    monkeypatch.delenv("CHAOSDB_CLUSTER_DIR", raising=False)
    monkeypatch.delenv("CHAOSDB_LOAD_DSN", raising=False)
    layout = plan_layout("c", tmp_path, nodes=3, run_as=ME)
    layout.save()
    (tmp_path / SECRETS_FILE).write_text(json.dumps({"patroni_password": "p4ss-word", "app_password": "a"}))
    mine = tmp_path / "my-ca.crt"
    mine.write_text("x")
    cfg, secrets = {"chaosdb_cluster_dir": str(tmp_path), "patroni_ca_file": str(mine)}, {}
    with pytest.raises(ChaosDBError, match="configuration 'patroni_urls' is not set.*chaosdb.clusters.postgres_ha"
                                           ".control"):
        patroni_client(cfg, None)  # no control: no fallback, the missing key and who sets it
    filled = fill_run_keys(cfg, secrets)
    assert {"patroni_urls", "etcd_urls", "load_dsn", "postgres_dsn", "patroni_password"} <= set(filled)
    assert "patroni_ca_file" not in filled and cfg["patroni_ca_file"] == str(mine)  # the user's key is kept
    assert "p4ss-word" not in json.dumps(cfg)  # nothing secret in the configuration (the journal's)
    assert secrets == {SECRETS_SCOPE: {"patroni_username": "patroni", "patroni_password": "p4ss-word"}}
    client = patroni_client({**cfg, "patroni_ca_file": ""}, secrets)
    assert client.urls == layout.patroni_urls and client.auth == ("patroni", "p4ss-word")
    assert patroni_client({**cfg, "patroni_ca_file": ""}, None).auth is None  # an activity without the secret scope: read-only
    assert etcd_client(cfg).urls == layout.etcd_urls
    assert etcd_endpoints(cfg) == ",".join(layout.etcd_urls)
    assert postgres_dsn(cfg, None) == layout.dsn(user="postgres", database="postgres")
    assert resolve_dsn("", cfg, None) == layout.dsn()
    journal = {"run": {"secrets": secrets, "said": "patroni:p4ss-word"}}
    mask_journal(journal, secret_values({}, secrets))
    assert "p4ss-word" not in json.dumps(journal)
    assert fill_run_keys(cfg, secrets) == []  # once: nothing replaced
    assert split_urls("http://a:1, http://b:2,") == ["http://a:1", "http://b:2"]
    with pytest.raises(ChaosDBError, match="belongs in secrets"):
        postgres_dsn({"postgres_dsn": "postgresql://u:pw@h/db"}, None)
    with pytest.raises(ChaosDBError, match="configuration 'patroni_urls' is not set"):
        patroni_client({}, None)


def test_an_experiment_naming_a_cluster_without_its_control_is_refused_in_one_sentence():
    from chaosdb.experiment.checks import cluster_control_problems

    probe = {"type": "probe", "name": "p", "provider": {"type": "python", "module": "chaosdb.postgres.probes",
                                                         "func": "cluster_is_healthy"}}
    bare = {"method": [probe]}
    [problem] = cluster_control_problems(bare, {"chaosdb_cluster": "c"})
    assert "no control 'chaosdb.clusters.postgres_ha.control'" in problem
    control = {"name": "embedded-cluster", "provider": {"type": "python",
                                                        "module": "chaosdb.clusters.postgres_ha.control"}}
    assert cluster_control_problems({**bare, "controls": [control]}, {"chaosdb_cluster": "c"}) == []
    assert cluster_control_problems(bare, {"chaosdb_cluster": "c", "patroni_urls": "http://h:8008"}) == []
    assert cluster_control_problems(bare, {}) == []


def test_the_load_commands_take_the_named_clusters_keys_from_its_launcher(tmp_path, monkeypatch):
    import argparse

    from chaosdb import cli

    monkeypatch.delenv("CHAOSDB_LOAD_DSN", raising=False)
    layout = plan_layout("c", tmp_path, nodes=3, run_as=ME)
    layout.save()
    args = argparse.Namespace(dsn="", cluster="", cluster_dir=str(tmp_path))
    assert cli._load_dsn(args) == layout.dsn()
    with pytest.raises(ChaosDBError):
        cli._load_dsn(argparse.Namespace(dsn="", cluster="", cluster_dir=str(tmp_path / "none")))
