"""Database adapters, found by name: the fault engines never import a database package.

A target such as ``{"role": "tikv-leader", "key": "user1"}`` names an adapter (``tikv``) and one of its roles
(``leader``). The adapter asks its database, over the database's own channels, which node has that role right
now and where it runs (its pod, its address). The engine (Kubernetes pods, Chaos Mesh, Litmus) receives that
answer, a :class:`ResolvedNode`, and acts on it without knowing which database it came from.

Each adapter is the module ``adapter`` of a plug-in package (:mod:`chaosdb.core.plugins`) defining ``ADAPTER``,
an instance of a :class:`DatabaseAdapter` subclass; nothing names them. A new database plugs in with its own
folder (and, outside ``chaosdb``, one entry-point line). They are imported when a role is first asked for.
"""

from __future__ import annotations

import functools
import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.plugins import modules_named
from chaosdb.core.target_model import check_target_model
from chaosdb.core.targets import SINGULAR_SELECTORS, parse_count

__all__ = ["all_adapters", "DatabaseAdapter", "ResolvedNode", "load_adapter", "adapter_roles", "split_role",
           "check_role_target", "check_role_count", "resolve_role_target", "resolve_role_nodes", "watched_sources", "forget_adapters"]



@dataclass
class ResolvedNode:
    """The node a role names right now: its name in the database, where it runs, and what the database said.

    A node of a cluster on this machine also says which cluster folder it belongs to (the fault records' scope),
    its named ports and the user its processes run as (how the host engine tells its traffic apart)."""

    name: str
    pod: str | None = None
    address: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    cluster_dir: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    user_id: int | None = None


