"""CPU, memory and network faults on one machine (embedded cluster or local processes).

=========================  ===============================================  =========================
action                     what happens                                     mechanism
=========================  ===============================================  =========================
``limit_cpu``              target's processes share ``quota_s`` CPU s per   cgroup v2 ``cpu.max`` /
                           ``period_s``                                     v1 ``cpu.cfs_quota_us``
``limit_memory``           target's processes share ``limit_mb`` MiB, no    v2 ``memory.max`` / v1
                           swap; OOM kills and limit hits are reported      ``memory.limit_in_bytes``
``partition_node``         drop the target's traffic with peers / clients   iptables DROP (INPUT)
``lose_packets``           drop ``loss_percent`` % at random                iptables ``statistic``
``lose_packets_in_bursts`` same loss in bursts of ``mean_burst_packets``    Gilbert model: statistic
                                                                            + recent
``limit_bandwidth``        shape the target's traffic to ``rate_kbit``      tc htb on lo + fw mark
``delay_traffic``          add ``delay_ms`` ± ``jitter_ms``                 netem if the kernel has
                                                                            it, else a TCP proxy
``revert_faults``          rollback: undo active faults (all, or by kind /
                           target / id); returns what each fault did
``cleanup_faults``         revert everything and sweep anything tagged
=========================  ===============================================  =========================

Targets are chosen when the action runs, as for node failures: ``target`` is a
role (``leader``, ``replica``, ``etcd-leader``, ...) or node names, ``count``
how many. ``limit_cpu`` and ``limit_memory`` also take a database role target
(``{"role": "tikv-leader", "key": "user1"}``, ``{"role": "cockroach-leaseholder",
"table": "warehouse", "row": [1]}``: see :mod:`chaosdb.core.adapters`), whose
local server process the database's adapter finds. ``duration_s`` > 0 makes the fault revert itself from a detached
process even if ``chaos run`` dies; always pair a fault with ``revert_faults``
as rollback. Every fault needs root; what the host lacks (a cgroup controller,
iptables, tc) is reported before anything changes.

Network faults tell a node's traffic apart by its address and its user (see
:mod:`chaosdb.faults.classify`): ``scope`` is ``peers`` (other nodes), ``clients``
(everyone else: the load, probes) or ``all``; ``direction`` is ``inbound``,
``outbound`` or ``both`` (as seen from the target).
"""

import logging
import os
import signal as _signal
from typing import Any, Dict, List, Union

from chaoslib.types import Configuration, Secrets

from chaosdb.core.adapters import DatabaseAdapter, split_role
from chaosdb.core.arguments import check_arguments, choice, number
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.records import FaultRecord, RunScope, load_record
from chaosdb.core.home import resolve_cluster_dir
from chaosdb.core.local_cluster import local_cluster_dir
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.core.signals import ENDING_SIGNALS, signal_name
from chaosdb.faults import engine
from chaosdb.faults.classify import DIRECTIONS, SCOPES
from chaosdb.faults.host import netem_available
from chaosdb.faults.targets import (
    ResolvedTargets,
    check_components,
    check_fault_target,
    groups_of,
    identities,
    is_pid_target,
    node_ports,
    pid_groups,
    resolve_targets,
    role_target,
    target_groups,
)

__all__ = [
    "limit_cpu",
    "limit_memory",
    "suspend_processes",
    "kill_processes",
    "partition_node",
    "lose_packets",
    "lose_packets_in_bursts",
    "limit_bandwidth",
    "delay_traffic",
    "revert_faults",
    "cleanup_faults",
]

logger = logging.getLogger("chaostoolkit")


