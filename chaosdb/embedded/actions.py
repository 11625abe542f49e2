"""Node failures on the embedded cluster: the three levels of the thesis, plus hangs, and their rollbacks (the
cluster's lifecycle and the operator changes are in :mod:`chaosdb.clusters.postgres_ha.operations`).

=========================  ==========================================  ============================
action                     what happens                                rollback
=========================  ==========================================  ============================
``kill_postgres_process``  SIGKILL the PostgreSQL postmaster;          (Patroni restarts it)
                           Patroni, its supervisor, restarts it
``stop_database``          graceful database-level stop: switchover    ``restart_nodes``
                           away from the node (or not), drain wait,
                           then Patroni stops PostgreSQL cleanly
``kill_node``              SIGKILL every process of the node (etcd,    ``restart_nodes``
                           Patroni, PostgreSQL); it stays down
``suspend_node``           SIGSTOP every process of the node (a hang), ``resume_nodes``
                           optionally resumed after ``duration_s``
=========================  ==========================================  ============================

Targets are resolved when the action runs: ``target`` is a role (``leader``,
``replica``, ``etcd-leader``, ``etcd-follower``, ``any``, ``random``) or node
names, ``count`` how many. A fault that would leave fewer than a majority of
nodes up is refused before anything happens unless ``allow_quorum_loss`` is true.

The cluster is found from ``cluster`` / ``cluster_dir`` arguments, else from the
configuration keys ``chaosdb_cluster_dir`` / ``chaosdb_cluster``, else
``CHAOSDB_CLUSTER_DIR``, else the default cluster ``chaosdb``.
"""

import logging
import signal
import time
from typing import Any, Dict, List

from chaoslib.types import Configuration

from chaosdb.core.arguments import check_arguments, choice, one_of_or_names
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.core.targets import Target
from chaosdb.core.timeutil import Stopwatch
from chaosdb.embedded import health as cluster_health
from chaosdb.embedded import nodeproc
from chaosdb.embedded.nodes import check_target, choose, is_node_name, open_cluster
from chaosdb.embedded.processes import node_processes, signal_pids
from chaosdb.embedded.state import ClusterLayout

__all__ = [
    "kill_postgres_process",
    "kill_etcd_member",
    "stop_database",
    "kill_node",
    "suspend_node",
    "resume_nodes",
    "restart_nodes",
]

logger = logging.getLogger("chaostoolkit")


def _kill(pids: dict[str, list[int]], wait_s: float, configuration: Any) -> dict[str, list[int]]:
    """SIGKILL the processes found for each node, all at once, through the host engine (``kill_processes``: the
    nodes chosen and the quorum checked here); the pids each node had signalled (a node already down has none)."""
    targets = [{"pids": found, "name": name} for name, found in pids.items() if found]
    if not targets:
        return {}
    done = engine_action("host", "kill_processes")(target=targets, signal="KILL", wait_s=wait_s,
                                                  configuration=configuration)
    return dict(done["killed_pids"])


def _record(action: str, layout: ClusterLayout, target: Any, chosen: list[Target], verdict: dict[str, Any],
            watch: Stopwatch, **extra: Any) -> Dict[str, Any]:
    return {
        "action": action,
        "cluster": layout.name,
        "cluster_dir": layout.dir,
        "selector": target if isinstance(target, str) else list(target),
        "targets": [t.as_dict() for t in chosen],
        "quorum": verdict,
        **extra,
        **watch.stop().as_dict(),
    }


