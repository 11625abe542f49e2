"""Finding and removing what faults left on this machine, whichever engine made them: ``residue`` lists the records,
the helper processes and what each engine's handler finds of its own (tagged chains, rules, cgroups, qdiscs,
chaosd's leftovers); ``cleanup`` reverts the records and has each handler sweep what has none (for one cluster, or
the whole host)."""

from __future__ import annotations

import os
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.handlers import revert_handlers
from chaosdb.core.faultrecords.lifecycle import REVERTER_MODULE, revert, take_timer_results
from chaosdb.core.faultrecords.records import load_records, same_cluster
from chaosdb.core.processes import other_processes, stop_process
from chaosdb.core.processes import start_time as process_start_time

__all__ = ["helper_processes", "residue", "cleanup"]


def helper_processes() -> list[dict[str, Any]]:
    """The helper processes of faults on this host: the reverters of timed faults and the engines' own helpers
    (delay proxies), each with ``pid``, ``start`` and ``cmd``."""
    modules = (REVERTER_MODULE, *(m for h in revert_handlers() for m in h.helper_modules))
    found = []
    for proc in other_processes(("cmdline",)):
        cmd = " ".join(a for a in proc.info["cmdline"] or [] if a)
        if any(f"-m {m}" in cmd for m in modules):
            found.append({"pid": proc.pid, "start": process_start_time(proc.pid), "cmd": cmd})
    return found


def _clean(out: dict[str, Any]) -> bool:
    return not any(value for key, value in out.items() if key != "cluster_dir")


def residue(cluster_dir: str = "") -> dict[str, Any]:
    """Everything of the fault engines present on the host right now; with *cluster_dir*, what belongs to that
    cluster only: its records, what the engines tell apart as its own (the iptables chains tagged with its folder,
    found with or without their record, even after the folder is gone; the cgroups of its recorded faults), and the
    helper processes of its recorded faults."""
    if cluster_dir:
        return _cluster_residue(cluster_dir)
    out: dict[str, Any] = {"records": [r.summary() for r in load_records()]}
    for handler in revert_handlers():
        out.update(handler.residue("", set()))
    out["processes"] = [p["cmd"] for p in helper_processes()]
    out["clean"] = _clean(out)
    return out


def _cluster_residue(cluster_dir: str) -> dict[str, Any]:
    records = [r for r in load_records() if same_cluster(r.cluster_dir, cluster_dir)]
    ids = {r.id for r in records}
    out: dict[str, Any] = {"cluster_dir": os.path.realpath(cluster_dir), "records": [r.summary() for r in records]}
    for handler in revert_handlers():
        out.update(handler.residue(cluster_dir, ids))
    out["processes"] = [p["cmd"] for p in helper_processes() if any(i in p["cmd"] for i in ids)]
    out["clean"] = _clean(out)
    return out


def cleanup(cluster_dir: str = "") -> dict[str, Any]:
    """Revert every recorded fault, then remove whatever of ours is left without a record.

    With *cluster_dir*, only that cluster's recorded faults are reverted and nothing else is touched: what has no
    record cannot be told apart from another cluster's live fault, whose record may well live in another records
    directory (another user's ``CHAOSDB_FAULTS_DIR``, another test worker's). Two clusters on one machine (two
    game days, two test workers) then never undo each other's faults; ``chaosdb faults cleanup`` sweeps the whole
    host."""
    scoped = bool(cluster_dir)
    records = load_records()
    mine = [r for r in records if not scoped or same_cluster(r.cluster_dir, cluster_dir)]
    reverted, errors = [], []
    for rec in mine:
        try:
            reverted.append(revert(rec))
        except ChaosDBError as exc:
            errors.append(str(exc))
            if not scoped:
                rec.delete()  # the sweep below removes what it names
    swept: list[str] = []
    if scoped:
        mine_ids = {r.id for r in mine}
        for handler in revert_handlers():  # only what is the cluster's beyond doubt (its tagged chains)
            removed, failed = handler.sweep(cluster_dir)
            swept += removed
            errors += failed
        left = _cluster_residue(cluster_dir)
        return {"reverted": reverted, "swept": swept, "errors": errors, "clean": left["clean"] and not errors,
                "residue": left, "kept_other_faults": sorted(r.id for r in records if r.id not in mine_ids)}
    for proc in helper_processes():
        if stop_process(proc):
            swept.append(f"process {proc['pid']}: {proc['cmd']}")
    for handler in revert_handlers():
        removed, failed = handler.sweep("")
        swept += removed
        errors += failed
    take_timer_results()
    left = residue()
    return {"reverted": reverted, "swept": swept, "errors": errors, "clean": left["clean"], "residue": left,
            "kept_other_faults": []}
