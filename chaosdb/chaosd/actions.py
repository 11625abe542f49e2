"""Faults carried out by chaosd (``chaosd server``, Chaos Mesh's agent for databases on machines).

======================  ==================================================  ==========================
action                  what happens                                        chaosd attack
======================  ==================================================  ==========================
``stop_processes``      the target's processes are stopped (SIGSTOP) until  ``process`` signal 19;
                        reverted (SIGCONT)                                  recover sends SIGCONT
``kill_processes``      the target's processes get ``signal`` (9); nothing  ``process``
                        to revert: restart the node (``restart_nodes``)
``skew_clock``          the target's processes read a wall clock            ``clock`` (ptrace + vDSO),
                        ``offset_s`` off (CLOCK_REALTIME); other processes  ``CLOCK_REALTIME``
                        of the machine keep the true time
``stress_cpu``          ``workers`` stress-ng workers at ``load`` % on the  ``stress`` cpu
                        target's **machine** (every process there competes)
``stress_memory``       ``size_mb`` MiB held on the target's **machine**    ``stress`` mem (memStress)
``partition_node``      the target's address is cut off (``inbound``,       ``network`` partition
                        ``outbound`` or ``both``) on ``device``             (iptables + ipset)
``drop_packets``        ``probability`` of the packets to/from the target's  ``user_defined``: an
                        address dropped at random (no netem needed)         iptables statistic rule
``fill_disk``           a file of ``size_mb`` MiB at ``path`` (fallocate)   ``disk`` fill
``revert_attacks``      rollback: recover this run's chaosd faults
======================  ==================================================  ==========================

Targets are chosen when the action runs, as for the local engine: a role or node names of the embedded cluster
(``leader``, ``replica``, ``node2``; ``count`` of them, ``components`` of each), a database role
(``{"role": "patroni-primary"}``, ``{"role": "tikv-leader", "key": ...}``: the database's adapter names the node
and the local processes serving it), or ``processes`` (a command-line substring).

chaosd is found at ``chaosd_url`` (argument, else configuration ``chaosd_url``), else the one ``chaosdb cluster up
--chaosd`` started beside the embedded cluster. TLS to it: configuration ``chaosd_ca_file``, ``chaosd_cert_file``,
``chaosd_key_file`` (as for every service, :mod:`chaosdb.core.tls`).

``via`` (argument, else configuration ``chaosd_via``) picks who asks chaosd: ``chaosd`` (default) this pack, over
chaosd's HTTP API; ``chaos-mesh`` the Chaos Mesh controller, through one PhysicalMachineChaos object per attack
(:mod:`chaosdb.chaosmesh.physical`; Kubernetes found by the ``k8s_*`` configuration keys, objects in
``k8s_namespace``), sent to chaosd's URL as the controller reaches it, or to the PhysicalMachine
``physical_machine`` (``namespace/name``, configuration ``chaosd_physical_machine``) names. Either way the targets
are resolved here, so the pack runs on the database's machine (or the adapter names its processes' PIDs).

Every fault but a kill is a fault record like the local engine's: written before chaosd is asked, holding each
attack's uid, so ``revert_attacks``, ``chaosdb.faults.actions.revert_faults``, the faults control after an
interrupted run and ``chaosdb faults cleanup`` recover it from any process. ``duration_s`` > 0 makes it revert itself
(a detached timer, also when ``chaos run`` dies).
"""

import logging
import os
import secrets as secrets_module
import signal as signals
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Union
from urllib.parse import urlsplit

from chaoslib.types import Configuration, Secrets

from chaosdb.chaosmesh import physical
from chaosdb.core.arguments import MAX_SECONDS, check_arguments, choice, number
from chaosdb.core.chaosd import Chaosd, ProcessEnded, attack_entry, cluster_chaosd
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.lifecycle import checked_duration, inject
from chaosdb.core.faultrecords.records import FaultRecord, new_record
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.core.tls import client_tls
from chaosdb.faults.actions import revert_faults
from chaosdb.faults.targets import ProcessGroup, check_components, check_fault_target, target_groups
from chaosdb.k8s import api

__all__ = ["stop_processes", "kill_processes", "skew_clock", "stress_cpu", "stress_memory", "partition_node",
           "drop_packets", "fill_disk", "revert_attacks"]

logger = logging.getLogger("chaostoolkit")

