"""Network faults with iptables (partition, loss, bursty loss with Gilbert-Elliott chains) and tc htb (bandwidth)
on loopback, matched by the node users that open each connection: a fault hits one node, never its neighbours."""

from __future__ import annotations

import functools
import os
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.lifecycle import checked_duration, inject
from chaosdb.core.faultrecords.records import FaultRecord, new_record
from chaosdb.core.processes import cwd_of, uids_of_processes
from chaosdb.faults import conntrack, netfilter, traffic
from chaosdb.faults.classify import (
    NodeIdentity,
    check_identities,
    label_rules,
    packet_matches,
)
from chaosdb.faults.host import netem_available, require_root, require_tool

__all__ = ["NETWORK_KINDS", "check_network", "new_chain", "inject_network"]

#: the network faults of the host engine
NETWORK_KINDS = ("partition", "loss", "bursty-loss", "bandwidth", "delay")


def _require_netfilter(what: str) -> None:
    require_root(what)
    require_tool("iptables", "iptables")
    _netfilter_answers()


@functools.cache
def _netfilter_answers() -> None:
    """iptables works here (asked once per process: it is on every network fault's path)."""
    netfilter.iptables("filter", "-S", "INPUT")  # raises with iptables' own words when it cannot work here


def _foreign_users(nodes: list[NodeIdentity], cluster_dir: str) -> list[str]:
    """Processes running as a node's user but not belonging to this cluster (they would be matched too)."""
    uids = {n.uid: n.name for n in nodes}
    root = os.path.realpath(cluster_dir) if cluster_dir else ""
    found = []
    for pid, uid in uids_of_processes().items():
        if uid not in uids:
            continue
        cwd = cwd_of(pid)
        if cwd is None:
            continue
        if root and not (cwd == root or cwd.startswith(root + os.sep)):
            found.append(f"pid {pid} (uid {uid}, cwd {cwd})")
    return found


def check_network(targets: list[NodeIdentity], nodes: list[NodeIdentity], cluster_dir: str, what: str) -> None:
    """Refuse *what* (a network fault on *targets*) before anything changes: not root, no working iptables, node
    identities that cannot tell the nodes' traffic apart, a target that is not one of *nodes*, or processes outside
    the cluster running as its nodes' users (the rules would match them too)."""
    _require_netfilter(what)
    check_identities(nodes)
    names = {n.name for n in nodes}
    for t in targets:
        if t.name not in names:
            raise ChaosDBError(f"target {t.name} is not one of the cluster's nodes")
    foreign = _foreign_users(nodes, cluster_dir)
    if foreign:
        raise ChaosDBError("processes outside this cluster run as its nodes' users, so rules could not tell them "
                           "apart (another cluster started with the same node users?): " + "; ".join(foreign[:5])
                           + ". Stop the other cluster first")


def new_chain(rec: FaultRecord, batch: netfilter.Batch, table: str, suffix: str = "", parent: str = "") -> str:
    """A chain of the fault (named by its id and its cluster's tag, and *suffix*): recorded (saved before anything is
    applied, so a revert finds it whatever happens next) and its creation added to *batch*; its name."""
    chain = netfilter.chain_name(rec.id, netfilter.cluster_tag(rec.cluster_dir), suffix)
    rec.chains.append({"table": table, "chain": chain, "parent": parent})
    batch.chain(table, chain)
    return chain


def _gilbert_chains(rec: FaultRecord, batch: netfilter.Batch, loss: float, burst: float) -> str:
    """Gilbert-model bursty loss: enter a burst with probability q, stay with 1 - 1/burst.

    Mean burst = *burst* packets, long-run loss = *loss* when q = loss / (burst (1 - loss)).
    The burst state is kept per source address (xt_recent)."""
    q = loss / (burst * (1.0 - loss))
    r = 1.0 / burst
    bad, good = new_chain(rec, batch, "filter", "B"), new_chain(rec, batch, "filter", "G")
    name = f"chaosdb{rec.id}"
    batch.rule("filter", bad, ["-m", "statistic", "--mode", "random", "--probability", f"{r:.6f}",
                               "-m", "recent", "--name", name, "--remove", "--rsource", "-j", "RETURN"])
    batch.rule("filter", bad, ["-j", "DROP"])
    batch.rule("filter", good, ["-m", "recent", "--name", name, "--rcheck", "--rsource", "-j", bad])
    batch.rule("filter", good, ["-m", "statistic", "--mode", "random", "--probability", f"{q:.6f}",
                                "-m", "recent", "--name", name, "--set", "--rsource", "-j", "DROP"])
    return good


