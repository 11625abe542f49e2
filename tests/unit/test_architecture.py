"""The house plan, checked: engines never import a database package, databases reach the engines only through
the plug-in registries, no private name crosses a package (nor, in an engine, a module), no lower layer names a
higher one even in a string, the fault record service knows no engine (each engine brings its revert handler), and
every plug-in package (the pack's own and any an entry point adds) is held to the same rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from chaosdb.core import adapters, plugins
from chaosdb.core.engines import engines
from chaosdb.core.errors import ChaosDBError

PACKAGE = Path(__file__).resolve().parents[2] / "chaosdb"


def _last(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]


def databases() -> set[str]:
    """Every package that brings a database adapter: the import rules of databases apply to it."""
    return {_last(m.rsplit(".", 1)[0]) for m in plugins.modules_named("adapter")}


def engine_packages() -> set[str]:
    return {_last(m.rsplit(".", 1)[0]) for m in engines().values()}


def _owners() -> dict[Path, tuple[str, str]]:
    """Every file of every plug-in package -> (its name for messages, its package's last name)."""
    return {path: (f"{package.replace('.', '/')}/{path.relative_to(plugins.package_dirs(package)[0])}",
                   _last(package))
            for package in plugins.plugin_packages() for path in plugins.package_files(package)}


def _files() -> list[Path]:
    """chaosdb's own modules (its top-level ones too) and every file of every plug-in package."""
    found = {p for p in PACKAGE.glob("*.py")}
    for package in plugins.plugin_packages():
        found |= set(plugins.package_files(package))
    return sorted(found)
#: database -> packages it still imports besides core and itself, with why (shrink this, never grow it)
DATABASE_DEBT = {
    "postgres": {"etcd"},  # Patroni's DCS: the etcd client (a local cluster is found through its endpoints file, core.local_cluster)
    # the embedded cluster is Patroni and etcd on this machine: which node has a role is their clients' answer
    # (embedded/health.py); its launcher (up, down, chaosd, the run's control) is chaosdb.clusters.postgres_ha
    "embedded": {"postgres", "etcd"},
}

#: the local labs: what starts, provisions and stops a cluster, one sub-package per kind
LAUNCHERS = "clusters"
#: packages above the launchers that may import them, with why (the CLI finds the kinds by convention, never by name)
LAUNCHER_USERS = {"gameday": "a game day brings its cluster up, scales and restarts it between runs"}


def _imports() -> list[tuple[str, str, str, str]]:
    """(file, importing package, imported module, imported name) for every chaosdb import, at any depth, and
    every import of a plug-in package's own modules."""
    out, owners = [], _owners()
    for path in _files():
        rel, package = owners.get(path) or (f"chaosdb/{path.name}", path.stem)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and _ours(node.module):
                out += [(rel, package, node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                out += [(rel, package, a.name, "") for a in node.names if _ours(a.name)]
    return out


def _ours(module: str) -> bool:
    return module.split(".")[0] == "chaosdb" or any(module == p or module.startswith(p + ".")
                                                      for p in plugins.plugin_packages())


def _target_package(module: str, name: str) -> str:
    """The plug-in package (its last name) an import reaches: ``chaosdb.tikv.pd`` -> ``tikv``,
    ``tests.plugins.fakedb.adapter`` -> ``fakedb``; ``from chaosdb import x`` -> ``x``."""
    for package in plugins.plugin_packages():
        if module == package or module.startswith(package + "."):
            return _last(package)
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else name


def test_no_engine_imports_a_database_package():
    dbs = databases()
    bad = [(f, m) for f, pkg, m, n in _imports() if pkg in engine_packages() and _target_package(m, n) in dbs]
    assert not bad, f"engines must get database answers through chaosdb.core.adapters: {bad}"


def test_database_packages_import_only_core_and_themselves_apart_from_the_listed_debt():
    bad, dbs = [], databases()
    for f, pkg, m, n in _imports():
        target = _target_package(m, n)
        if pkg in dbs and target not in ("core", pkg) and target not in DATABASE_DEBT.get(pkg, set()):
            bad.append((f, m))
    assert not bad, bad


def test_nothing_below_the_launchers_imports_them():
    """Launchers (``chaosdb.clusters``) may import databases, engines, the load and the workloads; no database, engine
    or other lower package imports a launcher, and a launcher imports nothing above it."""
    assert LAUNCHERS not in databases() | engine_packages()
    below = [(f, m) for f, pkg, m, n in _imports() if _target_package(m, n) == LAUNCHERS
             and pkg not in {LAUNCHERS, *LAUNCHER_USERS}]
    assert not below, f"only the launchers' users ({', '.join(LAUNCHER_USERS)}) import chaosdb.{LAUNCHERS}: {below}"
    above = [(f, m) for f, pkg, m, n in _imports() if pkg == LAUNCHERS and _target_package(m, n) in
             {*LAUNCHER_USERS, "cli"}]
    assert not above, above


def test_every_cluster_kind_is_a_launcher_of_the_clusters_package():
    """The pack's own cluster kinds live in ``chaosdb.clusters`` (one sub-package each), none in a database."""
    from chaosdb.core import clusterkinds

    modules = {kind: clusterkinds.kind_module(kind).__name__ for kind in clusterkinds.cluster_kinds()}
    own = {kind: m for kind, m in modules.items() if m.startswith("chaosdb.")}
    assert own and all(m.startswith(f"chaosdb.{LAUNCHERS}.") for m in own.values()), own


def test_core_imports_nothing_above_it():
    bad = [(f, m) for f, pkg, m, n in _imports() if pkg == "core" and _target_package(m, n) != "core"]
    assert not bad, bad


def test_no_private_name_crosses_a_package():
    bad = [(f, m, n) for f, pkg, m, n in _imports()
           if n.startswith("_") and not n.endswith("__") and _target_package(m, n) != pkg]
    assert not bad, bad


def test_no_engine_module_imports_a_private_name_of_another_module():
    """Within an engine (faults, chaosd, ...) too, what another module needs is public and documented."""
    bad = [(f, m, n) for f, pkg, m, n in _imports()
           if pkg in engine_packages() and n.startswith("_") and not n.endswith("__")]
    assert not bad, bad


#: the fault record service: records, scopes, the reverter, residue and cleanup, for every engine
RECORD_SERVICE = "chaosdb.core.faultrecords"


def test_the_record_service_imports_no_engine():
    """It imports only core (never an engine, not even the host engine it came from) and finds the revert handlers
    by convention; no string in it names an engine's module either (see the string rule of core)."""
    service = [(f, m) for f, pkg, m, n in _imports() if f.startswith(RECORD_SERVICE.replace(".", "/") + "/")]
    assert service, "the record service's files were not found"
    bad = [(f, m) for f, m in service if _target_package(m, "") != "core"]
    assert not bad, f"the record service must not import an engine: {bad}"


def test_each_engine_that_records_faults_brings_one_revert_handler():
    """Every engine whose modules write fault records has a ``revert_handler`` module, each handler belongs to an
    engine and is named after it, and the Chaos Mesh objects of chaosd attacks have theirs."""
    from chaosdb.core.faultrecords.handlers import revert_handlers

    handlers = {h.engine: type(h).__module__ for h in revert_handlers()}
    assert set(handlers) == {"host", "chaosd", "chaosmesh"}
    assert all(module.rsplit(".", 1)[0] == engines()[engine].rsplit(".", 1)[0]
               for engine, module in handlers.items())
    recording = {pkg for f, pkg, m, n in _imports()
                 if m == f"{RECORD_SERVICE}.records" and n == "new_record" and pkg in engine_packages()}
    assert recording == {"faults", "chaosd"}
    with_handler = {_last(module.rsplit(".", 1)[0]) for module in handlers.values()}
    assert recording <= with_handler, recording - with_handler


def test_every_registered_adapter_loads_and_names_its_roles():
    roles = adapters.adapter_roles()
    assert {"cockroach-leaseholder", "tikv-leader", "tikv-follower", "patroni-primary"} <= set(roles)
    with pytest.raises(ChaosDBError, match="unknown target role 'tikv-leeder'; one of .*tikv-leader"):
        adapters.split_role("tikv-leeder")


def test_an_adapter_without_local_processes_says_so(monkeypatch):
    from chaosdb.faults.targets import role_group
    from chaosdb.postgres import adapter as patroni

    monkeypatch.setattr(patroni.PatroniAdapter, "resolve",
                        lambda self, role, target, cfg, secrets: adapters.ResolvedNode(name="pg-0", pod="pg-0"))
    with pytest.raises(ChaosDBError, match="patroni nodes are not found among this machine's processes"):
        role_group({"role": "patroni-primary"}, {})


def test_the_plug_ins_are_the_packages_they_were_before_the_loader():
    assert databases() >= {"cockroach", "tikv", "postgres", "etcd", "embedded"}
    assert engine_packages() == {"faults", "k8s", "chaosmesh", "litmus"} | {"chaosd"}  # chaosd declares itself now


def test_cluster_kinds_are_found_by_convention_and_the_cli_names_none():
    from chaosdb.core import clusterkinds

    kinds = clusterkinds.cluster_kinds()
    assert kinds[0] == clusterkinds.DEFAULT_KIND and {"cockroach", "pd", "kubernetes"} <= set(kinds)
    modules = [clusterkinds.kind_module(kind) for kind in kinds]
    for module in modules:
        assert isinstance(module.STATE_FILE, str) and module.DEFAULT_ADDRESS.startswith("127.")
        assert all(callable(getattr(module, f)) for f in ("up", "show_up", "show_status", "add_arguments"))
        assert all(callable(getattr(module, f, None) or getattr(module.CLUSTER, f)) for f in ("status", "down"))
    assert len({m.STATE_FILE for m in modules}) == len(kinds)  # a folder's kind is never ambiguous
    cluster_modules = {m.__name__.rsplit(".", 1)[0] for m in modules}
    named = [m for f, _, m, n in _imports() if f == "chaosdb/cli.py"
             and any(m == p or m.startswith(p + ".") for p in cluster_modules)]
    assert not named, named
    with pytest.raises(ChaosDBError, match="no cluster kind 'etcd-only'"):
        clusterkinds.kind_module("etcd-only")


def _strings(tree: ast.AST) -> list[str]:
    """The string constants of a module that are not docstrings."""
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings]


def test_core_names_no_higher_module_even_in_a_string():
    """No importlib string reaches past the layer rule: core finds the plug-ins by convention."""
    import re

    bad, higher = [], set(plugins.plugin_packages()) - {"chaosdb.core"}
    for path in sorted((PACKAGE / "core").rglob("*.py")):  # the record service's sub-package too
        for text in _strings(ast.parse(path.read_text())):
            if re.fullmatch(r"chaosdb(\.\w+)+", text) and ".".join(text.split(".")[:2]) in higher:
                bad.append((str(path.relative_to(PACKAGE / "core")), text))
    assert not bad, bad


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


# --- the environment is read in one place: chaosdb.core.settings ---------------------------------------------------

SETTINGS_MODULE = PACKAGE / "core" / "settings.py"
#: modules besides the settings layer that read the process's environment themselves, with why (keep it empty: give
#: the settings layer a function instead)
ENVIRONMENT_READERS: dict[str, str] = {}
_OS_READERS = {"environ", "environb", "getenv", "getenvb"}


def _variable_name(node: ast.AST | None) -> str:
    """The variable's name a constant gives (or the constant start of an f-string), else ''."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return ""


def environment_reads(source: str) -> list[tuple[int, str]]:
    """(line, variable name or '') of every read of this process's environment in *source*: ``os.environ`` (its
    ``get``, ``[...]``, ``in``, or the mapping handed on), ``os.getenv``, and ``environ`` / ``getenv`` imported from
    ``os`` under any name."""
    tree = ast.parse(source)
    modules, direct = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            direct |= {a.asname or a.name for a in node.names if a.name in _OS_READERS}
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    reads = []
    for node in ast.walk(tree):
        site = (isinstance(node, ast.Attribute) and node.attr in _OS_READERS and isinstance(node.value, ast.Name)
                and node.value.id in modules) or (isinstance(node, ast.Name) and node.id in direct)
        if not site:
            continue
        parent = parents.get(id(node))
        name = ""
        if isinstance(parent, ast.Call) and parent.func is node and parent.args:  # os.getenv("X")
            name = _variable_name(parent.args[0])
        elif isinstance(parent, ast.Subscript) and parent.value is node:  # os.environ["X"]
            name = _variable_name(parent.slice)
        elif isinstance(parent, ast.Attribute):  # os.environ.get("X") / .pop / .setdefault
            call = parents.get(id(parent))
            if isinstance(call, ast.Call) and call.func is parent and call.args:
                name = _variable_name(call.args[0])
        elif isinstance(parent, ast.Compare) and any(c is node for c in parent.comparators):  # "X" in os.environ
            name = _variable_name(parent.left)
        reads.append((node.lineno, name))
    return sorted(reads)


def test_the_environment_reads_are_found_however_they_are_written():
    source = ("import os\nimport os as o\nfrom os import environ as e, getenv\n"
              "a = os.environ.get('CHAOSDB_A')\nb = os.environ['CHAOSDB_B']\nc = o.getenv(f'CHAOSDB_{k}')\n"
              "d = 'CHAOSDB_D' in os.environ\nf = e.get('CHAOSDB_F', '')\ng = getenv('CHAOSDB_G')\n"
              "h = os.environ.get('HOME')\ni = dict(os.environ)\n")
    assert environment_reads(source) == [(4, "CHAOSDB_A"), (5, "CHAOSDB_B"), (6, "CHAOSDB_"), (7, "CHAOSDB_D"),
                                         (8, "CHAOSDB_F"), (9, "CHAOSDB_G"), (10, "HOME"), (11, "")]


def test_no_module_but_the_settings_layer_reads_a_chaosdb_variable():
    bad = [(str(path.relative_to(PACKAGE.parent)), line, name) for path in _files() if path != SETTINGS_MODULE
           for line, name in environment_reads(path.read_text()) if name.startswith("CHAOSDB_")]
    assert not bad, f"read the pack's variables through chaosdb.core.settings.env_value (and document them): {bad}"


def test_no_module_but_the_settings_layer_reads_the_environment():
    bad = [(rel, line, name) for path in _files() if path != SETTINGS_MODULE
           for rel in [str(path.relative_to(PACKAGE.parent))] if rel not in ENVIRONMENT_READERS
           for line, name in environment_reads(path.read_text())]
    assert not bad, ("read the environment through chaosdb.core.settings (env_value, system_value, "
                     f"referenced_value, process_environment): {bad}")


def test_every_variable_read_through_the_settings_layer_is_documented_there():
    from chaosdb.core import settings
    from chaosdb.workloads.kv import ENV_TLS

    documented = {s.env for s in settings.SETTINGS.values()} | set(settings.ENVIRONMENT_ONLY)
    read, system = set(), set()
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            first, second = _variable_name(node.args[0]), _variable_name(node.args[1]) if len(node.args) > 1 else ""
            if func == "env_value" and isinstance(node.args[0], ast.Constant):
                read.add(first)
            elif func == "system_value" and first:
                system.add(first)
            elif func == "credentials" and first:  # CHAOSDB_<SERVICE>_USERNAME / _PASSWORD
                read |= {f"CHAOSDB_{first.upper()}_USERNAME", f"CHAOSDB_{first.upper()}_PASSWORD"}
            elif func == "secret_value" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                read.add(f"CHAOSDB_{second.upper()}")
    read |= set(ENV_TLS.values())
    assert {"CHAOSDB_LOAD_DSN", "CHAOSDB_HOME", "CHAOSDB_ETCD_PASSWORD", "CHAOSDB_ETCD_CA_FILE"} <= read, read
    assert read <= documented, f"add them to chaosdb.core.settings (and the docs' table): {read - documented}"
    assert {"XDG_CACHE_HOME", "KUBECONFIG"} <= system <= set(settings.SYSTEM_VARIABLES), system


# --- one run context: no module-level mutable state outside it ---------------------------------------------------------

#: the one module-level holder of run state: the run context (:mod:`chaosdb.experiment.context`)
RUN_CONTEXT_HOLDER = ("chaosdb/experiment/context.py", "_holder")
#: module-level mutable state that is not a run's: process-wide caches and registries, each with why (keep it small)
PROCESS_STATE: dict[tuple[str, str], str] = {
    ("chaosdb/core/extras.py", "_CONTROL_EXTRAS"): "registry: each control module's extras, filled at import",
    ("chaosdb/core/http.py", "_local"): "cache: one HTTP session per thread, whichever run uses it",
    ("chaosdb/core/tls.py", "_warned"): "log de-duplication: a TLS warning said once per process",
    ("chaosdb/cockroach/channels.py", "_VERSIONS"): "cache: what a CockroachDB release tag supports never changes",
    ("chaosdb/k8s/api.py", "_CLIENTS"): "cache: one Kubernetes client per kubeconfig and context",
    ("chaosdb/workloads/executor.py", "_PSYCOPG"): "lazy import: psycopg's modules, loaded on first use",
}
#: run state not in the run context yet, each with why (shrink this, never grow it)
RUN_STATE_DEBT: dict[tuple[str, str], str] = {
    ("chaosdb/experiment/control.py", "_run"): "the experiment control's log mask and verdict sentence: its cleanup "
                                               "hook needs them after the last after-experiment hook ended the context",
    ("chaosdb/core/claims.py", "_created"): "the folders a claim created, removed when it is released: claims are "
                                            "per process (the CLI claims folders outside any run)",
    ("chaosdb/k8s/created.py", "_CREATED"): "what this process created on Kubernetes (actions called outside a run "
                                            "too); the k8s engine would have to import the experiment package",
}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
             "popitem", "sort", "reverse", "reset", "start", "stop", "paused", "resumed"}
_MUTABLE = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.Call)


def _module_level_mutables(tree: ast.Module) -> dict[str, int]:
    """name -> line of each module-level assignment of a list, dict or set (literal or comprehension) or a call."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if isinstance(value, _MUTABLE):
            found.update({t.id: node.lineno for t in targets if isinstance(t, ast.Name)})
    return found


def _mutated_names(tree: ast.AST, names: set[str]) -> set[str]:
    """Which of *names* the code mutates: a mutating method called on it, an item or attribute assigned or deleted."""
    mutated = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            base = node.func.value
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, (ast.Subscript, ast.Attribute)) and isinstance(target.value, ast.Name) \
                        and target.value.id in names:
                    mutated.add(target.value.id)
            continue
        else:
            continue
        if isinstance(base, ast.Name) and base.id in names:
            mutated.add(base.id)
    return mutated


