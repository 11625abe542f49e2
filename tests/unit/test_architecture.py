"""The house plan, checked: engines never import a database package, databases reach the engines only through
the registries, no private name crosses a package, and a new database plugs in with one registry line."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from chaosdb.core import adapters
from chaosdb.core.errors import ChaosDBError

PACKAGE = Path(__file__).resolve().parents[2] / "chaosdb"
DATABASES = {"cockroach", "tikv", "postgres", "etcd"}
ENGINES = {"faults", "k8s", "chaosmesh", "litmus"}
#: database -> packages it still imports besides core and itself, with why (shrink this, never grow it)
DATABASE_DEBT = {
    "postgres": {"etcd"},  # Patroni's DCS: the etcd client (the embedded cluster is found through core.embedded)
}


def _imports() -> list[tuple[str, str, str, str]]:
    """(file, importing package, imported module, imported name) for every chaosdb import, at any depth."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent)
        parts = rel.with_suffix("").parts
        package = parts[1] if len(parts) > 2 else parts[-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chaosdb"):
                out += [(str(rel), package, node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                out += [(str(rel), package, a.name, "") for a in node.names if a.name.startswith("chaosdb")]
    return out


def _target_package(module: str, name: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else name


def test_no_engine_imports_a_database_package():
    bad = [(f, m) for f, pkg, m, n in _imports() if pkg in ENGINES and _target_package(m, n) in DATABASES]
    assert not bad, f"engines must get database answers through chaosdb.core.adapters: {bad}"


def test_database_packages_import_only_core_and_themselves_apart_from_the_listed_debt():
    bad = []
    for f, pkg, m, n in _imports():
        target = _target_package(m, n)
        if pkg in DATABASES and target not in ("core", pkg) and target not in DATABASE_DEBT.get(pkg, set()):
            bad.append((f, m))
    assert not bad, bad


def test_core_imports_nothing_above_it():
    bad = [(f, m) for f, pkg, m, n in _imports() if pkg == "core" and _target_package(m, n) != "core"]
    assert not bad, bad


def test_no_private_name_crosses_a_package():
    bad = [(f, m, n) for f, pkg, m, n in _imports()
           if n.startswith("_") and _target_package(m, n) != pkg]
    assert not bad, bad


def test_every_registered_adapter_loads_and_names_its_roles():
    roles = adapters.adapter_roles()
    assert {"cockroach-leaseholder", "tikv-leader", "tikv-follower", "patroni-primary"} <= set(roles)
    with pytest.raises(ChaosDBError, match="unknown target role 'tikv-leeder'; one of .*tikv-leader"):
        adapters.split_role("tikv-leeder")


@pytest.fixture
def fakedb(monkeypatch):
    """The one line a new database adds to the registry."""
    monkeypatch.setitem(adapters.ADAPTER_MODULES, "fakedb", "tests.unit.fakedb_adapter")
    monkeypatch.setattr(adapters, "_loaded", {})
    return adapters.load_adapter("fakedb")


def test_a_new_database_plugs_in_with_one_registry_line(fakedb):
    from chaosdb.k8s.roles import check_target, resolve_target

    assert "fakedb-boss" in adapters.adapter_roles()
    got = resolve_target({"role": "fakedb-minion", "shard": 2, "namespace": "db"})
    assert got == {"namespace": "db", "pods": ["fake-2"], "role": "fakedb-minion", "detail": {"asked": "minion"}}
    with pytest.raises(ChaosDBError, match="a minion needs its shard"):
        check_target({"role": "fakedb-minion"})  # the adapter's own check, before anything is asked


def test_the_local_engine_takes_a_role_target_from_any_adapter(fakedb):
    from chaosdb.faults.targets import role_group

    group = role_group({"role": "fakedb-boss", "pids": [os.getpid()]}, {})
    assert group.pids() == [os.getpid()] and group.target["name"] == "fake-0"


def test_an_adapter_without_local_processes_says_so(monkeypatch):
    from chaosdb.faults.targets import role_group
    from chaosdb.postgres import adapter as patroni

    monkeypatch.setattr(patroni.PatroniAdapter, "resolve",
                        lambda self, role, target, cfg, secrets: adapters.ResolvedNode(name="pg-0", pod="pg-0"))
    with pytest.raises(ChaosDBError, match="patroni nodes are not found among this machine's processes"):
        role_group({"role": "patroni-primary"}, {})


def test_cluster_kinds_are_found_through_their_registry_and_the_cli_names_none():
    from chaosdb.core import clusterkinds

    for kind in clusterkinds.CLUSTER_KINDS:
        module = clusterkinds.kind_module(kind)
        assert isinstance(module.STATE_FILE, str) and module.DEFAULT_ADDRESS.startswith("127.")
        assert callable(module.run), kind
    files = {module.STATE_FILE for module in map(clusterkinds.kind_module, clusterkinds.CLUSTER_KINDS)}
    assert len(files) == len(clusterkinds.CLUSTER_KINDS)  # a folder's kind is never ambiguous
    kind_modules = set(clusterkinds.CLUSTER_KINDS.values()) | {"chaosdb.tikv.localpd", "chaosdb.cockroach.localcluster",
                                                              "chaosdb.localkube.cluster", "chaosdb.local.cluster"}
    named = [m for f, _, m, n in _imports() if f == "chaosdb/cli.py"
             and (m in kind_modules or f"{m}.{n}" in kind_modules)]
    assert not named, named
    with pytest.raises(ChaosDBError, match="no cluster kind 'etcd-only'"):
        clusterkinds.kind_module("etcd-only")


def test_no_two_packages_import_each_other_even_through_others():
    edges: dict[str, set[str]] = {}
    for _, pkg, m, n in _imports():
        target = _target_package(m, n)
        if target != pkg:
            edges.setdefault(pkg, set()).add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    cycles = sorted({tuple(sorted((a, b))) for a, targets in edges.items() for b in targets if reaches(b, a)})
    assert not cycles, f"packages in a circle (a imports b, b reaches a again): {cycles}"
