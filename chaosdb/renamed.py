"""Packages that moved keep their old import paths for one release, with a warning (the CHANGELOG lists them):
an experiment that names ``chaosdb.local.actions`` still runs, on :mod:`chaosdb.embedded.actions`.

The old name is an alias of the new module (the same object, imported once), so an activity, a control or a
module-level state is never there twice. Code that compares module names from an experiment or a journal
compares :func:`canonical_module` of them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

from chaosdb.core.deprecation import warn_deprecated

__all__ = ["RENAMED", "canonical_module", "install"]

#: old dotted prefix -> where it lives now
RENAMED: dict[str, str] = {
    "chaosdb.local": "chaosdb.embedded",
    "chaosdb.localkube": "chaosdb.kubernetes_cluster",
}


def canonical_module(name: str) -> str:
    """*name* with a moved package's old prefix replaced by its new one (``chaosdb.local.actions`` ->
    ``chaosdb.embedded.actions``); any other name unchanged."""
    for old, new in RENAMED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return name


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and loads it as the module of the new one."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = canonical_module(fullname)
        if new == fullname:
            return None
        real = importlib.util.find_spec(new)
        if real is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=real.submodule_search_locations is not None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = canonical_module(spec.name)
        warn_deprecated(f"the module {spec.name}", new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the module was run under its new name."""


def install() -> None:
    """Answer the old names from now on (once per process)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
