"""LitmusChaos actions: create a ChaosEngine (from a template or a full object), wait for the ChaosResult
verdict, stop the engine (``engineState: stop``) and delete it as the rollback.

The ChaosExperiment and its service account must exist in the engine's namespace first (``litmus/<fault>-setup``
templates); the engine is refused before creation when they do not, instead of the operator's
``ChaosExperiment Not Found`` later.

A ``target`` aims the engine at a database role resolved when the action runs (``{"role": "patroni-primary"}``,
:mod:`chaosdb.k8s.roles`): its pods become the ``TARGET_PODS`` of every experiment of the engine (litmus-go's pod
faults read that variable: pod names, comma separated, in the namespace of the engine's ``appinfo.appns``), so the
experiment hits exactly that pod instead of a random pod of ``applabel``.
"""

import copy
import time
from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.k8s import api, created
from chaosdb.k8s.roles import check_target, resolve_target
from chaosdb.litmus.results import GROUP, VERSION, result_name, summarise_result
from chaosdb.manifests.templates import render
from chaosdb.manifests.validate import require_valid

__all__ = ["run_chaos_engine", "wait_for_verdict", "stop_chaos_engine", "delete_chaos_engine"]

_MANAGED = {"app.kubernetes.io/managed-by": "chaostoolkit-db"}


def _engine_entry(engine: str, namespace: str) -> Dict[str, Any]:
    """A ChaosEngine as the entry of a result's ``targets`` (what stop and delete take)."""
    return target_entry(engine, kind="ChaosEngine", namespace=namespace)


def _custom(configuration, secrets):
    return api.custom_objects(configuration, secrets)


def _target_namespace(obj: Dict[str, Any]) -> str:
    """Where litmus-go looks up ``TARGET_PODS``: the engine's ``appinfo.appns``, else the engine's namespace."""
    return str(((obj.get("spec") or {}).get("appinfo") or {}).get("appns") or obj["metadata"]["namespace"])


def aim_engine_at(engine: Dict[str, Any], namespace: str, pods: List[str]) -> Dict[str, Any]:
    """A copy of the ChaosEngine *engine* whose every experiment deletes (or stresses...) exactly *pods*: its
    ``TARGET_PODS`` (set, or replaced) names them. Refused when the pods are not where litmus-go looks them up (the
    engine's ``appinfo.appns``, else the engine's namespace)."""
    if not pods:
        raise ChaosDBError("the target names no pod")
    where = _target_namespace(engine)
    if namespace != where:
        raise ChaosDBError(f"the target's pods are in namespace {namespace}, but litmus-go looks up TARGET_PODS in "
                           f"{where} (the engine's appinfo.appns, else its namespace)")
    out = copy.deepcopy(engine)
    for exp in out["spec"].get("experiments") or []:
        components = exp.setdefault("spec", {}).setdefault("components", {})
        env = [e for e in components.get("env") or [] if e.get("name") != "TARGET_PODS"]
        components["env"] = env + [{"name": "TARGET_PODS", "value": ",".join(pods)}]
    return out


@action_result
def run_chaos_engine(template: str = "", variables: Dict[str, Any] = None, engine: Dict[str, Any] = None,
                     target: Dict[str, Any] = None, wait: bool = True, timeout_s: float = 900.0,
                     fail_on_verdict: bool = False, configuration: Configuration = None,
                     secrets: Secrets = None) -> Dict[str, Any]:
    """Create a ChaosEngine from ``template`` (e.g. ``litmus/cockroachdb-pod-delete-engine`` with
    ``variables``) or a full ``engine`` object, then (``wait``) wait for its verdict. Returns the ChaosResult
    record: phase, verdict, ``probe_success_percentage`` (a number, or null while Awaited), probe verdicts, and the
    resolved ``target``. ``target`` aims every experiment at a database role resolved now (``{"role":
    "patroni-primary"}``, ``{"pod": "name"}``; its namespace defaults to the engine's ``appinfo.appns``): its pod
    becomes ``TARGET_PODS``. ``fail_on_verdict`` makes a Fail/Error/Stopped verdict fail the action."""
    if bool(template) == bool(engine):
        raise ChaosDBError("give either template (with variables) or engine")
    if template:
        objects = [o for o in render(template, variables or {}).objects if o.get("kind") == "ChaosEngine"]
        if len(objects) != 1:
            raise ChaosDBError(f"template {template} does not hold exactly one ChaosEngine")
        obj = objects[0]
    else:
        obj = dict(engine or {})
    obj.setdefault("metadata", {}).setdefault("labels", {}).update(_MANAGED)
    require_valid(obj, "ChaosEngine")
    ns = api.namespace_of(configuration, obj["metadata"].get("namespace"))
    obj["metadata"]["namespace"] = ns
    resolved = None
    if target:
        aim = {"pod": target} if isinstance(target, str) else dict(target)
        aim.setdefault("namespace", _target_namespace(obj))
        resolved = resolve_target(aim, configuration, secrets)
        obj = aim_engine_at(obj, resolved["namespace"], resolved["pods"])
        require_valid(obj, "ChaosEngine")
    custom = _custom(configuration, secrets)
    for exp in obj["spec"].get("experiments") or []:
        try:
            api.call_json(f"reading ChaosExperiment {ns}/{exp['name']}", custom.get_namespaced_custom_object,
                          GROUP, VERSION, ns, "chaosexperiments", exp["name"])
        except api.K8sApiError as e:
            if e.status == 404:
                raise ChaosDBError(f"ChaosExperiment {exp['name']} is not installed in {ns}: apply "
                                   f"`chaosdb manifests render litmus/{exp['name']}-setup --set NAMESPACE={ns}` "
                                   "first") from None
            raise
    name = obj["metadata"]["name"]
    api.call_json(f"creating ChaosEngine {ns}/{name}", custom.create_namespaced_custom_object, GROUP, VERSION, ns,
                  "chaosengines", obj)
    created.remember("ChaosEngine", name, ns, configuration, secrets)
    experiments = [e["name"] for e in obj["spec"].get("experiments") or []]
    if not wait:
        return {"targets": [_engine_entry(name, ns)], "engine": name, "namespace": ns, "experiments": experiments,
                "verdict": "Awaited", "target": resolved}
    return {**wait_for_verdict(name, experiments[0], ns, timeout_s, fail_on_verdict, configuration, secrets),
            "target": resolved}


