"""A database added with one folder and one line: ``tests/plugins/fakedb`` (an adapter, probes, actions and a
cluster kind) and one entry point in the group ``chaosdb.plugins`` of a distribution on ``sys.path``. Without
touching chaosdb it appears in ``chaos discover``, its roles work on every engine, its cluster kind and its options
appear in ``chaosdb cluster up --help`` and run, and the architecture rules apply to its files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.core import adapters, clusterkinds, plugins
from chaosdb.core.errors import ChaosDBError
from chaosdb.k8s import api
from chaosdb.k8s.roles import check_target, resolve_target
from tests.unit.k8s_api_standin import KubeStandin

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: the one line: an entry point naming the package
ENTRY_POINTS = "[chaosdb.plugins]\nfakedb = tests.plugins.fakedb\n"


def _forget() -> None:
    plugins.refresh()
    adapters.forget_adapters()
    clusterkinds.forget_kinds()


def _distribution(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def fakedb(tmp_path):
    """A distribution whose metadata holds the one entry-point line, on sys.path (and PYTHONPATH for the CLIs)."""
    site = tmp_path / "site"
    _distribution(site, "fakedb_plugin", ENTRY_POINTS)
    sys.path.insert(0, str(site))
    _forget()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    try:
        yield env
    finally:
        sys.path.remove(str(site))
        _forget()


def test_without_the_line_there_is_no_fakedb():
    assert "tests.plugins.fakedb" not in plugins.plugin_packages()
    assert not any(r.startswith("fakedb-") for r in adapters.adapter_roles())
    assert "fakedb" not in clusterkinds.cluster_kinds()


def test_chaos_discover_lists_its_activities(fakedb, tmp_path):
    out = tmp_path / "discovery.json"
    done = subprocess.run([str(BIN / "chaos"), "--no-log-file", "discover", "--no-system-info", "--no-install",
                           "--discovery-path", str(out), "chaostoolkit-db"], env=fakedb, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    found = {(a["mod"], a["name"]): a for a in json.loads(out.read_text())["activities"]}
    probe = found["tests.plugins.fakedb.probes", "fakedb_boss"]
    action = found["tests.plugins.fakedb.actions", "fakedb_promote"]
    assert probe["type"] == "probe" and action["type"] == "action"
    assert {a["name"]: a.get("type") for a in action["arguments"]} == {"shard": "integer", "wait_s": "number"}
    assert {m for m, _ in found} >= {"chaosdb.postgres.probes", "chaosdb.load.integrity", "chaosdb.faults.actions"}


def test_its_cluster_kind_and_options_are_in_the_cli_and_run(fakedb, tmp_path):
    chaosdb = str(BIN / "chaosdb")
    helped = subprocess.run([chaosdb, "cluster", "up", "--help"], env=fakedb, capture_output=True, text=True,
                            timeout=120)
    assert helped.returncode == 0, helped.stderr
    assert "fakedb: a fake database that runs nothing" in " ".join(helped.stdout.split())
    assert "--kind fakedb:" in helped.stdout and "--fake-shards" in helped.stdout
    folder = tmp_path / "fake-cluster"
    up = subprocess.run([chaosdb, "cluster", "up", "--kind", "fakedb", "--dir", str(folder), "--fake-shards", "4"],
                        env=fakedb, capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    assert json.loads((folder / "fakedb.json").read_text())["shards"] == 4
    # the folder says its kind: status and down need no --kind
    status = subprocess.run([chaosdb, "cluster", "status", "--dir", str(folder)], env=fakedb, capture_output=True,
                            text=True, timeout=120)
    assert status.returncode == 0 and '"shards": 4' in status.stdout, status.stderr
    check = subprocess.run([chaosdb, "cluster", "status", "--dir", str(folder), "--check", "--json"], env=fakedb,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and json.loads(check.stdout)["healthy"] is True, check.stderr
    down = subprocess.run([chaosdb, "cluster", "down", "--dir", str(folder)], env=fakedb, capture_output=True,
                          text=True, timeout=120)
    assert down.returncode == 0 and not (folder / "fakedb.json").exists(), down.stderr
    assert down.stdout.startswith("fakedb cluster fakedb stopped"), down.stdout


def test_its_roles_work_on_the_local_engine(fakedb):
    from chaosdb.faults.targets import check_fault_target, role_group

    assert {"fakedb-boss", "fakedb-minion"} <= set(adapters.adapter_roles())
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        check_fault_target({"role": "fakedb-boss", "pids": [sleeper.pid]})
        group = role_group({"role": "fakedb-boss", "pids": [sleeper.pid]}, {})
        assert group.pids() == [sleeper.pid] and group.target["name"] == "fake-0"
    finally:
        sleeper.kill()
        sleeper.wait()
    with pytest.raises(ChaosDBError, match="a minion needs its shard"):
        check_fault_target({"role": "fakedb-minion"})  # the adapter's own check, before anything is asked


def test_its_roles_work_on_the_kubernetes_engines(fakedb, tmp_path):
    from chaosdb.chaosmesh import actions as chaos_mesh
    from chaosdb.k8s import actions as k8s

    got = resolve_target({"role": "fakedb-minion", "shard": 2, "namespace": "db"})
    assert got == {"namespace": "db", "pods": ["fake-2"], "role": "fakedb-minion", "detail": {"asked": "minion"}}
    with pytest.raises(ChaosDBError, match="a minion needs its shard"):
        check_target({"role": "fakedb-minion"})
    api.reset_clients()
    kube = KubeStandin().start()
    try:
        kube.add_statefulset("fake", "db", 3, {"app": "fake"})
        cfg = {"k8s_kubeconfig": kube.write_kubeconfig(tmp_path / "kubeconfig"), "k8s_namespace": "db"}
        made = chaos_mesh.create_chaos(kind="PodChaos", name="fakedb-boss-kill",
                                       spec={"action": "pod-kill"}, target={"role": "fakedb-boss"},
                                       configuration=cfg)
        assert made["selected_pods"] == ["db/fake-0"] and made["target"]["detail"] == {"asked": "boss"}
        chaos_mesh.delete_chaos("PodChaos", "fakedb-boss-kill", configuration=cfg)
        uid_before = kube.pods[("db", "fake-1")].uid
        deleted = k8s.delete_pods({"role": "fakedb-minion", "shard": 1}, configuration=cfg)
        assert [t["name"] for t in deleted["targets"]] == ["fake-1"]
        assert kube.pods[("db", "fake-1")].uid != uid_before  # replaced by its StatefulSet
    finally:
        kube.stop()
        api.reset_clients()


def test_the_architecture_rules_apply_to_its_files(fakedb, tmp_path):
    from tests.unit import test_architecture as rules

    assert "fakedb" in rules.databases()
    mine = [(f, pkg, m) for f, pkg, m, _ in rules._imports() if pkg == "fakedb"]
    assert ("tests/plugins/fakedb/adapter.py", "fakedb", "chaosdb.core.adapters") in mine
    rules.test_database_packages_import_only_core_and_themselves_apart_from_the_listed_debt()
    rules.test_no_private_name_crosses_a_package()
    rules.test_no_engine_imports_a_database_package()


def test_a_plugged_in_database_that_reaches_into_an_engine_is_refused(fakedb, tmp_path):
    from tests.unit import test_architecture as rules

    site = tmp_path / "site"
    package = site / "baddb"
    package.mkdir()
    (package / "__init__.py").write_text('"""A database that imports an engine."""\n')
    (package / "adapter.py").write_text("from chaosdb.k8s.pods import list_pods  # noqa: F401\n")
    _distribution(site, "baddb_plugin", "[chaosdb.plugins]\nbaddb = baddb\n")
    _forget()
    assert "baddb" in rules.databases()
    with pytest.raises(AssertionError, match="baddb/adapter.py"):
        rules.test_database_packages_import_only_core_and_themselves_apart_from_the_listed_debt()
