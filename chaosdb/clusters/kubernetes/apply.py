"""Create objects through the official client, keeping what already exists (``up`` on a running cluster changes
nothing), and wait for CRDs to be served."""

from __future__ import annotations

import time
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.k8s import api

__all__ = ["create_or_keep", "wait_crds_established"]

#: custom objects the local cluster creates (a Litmus fault's setup holds a ChaosExperiment): group -> kind -> plural
_CUSTOM_GROUPS = {"litmuschaos.io": {"ChaosExperiment": "chaosexperiments"}}


def _create(kind: str, obj: dict[str, Any], configuration: dict[str, Any]) -> Any:
    from kubernetes import client  # noqa: PLC0415 - needs the k8s extra

    c = api.api_client(configuration)
    ns = (obj.get("metadata") or {}).get("namespace") or "default"
    creators = {
        "CustomResourceDefinition": lambda: client.ApiextensionsV1Api(c).create_custom_resource_definition,
        "Namespace": lambda: client.CoreV1Api(c).create_namespace,
        "Node": lambda: client.CoreV1Api(c).create_node,
        "MutatingWebhookConfiguration":
            lambda: client.AdmissionregistrationV1Api(c).create_mutating_webhook_configuration,
        "ValidatingWebhookConfiguration":
            lambda: client.AdmissionregistrationV1Api(c).create_validating_webhook_configuration,
        "Service": lambda: (lambda body, **kw: client.CoreV1Api(c).create_namespaced_service(ns, body, **kw)),
        "StatefulSet": lambda: (lambda body, **kw: client.AppsV1Api(c).create_namespaced_stateful_set(ns, body,
                                                                                                     **kw)),
        "DaemonSet": lambda: (lambda body, **kw: client.AppsV1Api(c).create_namespaced_daemon_set(ns, body, **kw)),
        "ServiceAccount": lambda: (lambda body, **kw: client.CoreV1Api(c).create_namespaced_service_account(
            ns, body, **kw)),
        "Secret": lambda: (lambda body, **kw: client.CoreV1Api(c).create_namespaced_secret(ns, body, **kw)),
        "ConfigMap": lambda: (lambda body, **kw: client.CoreV1Api(c).create_namespaced_config_map(ns, body, **kw)),
        "PersistentVolume": lambda: client.CoreV1Api(c).create_persistent_volume,
        "StorageClass": lambda: client.StorageV1Api(c).create_storage_class,
        "Role": lambda: (lambda body, **kw: client.RbacAuthorizationV1Api(c).create_namespaced_role(ns, body, **kw)),
        "RoleBinding": lambda: (lambda body, **kw: client.RbacAuthorizationV1Api(c).create_namespaced_role_binding(
            ns, body, **kw)),
        "ClusterRole": lambda: client.RbacAuthorizationV1Api(c).create_cluster_role,
        "ClusterRoleBinding": lambda: client.RbacAuthorizationV1Api(c).create_cluster_role_binding,
        "Deployment": lambda: (lambda body, **kw: client.AppsV1Api(c).create_namespaced_deployment(ns, body, **kw)),
    }
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    if group in _CUSTOM_GROUPS:
        plural = _CUSTOM_GROUPS[group].get(kind)
        if plural:
            return lambda body, **kw: client.CustomObjectsApi(c).create_namespaced_custom_object(
                group, version, ns, plural, body, **kw)
    if kind not in creators:
        raise ChaosDBError(f"the local cluster does not create {kind} objects")
    return creators[kind]()


def create_or_keep(objects: list[dict[str, Any]], configuration: dict[str, Any]) -> list[str]:
    """Create each object unless it exists (409); return ``Kind/name`` of those created."""
    made = []
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        try:
            api.call_json(f"creating {kind} {name}", _create(kind, obj, configuration), obj)
            made.append(f"{kind}/{name}")
        except api.K8sApiError as e:
            if e.status != 409:
                raise
    return made


def wait_crds_established(names: list[str], configuration: dict[str, Any], deadline: float) -> None:
    """Poll until every named CRD has ``Established: True`` (its kind is served)."""
    from kubernetes import client  # noqa: PLC0415 - needs the k8s extra

    ext = client.ApiextensionsV1Api(api.api_client(configuration))
    waiting = set(names)
    while waiting:
        listing = api.call_json("listing CRDs", ext.list_custom_resource_definition)
        for item in listing.get("items") or []:
            conds = (item.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                waiting.discard(item["metadata"]["name"])
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise ChaosDBError(f"CRDs not established in time: {', '.join(sorted(waiting))}")
        time.sleep(0.2)
