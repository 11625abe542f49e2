"""What ships with the pack for users to run or copy: package data, read the same way from a wheel and from a
checkout (``importlib.resources``; the checkout's top-level ``experiments``, ``chaos-mesh-manifests`` and ``load``
are links to these folders).

* ``experiments/``: the ready ``chaos run`` files (PostgreSQL at the top; ``cockroachdb/``, ``etcd/``, ``tikv/``,
  ``kubernetes/``; game-day suites in ``gamedays/``), written by the generators in the repository's ``tools/``;
* ``templates/``: the Chaos Mesh, Litmus and Kubernetes manifest templates (:mod:`chaosdb.manifests.templates`);
* ``locustfiles/``: ``tpcc.py`` and ``ycsb.py`` for ``locust -f`` (the user classes live in :mod:`chaosdb.load`);
* ``checks/``: example checks files for ``chaosdb check`` and ``chaosdb serve`` (``patroni.yaml``, ``tikv.yaml``;
  :mod:`chaosdb.checks`), named ``shipped:patroni`` on their command lines.

:func:`copy_shipped` puts a copy of the experiments (with the locustfiles and any chosen templates) into a
folder the user owns: ``chaosdb experiments copy DIR``.
What is in it:

* ``cli``: ``chaosdb experiments list|copy``
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from chaosdb.core.errors import ChaosDBError

__all__ = ["shipped_dir", "experiments_dir", "templates_dir", "locustfiles_dir", "checks_dir", "list_experiments",
           "template_file", "copy_shipped"]

#: files of the shipped folders that are copied (the rest, e.g. __pycache__, is not)
_COPIED_SUFFIXES = {".json", ".yaml", ".md", ".py"}


def shipped_dir() -> Path:
    """The folder of this package on disk (a wheel installs it as files; a zipped install is refused)."""
    root = resources.files(__name__)
    if not isinstance(root, Path):
        raise ChaosDBError(f"chaostoolkit-db is installed in a form that is not a folder ({root}): install the "
                           "wheel with pip into a virtualenv")
    return root


def experiments_dir() -> Path:
    """The shipped experiments."""
    return shipped_dir() / "experiments"


def templates_dir() -> Path:
    """The shipped Chaos Mesh, Litmus and Kubernetes manifest templates."""
    return shipped_dir() / "templates"


def locustfiles_dir() -> Path:
    """The shipped locustfiles (``tpcc.py``, ``ycsb.py``)."""
    return shipped_dir() / "locustfiles"


def checks_dir() -> Path:
    """The shipped checks files of ``chaosdb check`` and ``chaosdb serve``."""
    return shipped_dir() / "checks"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in _COPIED_SUFFIXES
                  and "__pycache__" not in p.parts and p.name != "__init__.py")


def template_file(name: str) -> Path:
    """The shipped template *name* (``cockroachdb/pod-kill``, with or without ``.yaml``), or an error listing the
    known names."""
    root = templates_dir()
    path = (root / f"{name.removesuffix('.yaml')}.yaml").resolve()
    if root.resolve() not in path.parents or not path.is_file():
        known = ", ".join(str(p.relative_to(root).with_suffix("")) for p in _files(root) if p.suffix == ".yaml")
        raise ChaosDBError(f"no shipped template {name!r}; known: {known}")
    return path


def list_experiments() -> list[str]:
    """Every shipped experiment and game-day suite, as a path relative to the experiments folder."""
    return [str(p.relative_to(experiments_dir())) for p in _files(experiments_dir()) if p.suffix != ".md"]


def copy_shipped(dest: str | Path, templates: Iterable[str] = (), force: bool = False) -> dict[str, Any]:
    """Copy the shipped experiments into *dest* (its sub-folders kept, so the game-day suites' relative paths
    work), the locustfiles into ``dest/load/``, the checks files into ``dest/checks/`` and each template named in
    *templates* into ``dest/templates/<name>.yaml``. Existing files are refused unless *force*, before anything is
    written.

    Returns ``{"dir", "experiments", "locustfiles", "checks", "templates"}`` with the paths written."""
    out = Path(dest).expanduser().absolute()
    plan: list[tuple[Path, Path, str]] = []
    for src in _files(experiments_dir()):
        plan.append((src, out / src.relative_to(experiments_dir()), "experiments"))
    for src in _files(locustfiles_dir()):
        plan.append((src, out / "load" / src.name, "locustfiles"))
    for src in _files(checks_dir()):
        plan.append((src, out / "checks" / src.name, "checks"))
    for name in templates:
        src = template_file(name)
        plan.append((src, out / "templates" / src.relative_to(templates_dir().resolve()), "templates"))
    if out.exists() and not out.is_dir():
        raise ChaosDBError(f"{out} exists and is not a folder")
    clashes = [str(target) for _, target, _ in plan if target.exists()]
    if clashes and not force:
        more = f" and {len(clashes) - 3} more" if len(clashes) > 3 else ""
        raise ChaosDBError(f"{', '.join(clashes[:3])}{more} already exist: choose an empty folder or pass --force "
                           "to overwrite them")
    written: dict[str, Any] = {"dir": str(out), "experiments": [], "locustfiles": [], "checks": [], "templates": []}
    for src, target, kind in plan:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        written[kind].append(str(target.relative_to(out)))
    return written
