"""Database adapters, found by name: the fault engines never import a database package.

A target such as ``{"role": "tikv-leader", "key": "user1"}`` names an adapter (``tikv``) and one of its roles
(``leader``). The adapter asks its database, over the database's own channels, which node has that role right
now and where it runs (its pod, its address). The engine (Kubernetes pods, Chaos Mesh, Litmus) receives that
answer, a :class:`ResolvedNode`, and acts on it without knowing which database it came from.

Each adapter is a module in its own package defining ``ADAPTER``, an instance of a :class:`DatabaseAdapter`
subclass. :data:`ADAPTER_MODULES` is the only place that names them; a new database plugs in with its own folder
and one line there. Modules are imported when a role of theirs is first asked for.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError

__all__ = ["ADAPTER_MODULES", "DatabaseAdapter", "ResolvedNode", "load_adapter", "adapter_roles", "split_role",
           "check_role_target", "resolve_role_target", "watched_sources"]

#: adapter name -> the module defining its ``ADAPTER`` (the one registry line per database)
ADAPTER_MODULES: dict[str, str] = {
    "cockroach": "chaosdb.cockroach.adapter",
    "tikv": "chaosdb.tikv.adapter",
    "patroni": "chaosdb.postgres.adapter",
}


@dataclass
class ResolvedNode:
    """The node a role names right now: its name in the database, where it runs, and what the database said."""

    name: str
    pod: str | None = None
    address: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class DatabaseAdapter(ABC):
    """What every database adapter answers: which node has a role right now, and where it runs."""

    #: the adapter's name, the prefix of its roles in a target (``tikv`` in ``tikv-leader``)
    name: ClassVar[str]
    #: the roles it resolves, without the prefix (``leader``, ``follower``, ``store``)
    roles: ClassVar[tuple[str, ...]]

    def check(self, role: str, target: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Refuse a target whose other keys do not fit *role*, before anything asks the database (no I/O)."""

    @abstractmethod
    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        """The node that has *role* now; :class:`ChaosDBError` with the reason when none has."""

    def sources(self, configuration: dict[str, Any]) -> tuple[str, ...]:
        """What of this database a run can watch with *configuration* (no I/O): the sources :meth:`view` answers
        for (``patroni``, ``etcd``; ``pd``, ``tikv``), none when the configuration names no cluster of it."""
        return ()

    def view(self, source: str, configuration: dict[str, Any], secrets: dict[str, Any] | None) -> View:
        """What *source* says about the database now (:class:`chaosdb.core.dbevents.View`): leader, members,
        term, whether the replicas caught up; :class:`ChaosDBError` when it does not answer."""
        raise ChaosDBError(f"the {self.name} adapter has no source {source!r} to watch")

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        """The processes on this machine that serve *node* (for the local fault engine); adapters whose nodes
        run here override it."""
        raise ChaosDBError(f"{self.name} nodes are not found among this machine's processes: target them on "
                           "Kubernetes, or the embedded cluster by role (leader, replica, ...)")


_loaded: dict[str, DatabaseAdapter] = {}


def load_adapter(name: str) -> DatabaseAdapter:
    """The adapter registered as *name*, imported on first use."""
    if name not in _loaded:
        module = ADAPTER_MODULES.get(name)
        if module is None:
            raise ChaosDBError(f"no database adapter {name!r}; known: {', '.join(sorted(ADAPTER_MODULES))}")
        adapter = getattr(importlib.import_module(module), "ADAPTER", None)
        if not isinstance(adapter, DatabaseAdapter) or adapter.name != name:
            raise ChaosDBError(f"{module} does not define ADAPTER, a DatabaseAdapter named {name!r}")
        _loaded[name] = adapter
    return _loaded[name]


def adapter_roles() -> list[str]:
    """Every ``<adapter>-<role>`` a target may name, in registry order."""
    return [f"{name}-{role}" for name in ADAPTER_MODULES for role in load_adapter(name).roles]


def split_role(role: str) -> tuple[DatabaseAdapter, str]:
    """``"tikv-leader"`` -> (the TiKV adapter, ``"leader"``); an unknown role is refused with every known one."""
    name, sep, rest = str(role).partition("-")
    if sep and name in ADAPTER_MODULES:
        adapter = load_adapter(name)
        if rest in adapter.roles:
            return adapter, rest
    raise ChaosDBError(f"unknown target role {role!r}; one of {', '.join(adapter_roles())}")


def check_role_target(target: dict[str, Any]) -> None:
    """The role of *target* is known and its other keys fit it (no I/O)."""
    adapter, role = split_role(target.get("role", ""))
    adapter.check(role, target)


def resolve_role_target(target: dict[str, Any], configuration: dict[str, Any] | None = None,
                        secrets: dict[str, Any] | None = None) -> ResolvedNode:
    """Ask the adapter named by ``target["role"]`` which node has that role now."""
    adapter, role = split_role(target.get("role", ""))
    adapter.check(role, target)
    return adapter.resolve(role, target, dict(configuration or {}), secrets)


def watched_sources(configuration: dict[str, Any] | None) -> list[tuple[DatabaseAdapter, str]]:
    """Every (adapter, source) the configuration lets a run watch, in registry order (no I/O)."""
    found = []
    for name in ADAPTER_MODULES:
        adapter = load_adapter(name)
        found += [(adapter, source) for source in adapter.sources(dict(configuration or {}))]
    return found
