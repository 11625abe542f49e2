"""Chaos Toolkit control: an embedded cluster for the duration of an experiment.

Declare it first among the controls::

    {"name": "embedded-cluster", "provider": {"type": "python", "module": "chaosdb.clusters.postgres_ha.control",
      "arguments": {"nodes": 3, "tpcc_warehouses": 2, "tpcc_scale_down": 10, "down_after": true}}}

* before the experiment: ``cluster up`` (the cluster named by configuration
  ``chaosdb_cluster`` / ``chaosdb_cluster_dir``; created on first use, a no-op when it
  runs), then loads TPC-C data (``tpcc_warehouses`` > 0), YCSB records into PostgreSQL
  (``ycsb_records`` > 0) and/or into the cluster's etcd (``etcd_ycsb_records`` > 0) when missing; with ``chaosd``
  (a chaosd binary; else configuration ``chaosd_binary``, ``CHAOSDB_CHAOSD_BINARY``) it starts chaosd beside the
  cluster as ``chaosdb cluster up --chaosd`` does, unless ``chaosd_url`` names one of the user's. A failure
  interrupts the run before anything else.
* after the experiment (also when it failed or was interrupted): stops the load first
  (idempotent), then, with ``down_after``, stops every process of the cluster
  (``purge`` also deletes its data) -- only a cluster made for runs (created by this run, or left by an earlier run
  that is gone). A cluster someone made with ``chaosdb cluster up`` is left running whatever ``down_after`` and
  ``purge`` say; the run says so when it starts (:mod:`chaosdb.embedded.ownership`). A refused run leaves
  everything as it was.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from chaoslib import substitute

from chaosdb.clusters.postgres_ha import cluster, launcher
from chaosdb.clusters.postgres_ha.launcher import Chaosd, Data
from chaosdb.core.arguments import boolean, checked_signature, number, with_argument_checks
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import control_validator
from chaosdb.core.tls import as_bool
from chaosdb.embedded.layout import parse_ipv4
from chaosdb.embedded.nodes import is_node_name
from chaosdb.embedded.ownership import Ownership
from chaosdb.embedded.state import STATE_FILE, load_layout, resolve_cluster_dir
from chaosdb.experiment import refusals
from chaosdb.experiment.checks import activities_of, refuse_bad_arguments
from chaosdb.experiment.context import closes_run_context, run_context
from chaosdb.experiment.refusals import refused, stops_the_run

__all__ = ["validate_control", "before_experiment_control", "after_experiment_control", "input_problems"]

#: ``chaos validate`` refuses this control when its extra is not installed
validate_control = control_validator("chaosdb.clusters.postgres_ha.control", ("local",))

logger = logging.getLogger("chaostoolkit")


@stops_the_run("chaosdb embedded cluster")
def before_experiment_control(context: dict[str, Any], configuration: dict[str, Any] | None = None,
                              nodes: int = 3, tpcc_warehouses: int = 0, tpcc_scale_down: int = 10,
                              ycsb_records: int = 0, etcd_ycsb_records: int = 0, timeout_s: float = 180.0,
                              address_base: str = "127.0.0.11", secure: bool | str | None = None,
                              chaosd: str = "", secrets: dict[str, Any] | None = None, down_after: bool = True,
                              purge: bool = False, **kwargs: Any) -> None:
    """Start (or create) the embedded cluster and load the data the experiment needs. A new cluster is created
    secure when *secure*, else the configuration's ``secure`` (``CHAOSDB_SECURE``), says so. Says at once whether the
    run will stop (and purge) the cluster afterwards: only one made for runs (:mod:`chaosdb.embedded.ownership`)."""
    _set_ownership(None, run_context(context))
    refuse_bad_arguments(context, configuration, secrets)  # nothing starts on bad input (input_problems included)
    unknown = input_problems(context, {"nodes": nodes}, configuration, secrets)  # also when it is not declared
    if unknown:
        raise refused(f"chaosdb embedded cluster: {'; '.join(unknown)}", nothing_started=True)
    directory = resolve_cluster_dir("", "", configuration)
    cfg = configuration or {}
    try:
        launcher.start(directory, by="run", down_after=as_bool(down_after, default=True),
                       purge=as_bool(purge, default=False), decided=_set_ownership, revert_orphans=True,
                       configuration=configuration, chaosd=_chaosd(str(chaosd or cfg.get("chaosd_binary") or ""),
                                                                   cfg, secrets),
                       data=Data(tpcc_warehouses=int(tpcc_warehouses), tpcc_scale_down=int(tpcc_scale_down),
                                 ycsb_records=int(ycsb_records), etcd_ycsb_records=int(etcd_ycsb_records)),
                       nodes=int(nodes), timeout=float(timeout_s), address_base=str(address_base),
                       secure=as_bool(cfg.get("secure") if secure is None else secure, default=False))
    except (ChaosDBError, OSError, ValueError) as exc:
        raise refused(f"chaosdb embedded cluster: {exc}") from None


def _set_ownership(owned: Ownership | None, ctx: Any = None) -> None:
    """What this run may do to its cluster afterwards, decided when the cluster started (None: no cluster started),
    kept in the run context."""
    (ctx or run_context()).cluster = owned


def input_problems(experiment: Any, arguments: dict[str, Any], configuration: dict[str, Any] | None,
                   secrets: dict[str, Any] | None) -> list[str]:
    """What the control can say is wrong before its cluster starts (called by the run's input check, values
    substituted): a node an activity names that the cluster does not have, more nodes of a role than it has."""
    try:
        nodes = int(arguments.get("nodes", 3))
    except (TypeError, ValueError, OverflowError):
        return []  # CONTROL_ARGUMENTS says what is wrong with it
    try:
        directory = resolve_cluster_dir("", "", configuration)
    except ChaosDBError:
        return []  # the configuration's own check says what is wrong with the cluster's name
    problem = _unknown_nodes(experiment, configuration, secrets, directory, nodes)
    return [f"refused before the cluster starts: {problem}"] if problem else []


def _chaosd(binary: str, cfg: dict[str, Any], secrets: dict[str, Any] | None) -> Chaosd | None:
    """chaosd beside the cluster when the control or the configuration names a binary and no ``chaosd_url`` names
    one of the user's; for attacks through Chaos Mesh (``chaosd_via: chaos-mesh``) without a given PhysicalMachine,
    one registered per node, so each object selects its target node's machine as on a real deployment."""
    if not binary or cfg.get("chaosd_url"):
        return None
    register = cfg.get("chaosd_via") == "chaos-mesh" and not cfg.get("chaosd_physical_machine")
    return Chaosd(binary, machines=cfg if register else None, secrets=secrets)


