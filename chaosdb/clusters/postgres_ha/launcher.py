"""The one way the embedded cluster is started: for ``chaosdb cluster up`` (:mod:`.cluster_command`), for a run
(:mod:`.control`) and between the runs of a game day (:mod:`chaosdb.gameday.cluster_steps`).

:func:`start` creates the cluster on first use (else starts what is not running), optionally reverts the faults a
killed run left on it first, says who may take it down afterwards, starts chaosd beside it (and registers one Chaos
Mesh PhysicalMachine per node), and loads the data an experiment needs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from chaosdb.clusters.postgres_ha import cluster
from chaosdb.clusters.postgres_ha.chaosd import chaosd_address, start_chaosd
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.ownership import Ownership, decide, is_running, this_run
from chaosdb.embedded.state import STATE_FILE, load_layout
from chaosdb.workloads import kv, ycsb
from chaosdb.workloads.tpcc import loader
from chaosdb.workloads.tpcc.rand import Scale

__all__ = ["Data", "Chaosd", "Ownership", "start"]

logger = logging.getLogger("chaostoolkit")


@dataclass(frozen=True)
class Data:
    """What to load once the cluster is healthy (each only when missing): TPC-C warehouses (scaled down), YCSB
    records in PostgreSQL, YCSB records in the cluster's etcd."""

    tpcc_warehouses: int = 0
    tpcc_scale_down: int = 10
    ycsb_records: int = 0
    etcd_ycsb_records: int = 0


@dataclass(frozen=True)
class Chaosd:
    """chaosd beside the cluster: its binary, its TLS files (``chaosd_tls_files`` of a local Kubernetes), and the
    Kubernetes configuration (``k8s_kubeconfig``, ``k8s_namespace``...) to register one PhysicalMachine per node in
    (None: none registered)."""

    binary: str
    tls: Any = None
    machines: dict[str, Any] | None = None
    secrets: dict[str, Any] | None = None


def start(directory: Path, name: str = "", *, by: str = "", down_after: bool = True, purge: bool = False,
          decided: Callable[[Ownership], None] | None = None, revert_orphans: bool = False,
          configuration: dict[str, Any] | None = None, chaosd: Chaosd | None = None, data: Data = Data(),
          **options: Any) -> tuple[dict[str, Any], Ownership | None]:
    """Start (create on first use) the embedded cluster in *directory* (named *name*, else the folder's name) with
    *options* (those of :func:`chaosdb.clusters.postgres_ha.cluster.up`), then chaosd and the data; the cluster's
    result and, for a cluster made by a run or a game day (*by*: ``run`` or ``gameday``), what the caller may do to
    it afterwards (said in the log and handed to *decided* as soon as it is known, before chaosd and the data: a
    failure after that still lets the caller stop what it started). *revert_orphans*: first revert the faults a run
    that died left on this cluster."""
    was_running = is_running(directory) if by else False
    if revert_orphans:
        _revert_orphan_faults(directory, configuration)
    if by:
        options["created_by"] = this_run(by)
    result = cluster.up(directory, name or directory.name, **options)
    owned = None
    if by:
        owned = decide(result["cluster"], bool(result["created"]), result.get("created_by") or {}, was_running,
                       down_after, purge)
        if decided is not None:
            decided(owned)
        logger.info("chaosdb: cluster %s %s in %.1fs, leader %s", result["cluster"],
                    "created" if result["created"] else "up", result["seconds"], result["leader"])
        (logger.info if owned.may_take_down or not (down_after or purge) else logger.warning)("chaosdb: %s",
                                                                                                owned.sentence)
    layout = load_layout(directory)
    if chaosd is not None:
        result["chaosd"] = start_chaosd(str(directory), chaosd.binary, chaosd_address(layout), tls=chaosd.tls)["url"]
        logger.info("chaosdb: chaosd beside cluster %s at %s", result["cluster"], result["chaosd"])
        if chaosd.machines is not None:
            from chaosdb.chaosmesh.physical import register_machines  # noqa: PLC0415 - needs the k8s extra

            result["physical_machines"] = register_machines(str(directory), layout.name,
                                                            [n.name for n in layout.nodes], result["chaosd"],
                                                            chaosd.machines, chaosd.secrets)
            logger.info("chaosdb: PhysicalMachines for chaosd: %s",
                        ", ".join(f"{k} {v}" for k, v in result["physical_machines"].items()))
    _load(layout, data)
    return result, owned


def _load(layout: Any, data: Data) -> None:
    dsn = layout.dsn()
    if data.tpcc_warehouses > 0:
        loaded = loader.load(dsn, Scale.reduced(data.tpcc_warehouses, data.tpcc_scale_down))
        logger.info("chaosdb: TPC-C data: %d warehouse(s), %d part(s) loaded in %.1fs", loaded["warehouses"],
                    len(loaded["loaded"]), loaded["seconds"])
    if data.ycsb_records > 0:
        ycsb.load(dsn, data.ycsb_records)
    if data.etcd_ycsb_records > 0:
        loaded = kv.load_etcd(",".join(layout.etcd_urls), data.etcd_ycsb_records, tls=layout.client_tls("etcd"))
        logger.info("chaosdb: YCSB records in etcd: %d (%d inserted)", loaded["records"], loaded["inserted"])


def _revert_orphan_faults(directory: Path, configuration: dict[str, Any] | None) -> None:
    """Faults an earlier run of this cluster left behind when it was killed: reverted now, and said (other clusters'
    faults are not touched)."""
    if not (directory / STATE_FILE).exists():
        return
    try:
        done = engine_action("host", "revert_faults")(cluster_dir=str(directory), configuration=configuration)
    except ChaosDBError as exc:
        logger.warning("chaosdb: faults an earlier run left on cluster %s could not be reverted (%s): run "
                       "'chaosdb faults cleanup --dir %s'", directory.name, exc, directory)
        return
    left = [r for r in done.get("reverted") or [] if r.get("reverted_by") != "timer"]
    if left:
        logger.warning("chaosdb: reverted %d fault(s) an earlier run of cluster %s left active when it ended "
                       "without its rollback: %s", len(left), directory.name,
                       ", ".join(f"{r['kind']} {r['id']} on {', '.join(map(str, r.get('targets') or []))}"
                                 for r in left))