def _result(rec: FaultRecord, **extra: Any) -> Dict[str, Any]:
    out = {"targets": [target_entry(t.get("name"), **{k: v for k, v in t.items() if k != "name"}) for t in rec.targets],
           "fault_id": rec.id, "kind": rec.kind, "params": rec.params,
           "injected_at": round(rec.created, 3), "reverts_at": round(rec.deadline, 3) if rec.deadline else None,
           **extra}
    if rec.cgroups:
        out["cgroups"] = [{"target": c["target"], "path": c["path"], "pids": c.get("pids", []),
                           "applied": c.get("applied", {})} for c in rec.cgroups]
    if rec.notes:
        out["notes"] = rec.notes
    logger.info("chaosdb: %s fault %s on %s (%s)", rec.kind, rec.id,
                ", ".join(str(t.get("name")) for t in rec.targets),
                ", ".join(f"{k}={v}" for k, v in rec.params.items()))
    return out


@action_result
def limit_cpu(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, quota_s: float = 0.05,
              period_s: float = 1.0, components: List[str] = None, duration_s: float = 0, processes: str = "",
              cluster: str = "", cluster_dir: str = "", configuration: Configuration = None,
              secrets: Secrets = None) -> Dict[str, Any]:
    """CPU contention: the target node's processes together may run ``quota_s`` seconds of CPU per
    ``period_s`` (0.05 per 1.0 = 5 % of one core, as in the TiKV study).

    ``components`` restricts the limit to some of the node's processes (``etcd``, ``patroni``,
    ``postgres``); ``processes`` targets every local process whose command line contains that text
    instead of a cluster node (e.g. ``"cockroach start"``). Processes forked later (new PostgreSQL
    backends) are born inside the limit. Rollback: ``revert_faults``.
    """
    groups, cdir = target_groups(target, count, components, processes, configuration, cluster, cluster_dir, secrets)
    return _result(engine.inject_cpu_quota(groups, quota_s, period_s, duration_s, cdir))


@action_result
def limit_memory(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, limit_mb: float = 256,
                 components: List[str] = None, duration_s: float = 0, processes: str = "", cluster: str = "",
                 cluster_dir: str = "", configuration: Configuration = None,
                 secrets: Secrets = None) -> Dict[str, Any]:
    """Memory pressure: the target node's processes together may use at most ``limit_mb`` MiB, without
    swap. Under pressure the kernel reclaims page cache, then the OOM killer kills a process of the
    group; ``revert_faults`` returns the limit hits, peak usage and OOM kills it caused.

    Pages a process touched before the fault stay charged where they were (cgroup semantics), so the
    limit bites on what the node allocates from now on. ``components`` / ``processes`` as for ``limit_cpu``.
    """
    groups, cdir = target_groups(target, count, components, processes, configuration, cluster, cluster_dir, secrets)
    return _result(engine.inject_memory_limit(groups, limit_mb, duration_s, cdir))


@action_result
def suspend_processes(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, components: List[str] = None,
                      duration_s: float = 0, processes: str = "", allow_quorum_loss: bool = False, cluster: str = "",
                      cluster_dir: str = "", configuration: Configuration = None,
                      secrets: Secrets = None) -> Dict[str, Any]:
    """Hang: SIGSTOP every process of the target (a node of the embedded cluster by role or name, a database role
    target such as ``{"role": "etcd-leader"}``, or the local processes whose command line contains
    ``processes``); they keep their sockets and answer nothing. ``components`` as for ``limit_cpu``. Suspending
    a majority of the embedded cluster's nodes is refused unless ``allow_quorum_loss``.

    Each stopped process is recorded first, so ``revert_faults`` (the rollback), the faults control after the run
    or ``chaosdb faults cleanup`` continue them (SIGCONT) from any process; with ``duration_s`` > 0 a detached
    timer continues them then, even when ``chaos run`` dies. Returns at once (pair it with a pause)."""
    if processes or is_pid_target(target):
        groups, cdir = target_groups(target, count, components, processes, configuration, cluster, cluster_dir,
                                     secrets)
        verdict: Dict[str, Any] = {}
    else:
        resolved = resolve_targets(target, count, configuration, cluster, cluster_dir, secrets, "suspend",
                                   bool(allow_quorum_loss), components)
        groups, cdir, verdict = groups_of(resolved), resolved.cluster_dir, resolved.verdict
    rec = engine.inject_suspend(groups, duration_s, cdir, {"signal": "SIGSTOP"})
    stopped: Dict[str, List[int]] = {}
    for entry in rec.stopped:
        stopped.setdefault(str(entry["target"]), []).append(int(entry["pid"]))
    return _result(rec, stopped_pids=stopped, quorum=verdict or None)


