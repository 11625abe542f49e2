"""Which pod a Kubernetes fault hits, decided by database role when the action runs.

A ``target`` is a mapping (or a pod name as a string):

- ``{"pod": "cockroachdb-1"}`` or ``{"pods": ["a-0", "a-1"]}``: named pods;
- ``{"role": "cockroach-leaseholder" | "cockroach-not-leaseholder", "table": "warehouse", "row": [1]}``: the
  pod of the node holding (or replicating without holding) the lease of that row's range;
  ``{"role": "cockroach-node", "node": 2}``: the pod of node 2;
- ``{"role": "tikv-leader" | "tikv-follower", "key": "user1", "mode": "raw"}``: the pod of the store holding
  the leader (or a follower) of that key's region; ``{"role": "tikv-store", "store": 4}``;
- ``{"role": "patroni-primary" | "patroni-replica"}``: the pod of the Patroni leader (or of a replica); the
  member name is the pod name (Spilo / the Zalando operator), or map it with ``patroni_pods``.

``namespace`` (else ``k8s_namespace``) is where the database pods run. A role is answered by the database
adapter it names (:mod:`chaosdb.core.adapters`), over the database's own channels (``cockroach_url``,
``pd_url``, ``patroni_urls`` in the configuration), never through Kubernetes; this module knows no database.
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.adapters import adapter_roles, check_role_target, resolve_role_target
from chaosdb.core.errors import ChaosDBError

__all__ = ["roles", "resolve_target", "check_target"]


def roles() -> list[str]:
    """Every role a target may name (``<adapter>-<role>``), from the registered database adapters."""
    return adapter_roles()


def check_target(target: Any) -> None:
    """The target description's grammar, before anything asks the cluster (see the module docstring)."""
    if isinstance(target, str):
        target = {"pod": target}
    if not isinstance(target, dict) or not target:
        raise ChaosDBError(f"target must be a pod name or a mapping with pod, pods or role; got {target!r}")
    if target.get("role") is None:
        pods = [target["pod"]] if target.get("pod") else list(target.get("pods") or [])
        if not pods or not all(isinstance(p, str) and p for p in pods):
            raise ChaosDBError(f"target names no pod: {target!r}")
    else:
        check_role_target(target)


def resolve_target(target: Any, configuration: dict[str, Any] | None = None,
                   secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"namespace", "pods", "role", "detail"}`` for a target description (see the module docstring)."""
    cfg = dict(configuration or {})
    check_target(target)
    if isinstance(target, str):
        target = {"pod": target}
    namespace = str(target.get("namespace") or cfg.get("k8s_namespace") or "default")
    role = target.get("role")
    if role is None:
        pods = [target["pod"]] if target.get("pod") else list(target.get("pods") or [])
        return {"namespace": namespace, "pods": pods, "role": "named", "detail": {}}
    node = resolve_role_target(target, cfg, secrets)
    if not node.pod:
        raise ChaosDBError(f"{node.name} is at {node.address!r}, which is not a StatefulSet pod address "
                           "(<pod>.<service>.<namespace>.svc:<port>); map nodes to pods with cockroach_pods / "
                           "tikv_pods / patroni_pods in the configuration")
    return {"namespace": namespace, "pods": [node.pod], "role": role, "detail": node.detail}
