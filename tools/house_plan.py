"""The house plan in figures: rooms (chaosdb's top-level packages; its top-level modules together are the room
``chaosdb``), arrows (room A imports room B, at any depth of a module, counted once per pair), floors (the layers of
the arrows' graph: a room stands one floor above the highest room it imports), circles (groups of rooms that
import each other, directly or through others), private names imported across modules, and reads of the
environment outside ``chaosdb.core.settings``.

Run-time arrows are the ones no import shows: a room that asks ``chaosdb.core`` for a plug-in found by convention
reaches the rooms that provide it. ``engine_action("host", ...)`` reaches the room whose module declares
``ENGINE = "host"``; a role lookup (``resolve_role_nodes``, ``split_role``, ``load_adapter``, ...) may reach every room
with an ``adapter`` module (a role target can name any database); a cluster-kind lookup (``kind_module``,
``run_command``, ...) every room with a ``cluster_command`` module; so does a call of a public ``core`` function that
makes such a lookup itself or through other ``core`` functions. ``core`` itself is not charged (it is the
registry). Circles are counted again with these arrows added.

    python tools/house_plan.py [PACKAGE_DIR] [--json]

PACKAGE_DIR defaults to this checkout's ``chaosdb``; point it at another checkout's (``git worktree add``) to
compare two commits.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

PACKAGE = "chaosdb"


def _module_name(package_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] not in _TOP_MODULES) else PACKAGE


_TOP_MODULES: set[str] = set()


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """(imported module, imported names) for every import of a chaosdb module in *tree*."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == PACKAGE:
                found.append((target, [a.name for a in node.names]))
    return found


#: core's lookups of plug-ins found by convention, by what they find
_ROLE_LOOKUPS = {"resolve_role_nodes", "resolve_role_target", "split_role", "load_adapter", "all_adapters",
                 "watched_sources", "adapter_roles", "check_role_target"}
_KIND_LOOKUPS = {"kind_module", "cluster_kinds", "run_command", "kind_of_folder"}


def _called(node: ast.AST) -> set[str]:
    return {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
            for n in ast.walk(node) if isinstance(n, ast.Call)}


def _core_lookups(package_dir: Path) -> tuple[set[str], set[str]]:
    """core's public functions that look up a role or a kind themselves or through other core functions (a caller
    of one reaches the plug-ins as if it called the lookup)."""
    calls: dict[str, set[str]] = {}
    for path in sorted((package_dir / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef):
                calls.setdefault(node.name, set()).update(_called(node))
    roles, kinds = set(_ROLE_LOOKUPS), set(_KIND_LOOKUPS)
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            for found in (roles, kinds):
                if name not in found and not name.startswith("_") and called & found:
                    found.add(name)
                    changed = True
    return roles, kinds


def _lookups(tree: ast.AST, role_lookups: set[str], kind_lookups: set[str]) -> tuple[set[str], bool, bool]:
    """(engines named in ``engine_action`` calls, whether a role lookup is called, whether a kind lookup is)."""
    engines = {str(n.args[0].value) for n in ast.walk(tree)
               if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
               and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) == "engine_action"
               and n.args and isinstance(n.args[0], ast.Constant)}
    called = _called(tree)
    return engines, bool(called & role_lookups), bool(called & kind_lookups)