#: what ``kill_processes`` sends: a crash, graceful stops, a reload (STOP/CONT are suspend_processes and its revert)
KILL_SIGNALS = (*ENDING_SIGNALS, "HUP")


@action_result
def kill_processes(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, signal: str = "KILL",
                   components: List[str] = None, wait_s: float = 5.0, processes: str = "",
                   allow_quorum_loss: bool = False, cluster: str = "", cluster_dir: str = "",
                   configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Crash (``signal`` ``KILL``, the default) or graceful stop (``TERM``, ``INT``, ``QUIT``) of every process of
    the target at once: a node of the embedded cluster by role or name, a database role target such as
    ``{"role": "tikv-store", "store": 4}``, processes a database's action already found (``{"pids": [...]}``), or
    the local processes whose command line contains ``processes``. ``components`` as for ``limit_cpu``. Killing
    (KILL/TERM/INT/QUIT) a majority of the embedded cluster's nodes is refused unless ``allow_quorum_loss``.

    Waits up to ``wait_s`` seconds for them to exit (0: not at all) and reports whether they did (a process that
    outlives SIGKILL is an error). Nothing restarts them and there is nothing to revert: the database's supervisor,
    ``restart_nodes`` or the way you started them does."""
    sig = signal_name(signal)
    if sig not in KILL_SIGNALS:
        raise ChaosDBError(f"signal must be one of {', '.join(KILL_SIGNALS)} (SIGSTOP is suspend_processes, which "
                           f"records what it stopped so it can be continued); got {signal!r}")
    if wait_s < 0:
        raise ChaosDBError("wait_s must be >= 0")
    verdict: Dict[str, Any] = {}
    if processes or is_pid_target(target):
        groups, _ = target_groups(target, count, components, processes, configuration, cluster, cluster_dir, secrets)
    else:
        resolved = resolve_targets(target, count, configuration, cluster, cluster_dir, secrets,
                                   "kill" if sig in ENDING_SIGNALS else "", bool(allow_quorum_loss), components)
        groups, verdict = groups_of(resolved), resolved.verdict
    done = engine.signal_processes(groups, getattr(_signal, "SIG" + sig), float(wait_s))
    if done["survivors"] and sig == "KILL":
        raise ChaosDBError(f"processes still alive {wait_s} s after SIGKILL: {done['survivors']}")
    logger.info("chaosdb: SIG%s to %s", sig, ", ".join(f"{k} {v}" for k, v in done["signalled"].items()))
    return {"targets": [target_entry(g.target.get("name"), **{k: v for k, v in g.target.items() if k != "name"})
                        for g in groups],
            "signal": sig, "killed_pids": done["signalled"], "exited": done["exited"],
            "exit_wait_s": done["exit_wait_s"], "still_running": done["survivors"] or None, "quorum": verdict or None}


def signal_resolved(target: Dict[str, Any], signal: str, wait_s: float = 0,
                    configuration: Configuration = None) -> Dict[str, Any]:
    """For a database's own kill action (not an activity): any of :data:`chaosdb.core.signals.SIGNALS` to the
    processes it found (``{"pids": [...], "name": ...}``) through this engine: STOP as ``suspend_processes``
    (recorded: the rollback, cleanup and the faults control continue it), CONT by reverting that suspension (and
    continuing them if stopped without a record), the others as ``kill_processes``. Adds ``exited``."""
    sig = signal_name(signal)
    if sig == "STOP":
        return {**suspend_processes(target=target, configuration=configuration), "exited": False}
    if sig == "CONT":
        reverted = revert_faults(kinds=["suspend"], target=str(target.get("name") or ""), all_clusters=True,
                                 configuration=configuration)["reverted"]
        resumed = engine.signal_processes(pid_groups(target), _signal.SIGCONT)["signalled"]
        return {"reverted": reverted, "signalled": resumed, "exited": False}
    return kill_processes(target=target, signal=sig, wait_s=wait_s, configuration=configuration)


def _network_targets(target: Any, count: Any, configuration: Any, cluster: str, cluster_dir: str,
                     quorum_what: str = "", allow_quorum_loss: bool = False):
    """The resolved targets, every node's identity in their cluster, and the targets' own identities."""
    resolved = resolve_targets(target, count, configuration, cluster, cluster_dir, None, quorum_what,
                               allow_quorum_loss)
    nodes = identities(resolved, configuration)
    names = {n.name for n in resolved.nodes}
    return resolved, nodes, [n for n in nodes if n.name in names]


def _roles(resolved: ResolvedTargets) -> Dict[str, List[str]]:
    return {n.name: list(n.detail.get("roles") or [resolved.target["role"]]) for n in resolved.nodes}


def _network(kind: str, target: Any, count: Any, scope: str, direction: str, duration_s: float,
             configuration: Any, cluster: str, cluster_dir: str, quorum_what: str = "",
             allow_quorum_loss: bool = False, **kwargs: Any) -> Dict[str, Any]:
    resolved, nodes, targets = _network_targets(target, count, configuration, cluster, cluster_dir, quorum_what,
                                                allow_quorum_loss)
    rec = engine.inject_network(kind, targets, nodes, scope, direction, duration_s, resolved.cluster_dir, **kwargs)
    return _result(rec, roles_at_injection=_roles(resolved), quorum=resolved.verdict)


@action_result
def partition_node(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, scope: str = "all", direction: str = "both",
                   duration_s: float = 0, allow_quorum_loss: bool = False, cluster: str = "", cluster_dir: str = "",
                   configuration: Configuration = None) -> Dict[str, Any]:
    """Network partition: silently drop the target node's packets with its peers (``scope="peers"``),
    its clients (``"clients"``) or both (``"all"``), in one ``direction`` or ``both``.

    Packets vanish as on a cut link (no error is returned to the sender; TCP retries and times out).
    Partitioning as many nodes as would cost the majority is refused unless ``allow_quorum_loss``.
    """
    return _network("partition", target, count, scope, direction, duration_s, configuration, cluster, cluster_dir,
                    quorum_what="partition", allow_quorum_loss=allow_quorum_loss)


@action_result
def lose_packets(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, loss_percent: float = 5.0, scope: str = "all",
                 direction: str = "both", duration_s: float = 0, cluster: str = "", cluster_dir: str = "",
                 configuration: Configuration = None) -> Dict[str, Any]:
    """Random packet loss: each packet of the target's traffic in ``scope``/``direction`` is dropped
    with probability ``loss_percent`` / 100, independently of the others."""
    return _network("loss", target, count, scope, direction, duration_s, configuration, cluster, cluster_dir,
                    loss_percent=loss_percent)


@action_result
def lose_packets_in_bursts(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, loss_percent: float = 5.0,
                           mean_burst_packets: float = 4.0, scope: str = "all", direction: str = "both",
                           duration_s: float = 0, cluster: str = "", cluster_dir: str = "",
                           configuration: Configuration = None) -> Dict[str, Any]:
    """Bursty packet loss (Gilbert model): the same long-run ``loss_percent`` as ``lose_packets`` but
    lost packets come in bursts of ``mean_burst_packets`` on average (geometric), which hurts TCP
    far more than spread-out loss. The burst state is kept per source address."""
    return _network("bursty-loss", target, count, scope, direction, duration_s, configuration, cluster,
                    cluster_dir, loss_percent=loss_percent, burst_packets=mean_burst_packets)


@action_result
def limit_bandwidth(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, rate_kbit: int = 1024, scope: str = "all",
                    direction: str = "both", duration_s: float = 0, cluster: str = "", cluster_dir: str = "",
                    configuration: Configuration = None) -> Dict[str, Any]:
    """Bandwidth limit: the target's traffic in ``scope``/``direction`` shares one htb class of
    ``rate_kbit`` kbit/s on ``lo`` (packets beyond it queue, then drop)."""
    return _network("bandwidth", target, count, scope, direction, duration_s, configuration, cluster, cluster_dir,
                    rate_kbit=rate_kbit)


@action_result
def delay_traffic(target: Union[str, Dict[str, Any]] = "leader", count: int = 1, delay_ms: float = 100.0, jitter_ms: float = 0.0,
                  ports: List[str] = None, scope: str = "clients", direction: str = "both",
                  existing_connections: str = "reset", duration_s: float = 0, cluster: str = "",
                  cluster_dir: str = "", configuration: Configuration = None) -> Dict[str, Any]:
    """Latency and jitter on the target's traffic.

    With netem in the kernel: every packet in ``scope``/``direction`` waits ``delay_ms`` ± ``jitter_ms``
    (``ports`` ignored). Without netem (these hosts): connections to the target's ``ports``
    (``postgres``, ``patroni``, ``etcd``, ``etcd-peer`` or numbers; default ``["postgres"]``) from
    ``scope`` go through a TCP proxy that holds each chunk ``delay_ms`` ± ``jitter_ms`` in each
    ``direction`` (``both`` adds twice the delay per round trip). Only new connections can be
    redirected: ``existing_connections="reset"`` resets the open ones (clients reconnect through the
    proxy), ``"keep"`` leaves them undelayed.
    """
    resolved, nodes, targets = _network_targets(target, count, configuration, cluster, cluster_dir)
    if netem_available():
        rec = engine.inject_network("delay", targets, nodes, scope, direction, duration_s, resolved.cluster_dir,
                                    delay_ms=delay_ms, jitter_ms=jitter_ms)
    else:
        ports_by_node = {n.name: node_ports(n, ports or ["postgres"]) for n in resolved.nodes}
        rec = engine.inject_proxy_delay(targets, nodes, ports_by_node, delay_ms, jitter_ms, scope, direction,
                                        existing_connections, duration_s, resolved.cluster_dir)
    return _result(rec, roles_at_injection=_roles(resolved))


@action_result
def revert_faults(kinds: List[str] = None, target: str = "", fault_id: str = "", all_clusters: bool = False,
                  cluster: str = "", cluster_dir: str = "", configuration: Configuration = None) -> Dict[str, Any]:
    """Rollback for every fault action: undo the active local faults this run made (all of them, or those of
    ``kinds`` such as ``["cpu", "partition"]``, on node ``target``, or one ``fault_id``), and those a run that is
    gone left on this run's cluster. Faults of other runs and other clusters on the same host are left alone
    unless ``all_clusters``.

    Idempotent (nothing active: ``reverted`` is empty). Each entry of ``reverted`` tells what the fault
    did while it was active: CPU throttled periods and time, memory peak, limit hits and OOM kills, packets
    dropped. Faults that a ``duration_s`` timer already ended are listed too (``"reverted_by": "timer"``),
    once. ``targets`` are the nodes whose faults were undone.
    """
    scope = RunScope.this_run(_cluster_dir_of(cluster, cluster_dir, configuration), bool(all_clusters))
    if fault_id:
        rec = load_record(fault_id)
        done = [engine.revert(rec)] if rec is not None and scope.matches(rec) else []
    else:
        if target and not isinstance(target, str):
            raise ChaosDBError("target must be one node name")
        done = engine.revert_all(kinds or (), targets=[target] if target else (), include_timed=True, scope=scope)
    nodes = dict.fromkeys(str(name) for entry in done for name in entry.get("targets") or [])
    return {"targets": [target_entry(name) for name in nodes], "reverted": done}


def _cluster_dir_of(cluster: str, cluster_dir: str, configuration: Any) -> str:
    """The folder of the embedded cluster the arguments or the configuration name, or "" when none is named."""
    try:
        return local_cluster_dir(cluster, cluster_dir, configuration)
    except ChaosDBError:
        return ""


@action_result
def cleanup_faults(cluster: str = "", cluster_dir: str = "", configuration: Configuration = None) -> Dict[str, Any]:
    """Revert every recorded fault and remove anything of the fault engine left without a record
    (tagged iptables chains and rules, cgroups, the tc qdisc, proxies, reverters). The same as
    ``chaosdb faults cleanup``; ``clean`` is true when nothing is left. With ``cluster`` / ``cluster_dir``: only that
    cluster's faults, whoever made them (their records, and the iptables chains tagged with its folder even without a
    record), as ``chaosdb faults cleanup --name/--dir`` and ``chaosdb cluster down`` do; other clusters' are kept."""
    scoped = str(resolve_cluster_dir(cluster, cluster_dir)) if cluster or cluster_dir else ""  # may be gone already
    return {"targets": [], **engine.cleanup(scoped)}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _kinds(value: Any) -> None:
    unknown = [k for k in (value or []) if k not in engine.FAULT_KINDS]
    if unknown:
        raise ChaosDBError(f"unknown fault kind(s) {', '.join(map(str, unknown))}: use {', '.join(engine.FAULT_KINDS)}")


