"""Where CockroachDB nodes run, and how a node's process is killed, kept for a restart and started again there.

The configuration decides: with ``k8s_namespace`` set, nodes are pods (their pod name from the StatefulSet
address or ``cockroach_pods``) and the Kubernetes engine kills and deletes them (the kubelet and the StatefulSet
bring them back); otherwise they are local ``cockroach start`` processes, signalled through the host engine after
their command line is saved, and started again from it. The actions ask :func:`placement` and never branch on it.
"""

from __future__ import annotations

from typing import Any

from chaosdb.cockroach import node_processes
from chaosdb.cockroach.targets import resolve_node
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError

__all__ = ["Pods", "LocalProcesses", "placement", "require_kubernetes", "pod_of"]


def pod_of(node: dict[str, Any]) -> dict[str, Any]:
    """The Kubernetes engine's target for *node*: its pod (refused when its address is not a StatefulSet pod's)."""
    if not node["pod"]:
        raise ChaosDBError(f"n{node['id']} ({node['address']}) is not a StatefulSet pod address: set "
                           "cockroach_pods (node id -> pod name) in the configuration")
    return {"pod": node["pod"]}


class Pods:
    """Nodes are pods: kills run inside the pod through the API, a restart deletes the pod gracefully."""

    where = "kubernetes"

    def __init__(self, configuration: dict[str, Any], secrets: Any) -> None:
        self.configuration, self.secrets = configuration, secrets

    def save_before_shutdown(self, node: dict[str, Any]) -> None:
        """Nothing to keep: the StatefulSet restarts the pod."""

    def kill(self, node: dict[str, Any], sig: str, container: str | None, pid: int) -> dict[str, Any]:
        """``kill`` inside the node's pod (``container`` or ``k8s_container``, PID *pid*); returns at once (the
        kubelet restarts the container)."""
        cont = container or self.configuration.get("k8s_container")
        engine_action("kubernetes", "kill_container_process")(
            pod_of(node), str(cont or ""), sig, pid, wait_restarted=False, configuration=self.configuration,
            secrets=self.secrets)
        return {"where": self.where, "container": cont, "pid": pid}

    def restart(self, node_id: int, grace_period_s: float) -> dict[str, Any]:
        """Delete the node's pod with *grace_period_s*, so it comes back undrained."""
        node = resolve_node(self.configuration, self.secrets, node_id, require_live=False)
        engine_action("kubernetes", "delete_pods")(pod_of(node), grace_period_s, wait_replaced=False,
                                                  configuration=self.configuration, secrets=self.secrets)
        return {"deleted_pod": node["pod"], "grace_period_s": grace_period_s}


class LocalProcesses(Pods):
    """Nodes are ``cockroach start`` processes on this machine, signalled through the host engine."""

    where = "local"

    def save_before_shutdown(self, node: dict[str, Any]) -> None:
        """Keep how to start the node's process again (``restart_node``) before something shuts it down."""
        if node.get("address"):
            pid = node_processes.find_node_process(node["address"])
            if pid is not None:
                node_processes.save_process(node["id"], pid)

    def kill(self, node: dict[str, Any], sig: str, container: str | None, pid: int) -> dict[str, Any]:
        """Signal the process serving the node's address, its command line saved first."""
        return {"where": self.where, **node_processes.signal_node(node["id"], node["address"], sig)}

    def restart(self, node_id: int, grace_period_s: float) -> dict[str, Any]:
        """Start the saved command line again; a node still running (drained) is first stopped with SIGTERM."""
        if not node_processes.saved_path(node_id).exists():
            node = resolve_node(self.configuration, self.secrets, node_id, require_live=False)
            node_processes.signal_node(node_id, node["address"], "TERM", wait_s=float(grace_period_s))
        return node_processes.restart_saved(node_id)


def placement(configuration: dict[str, Any], secrets: Any = None) -> Pods:
    """Where the configuration's nodes run: :class:`Pods` with ``k8s_namespace``, else :class:`LocalProcesses`."""
    return (Pods if configuration.get("k8s_namespace") else LocalProcesses)(configuration, secrets)


def require_kubernetes(configuration: dict[str, Any], action: str, instead: str = "") -> None:
    """Refuse *action* when the nodes are not pods."""
    if not configuration.get("k8s_namespace"):
        raise ChaosDBError(f"{action} needs Kubernetes: set k8s_namespace{instead}")
