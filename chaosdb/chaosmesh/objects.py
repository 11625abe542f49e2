"""Chaos Mesh objects: build them right by construction, read their status the way the controller means it.

Status rules (``status.conditions`` looked up by type, their order is not stable; ``status.experiment``):
injected = ``Selected`` and ``AllInjected`` True; recovered = ``desiredPhase: Stop`` and ``AllRecovered``;
failures = records whose last event is ``Failed``. These kinds have no ``/status`` subresource: the status
is read with a plain GET.
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.k8s import api
from chaosdb.manifests.admission import CHAOS_KINDS
from chaosdb.manifests.schema import kind_of
from chaosdb.manifests.validate import require_valid

__all__ = ["list_objects", "GROUP", "VERSION", "KINDS", "PAUSE_ANNOTATION", "MANAGED_BY", "plural_of", "build_object",
           "summarise", "target_selector", "aim_at", "WORKFLOW_ANNOTATIONS"]

GROUP, VERSION = "chaos-mesh.org", "v1alpha1"
KINDS = tuple(CHAOS_KINDS) + ("Schedule", "Workflow")
#: kinds this pack creates that are not faults (not listed, paused or deleted with the chaos objects)
OTHER_KINDS = ("PhysicalMachine",)
PAUSE_ANNOTATION = "experiment.chaos-mesh.org/pause"
MANAGED_BY = {"app.kubernetes.io/managed-by": "chaostoolkit-db"}


def plural_of(kind: str) -> str:
    """The resource plural of a Chaos Mesh kind (``NetworkChaos`` -> ``networkchaos``), from the bundled CRDs; an
    unknown kind is refused with every known one."""
    if kind not in KINDS + OTHER_KINDS:
        raise ChaosDBError(f"unknown Chaos Mesh kind {kind!r}; one of {', '.join(KINDS + OTHER_KINDS)}")
    return kind_of(f"{GROUP}/{VERSION}", kind).plural


def list_objects(custom: Any, kind: str, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
    """The objects of *kind* in *namespace*; none when the cluster lacks the kind's CRD (a Chaos Mesh installed
    without PhysicalMachineChaos, say: nothing of that kind can exist there)."""
    try:
        listing = api.call_json(f"listing {kind} in {namespace}", custom.list_namespaced_custom_object, GROUP,
                                VERSION, namespace, plural_of(kind), label_selector=label_selector)
    except api.K8sApiError as exc:
        if exc.status == 404:
            return []
        raise
    return list(listing.get("items") or [])


def target_selector(namespace: str, pods: list[str]) -> dict[str, Any]:
    """A selector for exactly these pods (``pods`` is a map namespace -> names, not a list)."""
    return {"namespaces": [namespace], "pods": {namespace: list(pods)}}


def aim_at(kind: str, spec: dict[str, Any], namespace: str, pods: list[str]) -> dict[str, Any]:
    """*spec* with its fault aimed at exactly *pods* of *namespace* (mode ``all``, no ``value``): the spec's own
    selector for a chaos kind; for a Workflow, the selector of every pod-level chaos template in it (its Task,
    StatusCheck and flow templates unchanged). A Schedule is refused: aim its chaos when the schedule fires, not
    once when it is created."""
    if kind == "Schedule":
        raise ChaosDBError("target applies to chaos kinds and Workflows, not to a Schedule (the role it resolved "
                           "now may have moved by the time the schedule fires)")
    if kind != "Workflow":
        return _aimed(spec, namespace, pods)
    templates, aimed = [], 0
    for template in spec.get("templates") or []:
        field = _chaos_field(str(template.get("templateType") or ""))
        if field and field in template and field != "physicalmachineChaos":
            template = {**template, field: _aimed(template[field], namespace, pods)}
            aimed += 1
        templates.append(template)
    if not aimed:
        raise ChaosDBError("target: the Workflow has no chaos template on pods to aim at")
    return {**spec, "templates": templates}


def _chaos_field(template_type: str) -> str:
    """The field of a Workflow template that holds a chaos of *template_type* (``PodChaos`` -> ``podChaos``)."""
    if not template_type.endswith("Chaos"):
        return ""
    return template_type[0].lower() + template_type[1:]


def _aimed(spec: dict[str, Any], namespace: str, pods: list[str]) -> dict[str, Any]:
    aimed = {**spec, "selector": target_selector(namespace, pods), "mode": "all"}
    aimed.pop("value", None)
    return aimed


#: every Workflow is created with an annotation: a StatusCheck aborts its Workflow by adding
#: ``workflow.chaos-mesh.org/abort`` to the Workflow's annotations, and the controller (its AbortNodeReconciler)
#: panics on a Workflow that has none ("assignment to entry in nil map", seen on a real node): the StatusCheck then
#: reports the abort and the Workflow runs on, its fault included
WORKFLOW_ANNOTATIONS = {"chaosdb/abortable": "a StatusCheck can abort this Workflow only when it has annotations"}


def build_object(kind: str, name: str, namespace: str, spec: dict[str, Any],
                 labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A complete object, validated (CRD schema + webhook rules) before it is returned; a Workflow carries
    :data:`WORKFLOW_ANNOTATIONS`."""
    plural_of(kind)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {**MANAGED_BY, **(labels or {})}}
    if kind == "Workflow":
        metadata["annotations"] = dict(WORKFLOW_ANNOTATIONS)
    obj = {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": metadata, "spec": spec}
    require_valid(obj, f"{kind}/{name}")
    return obj


def _condition(status: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def summarise(obj: dict[str, Any]) -> dict[str, Any]:
    """A chaos object -> plain record: phase (``waiting`` / ``not-selected`` / ``injecting`` / ``injected`` /
    ``paused`` / ``recovering`` / ``recovered`` / ``deleting``), conditions, the selected pods (``namespace/name``)
    and failures."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    experiment = status.get("experiment") or {}
    records = experiment.get("containerRecords") or []
    cond = {k: _condition(status, k) for k in ("Selected", "AllInjected", "AllRecovered", "Paused")}
    desired = experiment.get("desiredPhase") or ""
    failures = [{"target": r.get("id"), "operation": (r.get("events") or [{}])[-1].get("operation"),
                 "message": (r.get("events") or [{}])[-1].get("message", "")}
                for r in records if (r.get("events") or [{}])[-1].get("type") == "Failed"]
    if meta.get("deletionTimestamp"):
        phase = "deleting"
    elif cond["Paused"]:
        phase = "paused" if cond["AllRecovered"] or not records else "pausing"
    elif desired == "Stop" and cond["AllRecovered"]:
        phase = "recovered"
    elif desired == "Stop":
        phase = "recovering"
    elif cond["Selected"] and cond["AllInjected"]:
        phase = "injected"
    elif cond["Selected"]:
        phase = "injecting"
    else:
        phase = "waiting"
    return {
        "name": meta.get("name"), "namespace": meta.get("namespace"), "kind": obj.get("kind"),
        "uid": meta.get("uid"), "created": meta.get("creationTimestamp"), "phase": phase,
        "desired_phase": desired, "selected": cond["Selected"], "all_injected": cond["AllInjected"],
        "all_recovered": cond["AllRecovered"], "paused": cond["Paused"],
        "injected": cond["Selected"] and cond["AllInjected"],
        "recovered": desired == "Stop" and cond["AllRecovered"],
        "selected_pods": [r.get("id") for r in records],
        "records": [{"target": r.get("id"), "phase": r.get("phase"), "injected_count": r.get("injectedCount", 0),
                     "recovered_count": r.get("recoveredCount", 0)} for r in records],
        "failures": failures,
    }
