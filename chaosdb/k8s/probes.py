"""Kubernetes probes: StatefulSet and pod readiness through the official client."""

from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments
from chaosdb.k8s import api
from chaosdb.k8s.pods import pod_summary

__all__ = ["statefulset_status", "statefulset_is_ready", "pods_of_statefulset"]


def statefulset_status(name: str, namespace: str = "", configuration: Configuration = None,
                       secrets: Secrets = None) -> Dict[str, Any]:
    """Desired, ready and updated replicas, revisions and images of a StatefulSet."""
    ns = api.namespace_of(configuration, namespace)
    apps = api.apps_v1(configuration, secrets)
    sts = api.call_json(f"reading statefulset {ns}/{name}", apps.read_namespaced_stateful_set, name, ns)
    st = sts.get("status") or {}
    return {"name": name, "namespace": ns, "replicas": sts["spec"]["replicas"],
            "ready_replicas": st.get("readyReplicas") or 0, "updated_replicas": st.get("updatedReplicas") or 0,
            "current_revision": st.get("currentRevision"), "update_revision": st.get("updateRevision"),
            "images": {c["name"]: c.get("image") for c in sts["spec"]["template"]["spec"]["containers"]}}


def statefulset_is_ready(name: str, namespace: str = "", configuration: Configuration = None,
                         secrets: Secrets = None) -> bool:
    """True when every desired replica is Ready and on the current revision."""
    s = statefulset_status(name, namespace, configuration, secrets)
    return s["ready_replicas"] >= s["replicas"] and s["updated_replicas"] >= s["replicas"]


def pods_of_statefulset(name: str, namespace: str = "", configuration: Configuration = None,
                        secrets: Secrets = None) -> List[Dict[str, Any]]:
    """The StatefulSet's pods: name, uid, phase, ready, deleting, restarts, containers, images, node."""
    ns = api.namespace_of(configuration, namespace)
    apps = api.apps_v1(configuration, secrets)
    sts = api.call_json(f"reading statefulset {ns}/{name}", apps.read_namespaced_stateful_set, name, ns)
    selector = ",".join(f"{k}={v}" for k, v in (sts["spec"]["selector"].get("matchLabels") or {}).items())
    core = api.core_v1(configuration, secrets)
    pods = api.call_json(f"listing pods of {ns}/{name}", core.list_namespaced_pod, ns, label_selector=selector)
    return sorted((pod_summary(p) for p in pods.get("items") or []), key=lambda p: p["name"] or "")


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), extras=("k8s",))
