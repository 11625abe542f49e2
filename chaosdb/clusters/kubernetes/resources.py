"""What a local Kubernetes cluster holds before anyone runs an experiment: the CRDs, Chaos Mesh's namespace and
admission webhook configurations, and the fake nodes kwok runs pods on. Plain objects (dicts); applying them
is :mod:`chaosdb.clusters.kubernetes.apply`'s job.

CRDs: the upstream Chaos Mesh and Litmus CRDs this package bundles (``chaosdb/manifests/crds``, unchanged) for
every kind our activities create, with their admission webhooks (PhysicalMachineChaos needs its mutating webhook:
it gives ``spec.uid``, the id chaosd knows the attack by; without it a deleted object leaves its fault in place). The Chaos Mesh controller also watches kinds we never create (AWSChaos,
PodNetworkChaos, ...); it cannot start without their CRDs, so those are installed with an open schema
(``x-kubernetes-preserve-unknown-fields``), the same group, names, scope and status subresource as upstream.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from chaosdb.manifests.schema import CRD_DIR

__all__ = [
    "FAKE_NODE_ANNOTATION",
    "OPEN_CRD_KINDS",
    "WEBHOOK_KINDS",
    "all_crds",
    "bundled_crds",
    "chaos_mesh_namespace",
    "fake_node",
    "open_crds",
    "webhook_configurations",
]

#: Chaos Mesh kinds whose admission webhooks we register (the kinds whose CRDs are bundled; plural lower-case
#: names as in the webhook paths ``/mutate-chaos-mesh-org-v1alpha1-<kind>``)
WEBHOOK_KINDS = {"podchaos": "podchaos", "iochaos": "iochaos", "timechaos": "timechaos",
                 "networkchaos": "networkchaos", "stresschaos": "stresschaos", "schedule": "schedules",
                 "workflow": "workflows", "statuscheck": "statuschecks",
                 "physicalmachinechaos": "physicalmachinechaos", "physicalmachine": "physicalmachines"}

#: kinds the Chaos Mesh controller watches but this package never creates: (kind, plural, cluster scoped,
#: status subresource), as in Chaos Mesh's manifests/crd.yaml at the bundled commit
OPEN_CRD_KINDS = (
    ("AWSChaos", "awschaos", False, False), ("AzureChaos", "azurechaos", False, False),
    ("BlockChaos", "blockchaos", False, False), ("DNSChaos", "dnschaos", False, False),
    ("GCPChaos", "gcpchaos", False, False), ("HTTPChaos", "httpchaos", False, False),
    ("JVMChaos", "jvmchaos", False, False), ("KernelChaos", "kernelchaos", False, False),
    ("PodHttpChaos", "podhttpchaos", False, True),
    ("PodIOChaos", "podiochaos", False, True), ("PodNetworkChaos", "podnetworkchaos", False, True),
    ("RemoteCluster", "remoteclusters", True, True), ("WorkflowNode", "workflownodes", False, True),
)

FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")


def _documents(path: Path) -> Iterator[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as f:
        for doc in yaml.load_all(f, Loader=loader):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                yield doc


def bundled_crds() -> list[dict[str, Any]]:
    """The upstream CRDs bundled with this package (Chaos Mesh and Litmus)."""
    return [doc for path in sorted(CRD_DIR.glob("*/*.yaml")) for doc in _documents(path)]


def open_crds() -> list[dict[str, Any]]:
    """Open-schema CRDs for the Chaos Mesh kinds the controller watches and we never create."""
    out = []
    for kind, plural, cluster_scoped, status in OPEN_CRD_KINDS:
        version: dict[str, Any] = {
            "name": "v1alpha1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
        if status:
            version["subresources"] = {"status": {}}
        out.append({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.chaos-mesh.org",
                         "labels": {"app.kubernetes.io/managed-by": "chaostoolkit-db"}},
            "spec": {"group": "chaos-mesh.org", "scope": "Cluster" if cluster_scoped else "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                               "listKind": f"{kind}List"},
                     "versions": [version]}})
    return out


def all_crds() -> list[dict[str, Any]]:
    """Every CRD the local Kubernetes installs: the bundled Chaos Mesh ones, then the others the pack's objects need."""
    bundled = bundled_crds()
    names = {c["metadata"]["name"] for c in bundled}
    return bundled + [c for c in open_crds() if c["metadata"]["name"] not in names]


def chaos_mesh_namespace() -> dict[str, Any]:
    """The ``chaos-mesh`` namespace the controller runs in."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "chaos-mesh"}}


def webhook_configurations(url_base: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """The Mutating and Validating webhook configurations Chaos Mesh's Helm chart would install, pointing at the
    controller's own address (``url_base``, e.g. ``https://127.0.50.1:9443``) instead of a Service."""
    ca = base64.b64encode(ca_pem).decode()
    out = []
    for kind_name, verb in (("MutatingWebhookConfiguration", "mutate"),
                            ("ValidatingWebhookConfiguration", "validate")):
        hooks = [{"name": f"{verb[0]}{kind}.kb.io",
                  "clientConfig": {"url": f"{url_base}/{verb}-chaos-mesh-org-v1alpha1-{kind}", "caBundle": ca},
                  "failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": 5,
                  "admissionReviewVersions": ["v1", "v1beta1"],
                  "rules": [{"apiGroups": ["chaos-mesh.org"], "apiVersions": ["v1alpha1"],
                             "operations": ["CREATE", "UPDATE"], "resources": [plural]}]}
                 for kind, plural in WEBHOOK_KINDS.items()]
        out.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind_name,
                    "metadata": {"name": f"chaos-mesh-{verb}",
                                 "labels": {"app.kubernetes.io/managed-by": "chaostoolkit-db"}},
                    "webhooks": hooks})
    return out


def fake_node(name: str, cpu: str = "32", memory: str = "256Gi", pods: str = "110") -> dict[str, Any]:
    """A Node kwok manages (it keeps it Ready and runs the pods scheduled on it as if they were running)."""
    key, value = FAKE_NODE_ANNOTATION
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "type": "kwok"}},
            "status": {"allocatable": capacity, "capacity": capacity, "phase": "Running"}}
