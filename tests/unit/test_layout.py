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


def test_patroni_etcd_and_the_load_find_the_embedded_cluster_through_its_endpoints_file(tmp_path, monkeypatch):
    """The embedded cluster publishes its endpoints in its folder (chaosdb.core.local_cluster): the clients of
    Patroni, etcd and the load fall back to the cluster a configuration names by reading that file, without importing
    the embedded cluster's package, and the file holds no password."""
    import json

    from chaosdb.core.local_cluster import ENDPOINTS_FILE, local_endpoints, names_local_cluster, split_urls
    from chaosdb.embedded.state import SECRETS_FILE
    from chaosdb.etcd.endpoints import etcd_client
    from chaosdb.load.control import etcd_endpoints
    from chaosdb.postgres.endpoints import patroni_client, postgres_dsn

    monkeypatch.delenv("CHAOSDB_CLUSTER_DIR", raising=False)
    layout = plan_layout("c", tmp_path, nodes=3, run_as=ME)
    layout.save()
    (tmp_path / SECRETS_FILE).write_text(json.dumps({"patroni_password": "p4ss", "app_password": "a"}))
    cfg = {"chaosdb_cluster_dir": str(tmp_path)}
    assert names_local_cluster(cfg) and not names_local_cluster({})
    found = local_endpoints(cfg)
    assert found["patroni_urls"] == layout.patroni_urls and found["etcd_urls"] == layout.etcd_urls
    assert found["patroni_auth"] == ("patroni", "p4ss") and "p4ss" not in found["dsn"]
    client = patroni_client(cfg, None)
    assert client.urls == layout.patroni_urls and client.auth == ("patroni", "p4ss")
    assert etcd_client(cfg).urls == layout.etcd_urls
    assert etcd_endpoints(cfg) == ",".join(layout.etcd_urls)
    assert postgres_dsn(cfg, None) == layout.dsn(user="postgres", database="postgres")
    assert split_urls("http://a:1, http://b:2,") == ["http://a:1", "http://b:2"]
    assert "p4ss" not in (tmp_path / ENDPOINTS_FILE).read_text()
    with pytest.raises(ChaosDBError, match=r"no local cluster at .* \(missing endpoints.json\)"):
        local_endpoints({"chaosdb_cluster_dir": str(tmp_path / "none")})
    with pytest.raises(ChaosDBError, match="set configuration 'patroni_urls'"):
        patroni_client({}, None)
