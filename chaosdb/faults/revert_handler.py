"""What the host engine undoes of a fault record: its delay proxies stopped, its stopped processes continued, its
iptables chains, tc classes and cgroups removed; and what of it is on this machine without a record (chains and
rules tagged ``CHAOSDB-`` / ``chaosdb:``, cgroups under ``chaosdb/``, the tc qdisc on ``lo``) for ``residue`` and
``cleanup``."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.handlers import RevertHandler
from chaosdb.core.faultrecords.records import FaultRecord
from chaosdb.core.processes import same_process, signal_pids, stop_process
from chaosdb.faults import cgroups, conntrack, netfilter, traffic
from chaosdb.faults.host import cgroup_host, require_tool

__all__ = ["HostRevertHandler", "REVERT_HANDLER"]


def _continue_stopped(entries: list[dict[str, Any]]) -> dict[str, list[int]]:
    """SIGCONT every recorded stopped process that is still that very process (its start time checked), by target."""
    resumed: dict[str, list[int]] = {}
    for entry in entries:
        if same_process(entry) and signal_pids([int(entry["pid"])], signal.SIGCONT):
            resumed.setdefault(str(entry.get("target")), []).append(int(entry["pid"]))
    return resumed


def _have(tool: str) -> bool:
    try:
        require_tool(tool, tool)
        return True
    except ChaosDBError:
        return False


class HostRevertHandler(RevertHandler):
    """The host engine's part of a record: helper processes, stopped processes, iptables, tc, cgroups."""

    engine = "host"
    helper_modules = ("chaosdb.faults.netproxy",)

    def stats(self, rec: FaultRecord) -> dict[str, Any]:
        """Cgroup counters, packets matched by the fault's INPUT chains, bytes shaped by its tc classes."""
        stats: dict[str, Any] = {}
        if rec.cgroups:
            host = cgroup_host()
            stats["cgroups"] = {c["target"]: cgroups.group_stats(host, c["controller"], Path(c["path"]))
                                for c in rec.cgroups}
        for ch in rec.chains:
            if ch["table"] == "filter" and ch["parent"] == "INPUT":
                counters = netfilter.chain_counters("filter", ch["chain"])
                stats["packets_matched"] = sum(c["packets"] for c in counters)
        if rec.tc:
            stats["tc"] = [traffic.class_stats(e) for e in rec.tc]
        return stats

    def revert(self, rec: FaultRecord, out: dict[str, Any]) -> list[str]:
        """Stop the fault's proxies, continue its stopped processes (``resumed`` in *out*), then remove its chains
        (hooks first, in one iptables-restore), its tc classes and cgroups, and last forget the tracked connections of a
        network fault's nodes."""
        errors: list[str] = []
        for entry in rec.processes:
            stop_process(entry)
        if rec.stopped:
            out["resumed"] = _continue_stopped(rec.stopped)
        try:  # hooks, then the chains (helper chains of bursty loss included) in one iptables-restore
            netfilter.remove_chains(rec.chains, rec.id)
        except ChaosDBError as exc:
            errors.append(str(exc))
        for entry in rec.tc:
            try:
                traffic.remove_class(entry)
            except ChaosDBError as exc:
                errors.append(str(exc))
        if rec.cgroups:
            host = cgroup_host()
            for c in rec.cgroups:
                try:
                    cgroups.release_group(host, c["controller"], Path(c["path"]), c.get("origin", "/"))
                except ChaosDBError as exc:
                    errors.append(str(exc))
        # last, so that it never delays the end of the fault itself
        if rec.params.get("node_addresses"):  # a network fault: no entry of it left to go stale (faults.conntrack)
            try:
                conntrack.forget_connections(rec.params["node_addresses"])
            except ChaosDBError as exc:
                errors.append(str(exc))
        return errors

    def residue(self, cluster_dir: str, fault_ids: set[str]) -> dict[str, list[Any]]:
        """Tagged iptables chains and rules (root only), cgroups and, host-wide, the tc qdisc; with *cluster_dir*
        the chains tagged with its folder and the cgroups of its recorded faults."""
        iptables = os.geteuid() == 0 and _have("iptables")
        if cluster_dir:
            out: dict[str, list[Any]] = {"iptables": netfilter.tagged_rules(netfilter.cluster_tag(cluster_dir))
                                         if iptables else [], "cgroups": []}
            try:
                out["cgroups"] = [g for g in cgroups.tagged_groups(cgroup_host()) if Path(g).name in fault_ids]
            except ChaosDBError:
                pass
            return out
        out = {"iptables": netfilter.tagged_rules() if iptables else [], "cgroups": [], "tc": []}
        try:
            out["cgroups"] = cgroups.tagged_groups(cgroup_host())
        except ChaosDBError:
            pass
        if _have("tc") and traffic.our_root():
            out["tc"] = [f"qdisc htb {traffic.ROOT_HANDLE} on {traffic.DEV}"]
        return out

    def sweep(self, cluster_dir: str) -> tuple[list[str], list[str]]:
        """With *cluster_dir*, its tagged chains (its own even when their record is lost); host-wide every tagged
        chain and rule, cgroup and our tc qdisc."""
        swept: list[str] = []
        errors: list[str] = []
        if cluster_dir:
            if os.geteuid() == 0 and _have("iptables"):
                swept = netfilter.remove_tagged(netfilter.cluster_tag(cluster_dir))
            return swept, errors
        if os.geteuid() == 0 and _have("iptables"):
            swept += netfilter.remove_tagged()
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
        return swept, errors


#: the host engine's revert handler (:mod:`chaosdb.core.faultrecords.handlers`)
REVERT_HANDLER = HostRevertHandler()