#: our direction (seen from the target) -> chaosd's (seen from the address: packets *to* it, *from* it)
_DIRECTIONS = {"inbound": "to", "outbound": "from", "both": "both"}
KINDS = ("chaosd-kill", "chaosd-stop", "chaosd-loss", "chaosd-clock", "chaosd-stress-cpu", "chaosd-stress-memory", "chaosd-partition",
         "chaosd-disk-fill")


def _server(chaosd_url: str, configuration: Any, cluster_dir: str, check: bool = True) -> Chaosd:
    cfg = configuration or {}
    url = chaosd_url or str(cfg.get("chaosd_url") or "") or cluster_chaosd(cluster_dir)
    if not url:
        raise ChaosDBError("no chaosd to ask: give chaosd_url (argument or configuration), or start the embedded "
                           "cluster with 'chaosdb cluster up --chaosd <chaosd binary>'")
    tls = client_tls("chaosd", cfg)
    if tls.given and not url.startswith("https://"):
        raise ChaosDBError(f"chaosd_url {url} is plain http:// but chaosd TLS settings are given: use https://")
    server = Chaosd(url, tls if tls.given else None)
    if check:  # through Chaos Mesh, the controller is the one that must reach it
        server.health()
    return server


def _pids(groups: list[ProcessGroup]) -> list[tuple[ProcessGroup, int]]:
    found = [(g, pid) for g in groups for pid in g.pids()]
    empty = [str(g.target.get("name")) for g in groups if not any(x is g for x, _ in found)]
    if empty:
        raise ChaosDBError(f"target(s) {', '.join(empty)} have no running process: start them first "
                           "(cluster up / restart_nodes)")
    return found


def _address(group: ProcessGroup) -> str:
    address = str(group.target.get("address") or group.target.get("host") or "")
    if not address:
        raise ChaosDBError(f"target {group.target.get('name')} has no address to partition")
    host = address.rsplit(":", 1)[0] if address.count(":") == 1 else address
    return host.strip("[]")


@dataclass(frozen=True)
class Route:
    """How attacks reach chaosd: directly (``via`` ``chaosd``) or as PhysicalMachineChaos objects the Chaos Mesh
    controller carries out (``chaos-mesh``: ``where`` is the objects' address or PhysicalMachine selector)."""

    server: Chaosd
    via: str = "chaosd"
    where: dict[str, Any] = field(default_factory=dict)
    namespace: str = ""
    configuration: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, Any] = field(default_factory=dict)
    #: node name -> the selector of its PhysicalMachine (registered by ``cluster up --physical-machines``)
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)

    def where_for(self, node: str) -> dict[str, Any]:
        """Where the object for an attack on *node* sends it: its PhysicalMachine when the cluster registered
        one, else the route's address or given machine."""
        return self.machines.get(node) or self.where

    def k8s(self) -> dict[str, Any]:
        """The Kubernetes settings of the configuration (kubeconfig, context, namespace) for the PhysicalMachineChaos
        objects."""
        return {k: self.configuration[k] for k in physical.K8S_KEYS if self.configuration.get(k) not in (None, "")}


def _route(chaosd_url: str, via: str, physical_machine: str, configuration: Any, secrets: Any,
           cluster_dir: str) -> Route:
    cfg = dict(configuration or {})
    via = via or str(cfg.get("chaosd_via") or "") or "chaosd"
    server = _server(chaosd_url, cfg, cluster_dir, check=via == "chaosd")
    if via == "chaosd":
        return Route(server)
    machine = physical_machine or str(cfg.get("chaosd_physical_machine") or "")
    registered = {} if machine or not cluster_dir else physical.registered_machines(cluster_dir)
    return Route(server, via, physical.machines(server.url, machine), api.namespace_of(cfg), cfg,
                 dict(secrets or {}), {node: physical.machines("", ref) for node, ref in registered.items()})


