"""Chaos Mesh actions: create a chaos object (from a template or a spec, aimed at a database role), wait until
it is injected or recovered, pause / resume it, delete it as the rollback.

Every object we create carries ``app.kubernetes.io/managed-by: chaostoolkit-db``, so
``delete_all_chaos`` removes whatever an interrupted run left behind. Objects are validated (CRD schema and
the Chaos Mesh webhook's rules) before anything is sent; the spec of a chaos object is immutable, so
changing a fault means deleting and creating it again.
"""

import time
from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.chaosmesh.capabilities import refuse_what_this_kernel_cannot
from chaosdb.chaosmesh.objects import (
    GROUP,
    KINDS,
    MANAGED_BY,
    PAUSE_ANNOTATION,
    VERSION,
    aim_at,
    build_object,
    list_objects,
    plural_of,
    summarise,
)
from chaosdb.chaosmesh.physical import refuse_netem_here
from chaosdb.core.arguments import check_arguments, choice, is_unresolved
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.k8s import api, created
from chaosdb.k8s.roles import check_target, resolve_target
from chaosdb.manifests.templates import check_value, load_template, render

__all__ = ["create_chaos", "wait_until_injected", "wait_until_recovered", "pause_chaos", "resume_chaos",
           "delete_chaos", "delete_all_chaos"]


def _object_entry(kind: str, name: str, namespace: str) -> dict[str, Any]:
    """A chaos object as the entry of a result's ``targets`` (what pause, resume and delete take)."""
    return target_entry(name, kind=kind, namespace=namespace)


def _state(kind: str, name: str, namespace: str, configuration, secrets) -> dict[str, Any]:
    return {"targets": [_object_entry(kind, name, namespace)],
            **summarise(_get(kind, name, namespace, configuration, secrets))}


def _get(kind: str, name: str, namespace: str, configuration, secrets) -> dict[str, Any]:
    custom = api.custom_objects(configuration, secrets)
    return api.call_json(f"reading {kind} {namespace}/{name}", custom.get_namespaced_custom_object,
                    GROUP, VERSION, namespace, plural_of(kind), name)


def _has_real_node(configuration: Any, secrets: Any) -> bool:
    """Whether the cluster has a real node of the pack's local Kubernetes (``chaosdb.io/node=real``); False when the
    nodes cannot be listed (a credential without that right: nothing is known, nothing is refused)."""
    try:
        nodes = api.call_json("listing nodes", api.core_v1(configuration, secrets).list_node,
                              label_selector="chaosdb.io/node=real")
    except ChaosDBError:
        return False
    return bool(nodes.get("items"))


def _from_template(template: str, variables: dict[str, Any] | None) -> dict[str, Any]:
    objects = render(template, variables or {}).objects
    if len(objects) != 1 or objects[0].get("apiVersion") != f"{GROUP}/{VERSION}":
        raise ChaosDBError(f"template {template} does not hold exactly one Chaos Mesh object")
    return objects[0]