def _one_node_or_none(value: Any) -> None:
    if value and not (isinstance(value, str) and "," not in value and value.strip() == value):
        raise ChaosDBError(f"target must be one node's name as the faults name it (node1, ...), got {value!r}")


def _network_target(value: Any) -> None:
    """A network fault's target: a role whose adapter lists its nodes' addresses and users (the embedded cluster's)."""
    check_fault_target(value)
    adapter, _ = split_role(role_target(value)["role"])
    if type(adapter).members is DatabaseAdapter.members:
        adapter.members({}, {}, None)  # raises the adapter's reason


def _cpu_rule(args: Dict[str, Any]) -> None:
    """A CPU quota is a limit only below what the machine has: ``quota_s / period_s`` CPUs, at most its cores (the
    host engine's targets run here)."""
    cores = os.cpu_count() or 1
    share = float(args["quota_s"]) / float(args["period_s"])
    if share > cores:
        raise ChaosDBError(f"quota_s / period_s is {share:g} CPUs ({share * 100:.0f} % of one core), more than the "
                           f"{cores} core(s) this machine has: such a limit never bites; give at most "
                           f"quota_s = {cores * float(args['period_s']):g} for period_s = {float(args['period_s']):g}")


def _delay_rule(args: Dict[str, Any]) -> None:
    if float(args["jitter_ms"]) > float(args["delay_ms"]):
        raise ChaosDBError(f"jitter_ms must be between 0 and delay_ms ({args['delay_ms']}), got {args['jitter_ms']}")


_NODES_ONLY = {"target": _network_target}  # network faults need every node's address and user
check_arguments(globals(), {"delay_traffic": _delay_rule, "limit_cpu": _cpu_rule},
                {"revert_faults": {"target": _one_node_or_none},
                 **{name: _NODES_ONLY for name in ("partition_node", "lose_packets", "lose_packets_in_bursts",
                                                    "limit_bandwidth", "delay_traffic")}},
                target=check_fault_target, components=check_components, kinds=_kinds,
                scope=choice("scope", *SCOPES), direction=choice("direction", *DIRECTIONS),
                quota_s=number("quota_s", 0.001, hint=" (seconds)"),
                period_s=number("period_s", 0.001, maximum=1.0, hint=" (seconds, the kernel's range)"),
                limit_mb=number("limit_mb", 8, hint=" (MiB)"), rate_kbit=number("rate_kbit", 8),
                mean_burst_packets=number("mean_burst_packets", 1), delay_ms=number("delay_ms", above=0),
                jitter_ms=number("jitter_ms", 0), existing_connections=choice("existing_connections", "reset", "keep"),
                signal=choice("signal", *KILL_SIGNALS), wait_s=number("wait_s", 0, hint=" (seconds)"))
