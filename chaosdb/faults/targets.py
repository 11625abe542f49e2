"""Fault targets on one machine: nodes of the embedded cluster chosen by role, a database node chosen by its
adapter (``{"role": "tikv-leader", "key": ...}``: the local process serving it), or any local processes chosen
by command line (a user's own CockroachDB / etcd processes)."""

from __future__ import annotations

from typing import Any, Sequence

from chaosdb.core.adapters import check_role_target, resolve_role_target, split_role
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import other_processes
from chaosdb.core.targets import Target
from chaosdb.embedded.nodes import check_target, choose, open_cluster
from chaosdb.embedded.processes import node_processes
from chaosdb.embedded.state import ClusterLayout
from chaosdb.faults.classify import NodeIdentity
from chaosdb.faults.engine import ProcessGroup

__all__ = ["COMPONENTS", "check_fault_target", "check_components", "choose_nodes", "target_groups", "process_groups", "role_group", "matching_processes", "identities", "PORT_NAMES",
           "node_ports"]

#: process kinds of an embedded node a CPU/memory fault can be restricted to
COMPONENTS = {"etcd": {"etcd"}, "patroni": {"patroni"}, "postgres": {"postmaster", "postgres"}}
PORT_NAMES = ("postgres", "patroni", "etcd", "etcd-peer")


def check_fault_target(value: Any) -> None:
    """Argument check of a host fault's ``target``: a database role target, else embedded-cluster roles or nodes."""
    if isinstance(value, dict):
        check_role_target(value)
    else:
        check_target(value)


def check_components(value: Any) -> None:
    """Argument check of ``components``: each one of :data:`COMPONENTS`."""
    unknown = [c for c in (value or []) if c not in COMPONENTS]
    if unknown:
        raise ChaosDBError(f"unknown component(s) {', '.join(map(str, unknown))}: use {', '.join(COMPONENTS)}")


def choose_nodes(target: str | Sequence[str], count: int | str, configuration: Any, cluster: str = "",
                 cluster_dir: str = "", quorum_what: str = "", allow_quorum_loss: bool = False,
                 ) -> tuple[ClusterLayout, list[Target], dict[str, Any]]:
    """The embedded cluster's layout, the nodes *target* and *count* choose now, and the quorum rule's verdict on them.
    """
    layout = open_cluster(cluster, cluster_dir, configuration)
    chosen, verdict, _ = choose(layout, target, count, allow_quorum_loss, quorum_what)
    return layout, chosen, verdict


def target_groups(target: Any, count: Any, components: Sequence[str] | None, processes: str, configuration: Any,
                  cluster: str = "", cluster_dir: str = "", secrets: Any = None) -> tuple[list[ProcessGroup], str]:
    """The process groups a fault acts on, and the embedded cluster's folder ("" for other targets): every process
    whose command line contains *processes*; else the node a database adapter names for a role target
    (``{"role": ...}``); else the embedded cluster's nodes by role or name (*count* of them, *components* only)."""
    if processes:
        return [matching_processes(processes)], ""
    if isinstance(target, dict):
        return [role_group(target, configuration or {}, secrets)], ""
    layout, chosen, _ = choose_nodes(target, count, configuration, cluster, cluster_dir)
    return process_groups(layout, chosen, components), layout.dir


def _kinds(components: Sequence[str] | None) -> set[str] | None:
    if not components:
        return None
    unknown = [c for c in components if c not in COMPONENTS]
    if unknown:
        raise ChaosDBError(f"unknown component(s) {', '.join(unknown)}: use {', '.join(COMPONENTS)}")
    kinds: set[str] = set()
    for c in components:
        kinds |= COMPONENTS[c]
    return kinds


def process_groups(layout: ClusterLayout, chosen: list[Target], components: Sequence[str] | None) -> list[ProcessGroup]:
    """One process group per chosen node: its processes of the chosen *components* (all when none), listed anew whenever
    the engine looks."""
    kinds = _kinds(components)
    groups = []
    for t in chosen:
        node = layout.node(t.name)

        def pids(node=node) -> list[int]:
            return [p.pid for p in node_processes(node.path, node.data_dir) if kinds is None or p.kind in kinds]

        groups.append(ProcessGroup(target={**t.as_dict(), "name": t.name,
                                           "components": sorted(components or COMPONENTS)}, pids=pids))
    return groups


def role_group(target: dict[str, Any], configuration: Any, secrets: Any = None) -> ProcessGroup:
    """The local processes of the node a database adapter names for ``target["role"]`` now (listed again
    whenever the engine looks: a restarted node's new process is found by its address)."""
    adapter, _ = split_role(target.get("role", ""))
    node = resolve_role_target(target, configuration, secrets)
    adapter.local_pids(node, target)  # refuses, with the reason, when no process here serves it

    def pids() -> list[int]:
        try:
            return adapter.local_pids(node, target)
        except ChaosDBError:
            return []

    return ProcessGroup(target={"name": node.name, "role": target["role"], "address": node.address,
                                **node.detail}, pids=pids)


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


def node_ports(layout: ClusterLayout, name: str, ports: Sequence[str | int]) -> list[int]:
    """The ports of node *name* that *ports* names (``postgres``, ``patroni``, ``etcd``, ``etcd-peer`` or numbers)."""
    node = layout.node(name)
    by_name = {"postgres": node.pg_port, "patroni": node.api_port, "etcd": node.etcd_client_port,
               "etcd-peer": node.etcd_peer_port}
    out = []
    for p in ports:
        if isinstance(p, int) or (isinstance(p, str) and p.isdigit()):
            out.append(int(p))
        elif p in by_name:
            out.append(by_name[p])
        else:
            raise ChaosDBError(f"unknown port {p!r}: use a number or one of {', '.join(PORT_NAMES)}")
    if not out:
        raise ChaosDBError("ports is empty: name at least one port to delay")
    return out


def identities(layout: ClusterLayout) -> list[NodeIdentity]:
    """Every node's identity for the packet classifier: name, index, address, user id and ports."""
    ids = []
    for i, n in enumerate(layout.nodes):
        _, uid, _ = layout.node_user(n)
        ids.append(NodeIdentity(n.name, i, n.host, uid, (n.pg_port, n.api_port, n.etcd_client_port,
                                                         n.etcd_peer_port)))
    return ids