def inject_network(kind: str, targets: list[NodeIdentity], nodes: list[NodeIdentity], scope: str = "all",
                   direction: str = "both", duration_s: float = 0, cluster_dir: str = "",
                   loss_percent: float = 0.0, burst_packets: float = 0.0, rate_kbit: int = 0,
                   delay_ms: float = 0.0, jitter_ms: float = 0.0) -> FaultRecord:
    """``partition``, ``loss``, ``bursty-loss``, ``bandwidth`` or ``delay`` (netem hosts only) on *targets*."""
    if kind not in NETWORK_KINDS:
        raise ChaosDBError(f"unknown network fault {kind!r} (one of {', '.join(NETWORK_KINDS)})")
    duration_s = checked_duration(duration_s)
    matches = {t.name: packet_matches(t, nodes, scope, direction) for t in targets}  # validates scope/direction
    params: dict[str, Any] = {"scope": scope, "direction": direction,
                              "node_addresses": sorted({n.address for n in nodes})}
    if kind in ("loss", "bursty-loss"):
        if not 0 < float(loss_percent) < 100:
            raise ChaosDBError(f"loss_percent must be between 0 and 100 (exclusive), got {loss_percent}")
        params["loss_percent"] = float(loss_percent)
    if kind == "bursty-loss":
        if not float(burst_packets) >= 1:
            raise ChaosDBError(f"mean_burst_packets must be >= 1, got {burst_packets}")
        params["mean_burst_packets"] = float(burst_packets)
    if kind == "bandwidth":
        if not int(rate_kbit) >= 8:
            raise ChaosDBError(f"rate_kbit must be at least 8, got {rate_kbit}")
        params["rate_kbit"] = int(rate_kbit)
    if kind == "delay":
        if not netem_available():
            raise ChaosDBError("this kernel has no netem qdisc: use the latency proxy (delay_traffic does it)")
        params.update(delay_ms=float(delay_ms), jitter_ms=float(jitter_ms))
    if not targets:
        raise ChaosDBError("no target for the network fault")
    check_network(targets, nodes, cluster_dir, f"a {kind} fault")
    if kind in ("bandwidth", "delay"):
        require_tool("tc", "iproute2")
    rec = new_record(kind, targets=[{"name": t.name, "address": t.address, "uid": t.uid} for t in targets],
                     params=params, cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        batch = netfilter.Batch()  # every chain and rule applied by one iptables-restore, after the record
        mangle = new_chain(rec, batch, "mangle", "L", "OUTPUT")
        for rule in label_rules(nodes):
            batch.rule("mangle", mangle, rule)
        if kind in ("bandwidth", "delay"):
            entry = traffic.add_class(int(rate_kbit) if kind == "bandwidth" else 10_000_000,
                                      delay_ms=float(delay_ms) if kind == "delay" else 0.0,
                                      jitter_ms=float(jitter_ms) if kind == "delay" else 0.0)
            rec.tc.append(entry)
            rec.save()  # the class exists now: recorded before anything else
            for t in targets:
                for m in matches[t.name]:
                    batch.rule("mangle", mangle, m + ["-j", "CLASSIFY", "--set-class", entry["classid"]])
        batch.hook("mangle", "OUTPUT", mangle, rec.id)
        if kind in ("partition", "loss", "bursty-loss"):
            chain = new_chain(rec, batch, "filter", "", "INPUT")
            if kind == "partition":
                action = ["-j", "DROP"]
            elif kind == "loss":
                action = ["-m", "statistic", "--mode", "random", "--probability",
                          f"{float(loss_percent) / 100:.6f}", "-j", "DROP"]
            else:
                action = ["-j", _gilbert_chains(rec, batch, float(loss_percent) / 100, float(burst_packets))]
            for t in targets:
                for m in matches[t.name]:
                    batch.rule("filter", chain, m + action)
            batch.hook("filter", "INPUT", chain, rec.id)
        rec.save()
        batch.apply()
        # the rules are in force: every live connection of the nodes is picked up afresh and marked by its opener,
        # none keeps a stale entry from before (faults.conntrack)
        conntrack.forget_connections(params["node_addresses"])

    return inject(rec, steps, duration_s)