def _unknown_nodes(experiment: Any, configuration: dict[str, Any] | None, secrets: dict[str, Any] | None,
                   directory: Any, nodes: int) -> str:
    """Activities naming a node the cluster does not have (its layout when it exists, else the *nodes* it will have
    when this control creates it): one sentence, or ""."""
    if not isinstance(experiment, dict):
        return ""
    names = ([n.name for n in load_layout(directory).nodes] if (directory / STATE_FILE).exists()
             else [f"node{i + 1}" for i in range(nodes)])
    # a scale-out adds the next node of the series: an experiment may name it afterwards
    grown = sum(1 for a in activities_of(experiment) if ((a or {}).get("provider") or {}).get("func") == "scale_out")
    last = max((int(n[4:]) for n in names if n[4:].isdigit()), default=0)
    names += [f"node{last + i + 1}" for i in range(grown)]
    found = []
    for activity in activities_of(experiment):
        provider = (activity or {}).get("provider") or {}
        if provider.get("type") != "python" or not str(provider.get("module", "")).startswith("chaosdb."):
            continue
        arguments = substitute(provider.get("arguments") or {}, configuration or {}, secrets or {})
        for key in ("target", "nodes", "node", "candidate"):
            values = arguments.get(key) if isinstance(arguments, dict) else None
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, str) and is_node_name(value) and value not in names:
                    found.append(f"activity '{activity.get('name', '?')}' names {value}")
    if not found:
        return ""
    return f"{'; '.join(found)}, which the cluster does not have (its nodes: {', '.join(names)})"


