"""Every public function and method of the package says what it does (a method may take its base class's words),
and every package's docstring names each of its modules and sub-packages, so a newcomer finds each thing from the
package it is in."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "chaosdb"


def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}


def _documented_methods(trees: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """Class name -> its methods that have a docstring (bases are matched by name within the package)."""
    found: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, set()).update(
                    f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and ast.get_docstring(f))
    return found


def _bases(node: ast.ClassDef) -> list[str]:
    return [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]


def test_every_public_function_and_method_has_a_docstring():
    trees = _trees()
    documented = _documented_methods(trees)
    missing = []
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_") \
                    and not ast.get_docstring(node):
                missing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for f in node.body:
                    if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) or f.name.startswith("_") \
                            or ast.get_docstring(f):
                        continue
                    if any(f.name in documented.get(base, set()) for base in _bases(node)):
                        continue  # the base class's words apply
                    missing.append(f"{path.relative_to(PACKAGE.parent)}:{f.lineno} {node.name}.{f.name}")
    assert not missing, "public functions without a docstring:\n" + "\n".join(missing)


def test_every_package_docstring_names_its_modules():
    unnamed = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        folder = init.parent
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        parts = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
        parts += [p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
        unnamed += [f"{folder.relative_to(PACKAGE.parent)}: {name}" for name in sorted(parts)
                    if f"``{name}``" not in doc and f"{name}/" not in doc and f".{name}`" not in doc]
    assert not unnamed, "modules their package's docstring does not name:\n" + "\n".join(unnamed)