class DatabaseAdapter(ABC):
    """What every database adapter answers: which node has a role right now, and where it runs."""

    #: the adapter's name, the prefix of its roles in a target (``tikv`` in ``tikv-leader``)
    name: ClassVar[str]
    #: process kinds of a node a local fault can be restricted to (``components``): name -> process names
    components: ClassVar[dict[str, frozenset[str]]] = {}
    #: the roles it resolves, without the prefix (``leader``, ``follower``, ``store``)
    roles: ClassVar[tuple[str, ...]]
    #: where its sources come among a run's watched sources: a database's own first (0), the stores other databases
    #: keep their state in (etcd for Patroni: 1) after them, so the first source of a run is the database itself
    watch_order: ClassVar[int] = 0
    #: the keys its role targets carry besides ``role`` and :data:`chaosdb.core.target_model.COMMON_KEYS`, with their
    #: types (``{"key": Name, "api_version": int}``); any other key is refused. None: not declared (any key passes,
    #: its value still checked for shape)
    target_keys: ClassVar[dict[str, Any] | None] = None

    def check(self, role: str, target: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Refuse a target whose other keys do not fit *role*, before anything asks the database (no I/O)."""

    def max_count(self, role: str) -> int | None:
        """The most nodes one target of *role* can name (None: as many as the cluster has); by default one, as
        :meth:`resolve_nodes` resolves one node."""
        return 1

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

    def resolve_nodes(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                      secrets: dict[str, Any] | None, count: int | str = 1, quorum_what: str = "",
                      allow_quorum_loss: bool = False) -> tuple[list[ResolvedNode], dict[str, Any]]:
        """The *count* nodes that have *role* now, and the quorum rule's verdict on taking them down (*quorum_what*:
        ``"suspend"``, ``"partition"``; none when empty). An adapter whose roles name one node takes count 1."""
        if parse_count(count) != 1:
            raise ChaosDBError(f"{self.name}-{role} names one node: count must be 1, got {count!r}")
        return [self.resolve(role, target, configuration, secrets)], {}

    def members(self, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> list[ResolvedNode]:
        """Every node of the cluster *target* is in, each with its address, ports and user (for the host engine's
        network faults, which tell a node's traffic from its peers'); adapters whose nodes run here override it."""
        raise ChaosDBError(f"network faults on this machine tell a node's traffic apart by its address and user; "
                           f"{self.name} does not list its nodes' so: target the embedded cluster's nodes by role "
                           "or name, or use the Chaos Mesh NetworkChaos actions for a database on Kubernetes")

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        """The processes on this machine that serve *node* (for the local fault engine); adapters whose nodes
        run here override it."""
        raise ChaosDBError(f"{self.name} nodes are not found among this machine's processes: target them on "
                           "Kubernetes, or the embedded cluster by role (leader, replica, ...)")


@functools.cache
def _registry() -> dict[str, DatabaseAdapter]:
    found: dict[str, DatabaseAdapter] = {}
    for module in modules_named("adapter"):
        adapter = getattr(importlib.import_module(module), "ADAPTER", None)
        if not isinstance(adapter, DatabaseAdapter):
            raise ChaosDBError(f"{module} does not define ADAPTER, an instance of a DatabaseAdapter subclass")
        if adapter.name in found or "-" in adapter.name:
            raise ChaosDBError(f"{module}: the adapter name {adapter.name!r} is taken or has a '-' in it")
        found[adapter.name] = adapter
    return found


def all_adapters() -> dict[str, DatabaseAdapter]:
    """Every database adapter by name, in plug-in order (their modules imported on the first call)."""
    return dict(_registry())


def load_adapter(name: str) -> DatabaseAdapter:
    """The adapter named *name*."""
    found = _registry()
    if name not in found:
        raise ChaosDBError(f"no database adapter {name!r}; known: {', '.join(sorted(found))}")
    return found[name]


def forget_adapters() -> None:
    """Find the adapters anew on the next call (after :func:`chaosdb.core.plugins.refresh`)."""
    _registry.cache_clear()


def adapter_roles() -> list[str]:
    """Every ``<adapter>-<role>`` a target may name, in registry order."""
    return [f"{name}-{role}" for name, adapter in _registry().items() for role in adapter.roles]


def split_role(role: str) -> tuple[DatabaseAdapter, str]:
    """``"tikv-leader"`` -> (the TiKV adapter, ``"leader"``); an unknown role is refused with every known one."""
    name, sep, rest = str(role).partition("-")
    adapter = _registry().get(name) if sep else None
    if adapter is not None and rest in adapter.roles:
        return adapter, rest
    raise ChaosDBError(f"unknown target role {role!r}; one of {', '.join(adapter_roles())}")


def check_role_target(target: dict[str, Any], count: Any = None) -> None:
    """The role of *target* is known, its keys and their types fit it (at any depth), and *count* (when given) is not
    more nodes than the role can name (no I/O)."""
    role_name = target.get("role", "")
    if not isinstance(role_name, str):
        raise ChaosDBError(f"target role must be a string such as 'patroni-primary', got {role_name!r}")
    adapter, role = split_role(role_name)
    check_target_model(adapter.name, role, adapter.target_keys, target)
    adapter.check(role, target)
    if count is not None:
        check_role_count(target, count)


def check_role_count(target: Any, count: Any) -> None:
    """Refuse a *count* larger than the number of nodes a role can name at once (``leader``: one); a string target
    is a selector of the local cluster (``"leader"``), a dict a role target. ``"all"`` is every node that has it."""
    wanted = parse_count(count)
    if wanted is None or wanted == 1:
        return
    if isinstance(target, str):
        selector = target.strip().lower()
        limit = 1 if selector in SINGULAR_SELECTORS else None
    elif isinstance(target, dict) and isinstance(target.get("role"), str):
        adapter, role = split_role(target["role"])
        selector, limit = target["role"], adapter.max_count(role)
    else:
        return
    if limit is not None and wanted > limit:
        raise ChaosDBError(f"target {selector!r} names at most {limit} node(s) at a time: count must be "
                           f"{'1' if limit == 1 else f'at most {limit}'} (or 'all'), got {count!r}")


def resolve_role_nodes(target: dict[str, Any], configuration: dict[str, Any] | None = None,
                       secrets: dict[str, Any] | None = None, count: int | str = 1, quorum_what: str = "",
                       allow_quorum_loss: bool = False) -> tuple[DatabaseAdapter, list[ResolvedNode], dict[str, Any]]:
    """The adapter ``target["role"]`` names, the *count* nodes that have the role now and the quorum verdict."""
    adapter, role = split_role(target.get("role", ""))
    adapter.check(role, target)
    nodes, verdict = adapter.resolve_nodes(role, target, dict(configuration or {}), secrets, count, quorum_what,
                                           allow_quorum_loss)
    return adapter, nodes, verdict


def resolve_role_target(target: dict[str, Any], configuration: dict[str, Any] | None = None,
                        secrets: dict[str, Any] | None = None) -> ResolvedNode:
    """Ask the adapter named by ``target["role"]`` which node has that role now."""
    adapter, role = split_role(target.get("role", ""))
    adapter.check(role, target)
    return adapter.resolve(role, target, dict(configuration or {}), secrets)


def watched_sources(configuration: dict[str, Any] | None) -> list[tuple[DatabaseAdapter, str]]:
    """Every (adapter, source) the configuration lets a run watch: the databases' own sources first, then those of
    the stores they keep their state in (``watch_order``), each in registry order (no I/O)."""
    found = []
    for adapter in sorted(_registry().values(), key=lambda a: a.watch_order):
        found += [(adapter, source) for source in adapter.sources(dict(configuration or {}))]
    return found

