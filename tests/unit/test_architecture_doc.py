"""ARCHITECTURE.md's "Where things are" table and the real folders of ``chaosdb/`` stay in step: every package
folder of ``chaosdb`` is named in the table, and every folder the table names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "chaosdb"


def table_folders(text: str) -> set[str]:
    """The ``chaosdb`` folders the first column of the "Where things are" table names (``chaosdb/<x>/``, and
    ``<y>/`` after a ``chaosdb/`` in the same cell), as paths under ``chaosdb/``."""
    section = text.split("## Where things are", 1)[1]
    found = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        names = re.findall(r"`([^`]+/)`", cell)
        if not names or not names[0].startswith("chaosdb/"):
            continue
        for name in names:
            found.add(name.removeprefix("chaosdb/").rstrip("/"))
    return found


def package_folders() -> set[str]:
    """The top-level package folders of ``chaosdb``."""
    return {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def test_the_table_reads_its_folders():
    text = "## Where things are\n\n| folder | job |\n| --- | --- |\n| `chaosdb/a/`, `b/` | x |\n| `tools/` | y |\n"
    assert table_folders(text) == {"a", "b"}


def test_every_package_folder_is_in_the_table_and_every_named_folder_exists():
    named = table_folders((ROOT / "ARCHITECTURE.md").read_text())
    missing = sorted(package_folders() - {n.split("/")[0] for n in named})
    assert not missing, f"ARCHITECTURE.md's 'Where things are' table names no row for chaosdb/{missing}"
    absent = sorted(n for n in named if not (PACKAGE / n).is_dir())
    assert not absent, f"ARCHITECTURE.md's 'Where things are' table names folders that do not exist: {absent}"