def module_state(sources: dict[str, str]) -> list[tuple[str, str, str]]:
    """(file, name, why) of the module-level mutable state in *sources* (file -> text): a ``global`` statement, or a
    module-level list, dict, set or object made by a call that the module itself, or a module that imports it by
    name, mutates."""
    trees = {f: ast.parse(text) for f, text in sources.items()}
    defined = {f: _module_level_mutables(tree) for f, tree in trees.items()}
    by_module = {f[:-3].replace("/", ".").removesuffix(".__init__"): f for f in sources}
    found = set()
    for f, tree in trees.items():
        found |= {(f, n, "global") for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
        found |= {(f, n, "mutated") for n in _mutated_names(tree, set(defined[f]))}
        for node in ast.walk(tree):  # `from chaosdb.x import NAME`, then NAME mutated here
            origin = by_module.get(node.module or "") if isinstance(node, ast.ImportFrom) else None
            if origin is None:
                continue
            aliases = {(a.asname or a.name): a.name for a in node.names if a.name in defined[origin]}
            found |= {(origin, aliases[n], "mutated") for n in _mutated_names(tree, set(aliases))}
    return sorted(found)


def test_module_state_is_found_however_it_is_mutated():
    sources = {"chaosdb/a.py": "X = []\nY: dict = {}\nZ = {}\nW = make()\nT = (1,)\ndef f():\n    global G\n"
                               "    X.append(1)\n    Y['k'] = 2\n    return Z.get('k'), T\n",
               "chaosdb/b.py": "from chaosdb.a import W\ndef g():\n    W.phase = 'method'\n"}
    assert module_state(sources) == [("chaosdb/a.py", "G", "global"), ("chaosdb/a.py", "W", "mutated"),
                                     ("chaosdb/a.py", "X", "mutated"), ("chaosdb/a.py", "Y", "mutated")]


def test_no_module_level_mutable_state_outside_the_run_context():
    """Issue 44: controls and probes read the run context, never each other's module globals; what remains is a
    process-wide cache or registry (PROCESS_STATE) or listed debt (RUN_STATE_DEBT), each with why."""
    sources = {str(p.relative_to(PACKAGE.parent)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}
    found = {(f, n) for f, n, _ in module_state(sources)}
    allowed = {RUN_CONTEXT_HOLDER} | set(PROCESS_STATE) | set(RUN_STATE_DEBT)
    assert not found - allowed, f"keep run state in chaosdb.experiment.context.RunContext: {sorted(found - allowed)}"
    assert RUN_CONTEXT_HOLDER in found
    stale = allowed - found
    assert not stale, f"no longer module state: take them off the lists {sorted(stale)}"