@closes_run_context
def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None,
                             configuration: dict[str, Any] | None = None, down_after: bool = True,
                             purge: bool = False, **kwargs: Any) -> None:
    """After the run: the load stopped and recorded, then, for a cluster made for runs (this one, or one an earlier
    run left), this run's faults reverted and the cluster down unless ``down_after`` is false (``purge``: its data
    removed). A person's cluster is left running (or stopped again, when the run found it stopped); a refused run
    leaves everything as it was."""
    refusals.record_in(state)
    ctx = run_context()
    ctx.run_teardown(before="cluster", state=state)  # the load is over before its database goes down
    owned, directory = ctx.cluster, resolve_cluster_dir("", "", configuration)
    if owned is None or refusals.nothing_started() or not (directory / STATE_FILE).exists():
        return  # nothing this run started: the run was refused, or the cluster never came up
    if isinstance(state, dict):
        state["chaosdb_cluster"] = owned.as_dict()
    take_down = owned.may_take_down and as_bool(down_after, default=True)
    if not (take_down or owned.stop_again):
        logger.info("chaosdb: cluster %s left running%s", owned.name,
                    "" if owned.may_take_down else " (this run did not create it)")
        return
    wipe = take_down and as_bool(purge, default=False)
    logger.info("chaosdb: %s cluster %s: its live faults reverted, its nodes stopped%s ...",
                "removing" if wipe else "stopping", owned.name, ", its data deleted" if wipe else "")
    t0 = time.monotonic()
    try:
        layout = load_layout(directory)
        cluster.down(layout, purge=wipe)  # the cluster's faults first (before chaosd, which some need, goes down)
        logger.info("chaosdb: cluster %s stopped%s in %.1fs%s", layout.name, " and purged" if wipe else "",
                    time.monotonic() - t0, "" if take_down else " (as the run found it; its data kept)")
    except Exception as exc:  # never hide the experiment's own outcome
        logger.error("chaosdb: could not stop the embedded cluster: %s", exc)


def check_address_base(value: Any) -> None:
    """A loopback IPv4 address (the first node's)."""
    parse_ipv4(str(value))


def check_chaosd_binary(value: Any) -> None:
    """Empty (no chaosd) or an executable file."""
    if value and not (os.path.isfile(str(value)) and os.access(str(value), os.X_OK)):
        raise ChaosDBError(f"chaosd {value!r} is not an executable file (the chaosd binary of a chaosd release)")


#: the control's arguments, checked with the configuration substituted before any control starts anything
#: (:func:`chaosdb.experiment.checks.experiment_problems`)
CONTROL_ARGUMENTS = checked_signature(
    before_experiment_control, "the embedded cluster control",
    nodes=number("nodes", 1, maximum=9, integer=True),
    tpcc_warehouses=number("tpcc_warehouses", 0, maximum=1000, integer=True),
    tpcc_scale_down=number("tpcc_scale_down", 1, maximum=1000, integer=True),
    ycsb_records=number("ycsb_records", 0, maximum=100_000_000, integer=True),
    etcd_ycsb_records=number("etcd_ycsb_records", 0, maximum=10_000_000, integer=True),
    address_base=check_address_base,
    secure=boolean("secure"),
    chaosd=check_chaosd_binary,
    down_after=boolean("down_after"),
    purge=boolean("purge"),
)
validate_control = with_argument_checks(validate_control, __name__)

