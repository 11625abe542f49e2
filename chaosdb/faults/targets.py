"""Fault targets on one machine, resolved by a database adapter when the fault runs: the embedded cluster's nodes
(``"leader"``, ``"replica"``, ``"node2,node3"``: shorthand for the ``embedded`` adapter's roles), a node of another
database by its role (``{"role": "etcd-leader"}``: the local process serving it), or any local processes chosen by
command line (a user's own CockroachDB / etcd processes). The engine acts only on what the adapter resolved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from chaosdb.core.adapters import (
    DatabaseAdapter,
    ResolvedNode,
    check_role_target,
    load_adapter,
    resolve_role_nodes,
)
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import other_processes, pid_alive
from chaosdb.core.targets import ROLE_SELECTORS
from chaosdb.faults.classify import NodeIdentity

__all__ = ["ProcessGroup", "SHORTHAND_ADAPTER", "is_pid_target", "pid_groups", "pid_group", "role_target", "check_fault_target", "check_components", "ResolvedTargets",
           "resolve_targets", "target_groups", "groups_of", "role_group", "matching_processes", "identities",
           "node_ports"]

@dataclass
class ProcessGroup:
    """A fault target whose processes can be listed again at any moment (new backends appear)."""

    target: dict[str, Any]  # name and details, as recorded
    pids: Callable[[], list[int]]


#: the adapter whose roles a string target is shorthand for (``"leader"`` is ``{"role": "embedded-leader"}``)
SHORTHAND_ADAPTER = "embedded"


def is_pid_target(target: Any) -> bool:
    """Whether *target* is already resolved to processes: ``{"pids": [...], "name": ...}``, or a list of them (what
    a database's own action hands the engine after finding its nodes' processes, as a pod name is handed to the
    Kubernetes engine)."""
    if isinstance(target, list):
        return bool(target) and all(isinstance(t, dict) and "pids" in t for t in target)
    return isinstance(target, dict) and "pids" in target


def pid_groups(target: dict[str, Any] | list[dict[str, Any]]) -> list[ProcessGroup]:
    """One process group per resolved ``{"pids": [...]}`` target."""
    return [pid_group(t) for t in (target if isinstance(target, list) else [target])]


def pid_group(target: dict[str, Any]) -> ProcessGroup:
    """The processes of a resolved ``{"pids": [...]}`` target that are still alive, whenever the engine looks."""
    wanted = [int(p) for p in target["pids"]]

    def pids() -> list[int]:
        return [p for p in wanted if pid_alive(p)]

    return ProcessGroup(target={"name": str(target.get("name") or "pids " + ",".join(map(str, wanted))),
                                **{k: v for k, v in target.items() if k not in ("name", "pids")}, "pids": wanted},
                        pids=pids)


def role_target(target: Any, cluster: str = "", cluster_dir: str = "") -> dict[str, Any]:
    """*target* as a role target: a dict as it is; a selector (``"leader"``) or node names (``"node1,node2"``, a
    list) as the shorthand adapter's role, with the ``cluster`` / ``cluster_dir`` arguments of the action."""
    if isinstance(target, dict):
        out = dict(target)
    elif isinstance(target, str) and target.strip().lower() in ROLE_SELECTORS:
        out = {"role": f"{SHORTHAND_ADAPTER}-{target.strip().lower()}"}
    else:
        out = {"role": f"{SHORTHAND_ADAPTER}-node", "names": target}
    if cluster and "cluster" not in out:
        out["cluster"] = cluster
    if cluster_dir and "cluster_dir" not in out:
        out["cluster_dir"] = cluster_dir
    return out


def check_fault_target(value: Any) -> None:
    """Argument check of a host fault's ``target``: a known role whose other keys fit it, or resolved pids (no I/O).
    """
    if is_pid_target(value):
        for one in value if isinstance(value, list) else [value]:
            pids = one["pids"]
            if not isinstance(pids, list) or not pids or not all(
                    isinstance(p, int) and not isinstance(p, bool) and p > 1 for p in pids):
                raise ChaosDBError(f"target pids must be a non-empty list of process ids, got {pids!r}")
        return
    check_role_target(role_target(value))


def _components() -> dict[str, frozenset[str]]:
    return load_adapter(SHORTHAND_ADAPTER).components


def check_components(value: Any) -> None:
    """Argument check of ``components``: each one a process kind of the embedded cluster's nodes."""
    known = _components()
    unknown = [c for c in (value or []) if c not in known]
    if unknown:
        raise ChaosDBError(f"unknown component(s) {', '.join(map(str, unknown))}: use {', '.join(known)}")


@dataclass
class ResolvedTargets:
    """What a target names now: the adapter that answered, the role target it was asked, the nodes and the quorum
    rule's verdict on them."""

    adapter: DatabaseAdapter
    target: dict[str, Any]
    nodes: list[ResolvedNode]
    verdict: dict[str, Any]
    secrets: Any = None

    @property
    def cluster_dir(self) -> str:
        """The local cluster's folder the nodes belong to ("" for a database elsewhere): the fault records' scope."""
        return next((n.cluster_dir for n in self.nodes if n.cluster_dir), "")


