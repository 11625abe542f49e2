"""CockroachDB actions: drain, quit, decommission / recommission, kill, pod delete, restart, rolling restart.

Targets are chosen when the action runs (``target``: an id, ``"leaseholder"`` / ``"not-leaseholder"`` of a
``table`` ``row``, ``"any"``, ``"random"``; see :mod:`chaosdb.cockroach.targets`). CLI commands are built
for the version of the ``cockroach`` binary that runs them (``quit`` only before v22.2, ``node drain <id>``
from v22.1, the node's own ``--host`` before), with ``--certs-dir`` or ``--insecure`` from the
configuration, as argv lists: nothing a user passes reaches a shell.

Where a node runs is decided by the configuration (:mod:`chaosdb.cockroach.placement`): pods on Kubernetes
(``k8s_namespace`` set), killed and deleted by the Kubernetes engine, or local ``cockroach start`` processes,
signalled through the host engine; the actions here never branch on it.
"""

import re
import time
from typing import Any, Dict, List, Optional, Union

from chaoslib.types import Configuration, Secrets

from chaosdb.cockroach import channels, node_processes, ranges
from chaosdb.cockroach.placement import placement, pod_of, require_kubernetes
from chaosdb.cockroach.probes import cluster_health
from chaosdb.cockroach.records import parse_decommission_output
from chaosdb.cockroach.targets import check_selector, resolve_node
from chaosdb.core.arguments import check_arguments, choice, number
from chaosdb.core.commands import describe_argv
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError, UnsafeFault
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.core.signals import SIGNALS, signal_name

__all__ = ["drain_node", "quit_node", "decommission_nodes", "recommission_nodes", "kill_node", "delete_node_pod",
           "restart_node", "restart_killed_nodes", "wait_for_node", "wait_until_healthy", "rolling_restart"]

def _node_host_config(configuration: Dict[str, Any], node: Dict[str, Any]) -> Dict[str, Any]:
    """The configuration with the CLI pointed at *node* itself (commands that act on the node they reach)."""
    if not node.get("address"):
        raise ChaosDBError(f"n{node['id']} has no known address to connect to")
    cfg = {k: v for k, v in configuration.items() if k != "cockroach_url"}
    cfg["cockroach_host"] = node["address"]
    return cfg


def _remaining(stderr: str) -> List[int]:
    return [int(x) for x in re.findall(r"remaining: (\d+)", stderr)]


def _drain_wait(drain_wait_s: Union[float, str]) -> tuple:
    """(``--drain-wait`` flag text, seconds) from ``drain_wait_s`` (seconds, or their text)."""
    try:
        secs = float(drain_wait_s)
    except (TypeError, ValueError):
        raise ChaosDBError(f"drain_wait_s must be a number of seconds, got {drain_wait_s!r}") from None
    if secs < 0:
        raise ChaosDBError("drain_wait_s cannot be negative")
    return f"{secs:g}s", secs