@action_result
def kill_postgres_process(target: str = "leader", count: int = 1, allow_quorum_loss: bool = False,
                          cluster: str = "", cluster_dir: str = "",
                          configuration: Configuration = None) -> Dict[str, Any]:
    """Process failure: SIGKILL the PostgreSQL postmaster of the target node(s).

    Patroni (the node's supervisor) notices and restarts PostgreSQL; when the
    killed one was the leader, Patroni restarts it in place (within
    ``primary_start_timeout``) rather than failing over. etcd and Patroni keep
    running. Returns the targets with the killed pid and timestamps.
    """
    layout = open_cluster(cluster, cluster_dir, configuration)
    chosen, verdict, status = choose(layout, target, count, allow_quorum_loss, "kill the PostgreSQL process of")
    pids = {n["name"]: n["pids"]["postmaster"] for n in status["nodes"]}
    missing = [t.name for t in chosen if not pids.get(t.name)]
    if missing:
        raise ChaosDBError(f"no running PostgreSQL postmaster on {', '.join(missing)}: nothing to kill")
    watch = Stopwatch()
    killed = _kill({t.name: [pids[t.name]] for t in chosen}, wait_s=0, configuration=configuration)
    for t in chosen:
        t.details["pids"] = {"postmaster": pids[t.name]}
    logger.info("chaosdb: SIGKILL postmaster of %s", ", ".join(killed))
    return _record("kill_postgres_process", layout, target, chosen, verdict, watch, signal="SIGKILL",
                   killed_pids=killed)


@action_result
def stop_database(target: str = "leader", count: int = 1, method: str = "switchover", drain_wait_s: float = 5.0,
                  grace_s: float = 30.0, switchover_timeout_s: float = 60.0, allow_quorum_loss: bool = False,
                  cluster: str = "", cluster_dir: str = "",
                  configuration: Configuration = None) -> Dict[str, Any]:
    """Database-level stop through the database's own means (the thesis's graceful level).

    ``method="switchover"``: when the target leads, Patroni first switches the
    leadership to another member (clients are disconnected cleanly and
    reconnect to the new primary); then, after ``drain_wait_s`` seconds, Patroni
    on the target is stopped, which shuts PostgreSQL down with a fast shutdown.
    ``method="shutdown"``: no switchover; Patroni shuts PostgreSQL down and
    releases the leader key so a replica takes over at once.

    ``grace_s`` bounds the clean shutdown; what is still running after it is
    SIGKILLed (reported in ``sigkilled``). The node's etcd member keeps
    running. Roll back with ``restart_nodes``.
    """
    if method not in ("switchover", "shutdown"):
        raise ChaosDBError(f"method must be 'switchover' or 'shutdown', got {method!r}")
    if drain_wait_s < 0 or grace_s <= 0:
        raise ChaosDBError("drain_wait_s must be >= 0 and grace_s > 0")
    layout = open_cluster(cluster, cluster_dir, configuration)
    chosen, verdict, status = choose(layout, target, count, allow_quorum_loss, "stop the database on")
    watch = Stopwatch()
    switchover = None
    if method == "switchover":
        leader = next((t for t in chosen if "leader" in t.roles), None)
        if leader is not None:
            client = cluster_health.patroni_client(layout)
            candidates = [n["name"] for n in status["nodes"]
                          if n["name"] not in {t.name for t in chosen} and n["state"] == "streaming"]
            if not candidates:
                raise ChaosDBError("no streaming replica outside the targets to switch over to")
            t0 = time.monotonic()
            message = client.switchover(leader.name)
            new_leader = client.wait_for_leader(switchover_timeout_s, not_named=leader.name)
            switchover = {"from": leader.name, "to": new_leader.name, "seconds": round(time.monotonic() - t0, 3),
                          "message": message}
    if drain_wait_s:
        time.sleep(drain_wait_s)
    stopped = {t.name: nodeproc.stop_node(layout, t.name, graceful=True, timeout=grace_s,
                                          components=("patroni",)) for t in chosen}
    return _record("stop_database", layout, target, chosen, verdict, watch, method=method,
                   drain_wait_s=drain_wait_s, grace_s=grace_s, switchover=switchover,
                   sigkilled={k: v["sigkilled"] for k, v in stopped.items()})