def resolve_targets(target: Any, count: Any, configuration: Any, cluster: str = "", cluster_dir: str = "",
                    secrets: Any = None, quorum_what: str = "", allow_quorum_loss: bool = False,
                    components: Sequence[str] | None = None) -> ResolvedTargets:
    """Ask the adapter *target* names which *count* nodes it means now (and, with *quorum_what*, whether taking
    them down keeps a majority)."""
    rt = role_target(target, cluster, cluster_dir)
    if components:
        check_components(components)
        rt["components"] = list(components)
    adapter, nodes, verdict = resolve_role_nodes(rt, configuration or {}, secrets, count, quorum_what,
                                                 bool(allow_quorum_loss))
    return ResolvedTargets(adapter, rt, nodes, verdict, secrets)


def groups_of(resolved: ResolvedTargets) -> list[ProcessGroup]:
    """One process group per resolved node: the processes its adapter finds for it here, listed anew whenever the
    engine looks (a restarted node's new processes are found again). A node of another database with no process
    here is refused with the adapter's reason; a local cluster's node that is down has none."""
    groups = []
    for node in resolved.nodes:
        resolved.adapter.local_pids(node, resolved.target)  # refuses, with the reason, when none serves it here

        def listed(node: ResolvedNode = node) -> list[int]:
            try:
                return resolved.adapter.local_pids(node, resolved.target)
            except ChaosDBError:
                return []

        detail = {"name": node.name, "role": resolved.target["role"],
                  **({"address": node.address} if node.address else {}), **node.detail}
        if resolved.adapter.components:
            detail["components"] = sorted(resolved.target.get("components") or resolved.adapter.components)
        groups.append(ProcessGroup(target=detail, pids=listed))
    return groups


def target_groups(target: Any, count: Any, components: Sequence[str] | None, processes: str, configuration: Any,
                  cluster: str = "", cluster_dir: str = "", secrets: Any = None) -> tuple[list[ProcessGroup], str]:
    """The process groups a fault acts on, and the local cluster's folder ("" for other targets): every process
    whose command line contains *processes*; else the processes a resolved ``{"pids": [...]}`` target names; else
    the nodes the target's adapter resolves now."""
    if processes:
        return [matching_processes(processes)], ""
    if is_pid_target(target):
        return pid_groups(target), ""
    resolved = resolve_targets(target, count, configuration, cluster, cluster_dir, secrets, components=components)
    return groups_of(resolved), resolved.cluster_dir


def role_group(target: dict[str, Any], configuration: Any, secrets: Any = None) -> ProcessGroup:
    """The local processes of the one node a database adapter names for ``target["role"]`` now."""
    return groups_of(resolve_targets(target, 1, configuration, secrets=secrets))[0]


def matching_processes(pattern: str) -> ProcessGroup:
    """Every live process whose command line contains *pattern* (and their later children are born inside)."""
    if not pattern or len(pattern) < 3:
        raise ChaosDBError("processes must be a command-line substring of at least 3 characters")
    def pids() -> list[int]:
        found = []
        for proc in other_processes(("cmdline",)):
            cmd = " ".join(a for a in proc.info["cmdline"] or [] if a)
            if pattern in cmd and "chaosdb.faults" not in cmd:
                found.append(proc.pid)
        return sorted(found)

    return ProcessGroup(target={"name": pattern, "processes": pattern}, pids=pids)


def node_ports(node: ResolvedNode, ports: Sequence[str | int]) -> list[int]:
    """The ports of *node* that *ports* names (its named ports, e.g. ``postgres``, ``etcd``; or numbers)."""
    out = []
    for p in ports:
        if isinstance(p, int) or (isinstance(p, str) and p.isdigit()):
            out.append(int(p))
        elif p in node.ports:
            out.append(node.ports[p])
        else:
            raise ChaosDBError(f"unknown port {p!r}: use a number or one of {', '.join(node.ports)}")
    if not out:
        raise ChaosDBError("ports is empty: name at least one port to delay")
    return out


def identities(resolved: ResolvedTargets, configuration: Any) -> list[NodeIdentity]:
    """Every node of the resolved targets' cluster as the packet classifier knows it: name, index, address, user
    id and ports (from the adapter's ``members``)."""
    ids = []
    for i, m in enumerate(resolved.adapter.members(resolved.target, configuration or {}, resolved.secrets)):
        if not m.address or m.user_id is None:
            raise ChaosDBError(f"{resolved.adapter.name} node {m.name} has no address or user to tell its traffic by")
        ids.append(NodeIdentity(m.name, i, m.address, m.user_id, tuple(m.ports.values())))
    return ids
