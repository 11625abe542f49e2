"""LitmusChaos's operator on the local cluster's real node: the objects of chaos-operator 3.18.0's ``deploy/rbac.yaml``
and ``deploy/operator.yaml``, with the images built here (:mod:`chaosdb.images`).

What runs: the namespace ``litmus``, the operator's ServiceAccount, ClusterRole (the rules of upstream's
``rbac.yaml``, unchanged) and ClusterRoleBinding, the ChaosEngine, ChaosExperiment and ChaosResult CRDs this pack
bundles (``chaosdb/manifests/crds/litmus``; ``up`` installs them for every cluster already), and the operator's
Deployment on the real node. For each ChaosEngine the operator starts the pod ``<engine>-runner`` (the image its
``CHAOS_RUNNER_IMAGE`` names), which starts the ChaosExperiment's Job (its image: the ChaosExperiment's, e.g. the
``litmus-go-runner`` image built here). Litmus gives those pods no node selector: on a cluster with kwok's fake nodes
as well, they may land on a fake node and never run (start such a cluster with ``--nodes 0``).

The operator's environment, as its ``main.go`` and controller read it: ``WATCH_NAMESPACE`` must be set (empty: every
namespace), ``CHAOS_RUNNER_IMAGE`` (else upstream's image, which nothing here can pull), ``ANALYTICS=FALSE`` (else
it sends an installation event to Google Analytics at start, and hands the runner a client id with which the runner
sends one per experiment); ``POD_NAME`` and ``POD_NAMESPACE`` serve only the analytics id and ``OPERATOR_NAME`` is
read by nothing (both kept as upstream's manifest sets them). Upstream starts it with ``-leader-elect=true``; one
replica needs no election, so it runs without (no Lease to wait for when its pod is replaced). It serves
``/readyz`` on ``:8081`` (``-health-probe-bind-address``) and metrics on ``:8080``.
"""

from __future__ import annotations

from typing import Any

from chaosdb.clusters.kubernetes import resources
from chaosdb.clusters.kubernetes.realnode.kubelet import REAL_NODE_LABEL

__all__ = ["NAMESPACE", "NAME", "SERVICE_ACCOUNT", "HEALTH_PORT", "METRICS_PORT", "OPERATOR_RULES", "IMAGES",
           "litmus_crds", "operator_environment", "litmus_objects"]

NAMESPACE = "litmus"
#: the operator's Deployment, ServiceAccount, ClusterRole and ClusterRoleBinding (upstream names them all so)
NAME = "litmus"
SERVICE_ACCOUNT = "litmus"
HEALTH_PORT = 8081
METRICS_PORT = 8080
#: the images a real node needs for Litmus (recipes of :mod:`chaosdb.images.recipes`)
IMAGES = ("litmus-operator", "litmus-runner", "litmus-go-runner")

#: the operator's ClusterRole rules: chaos-operator 3.18.0 ``deploy/rbac.yaml`` (af8244e5), in its order
OPERATOR_RULES: list[dict[str, list[str]]] = [
    {"apiGroups": [""], "resources": ["replicationcontrollers", "secrets"], "verbs": ["get", "list"]},
    {"apiGroups": ["apps.openshift.io"], "resources": ["deploymentconfigs"], "verbs": ["get", "list"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "daemonsets", "replicasets", "statefulsets"],
     "verbs": ["get", "list"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "deletecollection"]},
    {"apiGroups": ["argoproj.io"], "resources": ["rollouts"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods", "configmaps", "events", "services"],
     "verbs": ["get", "create", "update", "patch", "delete", "list", "watch", "deletecollection"]},
    {"apiGroups": ["litmuschaos.io"], "resources": ["chaosengines", "chaosexperiments", "chaosresults"],
     "verbs": ["get", "create", "update", "patch", "delete", "list", "watch", "deletecollection"]},
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "get"]},
    {"apiGroups": ["litmuschaos.io"], "resources": ["chaosengines/finalizers"], "verbs": ["update"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "create", "list", "update", "delete"]},
]

_LABELS = {"app.kubernetes.io/name": "litmus", "app.kubernetes.io/part-of": "litmus",
           "app.kubernetes.io/managed-by": "chaostoolkit-db"}
#: the operator pod's selector label (upstream's)
_SELECTOR = {"name": "chaos-operator"}
_CRD_GROUP = "litmuschaos.io"


def litmus_crds() -> list[dict[str, Any]]:
    """ChaosEngine, ChaosExperiment and ChaosResult: the bundled Litmus CRDs of group ``litmuschaos.io``."""
    return [c for c in resources.bundled_crds() if c["spec"]["group"] == _CRD_GROUP]


def _field(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def operator_environment(runner_image: str) -> list[dict[str, Any]]:
    """The operator container's environment (see the module docstring)."""
    return [{"name": "CHAOS_RUNNER_IMAGE", "value": runner_image},
            {"name": "WATCH_NAMESPACE", "value": ""},
            {"name": "ANALYTICS", "value": "FALSE"},
            {"name": "POD_NAME", "valueFrom": _field("metadata.name")},
            {"name": "POD_NAMESPACE", "valueFrom": _field("metadata.namespace")},
            {"name": "OPERATOR_NAME", "value": "chaos-operator"}]


def litmus_objects(operator_image: str, runner_image: str) -> list[dict[str, Any]]:
    """Everything that runs the Litmus operator on the real node, in the order to create it: the CRDs, the
    namespace, the operator's account and its cluster-wide rights, and its Deployment (*operator_image*, and
    *runner_image* for the runner pods it starts; both built here, never pulled)."""
    key, value = REAL_NODE_LABEL
    meta = {"name": NAME, "labels": _LABELS}
    container = {
        "name": "chaos-operator", "image": operator_image, "imagePullPolicy": "Never",
        "command": ["/chaos-operator"],
        "args": ["-leader-elect=false", f"-health-probe-bind-address=:{HEALTH_PORT}",
                 f"-metrics-bind-address=:{METRICS_PORT}"],
        "env": operator_environment(runner_image),
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT},
                  {"name": "health", "containerPort": HEALTH_PORT}],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": HEALTH_PORT}, "periodSeconds": 2},
    }
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {**meta, "namespace": NAMESPACE},
        "spec": {"replicas": 1, "selector": {"matchLabels": _SELECTOR},
                 "template": {"metadata": {"labels": {**_LABELS, **_SELECTOR}},
                              "spec": {"serviceAccountName": SERVICE_ACCOUNT, "nodeSelector": {key: value},
                                       "terminationGracePeriodSeconds": 5, "containers": [container]}}}}
    return [
        *litmus_crds(),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": _LABELS}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE, "labels": _LABELS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
         "rules": OPERATOR_RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]},
        deployment,
    ]
