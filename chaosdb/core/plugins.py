"""Plug-ins found by convention, the way Patroni finds its DCS modules: by where they are and what their modules
are called, never by a list that names them.

A plug-in is a package. The pack's own are the packages of ``chaosdb``; another distribution (or a test) adds one
with one line of its metadata, an entry point in the group :data:`ENTRY_POINT_GROUP` naming its package::

    [project.entry-points."chaosdb.plugins"]
    fakedb = "fakedb"

What a plug-in brings is found by the names of its modules, in the package or in one of its sub-packages (the
local clusters of ``chaosdb.clusters``, one sub-package per kind):

=====================  ===================================================================================
``adapter``            a database: ``ADAPTER``, its roles for every engine (:mod:`chaosdb.core.adapters`)
``probes``/``actions`` Chaos Toolkit activities (``__all__``), listed by ``chaos discover``; a package lists
                       further activity modules in ``ACTIVITY_MODULES`` of its ``__init__`` (``{"probe": [...]}``)
``cluster_command``    a local cluster kind of ``chaosdb cluster`` (``KIND``, its CLI arguments, ``up``,
                       ``status``, ``down``; :mod:`chaosdb.core.clusterkinds`)
``ENGINE`` in          a fault engine named so (:mod:`chaosdb.core.engines`); its actions are in ``actions``
``__init__``
``revert_handler``     an engine's ``REVERT_HANDLER``: what undoes its part of a fault record
                       (:mod:`chaosdb.core.faultrecords.handlers`)
=====================  ===================================================================================

Nothing is imported to find the modules (only package ``__init__`` files, which stay light); the lists are made
once per process (:func:`refresh` forgets them, for tests that add a plug-in).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "plugin_packages", "modules_named", "package_attribute", "package_dirs", "package_files",
           "refresh"]

#: the entry-point group another distribution's plug-in packages are named in
ENTRY_POINT_GROUP = "chaosdb.plugins"
#: the folder of the ``chaosdb`` package, whose sub-packages are the built-in plug-ins
_CHAOSDB = Path(__file__).resolve().parents[1]


@functools.cache
def _package_dirs() -> dict[str, tuple[Path, ...]]:
    """Every plug-in package -> the folders it is made of: the built-in ones by name, then the entry points'."""
    found: dict[str, tuple[Path, ...]] = {}
    for info in sorted(pkgutil.iter_modules([str(_CHAOSDB)], "chaosdb."), key=lambda i: i.name):
        if info.ispkg:
            found[info.name] = (_CHAOSDB / info.name.split(".", 1)[1],)
    from importlib.metadata import entry_points  # noqa: PLC0415 - read package metadata only when plug-ins are asked for

    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        spec = importlib.util.find_spec(entry.value)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"the chaosdb plug-in {entry.name!r} names {entry.value!r}, which is not an importable "
                              "package")
        found.setdefault(entry.value, tuple(Path(p) for p in spec.submodule_search_locations))
    return found


def plugin_packages() -> list[str]:
    """The dotted names of every plug-in package: ``chaosdb``'s own in name order, then those of entry points."""
    return list(_package_dirs())


def modules_named(basename: str) -> list[str]:
    """Every plug-in module called *basename* (``adapter`` -> ``chaosdb.cockroach.adapter``, ...), in a plug-in
    package or in one of its sub-packages (``cluster_command`` -> ``chaosdb.clusters.pd.cluster_command``), in
    :func:`plugin_packages` order (a package's own module before its sub-packages', these by name), without importing
    them."""
    found = []
    for package, dirs in _package_dirs().items():
        if any((d / f"{basename}.py").is_file() for d in dirs):
            found.append(f"{package}.{basename}")
        subs = sorted({sub.name for d in dirs for sub in d.iterdir()
                       if (sub / "__init__.py").is_file() and (sub / f"{basename}.py").is_file()})
        found += [f"{package}.{sub}.{basename}" for sub in subs]
    return found


def package_attribute(name: str) -> dict[str, object]:
    """Plug-in package -> the value of *name* in its ``__init__``, for the packages that set it."""
    found = {}
    for package in _package_dirs():
        value = getattr(importlib.import_module(package), name, None)
        if value is not None:
            found[package] = value
    return found


def package_dirs(package: str) -> tuple[Path, ...]:
    """The folders a plug-in package is made of."""
    return _package_dirs()[package]


def package_files(package: str) -> list[Path]:
    """The Python files of a plug-in package, at any depth (for the architecture checks)."""
    return sorted(p for d in _package_dirs()[package] for p in d.rglob("*.py"))


def refresh() -> None:
    """Forget what was found, so that a plug-in added since (an entry point on ``sys.path``) is found."""
    _package_dirs.cache_clear()
    importlib.invalidate_caches()
