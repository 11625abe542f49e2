"""Finding and removing what the fault engine left on this machine: ``residue`` lists every tagged chain, rule,
cgroup, qdisc and helper process; ``cleanup`` reverts the records and sweeps what has none (for one cluster, or the
whole host)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import cmdline
from chaosdb.core.processes import start_time as process_start_time
from chaosdb.faults import cgroups, netfilter, traffic
from chaosdb.faults.host import cgroup_host, require_tool
from chaosdb.faults.lifecycle import _OUR_MODULES, _stop_process, revert, take_timer_results
from chaosdb.faults.records import (
    load_records,
)


def _our_processes() -> list[dict[str, Any]]:
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        cmd = cmdline(int(entry.name))
        if any(f"-m {m}" in cmd for m in _OUR_MODULES):
            found.append({"pid": int(entry.name), "start": process_start_time(int(entry.name)), "cmd": cmd.strip()})
    return found


def residue(keep: Iterable[str] = ()) -> dict[str, Any]:
    """Everything of the fault engine present on the host right now; with *keep* (fault ids) leaving out what
    those faults own."""
    keep = set(keep)
    out: dict[str, Any] = {
        "records": [r.summary() for r in load_records() if r.id not in keep],
        "iptables": [ln for ln in (netfilter.tagged_rules() if os.geteuid() == 0 and _have("iptables") else [])
                     if not _names_one_of(ln, keep)],
        "cgroups": [],
        "tc": [],
        "processes": [p["cmd"] for p in _our_processes() if not _names_one_of(p["cmd"], keep)],
    }
    try:
        out["cgroups"] = [g for g in cgroups.tagged_groups(cgroup_host())
                          if Path(g).name.split("-", 1)[0] not in keep
                          and not (keep and Path(g).name == cgroups.PARENT)]
    except ChaosDBError:
        pass
    if _have("tc") and traffic.our_root() and not keep:
        out["tc"] = [f"qdisc htb {traffic.ROOT_HANDLE} on {traffic.DEV}"]
    out["clean"] = not any(out[k] for k in ("records", "iptables", "cgroups", "tc", "processes"))
    return out


def _names_one_of(text: str, fault_ids: set[str]) -> bool:
    """Whether *text* (an iptables line, a command line) belongs to one of *fault_ids*: chains are named
    ``CHAOSDB-<id>…``, rules carry ``chaosdb:<id>``, proxies and reverters ``--fault-id <id>``."""
    return any(f"CHAOSDB-{i}" in text or f"chaosdb:{i}" in text or f"--fault-id {i}" in text for i in fault_ids)


def _same_cluster(a: str, b: str) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


def _have(tool: str) -> bool:
    try:
        require_tool(tool, tool)
        return True
    except ChaosDBError:
        return False


def cleanup(cluster_dir: str = "") -> dict[str, Any]:
    """Revert every recorded fault, then remove whatever of ours is left without a record.

    With *cluster_dir*, only that cluster's: its recorded faults are reverted, and of what is left without a
    record everything is removed except what another live fault owns (its chains, rules, cgroup, proxies and
    reverter, and the shared tc qdisc while any other fault is live). Two clusters on one machine (two game days,
    two test workers) then never undo each other's faults."""
    records = load_records()
    mine = [r for r in records if not cluster_dir or _same_cluster(r.cluster_dir, cluster_dir)]
    mine_ids = {r.id for r in mine}
    keep = {r.id for r in records if r.id not in mine_ids}
    reverted, errors = [], []
    for rec in mine:
        try:
            reverted.append(revert(rec))
        except ChaosDBError as exc:
            errors.append(str(exc))
            rec.delete()  # the sweep below removes what it names
    swept: list[str] = []
    for p in _our_processes():
        if not _names_one_of(p["cmd"], keep) and _stop_process(p):
            swept.append(f"process {p['pid']}: {p['cmd']}")
    if os.geteuid() == 0 and _have("iptables"):
        swept += netfilter.remove_tagged(keep)
    try:
        host = cgroup_host()
        for g in cgroups.tagged_groups(host):
            path = Path(g)
            if path.name.split("-", 1)[0] in keep:  # a fault's group is <fault id>-<target>
                continue
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
    if _have("tc") and traffic.remove_root_if_unused(force=not keep):
        swept.append(f"tc qdisc {traffic.ROOT_HANDLE} on {traffic.DEV}")
    if not keep:
        take_timer_results()
    left = residue(keep)
    return {"reverted": reverted, "swept": swept, "errors": errors, "clean": left["clean"], "residue": left,
            "kept_other_faults": sorted(keep)}
