"""Database-shaped StatefulSets of fake pods: the names, labels, container names and Services of the official
manifests, so that every bundled template and every Kubernetes activity finds what it would find on a real
cluster. kwok runs them (Ready, with a pod IP) but nothing runs inside: no database answers, exec has no
container to enter.

- ``cockroachdb``: namespace ``cockroachdb``, StatefulSet ``cockroachdb`` (pods ``cockroachdb-0..2``), labels
  ``app.kubernetes.io/name|instance|component: cockroachdb`` as the official Helm chart sets them, container
  ``db``, headless Service ``cockroachdb`` and ``cockroachdb-public``.
- ``tikv``: namespace ``tidb-cluster``, StatefulSets ``basic-pd`` and ``basic-tikv`` as TiDB Operator names them
  for a TidbCluster ``basic`` (labels ``app.kubernetes.io/name: tidb-cluster``, ``component: pd|tikv``,
  ``instance: basic``, ``managed-by: tidb-operator``; containers ``pd`` / ``tikv``), Services ``basic-pd``,
  ``basic-pd-peer`` and ``basic-tikv-peer``.
- ``postgres``: namespace ``postgres``, StatefulSet ``postgres`` (pods ``postgres-0..2``) as the Zalando
  Postgres Operator names a cluster ``postgres`` (labels ``application: spilo``, ``cluster-name: postgres``;
  container ``postgres``, ports 5432 and 8008 for Patroni's REST API), headless Service ``postgres``. Which
  pod is the primary comes from Patroni (a ``patroni-primary`` target; ``patroni_pods`` maps members to pods).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHAOS_NAMESPACE", "WORKLOADS", "REAL_WORKLOADS", "statefulsets_of", "workload_objects"]

#: where the bundled Chaos Mesh templates create their objects by default
CHAOS_NAMESPACE = "chaos-testing"


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _service(name: str, ns: str, selector: dict[str, str], ports: dict[str, int], headless: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": selector,
                            "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports.items()]}
    if headless:
        spec.update(clusterIP="None", publishNotReadyAddresses=True)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": selector},
            "spec": spec}


def _statefulset(name: str, ns: str, labels: dict[str, str], service: str, container: str, image: str,
                 ports: dict[str, int], replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "serviceName": service, "replicas": replicas, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 5, "nodeSelector": {"type": "kwok"},
                         "containers": [{"name": container, "image": image,
                                         "ports": [{"name": n, "containerPort": p} for n, p in ports.items()]}]}}}}


def _cockroachdb(replicas: int) -> list[dict[str, Any]]:
    ns = "cockroachdb"
    labels = {"app.kubernetes.io/name": "cockroachdb", "app.kubernetes.io/instance": "cockroachdb",
              "app.kubernetes.io/component": "cockroachdb"}
    ports = {"grpc": 26257, "http": 8080}
    return [_namespace(ns), _service("cockroachdb", ns, labels, ports, True),
            _service("cockroachdb-public", ns, labels, ports, False),
            _statefulset("cockroachdb", ns, labels, "cockroachdb", "db", "cockroachdb/cockroach:v24.1.0", ports,
                         replicas)]


def _tikv(replicas: int) -> list[dict[str, Any]]:
    ns = "tidb-cluster"
    base = {"app.kubernetes.io/name": "tidb-cluster", "app.kubernetes.io/instance": "basic",
            "app.kubernetes.io/managed-by": "tidb-operator"}
    pd = {**base, "app.kubernetes.io/component": "pd"}
    tikv = {**base, "app.kubernetes.io/component": "tikv"}
    return [_namespace(ns), _service("basic-pd", ns, pd, {"client": 2379}, False),
            _service("basic-pd-peer", ns, pd, {"peer": 2380}, True),
            _service("basic-tikv-peer", ns, tikv, {"peer": 20160}, True),
            _statefulset("basic-pd", ns, pd, "basic-pd-peer", "pd", "pingcap/pd:v8.5.0", {"client": 2379},
                         min(replicas, 3)),
            _statefulset("basic-tikv", ns, tikv, "basic-tikv-peer", "tikv", "pingcap/tikv:v8.5.0",
                         {"peer": 20160}, replicas)]


def _postgres(replicas: int) -> list[dict[str, Any]]:
    ns = "postgres"
    labels = {"application": "spilo", "cluster-name": "postgres"}
    ports = {"postgresql": 5432, "patroni": 8008}
    return [_namespace(ns), _service("postgres", ns, labels, ports, True),
            _statefulset("postgres", ns, labels, "postgres", "postgres", "ghcr.io/zalando/spilo", ports, replicas)]


WORKLOADS = {"cockroachdb": _cockroachdb, "tikv": _tikv, "postgres": _postgres}
#: workloads that run for real on a real node (:mod:`chaosdb.clusters.kubernetes.patroni_pods`) instead of as fake pods
REAL_WORKLOADS = ("postgres",)


def workload_objects(names: list[str], replicas: int = 3, real_nodes: bool = False) -> list[dict[str, Any]]:
    """The objects of the named fake workloads, on kwok's nodes (plus the namespace the templates create chaos
    objects in); with *real_nodes*, those of :data:`REAL_WORKLOADS` are left to the real node."""
    out = [_namespace(CHAOS_NAMESPACE)]
    for name in names:
        if not (real_nodes and name in REAL_WORKLOADS):
            out += WORKLOADS[name](replicas)
    return out


def statefulsets_of(names: list[str], replicas: int = 3) -> list[tuple[str, str, int]]:
    """(namespace, name, replicas) of every StatefulSet the named workloads hold (a real workload's StatefulSet has
    its fake one's namespace and name)."""
    return [(o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["replicas"])
            for o in workload_objects(names, replicas) if o["kind"] == "StatefulSet"]
