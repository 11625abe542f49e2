"""Finding and removing what the fault engine left on this machine: ``residue`` lists every tagged chain, rule,
cgroup, qdisc and helper process; ``cleanup`` reverts the records and sweeps what has none (for one cluster, or the
whole host)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from chaosdb.core.chaosd import leftovers as chaosd_leftovers
from chaosdb.core.chaosd import remove_leftovers as remove_chaosd_leftovers
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import other_processes, stop_process
from chaosdb.core.processes import start_time as process_start_time
from chaosdb.faults import cgroups, netfilter, traffic
from chaosdb.faults.host import cgroup_host, require_tool
from chaosdb.faults.lifecycle import HELPER_MODULES, revert, take_timer_results
from chaosdb.faults.records import cluster_tag, load_records, same_cluster


def _our_processes() -> list[dict[str, Any]]:
    """The fault engine's own helper processes (reverter timers, delay proxies) on this host."""
    found = []
    for proc in other_processes(("cmdline",)):
        cmd = " ".join(a for a in proc.info["cmdline"] or [] if a)
        if any(f"-m {m}" in cmd for m in HELPER_MODULES):
            found.append({"pid": proc.pid, "start": process_start_time(proc.pid), "cmd": cmd})
    return found


def residue(cluster_dir: str = "") -> dict[str, Any]:
    """Everything of the fault engine present on the host right now; with *cluster_dir*, what belongs to that
    cluster only: its records, the iptables chains tagged with its folder (found with or without their record, even
    after the folder is gone), and the helper processes and cgroups of its recorded faults."""
    if cluster_dir:
        return _cluster_residue(cluster_dir)
    out: dict[str, Any] = {
        "records": [r.summary() for r in load_records()],
        "iptables": netfilter.tagged_rules() if os.geteuid() == 0 and _have("iptables") else [],
        "cgroups": [],
        "tc": [],
        "processes": [p["cmd"] for p in _our_processes()],
        "chaosd": chaosd_leftovers() if os.geteuid() == 0 else [],
    }
    try:
        out["cgroups"] = cgroups.tagged_groups(cgroup_host())
    except ChaosDBError:
        pass
    if _have("tc") and traffic.our_root():
        out["tc"] = [f"qdisc htb {traffic.ROOT_HANDLE} on {traffic.DEV}"]
    out["clean"] = not any(out[k] for k in ("records", "iptables", "cgroups", "tc", "processes", "chaosd"))
    return out


def _cluster_residue(cluster_dir: str) -> dict[str, Any]:
    records = [r for r in load_records() if same_cluster(r.cluster_dir, cluster_dir)]
    ids = {r.id for r in records}
    out: dict[str, Any] = {
        "cluster_dir": os.path.realpath(cluster_dir),
        "records": [r.summary() for r in records],
        "iptables": netfilter.tagged_rules(cluster_tag(cluster_dir)) if os.geteuid() == 0 and _have("iptables")
        else [],
        "cgroups": [],
        "processes": [p["cmd"] for p in _our_processes() if any(i in p["cmd"] for i in ids)],
    }
    try:
        out["cgroups"] = [g for g in cgroups.tagged_groups(cgroup_host()) if Path(g).name in ids]
    except ChaosDBError:
        pass
    out["clean"] = not any(out[k] for k in ("records", "iptables", "cgroups", "processes"))
    return out


def _have(tool: str) -> bool:
    try:
        require_tool(tool, tool)
        return True
    except ChaosDBError:
        return False


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
    if scoped:
        mine_ids = {r.id for r in mine}
        tagged: list[str] = []
        if os.geteuid() == 0 and _have("iptables"):  # its chains without a record (the record lost): its own too
            tagged = netfilter.remove_tagged(cluster_tag(cluster_dir))
        left = _cluster_residue(cluster_dir)
        return {"reverted": reverted, "swept": tagged, "errors": errors, "clean": left["clean"] and not errors,
                "residue": left, "kept_other_faults": sorted(r.id for r in records if r.id not in mine_ids)}
    swept: list[str] = []
    for proc in _our_processes():
        if stop_process(proc):
            swept.append(f"process {proc['pid']}: {proc['cmd']}")
    if os.geteuid() == 0 and _have("iptables"):
        swept += netfilter.remove_tagged()
        swept += remove_chaosd_leftovers()  # what chaosd's recovered network attacks left
    try:
        host = cgroup_host()
        for g in cgroups.tagged_groups(host):
            path = Path(g)
            controller = next(c for c in host.controllers if str(path).startswith(str(host.hierarchy(c))))
            if path.name == cgroups.PARENT:
                try:
                    path.rmdir()
                except OSError:
                    pass
            else:
                cgroups.release_group(host, controller, path, "/")
            swept.append(f"cgroup {g}")
    except ChaosDBError as exc:
        if "no cgroup" not in str(exc):
            errors.append(str(exc))
    if _have("tc") and traffic.remove_root_if_unused(force=True):
        swept.append(f"tc qdisc {traffic.ROOT_HANDLE} on {traffic.DEV}")
    take_timer_results()
    left = residue()
    return {"reverted": reverted, "swept": swept, "errors": errors, "clean": left["clean"], "residue": left,
            "kept_other_faults": []}