@action_result
def create_chaos(kind: str = "", spec: Dict[str, Any] = None, template: str = "",
                 variables: Dict[str, Any] = None, name: str = "", namespace: str = "",
                 target: Dict[str, Any] = None, wait: bool = True, timeout_s: float = 120.0,
                 configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Create a Chaos Mesh object and (``wait``) return once it is injected.

    Give either ``template`` (a name from ``chaosdb manifests list``, e.g. ``cockroachdb/network-delay``, with
    ``variables``) or ``kind`` + ``spec``. ``target`` aims the fault at a database role resolved now
    (``{"role": "cockroach-leaseholder", "table": "warehouse", "row": [1]}``, ``{"role": "tikv-leader",
    "key": "k"}``, ``{"role": "patroni-primary"}``, ``{"pod": "name"}``): the selector becomes exactly that pod.
    ``name`` / ``namespace`` override the template's. The object is validated before it is sent; with
    ``wait`` the action fails when no pod was selected or injection failed within ``timeout_s`` (and the object
    is then deleted). Returns the status record plus the resolved target."""
    if bool(template) == bool(kind):
        raise ChaosDBError("give either template (with variables) or kind with spec")
    if template:
        obj = _from_template(template, variables)
        kind, spec = obj["kind"], obj["spec"]
        name = name or obj["metadata"]["name"]
        namespace = namespace or obj["metadata"].get("namespace") or ""
        labels = obj["metadata"].get("labels") or {}
    else:
        if not isinstance(spec, dict) or not spec:
            raise ChaosDBError(f"{kind} needs a spec mapping")
        labels = {}
        if not name:
            raise ChaosDBError("name the chaos object (name)")
    namespace = api.namespace_of(configuration, namespace)
    resolved = None
    if target:
        if kind == "Schedule":
            aim_at(kind, spec, "", [])  # refused before anything is resolved
        resolved = resolve_target(target, configuration, secrets)
        spec = aim_at(kind, spec, resolved["namespace"], resolved["pods"])
    obj = build_object(kind, name, namespace, spec, labels)
    refuse_netem_here(obj)
    refuse_what_this_kernel_cannot(obj, api.api_client(configuration, secrets).configuration.host,
                                   lambda: _has_real_node(configuration, secrets))
    custom = api.custom_objects(configuration, secrets)
    api.call_json(f"creating {kind} {namespace}/{name}", custom.create_namespaced_custom_object,
                  GROUP, VERSION, namespace, plural_of(kind), obj)
    created.remember(kind, name, namespace, configuration, secrets)
    result: dict[str, Any]
    if wait and kind not in ("Schedule", "Workflow"):
        try:
            result = wait_until_injected(kind, name, namespace, timeout_s, configuration, secrets)
        except ChaosDBError:
            delete_chaos(kind, name, namespace, wait=True, timeout_s=60.0, configuration=configuration,
                         secrets=secrets)
            raise
    else:
        result = _state(kind, name, namespace, configuration, secrets)
    result["target"] = resolved
    return result


FAILURE_GRACE_S = 15.0
"""How long a target's injection may go on failing before :func:`wait_until_injected` gives up early. Chaos Mesh
retries a failed injection (chaos-daemon out of reach for a moment, an iptables or ipset command that failed) and
records each attempt; only a failure that outlasts this is taken as final."""


def _failure_text(failures: list[dict[str, Any]]) -> str:
    """Chaos Mesh's failure messages, one per target."""
    return "; ".join(f"{f['target']}: {f['message']}" for f in failures)


def _lasting_failures(failures: list[dict[str, Any]], failing_since: dict[str, float], now: float,
                      grace_s: float) -> list[dict[str, Any]]:
    """The *failures* whose target has been failing for at least *grace_s*. *failing_since* (target -> when it was
    first seen failing) is updated: a target whose last event is no longer a failure is forgotten."""
    current = {str(f["target"]): f for f in failures}
    for gone in set(failing_since) - set(current):
        del failing_since[gone]
    for target in current:
        failing_since.setdefault(target, now)
    return [f for t, f in current.items() if now - failing_since[t] >= grace_s]


@action_result
def wait_until_injected(kind: str, name: str, namespace: str = "", timeout_s: float = 120.0,
                        configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until ``Selected`` and ``AllInjected`` are True, or until every target has been injected once when the
    fault is already over (a short one, between two looks). Fails early when a target's injection has failed for
    :data:`FAILURE_GRACE_S` (Chaos Mesh retries a failure, so a passing one is waited out) or when the object's
    duration ended before every target was injected, and after ``timeout_s`` saying whether any pod was selected
    at all and what failed last."""
    namespace = api.namespace_of(configuration, namespace)
    deadline = time.monotonic() + float(timeout_s)
    started = time.monotonic()
    grace_s = min(FAILURE_GRACE_S, float(timeout_s))
    failing_since: dict[str, float] = {}
    while True:
        state = summarise(_get(kind, name, namespace, configuration, secrets))
        now = time.monotonic()
        never = [r["target"] for r in state["records"] if not r["injected_count"]]
        stopped = state["desired_phase"] == "Stop" and not state["paused"]
        # injected, or a short fault injected and over between two looks
        if state["injected"] or (stopped and state["records"] and not never):
            state["waited_s"] = round(now - started, 3)
            return {"targets": [_object_entry(kind, name, namespace)], **state}
        lasting = _lasting_failures(state["failures"], failing_since, now, grace_s)
        if lasting:
            raise ChaosDBError(f"{kind} {namespace}/{name} failed to inject for {grace_s:g}s: "
                               + _failure_text(lasting))
        if stopped and never:
            why = ("it is being deleted" if state["phase"] == "deleting" else
                   "its duration ran out: Chaos Mesh counts it from the object's creation, so give it a longer one")
            raise ChaosDBError(f"{kind} {namespace}/{name} stopped before Chaos Mesh injected {', '.join(never)} "
                               f"({now - started:.0f}s after it was created): {why}")
        if now >= deadline:
            why = ("no pod was selected: check the selector's namespaces and labels (and, with "
                   "ENABLE_FILTER_NAMESPACE, the chaos-mesh.org/inject=enabled annotation)"
                   if not state["selected"] else f"records: {state['records']}")
            if state["failures"]:
                why += "; last failure: " + _failure_text(state["failures"])
            raise ChaosDBError(f"{kind} {namespace}/{name} not injected after {timeout_s:g}s: {why}")
        time.sleep(0.2)


@action_result
def wait_until_recovered(kind: str, name: str, namespace: str = "", timeout_s: float = 300.0,
                         configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until Chaos Mesh has recovered every target (``desiredPhase: Stop`` and ``AllRecovered``): the
    duration is over or the object is paused. One-shot actions (pod-kill, container-kill) never recover:
    delete them instead."""
    namespace = api.namespace_of(configuration, namespace)
    deadline = time.monotonic() + float(timeout_s)
    started = time.monotonic()
    while True:
        obj = _get(kind, name, namespace, configuration, secrets)
        if kind == "PodChaos" and (obj.get("spec") or {}).get("action") in ("pod-kill", "container-kill"):
            raise ChaosDBError(f"{name} is a one-shot {obj['spec']['action']}: it never recovers; delete it")
        state = summarise(obj)
        if state["recovered"] or (state["paused"] and state["all_recovered"]):
            state["waited_s"] = round(time.monotonic() - started, 3)
            return {"targets": [_object_entry(kind, name, namespace)], **state}
        if time.monotonic() >= deadline:
            raise ChaosDBError(f"{kind} {namespace}/{name} not recovered after {timeout_s:g}s "
                               f"(phase {state['phase']}, records {state['records']})")
        time.sleep(0.2)


def _annotate(kind: str, name: str, namespace: str, value: str | None, configuration, secrets) -> dict:
    custom = api.custom_objects(configuration, secrets)
    patch = {"metadata": {"annotations": {PAUSE_ANNOTATION: value}}}
    return api.call_json(f"{'pausing' if value else 'resuming'} {kind} {namespace}/{name}",
                    custom.patch_namespaced_custom_object, GROUP, VERSION, namespace, plural_of(kind), name, patch)


@action_result
def pause_chaos(kind: str, name: str, namespace: str = "", wait: bool = True, timeout_s: float = 60.0,
                configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Pause (annotation ``experiment.chaos-mesh.org/pause: "true"``): the fault is withdrawn but the object
    stays, so it can be resumed. Also pauses a Schedule. With ``wait``, returns once every target is recovered."""
    namespace = api.namespace_of(configuration, namespace)
    _annotate(kind, name, namespace, "true", configuration, secrets)
    if wait and kind not in ("Schedule", "Workflow"):
        return wait_until_recovered(kind, name, namespace, timeout_s, configuration, secrets)
    return _state(kind, name, namespace, configuration, secrets)


@action_result
def resume_chaos(kind: str, name: str, namespace: str = "", wait: bool = True, timeout_s: float = 60.0,
                 configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Resume a paused object (the annotation is removed: a merge patch with null), waiting for re-injection."""
    namespace = api.namespace_of(configuration, namespace)
    _annotate(kind, name, namespace, None, configuration, secrets)
    if wait and kind not in ("Schedule", "Workflow"):
        return wait_until_injected(kind, name, namespace, timeout_s, configuration, secrets)
    return _state(kind, name, namespace, configuration, secrets)


@action_result
def delete_chaos(kind: str, name: str, namespace: str = "", wait: bool = True, timeout_s: float = 120.0,
                 configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Delete the object: Chaos Mesh recovers every target, then drops its finalizer. Idempotent (an object
    that is already gone is fine), so it is the rollback. With ``wait`` returns once the object is gone; a
    timeout names the stuck records (force with the ``chaos-mesh.chaos-mesh.org/cleanFinalizer: forced``
    annotation only when the pods are known to be clean)."""
    namespace = api.namespace_of(configuration, namespace)
    custom = api.custom_objects(configuration, secrets)
    started = time.monotonic()
    try:
        api.call_json(f"deleting {kind} {namespace}/{name}", custom.delete_namespaced_custom_object,
                 GROUP, VERSION, namespace, plural_of(kind), name)
    except api.K8sApiError as e:
        if e.status == 404:
            created.forget(kind, name, namespace)
            return {"targets": [_object_entry(kind, name, namespace)], "name": name, "namespace": namespace,
                    "kind": kind, "deleted": True, "existed": False,
                    "waited_s": 0.0}
        raise
    deadline = started + float(timeout_s)
    last: dict[str, Any] = {}
    while wait:
        try:
            last = summarise(_get(kind, name, namespace, configuration, secrets))
        except api.K8sApiError as e:
            if e.status == 404:
                break
            raise
        if time.monotonic() >= deadline:
            raise ChaosDBError(f"{kind} {namespace}/{name} still present {timeout_s:g}s after deletion: "
                               f"records not recovered: {last.get('records')}")
        time.sleep(0.2)
    created.forget(kind, name, namespace)
    return {"targets": [_object_entry(kind, name, namespace)], "name": name, "namespace": namespace, "kind": kind,
            "deleted": wait, "existed": True,
            "waited_s": round(time.monotonic() - started, 3)}


@action_result
def delete_all_chaos(namespace: str = "", kinds: List[str] = None, timeout_s: float = 120.0,
                     configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Delete every chaos object this pack created in ``namespace`` (label
    ``app.kubernetes.io/managed-by=chaostoolkit-db``): the rollback after an interrupted run. ``targets`` are
    the objects found, ``deleted`` what each deletion returned."""
    namespace = api.namespace_of(configuration, namespace)
    custom = api.custom_objects(configuration, secrets)
    selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
    out = []
    for kind in kinds or list(KINDS):
        for item in list_objects(custom, kind, namespace, selector):
            out.append(delete_chaos(kind, item["metadata"]["name"], namespace, True, timeout_s, configuration,
                                    secrets))
    return {"targets": [t for d in out for t in d["targets"]], "namespace": namespace, "deleted": out}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _target(value: Any) -> None:
    if value is not None:
        check_target(value)


def _kinds(value: Any) -> None:
    unknown = [k for k in (value or []) if k not in KINDS]
    if unknown:
        raise ChaosDBError(f"unknown Chaos Mesh kind(s) {', '.join(map(str, unknown))}: one of {', '.join(KINDS)}")


def _kind(value: Any) -> None:
    if value:
        choice("kind", *KINDS)(value)


def _template_call(args: dict[str, Any]) -> None:
    """create_chaos: a template that exists, no unknown variable, every required one given, each of its type
    (the rendering and the CRD validation follow when the action runs)."""
    if bool(args.get("template")) == bool(args.get("kind")):
        raise ChaosDBError("give either template (with variables) or kind with spec")
    if not args.get("template") or is_unresolved(args["template"]):
        return
    template = load_template(str(args["template"]))
    values = args.get("variables") or {}
    if not isinstance(values, dict):
        raise ChaosDBError(f"variables must be a mapping of template variables, got {values!r}")
    unknown = sorted(set(values) - set(template.variables))
    if unknown:
        raise ChaosDBError(f"template {template.name} has no variable(s) {', '.join(unknown)}; it has "
                           f"{', '.join(template.variables)}")
    missing = [v for v in template.variables.values() if v.required and values.get(v.name) is None]
    if missing:
        raise ChaosDBError(f"template {template.name} needs " + ", ".join(f"{v.name} ({v.description})"
                                                                       for v in missing))
    for vname, value in values.items():
        if value is not None and not is_unresolved(value):
            check_value(template.variables[vname], value)


_template_call.partial = True  # type: ignore[attr-defined]  # checked at validate, ${...} values once known


check_arguments(globals(), {"create_chaos": _template_call}, kind=_kind, kinds=_kinds, target=_target,
                extras=("k8s",))
