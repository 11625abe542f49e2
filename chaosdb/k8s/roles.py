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

``namespace`` (else ``k8s_namespace``) is where the database pods run. The database is asked over its own
channels (``cockroach_url``, ``pd_url``, ``patroni_url`` in the configuration), never through Kubernetes.
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["ROLES", "resolve_target", "check_target"]

ROLES = ("cockroach-leaseholder", "cockroach-not-leaseholder", "cockroach-node", "tikv-leader", "tikv-follower",
         "tikv-store", "patroni-primary", "patroni-replica")


def _pod_or_fail(pod: str | None, what: str, address: Any) -> str:
    if not pod:
        raise ChaosDBError(f"{what} is at {address!r}, which is not a StatefulSet pod address "
                           "(<pod>.<service>.<namespace>.svc:<port>); map nodes to pods with cockroach_pods / "
                           "tikv_pods in the configuration")
    return pod


def _cockroach(cfg: dict[str, Any], secrets: dict[str, Any] | None, role: str, target: dict[str, Any]):
    from chaosdb.cockroach.targets import resolve_node

    selector = {"cockroach-leaseholder": "leaseholder", "cockroach-not-leaseholder": "not-leaseholder"}.get(role)
    node = resolve_node(cfg, secrets, selector or target.get("node"), table=target.get("table"),
                        row=target.get("row"))
    pod = _pod_or_fail(node.get("pod"), f"CockroachDB node n{node['id']}", node.get("address"))
    return [pod], {"node_id": node["id"], "address": node.get("address"), "range": node.get("range")}


def _tikv(cfg: dict[str, Any], role: str, target: dict[str, Any]):
    from chaosdb.tikv.cluster import resolve_store

    selector = {"tikv-leader": "leader", "tikv-follower": "follower"}.get(role) or target.get("store")
    store = resolve_store(cfg, selector, key=target.get("key"), mode=str(target.get("mode") or "raw"),
                          api_version=int(target.get("api_version") or 1),
                          keyspace_id=int(target.get("keyspace_id") or 0),
                          key_format=str(target.get("key_format") or "utf8"))
    pod = _pod_or_fail(store.get("pod"), f"TiKV store {store['id']}", store.get("address"))
    return [pod], {"store_id": store["id"], "address": store.get("address"),
                   "region_id": (store.get("region") or {}).get("id")}


def _patroni(cfg: dict[str, Any], secrets: dict[str, Any] | None, role: str):
    from chaosdb.postgres.endpoints import patroni_client

    members = patroni_client(cfg, secrets).members()
    mapping = cfg.get("patroni_pods") or {}
    if role == "patroni-primary":
        chosen = [m for m in members if m.is_leader]
        if not chosen:
            raise ChaosDBError("the Patroni cluster has no leader right now")
    else:
        chosen = sorted((m for m in members if not m.is_leader and m.state in ("running", "streaming")),
                        key=lambda m: m.name)[:1]
        if not chosen:
            raise ChaosDBError("the Patroni cluster has no running replica to target")
    m = chosen[0]
    return [str(mapping.get(m.name, m.name))], {"member": m.name, "patroni_role": m.role}


def check_target(target: Any) -> None:
    """The target description's grammar, before anything asks the cluster (see the module docstring)."""
    if isinstance(target, str):
        target = {"pod": target}
    if not isinstance(target, dict) or not target:
        raise ChaosDBError(f"target must be a pod name or a mapping with pod, pods or role; got {target!r}")
    role = target.get("role")
    if role is None:
        pods = [target["pod"]] if target.get("pod") else list(target.get("pods") or [])
        if not pods or not all(isinstance(p, str) and p for p in pods):
            raise ChaosDBError(f"target names no pod: {target!r}")
    elif role not in ROLES:
        raise ChaosDBError(f"unknown target role {role!r}; one of {', '.join(ROLES)}")


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
    if role.startswith("cockroach-"):
        pods, detail = _cockroach(cfg, secrets, role, target)
    elif role.startswith("tikv-"):
        pods, detail = _tikv(cfg, role, target)
    else:
        pods, detail = _patroni(cfg, secrets, role)
    return {"namespace": namespace, "pods": pods, "role": role, "detail": detail}