@action_result
def kill_node(target: str = "leader", count: int = 1, allow_quorum_loss: bool = False,
              cluster: str = "", cluster_dir: str = "",
              configuration: Configuration = None) -> Dict[str, Any]:
    """Node failure: SIGKILL every process of the target node(s) at once.

    etcd member, Patroni and PostgreSQL (postmaster and backends) die together,
    as when a machine loses power; nothing restarts them. When the leader is
    killed a replica is promoted once the leader key's lease expires (Patroni
    ``ttl``). Roll back with ``restart_nodes``.
    """
    layout = open_cluster(cluster, cluster_dir, configuration)
    chosen, verdict, _status = choose(layout, target, count, allow_quorum_loss, "kill")
    victims: dict[str, list[dict[str, Any]]] = {}
    for t in chosen:
        node = layout.node(t.name)
        victims[t.name] = [p.as_dict() for p in node_processes(node.path, node.data_dir)]
    watch = Stopwatch()
    _kill({name: [p["pid"] for p in procs] for name, procs in victims.items()}, wait_s=5,
          configuration=configuration)  # refuses when a process survives
    for t in chosen:
        t.details["processes"] = victims[t.name]
    all_pids = [p["pid"] for procs in victims.values() for p in procs]
    logger.info("chaosdb: killed node(s) %s (%d processes)", ", ".join(victims), len(all_pids))
    return _record("kill_node", layout, target, chosen, verdict, watch, signal="SIGKILL")


@action_result
def kill_etcd_member(target: str = "etcd-leader", count: int = 1, allow_quorum_loss: bool = False,
                     cluster: str = "", cluster_dir: str = "",
                     configuration: Configuration = None) -> Dict[str, Any]:
    """Key-value store failure: SIGKILL only the etcd member of the target node(s) (``etcd-leader`` or
    ``etcd-follower``: the TiKV study's leader-versus-follower design on a real Raft store). Patroni
    and PostgreSQL keep running (Patroni retries its DCS through the other members). Refused when it
    would leave etcd without a majority unless ``allow_quorum_loss``. Roll back with ``restart_nodes``.
    """
    layout = open_cluster(cluster, cluster_dir, configuration)
    chosen, verdict, _status = choose(layout, target, count, allow_quorum_loss, "kill the etcd member of")
    members: dict[str, list[int]] = {}
    for t in chosen:
        node = layout.node(t.name)
        members[t.name] = [p.pid for p in node_processes(node.path, node.data_dir) if p.kind == "etcd"]
        if not members[t.name]:
            raise ChaosDBError(f"no etcd member runs on {t.name}: nothing to kill")
    watch = Stopwatch()
    killed = _kill(members, wait_s=5, configuration=configuration)  # refuses when a process survives
    logger.info("chaosdb: killed the etcd member of %s", ", ".join(killed))
    return _record("kill_etcd_member", layout, target, chosen, verdict, watch, signal="SIGKILL", killed_pids=killed)


@action_result
def suspend_node(target: str = "leader", count: int = 1, duration_s: float = 0.0, allow_quorum_loss: bool = False,
                 cluster: str = "", cluster_dir: str = "",
                 configuration: Configuration = None) -> Dict[str, Any]:
    """Hang: SIGSTOP every process of the target node(s); they keep their sockets but answer nothing.

    The host fault engine's ``suspend_processes`` does it (:mod:`chaosdb.faults.actions`): a fault record first, so
    ``resume_nodes``, ``revert_faults``, the faults control after the run and ``chaosdb faults cleanup`` all
    continue them. With ``duration_s`` > 0 a detached timer resumes them after that many seconds even if ``chaos
    run`` dies meanwhile; the action itself returns at once (pair it with a pause). Roll back with
    ``resume_nodes``. A leader hung for longer than Patroni's ``ttl`` loses leadership to a replica.
    """
    if duration_s < 0:
        raise ChaosDBError("duration_s must be >= 0")
    layout = open_cluster(cluster, cluster_dir, configuration)
    chosen, verdict, _status = choose(layout, target, count, allow_quorum_loss, "suspend")
    watch = Stopwatch()
    done = engine_action("host", "suspend_processes")(  # the nodes chosen (and the quorum checked) here, by name
        target=[t.name for t in chosen], count="all", duration_s=duration_s, cluster_dir=layout.dir,
        configuration=configuration)
    return _record("suspend_node", layout, target, chosen, verdict, watch, signal="SIGSTOP",
                   stopped_pids=done["stopped_pids"], resume_after_s=duration_s or None,
                   fault_id=done["fault_id"], reverts_at=done["reverts_at"])