def _declared_engine(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ENGINE" for t in node.targets) \
                and isinstance(node.value, ast.Constant):
            return str(node.value.value)
    return ""


def _environment_reads(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") \
                and isinstance(node.value, ast.Name) and node.value.id == "os":
            count += 1
    return count


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of *graph*."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def measure(package_dir: Path) -> dict[str, Any]:
    """The figures of the house in *package_dir* (a ``chaosdb`` folder)."""
    _TOP_MODULES.clear()
    _TOP_MODULES.update(p.stem for p in package_dir.glob("*.py") if p.stem != "__init__")
    graph: dict[str, set[str]] = defaultdict(set)
    private, environment = [], {}
    engine_rooms: dict[str, str] = {}
    adapter_rooms, kind_rooms = set(), set()
    asks: dict[str, tuple[set[str], bool, bool]] = {}
    role_lookups, kind_lookups = _core_lookups(package_dir)
    for path in sorted(package_dir.rglob("*.py")):
        module = _module_name(package_dir, path)
        room = _room(module)
        graph[room]
        tree = ast.parse(path.read_text(), str(path))
        if _declared_engine(tree):
            engine_rooms[_declared_engine(tree)] = room
        if path.stem == "adapter":
            adapter_rooms.add(room)
        if path.stem == "cluster_command":
            kind_rooms.add(room)
        engines, roles, kinds = _lookups(tree, role_lookups, kind_lookups)
        if room != "core":
            old = asks.get(room, (set(), False, False))
            asks[room] = (old[0] | engines, old[1] or roles, old[2] or kinds)
        for target, names in _imports(tree, module, path.name == "__init__.py"):
            other = _room(target)
            if other != room and other != PACKAGE:
                graph[room].add(other)
            if target != module:
                private += [f"{module} <- {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
        reads = _environment_reads(tree)
        if reads and module != f"{PACKAGE}.core.settings":
            environment[module] = reads
    runtime: dict[str, set[str]] = defaultdict(set)
    for room, (engines, roles, kinds) in asks.items():
        reached = {engine_rooms[e] for e in engines if e in engine_rooms}
        reached |= adapter_rooms if roles else set()
        reached |= kind_rooms if kinds else set()
        runtime[room] = {r for r in reached if r != room and r not in graph[room]}
    with_runtime = {room: graph[room] | runtime.get(room, set()) for room in graph}
    runtime_circles = [g for g in _strongly_connected(with_runtime) if len(g) > 1]
    groups = _strongly_connected(graph)
    circles = [g for g in groups if len(g) > 1]
    group_of = {room: i for i, g in enumerate(groups) for room in g}
    floor: dict[int, int] = {}

    def floor_of(i: int) -> int:
        if i not in floor:
            below = {group_of[w] for room in groups[i] for w in graph[room]} - {i}
            floor[i] = 1 + max((floor_of(j) for j in below), default=0)
        return floor[i]

    floors = {room: floor_of(group_of[room]) for room in graph}
    return {
        "rooms": len(graph), "arrows": sum(len(v) for v in graph.values()), "floors": max(floors.values()),
        "circles": circles, "private_cross_module_imports": len(private), "private": private,
        "runtime_arrows": sum(len(v) for v in runtime.values()),
        "runtime_arrows_of_room": {room: sorted(v) for room, v in sorted(runtime.items()) if v},
        "runtime_circles": runtime_circles,
        "environment_reads_outside_settings": sum(environment.values()), "environment": environment,
        "floor_of_room": dict(sorted(floors.items(), key=lambda kv: (kv[1], kv[0]))),
        "arrows_of_room": {room: sorted(graph[room]) for room in sorted(graph)},
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures (text, or JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package_dir", nargs="?", default=str(Path(__file__).resolve().parents[1] / PACKAGE))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = measure(Path(args.package_dir))
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    print(f"rooms {figures['rooms']}, floors {figures['floors']}, arrows {figures['arrows']}, "
          f"circles {len(figures['circles'])} {figures['circles'] or ''}")
    print(f"run-time arrows (plug-ins found through core): {figures['runtime_arrows']}, circles with them: "
          f"{len(figures['runtime_circles'])} {figures['runtime_circles'] or ''}")
    for room, reached in figures["runtime_arrows_of_room"].items():
        print(f"  {room} -> {', '.join(reached)}")
    print(f"private names imported across modules: {figures['private_cross_module_imports']}")
    print(f"environment reads outside chaosdb.core.settings: {figures['environment_reads_outside_settings']}")
    by_floor: dict[int, list[str]] = defaultdict(list)
    for room, level in figures["floor_of_room"].items():
        by_floor[level].append(room)
    for level in sorted(by_floor):
        print(f"  floor {level}: {', '.join(sorted(by_floor[level]))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