@action_result
def wait_for_verdict(engine: str, experiment: str, namespace: str = "", timeout_s: float = 900.0,
                     fail_on_verdict: bool = False, configuration: Configuration = None,
                     secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until the ChaosResult ``<engine>-<experiment>`` has a final verdict (Pass, Fail, Stopped, Error).
    Fails early when the engine reports the ChaosExperiment missing."""
    ns = api.namespace_of(configuration, namespace)
    custom = _custom(configuration, secrets)
    started = time.monotonic()
    rname = result_name(engine, experiment)
    while True:
        eng = api.call_json(f"reading ChaosEngine {ns}/{engine}", custom.get_namespaced_custom_object, GROUP,
                            VERSION, ns, "chaosengines", engine)
        for st in (eng.get("status") or {}).get("experiments") or []:
            if st.get("name") == experiment and st.get("status") == "ChaosExperiment Not Found":
                raise ChaosDBError(f"ChaosEngine {ns}/{engine}: ChaosExperiment {experiment} not found in {ns}")
        try:
            res = api.call_json(f"reading ChaosResult {ns}/{rname}", custom.get_namespaced_custom_object, GROUP,
                                VERSION, ns, "chaosresults", rname)
            record = summarise_result(res)
        except api.K8sApiError as e:
            if e.status != 404:
                raise
            record = None
        if record and record["final"]:
            # the engine as it is now, after the verdict (the read above came before the result)
            eng = api.call_json(f"reading ChaosEngine {ns}/{engine}", custom.get_namespaced_custom_object, GROUP,
                                VERSION, ns, "chaosengines", engine)
            record["engine_status"] = (eng.get("status") or {}).get("engineStatus")
            record["waited_s"] = round(time.monotonic() - started, 3)
            if fail_on_verdict and record["verdict"] != "Pass":
                raise ChaosDBError(f"Litmus {experiment} on {ns}/{engine}: verdict {record['verdict']} "
                                   f"(probe success {record['probe_success_percentage']}%)")
            return {"targets": [_engine_entry(engine, ns)], **record}
        if time.monotonic() - started > float(timeout_s):
            raise ChaosDBError(f"no Litmus verdict for {ns}/{rname} after {timeout_s:g}s "
                               f"(engine status {(eng.get('status') or {}).get('engineStatus')})")
        time.sleep(0.25)


@action_result
def stop_chaos_engine(engine: str, namespace: str = "", configuration: Configuration = None,
                      secrets: Secrets = None) -> Dict[str, Any]:
    """Abort a running engine (``engineState: stop``); the operator stops the experiment and its helpers."""
    ns = api.namespace_of(configuration, namespace)
    custom = _custom(configuration, secrets)
    try:
        api.call_json(f"stopping ChaosEngine {ns}/{engine}", custom.patch_namespaced_custom_object, GROUP, VERSION,
                      ns, "chaosengines", engine, {"spec": {"engineState": "stop"}})
    except api.K8sApiError as e:
        if e.status == 404:
            return {"targets": [_engine_entry(engine, ns)], "engine": engine, "namespace": ns, "stopped": False,
                    "existed": False}
        raise
    return {"targets": [_engine_entry(engine, ns)], "engine": engine, "namespace": ns, "stopped": True,
            "existed": True}


@action_result
def delete_chaos_engine(engine: str, namespace: str = "", stop_first: bool = True,
                        configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Rollback: stop the engine (so helpers are withdrawn), then delete it. Idempotent. The ChaosResult is kept
    (it holds the verdict history)."""
    ns = api.namespace_of(configuration, namespace)
    custom = _custom(configuration, secrets)
    if stop_first:
        stop_chaos_engine(engine, ns, configuration, secrets)
    try:
        api.call_json(f"deleting ChaosEngine {ns}/{engine}", custom.delete_namespaced_custom_object, GROUP, VERSION,
                      ns, "chaosengines", engine)
    except api.K8sApiError as e:
        if e.status == 404:
            created.forget("ChaosEngine", engine, ns)
            return {"targets": [_engine_entry(engine, ns)], "engine": engine, "namespace": ns, "deleted": False,
                    "existed": False}
        raise
    created.forget("ChaosEngine", engine, ns)
    return {"targets": [_engine_entry(engine, ns)], "engine": engine, "namespace": ns, "deleted": True,
            "existed": True}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _target(value: Any) -> None:
    if value is not None:
        check_target(value)


check_arguments(globals(), target=_target, extras=("k8s",))