def _node_names(layout: ClusterLayout, nodes: str | list[str]) -> List[str]:
    if isinstance(nodes, str):
        if nodes.strip().lower() in ("all", "", "*"):
            return [n.name for n in layout.nodes]
        nodes = [s.strip() for s in nodes.split(",") if s.strip()]
    for name in nodes:
        layout.node(name)
    return list(nodes)


@action_result
def resume_nodes(nodes: str = "all", cluster: str = "", cluster_dir: str = "",
                 configuration: Configuration = None) -> Dict[str, Any]:
    """Rollback of ``suspend_node``: SIGCONT every suspended process of the nodes (``all`` by default).

    Idempotent: nodes that are not suspended are left alone.
    """
    layout = open_cluster(cluster, cluster_dir, configuration)
    names = _node_names(layout, nodes)
    # the suspend faults of these nodes end (records, timers) through the host engine that made them ...
    revert = engine_action("host", "revert_faults")
    every = set(names) == {n.name for n in layout.nodes}
    reverted = []
    for name in ([""] if every else names):
        reverted += revert(kinds=["suspend"], target=name, cluster_dir=layout.dir,
                           configuration=configuration)["reverted"]
    resumed: Dict[str, List[int]] = {}
    for entry in reverted:
        if entry.get("reverted_by") != "timer":  # what a timer resumed earlier is not resumed now
            for name, pids in (entry.get("resumed") or {}).items():
                resumed.setdefault(name, []).extend(pids)
    # ... then whatever of theirs is still stopped (suspended by hand, or by a run whose record is gone)
    for name in names:
        node = layout.node(name)
        stopped = [p.pid for p in node_processes(node.path, node.data_dir) if p.state == "T"]
        if stopped:
            resumed.setdefault(name, []).extend(signal_pids(stopped, signal.SIGCONT))
    return {"action": "resume_nodes", "targets": [target_entry(name) for name in resumed], "cluster": layout.name,
            "resumed": resumed}


@action_result
def restart_nodes(nodes: str = "all", wait_healthy_s: float = 60.0, cluster: str = "", cluster_dir: str = "",
                  configuration: Configuration = None) -> Dict[str, Any]:
    """Rollback of ``kill_node`` / ``stop_database``: start whatever is not running on the nodes.

    Suspended processes are resumed first. Idempotent: a running node is left
    alone. With ``wait_healthy_s`` > 0 it waits until every node streams again
    (an old leader rejoins as a replica, rewound with pg_rewind when needed).
    """
    layout = open_cluster(cluster, cluster_dir, configuration)
    watch = Stopwatch()
    started = {}
    for name in _node_names(layout, nodes):
        r = nodeproc.start_node(layout, name)
        if r["started"] or r["resumed_pids"]:
            started[name] = r
    health = cluster_health.wait_healthy(layout, timeout=wait_healthy_s) if wait_healthy_s > 0 else None
    return {"action": "restart_nodes", "targets": [target_entry(name) for name in started], "cluster": layout.name,
            "started": started,
            "leader": health["leader"] if health else None, **watch.stop().as_dict()}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), None, None, extras=("local",),
                target=check_target, method=choice("method", "switchover", "shutdown"),
                nodes=one_of_or_names("nodes", ("all",), is_node_name, "node1, node2, ..."))