def _object_entries(rec: FaultRecord, route: Route, bodies: list[tuple[str, dict[str, Any]]], nodes: list[str],
                    duration_s: float, extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One PhysicalMachineChaos per attack (sent to the machine of the node in *nodes* at the same place), written
    into the record (uid and name) before any is created."""
    objects = []
    for i, ((attack_kind, body), node) in enumerate(zip(bodies, nodes, strict=True)):
        body = {**body, **(extra or {})}
        obj = physical.new_object(attack_kind, body, f"chaosdb-{rec.id}-{i}", route.namespace, route.where_for(node),
                                  duration_s)
        objects.append(obj)
        rec.attacks.append({**attack_entry(route.server, obj["spec"]["uid"], attack_kind, body),
                            "object": {"kind": physical.KIND, "name": obj["metadata"]["name"],
                                       "namespace": route.namespace}, "k8s": route.k8s()})
    rec.save()
    return objects


def _started(server: Chaosd, bodies: list[tuple[str, dict[str, Any]]],
             ended: list[str]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Ask chaosd for each attack in turn: (kind, body, uid) of each one started; a process that has ended since it
    was listed goes into *ended* instead."""
    for kind, body in bodies:
        try:
            yield kind, body, server.attack(kind, body)
        except ProcessEnded as exc:
            ended.append(exc.process)


def _all_ended(ended: list[str], count: int) -> None:
    if count and len(ended) == count:
        raise ChaosDBError(f"every process of the target ended before chaosd reached it (pids {', '.join(ended)}): "
                           "is the node restarting? Check it is running, then inject again")


def _nodes(found: list[tuple[ProcessGroup, int]]) -> list[str]:
    return [str(g.target.get("name")) for g, _ in found]


def _attack(kind: str, groups: list[ProcessGroup], cluster_dir: str, route: Route, duration_s: float,
            params: dict[str, Any], bodies: list[tuple[str, dict[str, Any]]],
            nodes: list[str] | None = None) -> FaultRecord:
    """A fault record whose attacks are *bodies*, each on the node at the same place in *nodes* (default: the first
    target's). A process attack on a process that ended since it was listed (a
    backend that closed) is left out and named in ``params['ended']``; all of them ended is an error."""
    duration_s = checked_duration(duration_s)
    rec = new_record(kind, targets=[g.target for g in groups], params={**params, "via": route.via},
                     cluster_dir=cluster_dir)
    processes_only = all(attack_kind == "process" for attack_kind, _ in bodies)
    on = nodes or [str(groups[0].target.get("name"))] * len(bodies)

    def steps(rec: FaultRecord) -> None:
        ended: list[str] = []
        if route.via == "chaos-mesh":
            states = physical.create_objects(_object_entries(rec, route, bodies, on, duration_s),
                                             route.configuration, route.secrets, skip_ended=processes_only)
            ended = [str(st["ended"]) for st in states if "ended" in st]
            rec.attacks[:] = [entry for entry, st in zip(rec.attacks, states, strict=True) if "ended" not in st]
        else:
            for attack_kind, body, uid in _started(route.server, bodies, ended):
                rec.attacks.append(attack_entry(route.server, uid, attack_kind, body))
                rec.save()
        if ended:
            rec.params["ended"] = ended
            rec.save()
        _all_ended(ended, len(bodies))

    return inject(rec, steps, duration_s)


def _targets(targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [target_entry(t.get("name"), **{k: v for k, v in t.items() if k != "name"}) for t in targets]


def _result(rec: FaultRecord, **extra: Any) -> Dict[str, Any]:
    logger.info("chaosdb: %s fault %s on %s through %s (%s)", rec.kind, rec.id,
                ", ".join(str(t.get("name")) for t in rec.targets), rec.params.get("via", "chaosd"),
                ", ".join(f"{k}={v}" for k, v in rec.params.items() if k != "via"))
    return {"targets": _targets(rec.targets),
            "fault_id": rec.id, "kind": rec.kind, "params": rec.params, "injected_at": round(rec.created, 3),
            "reverts_at": round(rec.deadline, 3) if rec.deadline else None,
            "attacks": [{"uid": a["uid"], "action": a["action"]} for a in rec.attacks], **extra}


@action_result
def stop_processes(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, components: List[str] = None,
                   processes: str = "", duration_s: float = 0, chaosd_url: str = "", via: str = "",
                   physical_machine: str = "", cluster: str = "",
                   cluster_dir: str = "", configuration: Configuration = None,
                   secrets: Secrets = None) -> Dict[str, Any]:
    """Freeze the target's processes (SIGSTOP through chaosd) until the fault is reverted (SIGCONT): the node
    holds its connections and its leases but answers nothing, as a hung machine. ``components`` restricts it to
    ``etcd``, ``patroni`` or ``postgres``. Rollback: ``revert_attacks``."""
    groups, cdir = target_groups(target, count, components, processes, configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    found = _pids(groups)
    bodies = [("process", {"action": "stop", "process": str(pid), "signal": int(signals.SIGSTOP)})
              for _, pid in found]
    rec = _attack("chaosd-stop", groups, cdir, route, duration_s, {"pids": [p for _, p in found]}, bodies,
                  _nodes(found))
    return _result(rec)


@action_result
def kill_processes(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, components: List[str] = None,
                   processes: str = "", signal: int = 9, chaosd_url: str = "", via: str = "",
                   physical_machine: str = "", cluster: str = "",
                   cluster_dir: str = "", configuration: Configuration = None,
                   secrets: Secrets = None) -> Dict[str, Any]:
    """Send ``signal`` (9, SIGKILL) to the target's processes through chaosd. Nothing to revert: bring the node
    back with ``chaosdb.embedded.actions.restart_nodes`` (embedded cluster) or the machine's own supervisor."""
    groups, cdir = target_groups(target, count, components, processes, configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    found = _pids(groups)
    bodies = [("process", {"action": "kill", "process": str(pid), "signal": int(signal)}) for _, pid in found]
    if route.via == "chaos-mesh":
        uids, ended = _kill_through_chaos_mesh(route, bodies, _nodes(found), cdir)
    else:
        ended = []
        uids = [uid for _, _, uid in _started(route.server, bodies, ended)]
    _all_ended(ended, len(bodies))
    logger.info("chaosdb: signal %s to %s through %s", signal, ", ".join(str(p) for _, p in found), route.via)
    params: dict[str, Any] = {"signal": int(signal), "pids": [p for _, p in found], "via": route.via}
    if ended:
        params["ended"] = ended
    return {"targets": _targets([g.target for g in groups]), "kind": "chaosd-kill", "params": params,
            "attacks": [{"uid": u, "action": "kill"} for u in uids]}


def _kill_through_chaos_mesh(route: Route, bodies: list[tuple[str, dict[str, Any]]], nodes: list[str],
                             cluster_dir: str) -> tuple[list[str], list[str]]:
    """A kill is one-shot: one object per process, deleted once injected. chaosd recovers only a stop or an attack
    with a ``recoverCmd``; without one the controller would retry the recovery of a kill for ever, so the objects
    carry a no-op ``recoverCmd``. The uids of the attacks made and the pids that had ended already."""
    rec = new_record("chaosd-kill", params={"via": route.via}, cluster_dir=cluster_dir)
    objects = _object_entries(rec, route, bodies, nodes, 0, extra={"recoverCmd": "true"})
    try:
        states = physical.create_objects(objects, route.configuration, route.secrets, skip_ended=True)
    finally:
        for entry in rec.attacks:
            physical.recover_object(entry)
        rec.delete()
    return ([str(o["spec"]["uid"]) for o, st in zip(objects, states, strict=True) if "ended" not in st],
            [str(st["ended"]) for st in states if "ended" in st])


@action_result
def skew_clock(target: Union[str, Dict[str, Any]] = "leader", offset_s: float = -300.0, count: int = 1,
               components: List[str] = None, processes: str = "", duration_s: float = 0, chaosd_url: str = "",
               via: str = "", physical_machine: str = "", cluster: str = "", cluster_dir: str = "",
               configuration: Configuration = None,
               secrets: Secrets = None) -> Dict[str, Any]:
    """Clock skew (the replication study's clock drift): the target's processes read a wall clock (CLOCK_REALTIME)
    ``offset_s`` seconds off, through chaosd's ptrace + vDSO patch; the machine's clock and every other process
    keep the true time. The monotonic clock is left alone (skewing it stalls Go timers once the skew is
    recovered). Measured on etcd (Go) and Patroni (Python), whose answers are dated ``offset_s`` off. Only the
    processes running at injection are skewed: PostgreSQL backends forked after it read the true clock. Rollback:
    ``revert_attacks``."""
    _offset(offset_s)
    groups, cdir = target_groups(target, count, components, processes, configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    found = _pids(groups)
    offset = f"{float(offset_s):g}s"
    bodies = [("clock", {"action": "clock", "pid": pid, "time-offset": offset, "clock-ids-slice": "CLOCK_REALTIME"})
              for _, pid in found]
    rec = _attack("chaosd-clock", groups, cdir, route, duration_s,
                  {"offset_s": float(offset_s), "pids": [p for _, p in found]}, bodies, _nodes(found))
    return _result(rec)


@action_result
def stress_cpu(target: Union[str, Dict[str, Any]] = "leader", workers: int = 1, load: int = 100,
               duration_s: float = 0, chaosd_url: str = "", via: str = "", physical_machine: str = "",
                   cluster: str = "", cluster_dir: str = "",
               configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """CPU stress on the target's machine: ``workers`` stress-ng CPU workers each at ``load`` %, started by the
    chaosd serving the target. Every process of that machine competes with them (on the embedded cluster, where
    all nodes share one machine, every node does: compare ``chaosdb.faults.actions.limit_cpu``, which slows one
    node's processes only). Rollback: ``revert_attacks``."""
    groups, cdir = target_groups(target, 1, None, "", configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    body = {"action": "cpu", "workers": int(workers), "load": int(load)}
    rec = _attack("chaosd-stress-cpu", groups, cdir, route, duration_s, {"workers": int(workers),
                                                                           "load": int(load)}, [("stress", body)])
    return _result(rec)


@action_result
def stress_memory(target: Union[str, Dict[str, Any]] = "leader", size_mb: int = 256, duration_s: float = 0,
                  chaosd_url: str = "", via: str = "", physical_machine: str = "",
                   cluster: str = "", cluster_dir: str = "",
                  configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Memory stress on the target's machine: chaosd's memStress holds ``size_mb`` MiB until reverted (the page
    cache and every process of that machine feel it; compare ``limit_memory``, which caps one node).
    Rollback: ``revert_attacks``."""
    groups, cdir = target_groups(target, 1, None, "", configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    body = {"action": "mem", "size": f"{int(size_mb)}MB"}
    rec = _attack("chaosd-stress-memory", groups, cdir, route, duration_s, {"size_mb": int(size_mb)},
                  [("stress", body)])
    return _result(rec)


@action_result
def partition_node(target: Union[str, Dict[str, Any]] = "leader", direction: str = "both", device: str = "",
                   duration_s: float = 0, chaosd_url: str = "", via: str = "", physical_machine: str = "",
                   cluster: str = "", cluster_dir: str = "",
                   configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Network partition of the target's address through chaosd (iptables and an ipset on ``device``; the
    loopback device ``lo`` for a 127.x address, else give the interface the machine reaches its peers on):
    packets to it (``inbound``), from it (``outbound``) or both are dropped, for every peer and client alike
    (compare ``chaosdb.faults.actions.partition_node``, which can spare clients or peers). Rollback:
    ``revert_attacks``."""
    groups, cdir = target_groups(target, 1, None, "", configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    address = _address(groups[0])
    dev = device or ("lo" if address.startswith("127.") else "")
    if not dev:
        raise ChaosDBError(f"device is required for {address}: the network interface of the machine that carries "
                           "its traffic (e.g. eth0)")
    if urlsplit(route.server.url).hostname == address:
        raise ChaosDBError(f"{address} is the address chaosd listens on ({route.server.url}): a partition of it "
                           "would cut chaosd off from its own recovery; run chaosd on another address")
    body = {"action": "partition", "ip-address": address, "device": dev, "direction": _DIRECTIONS[direction]}
    bodies = [("network", body)]
    if route.via == "chaos-mesh" and direction == "both":  # the webhook takes only "to" or "from"
        bodies = [("network", {**body, "direction": way}) for way in ("to", "from")]
    rec = _attack("chaosd-partition", groups, cdir, route, duration_s,
                  {"address": address, "device": dev, "direction": direction}, bodies)
    return _result(rec)


def _loss_rule(way: str, address: str, probability: float, tag: str) -> list[str]:
    """The iptables rule (without the command and its -I/-D) that drops *probability* of the packets to
    (``inbound``: INPUT, destination) or from (``outbound``: OUTPUT, source) *address*."""
    chain, match = ("INPUT", "-d") if way == "inbound" else ("OUTPUT", "-s")
    return [chain, match, address, "-m", "statistic", "--mode", "random", "--probability", f"{probability:g}",
            "-m", "comment", "--comment", f"chaosdb:{tag}", "-j", "DROP"]


@action_result
def drop_packets(target: Union[str, Dict[str, Any]] = "leader", probability: float = 0.3,
                 direction: str = "inbound", duration_s: float = 0, chaosd_url: str = "", via: str = "",
                 physical_machine: str = "", cluster: str = "", cluster_dir: str = "",
                 configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Packet loss without netem: chaosd (a ``user_defined`` attack) inserts an iptables rule that drops
    ``probability`` (0..1) of the packets to the target's address (``inbound``), from it (``outbound``) or both,
    chosen at random per packet (iptables ``statistic`` match; no bursts); recovering deletes the rule. For kernels
    without netem, where chaosd's own loss attack fails (compare ``chaosdb.faults.actions.add_packet_loss``, which
    can also make bursts and spare clients). The rule carries the comment ``chaosdb:<tag>``, so ``chaosdb faults
    residue`` lists it and ``chaosdb faults cleanup --all-clusters`` removes it. Rollback: ``revert_attacks``."""
    groups, cdir = target_groups(target, 1, None, "", configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    address = _address(groups[0])
    if urlsplit(route.server.url).hostname == address:
        raise ChaosDBError(f"{address} is the address chaosd listens on ({route.server.url}): dropping its packets "
                           "would stop chaosd from recovering; run chaosd on another address")
    tag = f"chaosd-loss-{secrets_module.token_hex(4)}"
    bodies = []
    for way in (("inbound", "outbound") if direction == "both" else (direction,)):
        rule = " ".join(_loss_rule(way, address, float(probability), tag))
        bodies.append(("user_defined", {"attackCmd": f"iptables -w -I {rule}",
                                        "recoverCmd": f"iptables -w -D {rule}"}))
    rec = _attack("chaosd-loss", groups, cdir, route, duration_s,
                  {"address": address, "probability": float(probability), "direction": direction, "tag": tag},
                  bodies)
    return _result(rec)


@action_result
def fill_disk(target: Union[str, Dict[str, Any]] = "leader", path: str = "", size_mb: int = 1024,
              duration_s: float = 0, chaosd_url: str = "", via: str = "", physical_machine: str = "",
                   cluster: str = "", cluster_dir: str = "",
              configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Fill the disk the target writes to: chaosd allocates a file of ``size_mb`` MiB at ``path`` (a file that does
    not exist yet, on the filesystem to fill; the embedded cluster's default: ``chaosd-fill`` in the target node's
    folder), removed on revert. Rollback: ``revert_attacks``."""
    groups, cdir = target_groups(target, 1, None, "", configuration, cluster, cluster_dir, secrets)
    route = _route(chaosd_url, via, physical_machine, configuration, secrets, cdir)
    where = path
    if not where and cdir:
        where = os.path.join(cdir, str(groups[0].target["name"]), "chaosd-fill")
    if not where:
        raise ChaosDBError("path is required: a file, not existing yet, on the filesystem to fill")
    if os.path.exists(where):
        raise ChaosDBError(f"path {where} exists: give a new file name (chaosd removes the file on revert)")
    body = {"action": "fill", "path": where, "size": f"{int(size_mb)}M", "fallocate": True}
    rec = _attack("chaosd-disk-fill", groups, cdir, route, duration_s, {"path": where, "size_mb": int(size_mb)},
                  [("disk", body)])
    return _result(rec)


@action_result
def revert_attacks(all_clusters: bool = False, cluster: str = "", cluster_dir: str = "",
                   configuration: Configuration = None) -> Dict[str, Any]:
    """Rollback for every chaosd fault: recover the attacks this run made and those a run that is gone left on this
    run's cluster (every cluster's with ``all_clusters``). Idempotent. Faults a ``duration_s`` timer already ended
    are listed too, once (``chaosdb.faults.actions.revert_faults`` reverts these and the local engine's faults
    alike)."""
    return revert_faults(kinds=list(KINDS), all_clusters=all_clusters, cluster=cluster, cluster_dir=cluster_dir,
                         configuration=configuration)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _chaosd_url(value: Any) -> None:
    if value and not str(value).startswith(("http://", "https://")):
        raise ChaosDBError(f"chaosd_url must be http://host:port or https://host:port, got {value!r}")


def _offset(value: Any) -> None:
    number("offset_s", -MAX_SECONDS, maximum=MAX_SECONDS, hint=" (seconds; negative = behind)")(value)
    if float(value) == 0:
        raise ChaosDBError("offset_s must not be 0: a skew of 0 s changes nothing")


def _physical_machine(value: Any) -> None:
    if value and (str(value).count("/") != 1 or not all(str(value).split("/"))):
        raise ChaosDBError(f"physical_machine must be namespace/name of a PhysicalMachine, got {value!r}")


check_arguments(globals(), None, None, target=check_fault_target, components=check_components, chaosd_url=_chaosd_url,
                via=choice("via", "chaosd", "chaos-mesh"), physical_machine=_physical_machine,
                offset_s=_offset, direction=choice("direction", *_DIRECTIONS),
                probability=number("probability", above=0, maximum=1, hint=" (the fraction of packets dropped)"),
                workers=number("workers", 1, maximum=1024, integer=True),
                load=number("load", 1, maximum=100, integer=True, hint=" (percent of a CPU per worker)"),
                size_mb=number("size_mb", 1, maximum=1 << 24, integer=True, hint=" (MiB)"),
                signal=number("signal", 1, maximum=64, integer=True))
