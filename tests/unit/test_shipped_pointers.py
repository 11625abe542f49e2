"""What the installed package says points at something the installed package has.

A wheel holds ``chaosdb`` and nothing else of the source repository: no README, no ``docs/``, no ``tools/``, no
``scripts/``, no tests. Every text a user of the wheel reads (the shipped experiments, suites, templates and
locustfiles; the ``chaosdb`` command's help; the activities' documentation ``chaos discover`` shows; the messages
in the code) may point at a file only when that file is in the package, or when the same sentence says it is in
the source repository (for contributors: nobody looks for it in their install). The report templates and the
reporter's messages (``chaosdb/report/``) are held to the same rule by their own tests.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import chaosdb
from chaosdb import shipped
from chaosdb.cli import build_parser

PACKAGE = Path(chaosdb.__file__).resolve().parent
#: the reporter is another suite's (tests/unit/test_report_*.py)
_NOT_HERE = ("report",)
#: a file or folder of the source repository that the wheel does not ship
POINTER = re.compile(r"(?<![\w./:-])(?:(?:docs|tools|tests|scripts|benchmarks|\.ci)/[\w./-]*|tools\.make_\w+"
                     r"|(?:README|CHANGELOG|ARCHITECTURE)(?:\.md)?\b|Dockerfile\b|\bthe (?:docs|documentation)\b)")
#: what says a pointer is to the source repository, not to the install
QUALIFIED = re.compile(r"source repository")
#: a sentence, a table cell, a paragraph
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`(\"'#])|\n\s*\n|\|")


def dangling(text: str, where: Path | None = None) -> list[str]:
    """The pointers in *text* that resolve neither inside the package (relative to the package, the shipped
    experiments or *where*'s folder) nor to the source repository by the words of their sentence."""
    found = []
    for sentence in _SENTENCE_END.split(text):
        for match in POINTER.finditer(sentence):
            pointer = match.group(0).rstrip(".")
            if QUALIFIED.search(sentence):
                continue
            roots = [PACKAGE, shipped.experiments_dir(), *([where.parent] if where else [])]
            if "/" in pointer and any(_inside_the_package(root / pointer) for root in roots):
                continue
            found.append(f"{pointer!r} in {' '.join(sentence.split())[:200]!r}")
    return found


def _inside_the_package(path: Path) -> bool:
    """*path* exists and is in the package (in a checkout the package's parent holds docs/ and tools/ too)."""
    resolved = path.resolve()
    return resolved.exists() and (resolved == PACKAGE or PACKAGE in resolved.parents)


def _shipped_files() -> Iterator[Path]:
    """The experiments, suites, templates and locustfiles, and the package's other data files."""
    for folder in (shipped.experiments_dir(), shipped.templates_dir(), shipped.locustfiles_dir()):
        yield from sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".yaml", ".md", ".py"))
    yield PACKAGE / "manifests" / "crds" / "PROVENANCE.md"


def _messages(path: Path) -> Iterator[tuple[int, str]]:
    """Every string constant of a module that is not a docstring: help, errors, warnings, log lines."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def _parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ("chaosdb",)):
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*words, name))


def test_the_scan_tells_a_dangling_pointer_from_one_that_resolves():
    assert dangling("Run it with the load (see README) first.")
    assert dangling("Details: docs/chaosd.md, \"The fault matrix\".")
    assert dangling("edit the generator in tools/, then run this command")
    assert dangling("The generator is `python -m tools.make_manifests`.")
    assert not dangling("Contributors edit the generator in the source repository (tools/make_experiments.py).")
    assert not dangling("The CRDs' provenance: manifests/crds/PROVENANCE.md.", PACKAGE / "x.py")
    assert not dangling("Every key: the docstring of chaosdb/gameday/suite.py.")
    assert not dangling("Download it from https://www.cockroachlabs.com/docs/releases/ first.")


def _texts(path: Path) -> Iterator[str]:
    """A file's text; a JSON file's strings one by one (the generated experiments' ``regenerate`` command is
    explained by the ``note`` beside it, which is checked)."""
    if path.suffix != ".json":
        yield path.read_text()
        return

    def walk(value: object, key: str = "") -> Iterator[str]:
        if isinstance(value, dict):
            for k, v in value.items():
                if not (k == "regenerate" and value.get("name") == "chaosdb-generated"):
                    yield from walk(v, k)
        elif isinstance(value, list):
            for v in value:
                yield from walk(v, key)
        elif isinstance(value, str):
            yield value

    yield from walk(json.loads(path.read_text()))


@pytest.mark.parametrize("path", list(_shipped_files()), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_pointer_in_a_shipped_file_resolves(path):
    found = [d for text in _texts(path) for d in dangling(text, path)]
    assert not found, found


def test_a_copied_experiment_says_it_is_the_users_and_where_its_generator_is():
    stamps = [e for e in json.loads((shipped.experiments_dir() / "quickstart.json").read_text())["extensions"]
              if e["name"] == "chaosdb-generated"]
    note = stamps[0]["note"]
    assert "'chaosdb experiments copy' is yours to edit" in note
    assert "source repository (tools/, not part of the installed package)" in note


def test_every_pointer_in_the_packages_messages_resolves():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in _NOT_HERE or shipped.locustfiles_dir() in path.parents:
            continue
        found += [f"{relative}:{line}: {d}" for line, text in _messages(path) for d in dangling(text, path)]
    assert not found, "\n".join(found)


def test_every_pointer_in_the_commands_help_resolves():
    found = [f"{' '.join(words)}: {d}" for words, parser in _parsers(build_parser())
             for d in dangling(parser.format_help())]
    assert not found, "\n".join(found)


def test_every_pointer_in_the_activities_documentation_resolves():
    found = [f"{a['mod']}.{a['name']}: {d}" for a in chaosdb.discover()["activities"]
             if a["mod"].split(".")[1] not in _NOT_HERE for d in dangling(a.get("doc") or "")]
    assert not found, "\n".join(found)
