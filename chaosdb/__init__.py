"""chaostoolkit-db: Chaos Toolkit activities for distributed databases.

``discover()`` is what ``chaos discover chaostoolkit-db`` calls: it lists every
probe and action of the activity modules of every plug-in package (found by
convention, :func:`activity_modules`) with their docstrings and typed arguments.

What is in it:

* ``cli``: The ``chaosdb`` command
* ``checks/``: database-aware checks as a command (``chaosdb check``) and as HTTP endpoints (``chaosdb serve``)
* ``chaosd/``: faults carried out by chaosd, Chaos Mesh's agent for physical and virtual machines
* ``chaosmesh/``: Chaos Mesh objects aimed at database roles
* ``clusters/``: the launchers: local labs, one sub-package per cluster kind (the embedded PostgreSQL HA cluster,
  PD with simulated stores, CockroachDB nodes, Kubernetes with Chaos Mesh), ``chaosdb cluster up --kind KIND``
* ``cockroach/``: CockroachDB: node status, drain, quit, decommission, ranges and leaseholders
* ``core/``: shared building blocks every other package may use (imports nothing above it)
* ``embedded/``: the embedded PostgreSQL HA cluster as a database (etcd + Patroni + PostgreSQL per node)
* ``etcd/``: etcd v3 through its JSON gateway: client, probes, adapter
* ``experiment/``: the run as a whole: arguments checked before anything starts, the verdict after
* ``faults/``: the local fault engine (processes, cgroups, iptables, tc, a delay proxy)
* ``images/``: the pack's own image builder (root filesystems from Debian packages, OCI archives, a cache)
* ``gameday/``: game days: suites of repeated runs, the resumable runner, the aggregated report, the gate
* ``history/``: checkers of transactional histories for isolation anomalies (list-append, rw-register), after
  Jepsen's Elle
* ``k8s/``: The Kubernetes engine, through the official ``kubernetes`` client
* ``litmus/``: LitmusChaos engines and their verdicts
* ``load/``: the load: Locust users, the load control, live-sample and integrity probes
* ``manifests/``: Chaos Mesh, Litmus and Kubernetes manifest templates, rendered and validated offline
* ``postgres/``: Patroni and PostgreSQL: REST and SQL clients, probes, actions, the adapter
* ``report/``: reports: journal and samples to metrics, Markdown, HTML and plots
* ``shipped/``: What ships with the pack for users to run or copy
* ``tikv/``: TiKV through PD: stores, regions and leaders, leader transfer and eviction
* ``workloads/``: Workload logic (schema, loaders, transactions, checks), independent of Locust
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.plugins import modules_named, package_attribute


def _version() -> str:
    """The installed distribution's version (read when first asked: the detached helpers, a fault's reverter or
    delay proxy, start without reading package metadata or importing Chaos Toolkit)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("chaostoolkit-db")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"

__all__ = ["discover", "__version__", "activity_modules"]

#: what the modules of a plug-in package are called when they hold activities of that kind
CONVENTIONAL_MODULES: dict[str, str] = {"probe": "probes", "action": "actions"}


def activity_modules() -> dict[str, list[str]]:
    """The modules whose ``__all__`` functions are Chaos Toolkit activities, by kind: every plug-in package's
    ``probes`` and ``actions`` (:mod:`chaosdb.core.plugins`), and those its ``ACTIVITY_MODULES`` names."""
    found: dict[str, list[str]] = {kind: modules_named(basename) for kind, basename in CONVENTIONAL_MODULES.items()}
    for package, extra in package_attribute("ACTIVITY_MODULES").items():
        for kind, names in dict(extra).items():  # type: ignore[call-overload]
            found[kind] += [f"{package}.{name}" for name in names if f"{package}.{name}" not in found[kind]]
    return found


def discover(discover_system: bool = True) -> dict[str, Any]:
    """Describe this extension and its activities for ``chaos discover``."""
    from chaoslib.discovery.discover import (  # noqa: PLC0415 - only chaos discover needs it
        discover_actions,
        discover_probes,
        initialize_discovery_result,
    )

    discovery = initialize_discovery_result("chaostoolkit-db", _version(), "database")
    modules = activity_modules()
    for module in modules["probe"]:
        discovery["activities"].extend(discover_probes(module))
    for module in modules["action"]:
        discovery["activities"].extend(discover_actions(module))
    return discovery


def __getattr__(name: str) -> Any:
    """``__version__`` (read on first use)."""
    if name == "__version__":
        globals()["__version__"] = _version()
        return globals()["__version__"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