@action_result
def drain_node(target: Union[int, str] = "any", drain_wait_s: float = 60, shutdown: bool = False,
               table: Optional[str] = None, row: Optional[List[Any]] = None,
               configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Drain a node (``cockroach node drain``): it stops taking SQL clients, moves its range leases and
    Raft leaderships away, and with ``shutdown`` its process exits afterwards. ``drain_wait_s`` (seconds,
    1 or 60 as in the thesis) bounds the drain; a drain that does not finish in time fails with advice.
    From v22.1 the node is drained by id through any gateway; older CLIs are pointed at the node itself.
    Without ``shutdown`` the node stays draining until it restarts (``restart_node``). Returns the node, the
    drain's progress (``remaining`` per report) and its time."""
    cfg = channels.settings(configuration, secrets)
    flag, secs = _drain_wait(drain_wait_s)
    picked = resolve_node(cfg, secrets, target, table, row)
    feats = channels.cli_version(cfg)
    if feats.drain_by_node_id:
        argv = channels.cli_argv(cfg, "node", "drain", str(picked["id"]), f"--drain-wait={flag}")
    else:
        argv = channels.cli_argv(_node_host_config(cfg, picked), "node", "drain", f"--drain-wait={flag}")
    if shutdown:
        argv.append("--shutdown")
        placement(cfg, secrets).save_before_shutdown(picked)
    t0 = time.monotonic()
    try:
        out, err = channels.run_cli_full(cfg, argv, timeout=None if secs == 0 else secs + 120)
    except ChaosDBError as exc:
        if "drain timeout" in str(exc):
            raise ChaosDBError(f"n{picked['id']} did not finish draining within {flag}: raise drain_wait_s (the "
                               f"server.shutdown.* settings add up to the time a drain needs) or drain again; "
                               f"the node stays draining. ({exc})") from None
        raise
    return {"targets": [_node_entry(picked)],
            "node": picked["id"], "pod": picked["pod"], "address": picked["address"], "drain_wait": flag,
            "drain_wait_s": secs, "shutdown": bool(shutdown), "ok": out.strip().endswith("ok"), "remaining": _remaining(err),
            "warnings": [ln for ln in err.splitlines() if ln.startswith("warning")],
            "elapsed_s": round(time.monotonic() - t0, 3), "command": describe_argv(argv, 8),
            "cli_version": repr(feats), "range": picked.get("range")}


@action_result
def quit_node(target: Union[int, str] = "any", drain_wait_s: float = 60, table: Optional[str] = None,
              row: Optional[List[Any]] = None, configuration: Configuration = None,
              secrets: Secrets = None) -> Dict[str, Any]:
    """Drain and stop a node with ``cockroach quit --drain-wait`` (CLIs before v22.2 only; the command
    was removed in v22.2: use ``drain_node`` with ``shutdown: true`` or ``kill_node`` with ``TERM``).
    ``drain_wait_s`` in seconds."""
    cfg = channels.settings(configuration, secrets)
    flag, secs = _drain_wait(drain_wait_s)
    feats = channels.cli_version(cfg)
    if not feats.has_quit:
        raise ChaosDBError(f"cockroach quit was removed in v22.2 and this CLI is {feats!r}: use drain_node with "
                           "shutdown=true (a drain, then the process exits) or kill_node with signal TERM")
    picked = resolve_node(cfg, secrets, target, table, row)
    argv = channels.cli_argv(_node_host_config(cfg, picked), "quit", f"--drain-wait={flag}")
    placement(cfg, secrets).save_before_shutdown(picked)
    t0 = time.monotonic()
    out, err = channels.run_cli_full(cfg, argv, timeout=None if secs == 0 else secs + 120)
    return {"targets": [_node_entry(picked)],
            "node": picked["id"], "pod": picked["pod"], "address": picked["address"], "drain_wait": flag,
            "drain_wait_s": secs, "ok": "ok" in out, "remaining": _remaining(err), "elapsed_s": round(time.monotonic() - t0, 3),
            "command": describe_argv(argv, 8), "cli_version": repr(feats)}


def _node_ids(nodes: Union[int, str, List[Union[int, str]]]) -> List[Union[int, str]]:
    if isinstance(nodes, (int, str)):
        return [nodes]
    if not nodes:
        raise ChaosDBError("name at least one node")
    return list(nodes)


@action_result
def decommission_nodes(nodes: Union[int, str, List[Union[int, str]]], wait: str = "all",
                       checks: Optional[str] = None, min_active_after: int = 3, timeout_s: float = 3600,
                       table: Optional[str] = None, row: Optional[List[Any]] = None,
                       configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Decommission nodes (``cockroach node decommission --wait=all|none``): their replicas move to
    other nodes, then they are marked decommissioned. Refused before anything changes when fewer than
    ``min_active_after`` active nodes (the replication factor, 3 by default) would remain: the
    decommission would stall. ``wait: none`` returns at once (poll ``node_status``). Rollback:
    ``recommission_nodes`` (possible until a node is fully decommissioned)."""
    cfg = channels.settings(configuration, secrets)
    if wait not in ("all", "none"):
        raise ChaosDBError(f"wait must be 'all' or 'none', got {wait!r}")
    if checks is not None and checks not in ("enabled", "strict", "skip"):
        raise ChaosDBError(f"checks must be enabled, strict or skip, got {checks!r}")
    all_nodes = channels.node_status(cfg, secrets)
    targets = [resolve_node(cfg, secrets, n, table, row, require_live=False, nodes=all_nodes)
               for n in _node_ids(nodes)]
    ids = sorted({t["id"] for t in targets})
    active_after = [n["id"] for n in all_nodes if n.get("membership") in (None, "active") and n["id"] not in ids]
    if len(active_after) < int(min_active_after):
        raise UnsafeFault(f"decommissioning n{', n'.join(map(str, ids))} would leave {len(active_after)} active "
                          f"node(s), fewer than {min_active_after} (the replication factor): replicas would have "
                          "nowhere to go and the decommission would stall. Add nodes first or lower "
                          "min_active_after if your zones replicate less.")
    argv = channels.cli_argv(cfg, "node", "decommission", *map(str, ids), f"--wait={wait}", "--format=csv")
    if checks:
        argv.append(f"--checks={checks}")
    t0 = time.monotonic()
    out, _ = channels.run_cli_full(cfg, argv, timeout=timeout_s)
    result = parse_decommission_output(out)
    result.update({"targets": [_node_entry(t) for t in targets], "requested": ids, "wait": wait,
                   "completed": result["note"] is not None,
                   "elapsed_s": round(time.monotonic() - t0, 3), "command": describe_argv(argv, 8)})
    return result


@action_result
def recommission_nodes(nodes: Union[int, str, List[Union[int, str]]], configuration: Configuration = None,
                       secrets: Secrets = None) -> Dict[str, Any]:
    """Recommission decommissioning nodes (``cockroach node recommission``), the rollback of
    ``decommission_nodes``; nodes already fully decommissioned cannot come back and are reported. A
    recommissioned node that drained keeps draining until it restarts (``restart_node``)."""
    cfg = channels.settings(configuration, secrets)
    all_nodes = channels.node_status(cfg, secrets)
    targets = [resolve_node(cfg, secrets, n, require_live=False, nodes=all_nodes, allow_decommissioned=True)
               for n in _node_ids(nodes)]
    done = sorted(t["id"] for t in targets if t.get("membership") == "decommissioned")
    if done:
        raise ChaosDBError(f"n{', n'.join(map(str, done))} is fully decommissioned and cannot be recommissioned: "
                           "wipe its store and start it as a new node instead")
    ids = sorted({t["id"] for t in targets})
    argv = channels.cli_argv(cfg, "node", "recommission", *map(str, ids), "--format=csv")
    out, _ = channels.run_cli_full(cfg, argv, timeout=120)
    result = parse_decommission_output(out)
    result.update({"targets": [_node_entry(t) for t in targets], "requested": ids,
                   "command": describe_argv(argv, 8)})
    return result


def _node_entry(node: Dict[str, Any]) -> Dict[str, Any]:
    """A node as an entry of a result's ``targets``: its id (what ``target`` takes), pod and address."""
    return target_entry(node["id"], pod=node.get("pod"), address=node.get("address"))


@action_result
def kill_node(target: Union[int, str] = "any", signal: str = "KILL", container: Optional[str] = None, pid: int = 1,
              table: Optional[str] = None, row: Optional[List[Any]] = None,
              configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Kill a node's process, the thesis's first failure level: ``KILL`` (crash, no drain) or ``TERM``
    (graceful drain, then exit). On Kubernetes (``k8s_namespace`` set) ``kill`` runs inside the node's
    pod (exec through the official client) in ``container`` (or ``k8s_container``), PID ``pid`` (1: the
    database); the kubelet restarts the container. Locally the ``cockroach start`` process serving the node's
    address is signalled, after saving how to start it again (``restart_node``)."""
    cfg = channels.settings(configuration, secrets)
    sig = signal_name(signal)
    picked = resolve_node(cfg, secrets, target, table, row)
    base = {"targets": [_node_entry(picked)],
            "node": picked["id"], "pod": picked["pod"], "address": picked["address"], "signal": sig,
            "range": picked.get("range")}
    return {**base, **placement(cfg, secrets).kill(picked, sig, container, pid)}


@action_result
def delete_node_pod(target: Union[int, str] = "any", grace_period_s: Optional[int] = None, force: bool = False,
                    table: Optional[str] = None, row: Optional[List[Any]] = None,
                    configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Delete the node's pod with a grace period (``grace_period_s``: SIGTERM, that long to drain, then
    SIGKILL; null: the pod's own) or forced (``force``: removed from the API at once), the thesis's second and
    third levels; the StatefulSet recreates it. Needs ``k8s_namespace``; returns without waiting."""
    cfg = channels.settings(configuration, secrets)
    require_kubernetes(cfg, "delete_node_pod", " (use kill_node locally)")
    if force and grace_period_s not in (None, 0):
        raise ChaosDBError("force deletion has no grace period: leave grace_period_s unset")
    picked = resolve_node(cfg, secrets, target, table, row)
    done = engine_action("kubernetes", "delete_pods")(
        pod_of(picked), grace_period_s, force, wait_replaced=False, configuration=cfg, secrets=secrets)
    return {"targets": [_node_entry(picked)], "node": picked["id"], "pod": picked["pod"],
            "uid": done["old_uids"][picked["pod"]],
            "grace_period_s": done["grace_period_s"], "force": bool(force), "range": picked.get("range")}


@action_result
def wait_for_node(node: Union[int, str], timeout_s: float = 300, ready: bool = True, interval_s: float = 2.0,
                  configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until a node is live, available and not draining again (``ready``) and report how long it
    took; fails with the node's last state after ``timeout_s``."""
    cfg = channels.settings(configuration, secrets)
    t0 = time.monotonic()
    last: Any = None
    while True:
        try:
            nodes = {n["id"]: n for n in channels.node_status(cfg, secrets)}
            last = nodes.get(int(node)) if str(node).isdigit() else None
            if last is None:
                raise ChaosDBError(f"node {node} is not in the cluster")
            if last["is_live"] and last["is_available"] and (not ready or not last.get("draining")):
                return {"targets": [_node_entry(last)], "node": last["id"],
                        "waited_s": round(time.monotonic() - t0, 3), "status": last}
        except ChaosDBError as exc:
            last = str(exc)
        if time.monotonic() - t0 > timeout_s:
            raise ChaosDBError(f"n{node} is not back after {timeout_s:g} s; last seen: {last}")
        time.sleep(interval_s)


@action_result
def restart_node(node: Union[int, str], grace_period_s: int = 60, wait: bool = True, timeout_s: float = 300,
                 configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Bring a node back: the rollback for ``kill_node`` and for a drain. Locally, a node killed by
    ``kill_node`` is started again with its saved command line (a running, drained node is first
    stopped with SIGTERM); on Kubernetes its pod is deleted gracefully so it restarts undrained. With
    ``wait`` it returns once the node is live and not draining."""
    cfg = channels.settings(configuration, secrets)
    if not str(node).isdigit():
        raise ChaosDBError("restart_node needs the node id (the id the fault's action returned)")
    nid = int(node)
    how = placement(cfg, secrets).restart(nid, grace_period_s)
    out = {"targets": [target_entry(nid)], "node": nid, **how}
    if wait:
        out["back"] = wait_for_node(nid, timeout_s, configuration=cfg, secrets=secrets)
    return out


@action_result
def rolling_restart(statefulset: str = "cockroachdb", selector: str = "app=cockroachdb",
                    image: Optional[str] = None, container: Optional[str] = None, timeout_s: float = 1800,
                    poll_s: float = 1.0, configuration: Configuration = None,
                    secrets: Secrets = None) -> Dict[str, Any]:
    """Restart every pod of the StatefulSet one at a time (as ``kubectl rollout restart``), or change its
    image (``image`` + ``container``: a version upgrade, the evaluation's hot swap), wait for the
    rollout, and report each pod's down time (not Ready), how many were down at once, whether each
    pod was really replaced and which node it serves. Refused when a pod is not Ready beforehand. The
    Kubernetes engine's ``restart_statefulset`` does the rollout."""
    cfg = channels.settings(configuration, secrets)
    require_kubernetes(cfg, "rolling_restart")
    try:  # which node each pod serves, when the cluster can be asked (best effort: the rollout goes on anyway)
        pods = {ranges.pod_of(n, cfg): n["id"] for n in channels.node_status(cfg, secrets)}
    except ChaosDBError:
        pods = {}
    result = engine_action("kubernetes", "restart_statefulset")(
        statefulset, "", image=image or "", container=(container or cfg.get("k8s_container") or "") if image else "",
        timeout_s=timeout_s, poll_s=poll_s, selector=selector, configuration=cfg, secrets=secrets)
    for name, rec in result["pods"].items():
        rec["node"] = pods.get(name)
    # the nodes the restarted pods serve (by node id, what target takes; the pod name when unknown)
    return {**result, "targets": [target_entry(pods.get(name, name), pod=name) for name in result["pods"]]}


@action_result
def restart_killed_nodes(wait: bool = True, timeout_s: float = 300, configuration: Configuration = None,
                         secrets: Secrets = None) -> Dict[str, Any]:
    """Start again every local node that ``kill_node`` or a shutdown drain stopped on this machine and
    that is still down (a rollback that needs no node id); nothing to do is not an error. On Kubernetes
    the kubelet restarts killed containers: use ``wait_until_healthy``."""
    cfg = channels.settings(configuration, secrets)
    restarted = []
    for nid in node_processes.saved_nodes():
        rec = node_processes.restart_saved(nid)
        if wait and rec.get("started"):
            rec["back"] = wait_for_node(nid, timeout_s, configuration=cfg, secrets=secrets)
        restarted.append(rec)
    return {"targets": [target_entry(r["node"]) for r in restarted if r.get("started")],
            "restarted": restarted}


@action_result
def wait_until_healthy(timeout_s: float = 300, interval_s: float = 5.0, configuration: Configuration = None,
                       secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until every active node is live and available, none drains, and no range is unavailable or
    under-replicated (``cluster_health``); report how long it took, or fail with the remaining problems."""

    cfg = channels.settings(configuration, secrets)
    t0 = time.monotonic()
    problems: Any = None
    while True:
        try:
            h = cluster_health(cfg, secrets)
            if h["healthy"]:
                return {"targets": [], "waited_s": round(time.monotonic() - t0, 3), "nodes": len(h["nodes"])}
            problems = h["problems"]
        except ChaosDBError as exc:
            problems = [str(exc)]
        if time.monotonic() - t0 > timeout_s:
            raise ChaosDBError(f"the cluster is not healthy after {timeout_s:g} s: {'; '.join(problems)}")
        time.sleep(interval_s)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _node_rule(args: Dict[str, Any]) -> None:
    chosen = args.get("target")
    check_selector("any" if chosen is None else chosen, args.get("table"), args.get("row"))


def _node_id_list(value: Any) -> None:
    ids = value if isinstance(value, (list, tuple)) else str(value).split(",")
    if not ids or not all((isinstance(i, int) and not isinstance(i, bool)) or str(i).strip().isdigit() for i in ids):
        raise ChaosDBError(f"nodes must be node ids (a list or comma separated), got {value!r}")


check_arguments(globals(), {name: _node_rule for name in ("drain_node", "quit_node", "kill_node", "delete_node_pod")},
                {"decommission_nodes": {"wait": choice("wait", "all", "none")}},
                nodes=_node_id_list, signal=choice("signal", *SIGNALS),
                checks=choice("checks", "enabled", "strict", "skip"), pid=number("pid", 1, integer=True),
                min_active_after=number("min_active_after", 1, integer=True),
                grace_period_s=number("grace_period_s", 0, integer=True, hint=" (seconds)"))
