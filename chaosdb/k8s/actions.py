"""Kubernetes-level failures for any StatefulSet, aimed at database roles (the thesis's pod and process levels,
the Kubernetes evaluation's scaling and rolling restarts), through the official client.

Targets: see :mod:`chaosdb.k8s.roles` (``{"role": "cockroach-leaseholder", "table": ..., "row": ...}``,
``{"role": "tikv-leader", "key": ...}``, ``{"role": "patroni-primary"}``, ``{"pod": "name"}``).
Unlike ``chaosk8s.pod.actions.exec_in_pods`` (which skips every pod unless a container name is given), the
exec here always names the container and fails if it is not in the pod.
"""

import time
from typing import Any, Callable, Dict, List, Optional

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments, choice, number
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import action_result
from chaosdb.core.results import target as target_entry
from chaosdb.k8s import api, pods, rollout
from chaosdb.k8s.pods import SIGNALS
from chaosdb.k8s.roles import check_target, resolve_target

__all__ = ["delete_pods", "kill_container_process", "scale_statefulset", "restart_statefulset",
           "wait_for_statefulset_ready"]


def _pod_entries(resolved: dict[str, Any]) -> list[dict[str, Any]]:
    """The resolved pods as entries of a result's ``targets`` (with the role that chose them, if any)."""
    return [target_entry(pod, kind="Pod", namespace=resolved["namespace"], role=resolved.get("role"))
            for pod in resolved["pods"]]


def _statefulset_entry(name: str, namespace: str) -> dict[str, Any]:
    return target_entry(name, kind="StatefulSet", namespace=namespace)


def _pod_json(configuration, secrets, namespace: str, name: str) -> dict[str, Any]:
    return pods.read_pod(configuration, secrets, namespace, name)


def _wait_for_pods(configuration, secrets, ns: str, before: dict[str, dict[str, Any]], started: float,
                   timeout_s: float, what: str, done: Callable[[dict, dict], bool]) -> dict[str, float]:
    """Poll each pod until ``done(old, now)``; seconds from ``started`` per pod. A pod that is gone (404) for a
    moment is being replaced: keep polling."""
    reached: dict[str, float] = {}
    deadline = started + float(timeout_s)
    while len(reached) < len(before):
        for pod, old in before.items():
            if pod in reached:
                continue
            try:
                now = _pod_json(configuration, secrets, ns, pod)
            except api.K8sApiError as e:
                if e.status == 404:
                    continue
                raise
            if done(old, now):
                reached[pod] = round(time.monotonic() - started, 3)
        if time.monotonic() > deadline:
            missing = ", ".join(sorted(set(before) - set(reached)))
            raise ChaosDBError(f"pod(s) {missing} not {what} within {timeout_s:g}s")
        time.sleep(0.2)
    return reached


@action_result
def delete_pods(target: Dict[str, Any], grace_period_s: Optional[int] = 30, force: bool = False,
                wait_replaced: bool = True, timeout_s: float = 300.0, configuration: Configuration = None,
                secrets: Secrets = None) -> Dict[str, Any]:
    """Delete the target pod(s) with a grace period (``grace_period_s``; null: the pod's own
    ``terminationGracePeriodSeconds``), or ``force`` (grace period 0, the thesis's hard pod failure). With
    ``wait_replaced`` returns once the StatefulSet's replacement (a new uid) is Ready, with the time it took."""
    if force and grace_period_s not in (None, 0, 30):
        raise ChaosDBError("force deletes with grace period 0: leave grace_period_s unset")
    if not force and grace_period_s is not None and int(grace_period_s) < 0:
        raise ChaosDBError("grace_period_s must be >= 0")
    resolved = resolve_target(target, configuration, secrets)
    ns = resolved["namespace"]
    before = {p: _pod_json(configuration, secrets, ns, p) for p in resolved["pods"]}
    started = time.monotonic()
    grace: Optional[int] = None
    for pod in resolved["pods"]:
        if force or grace_period_s == 0:
            grace = pods.delete_pod(configuration, secrets, ns, pod, force=True)["grace_period_s"]
        else:
            grace = pods.delete_pod(configuration, secrets, ns, pod, grace_period_s)["grace_period_s"]
    result: dict[str, Any] = {"targets": _pod_entries(resolved), "target": resolved, "grace_period_s": grace,
                              "force": bool(force),
                              "deleted": resolved["pods"], "old_uids": {p: b["uid"] for p, b in before.items()}}
    if not wait_replaced:
        return result
    result["ready_after_s"] = _wait_for_pods(
        configuration, secrets, ns, before, started, timeout_s, "replaced and Ready after deletion",
        lambda old, now: now["uid"] != old["uid"] and now["ready"])
    return result


@action_result
def kill_container_process(target: Dict[str, Any], container: str, signal: str = "KILL", pid: int = 1,
                           wait_restarted: bool = True, timeout_s: float = 300.0,
                           configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """``kill -s SIGNAL PID`` inside ``container`` of the target pod(s) (PID 1 is the database when the
    container execs it): the thesis's process-level failure. The container name is required. With
    ``wait_restarted`` returns once the kubelet restarted the container and the pod is Ready again."""
    sig = pods.signal_name(signal)
    if not container:
        raise ChaosDBError("name the container: pods with sidecars would otherwise get the default one")
    if not str(pid).isdigit():
        raise ChaosDBError(f"pid must be a number, got {pid!r}")
    resolved = resolve_target(target, configuration, secrets)
    ns = resolved["namespace"]
    before = {}
    for pod in resolved["pods"]:
        info = _pod_json(configuration, secrets, ns, pod)
        if container not in info["containers"]:
            raise ChaosDBError(f"pod {ns}/{pod} has no container {container!r} (it has "
                               f"{', '.join(info['containers'])})")
        before[pod] = info
    started = time.monotonic()
    for pod in resolved["pods"]:
        pods.exec_signal(configuration, secrets, ns, pod, container, sig, pid)
    result: dict[str, Any] = {"targets": _pod_entries(resolved), "target": resolved, "container": container,
                              "signal": sig, "pid": int(pid),
                              "restarts_before": {p: b["restarts"] for p, b in before.items()}}
    if not wait_restarted:
        return result
    result["ready_after_s"] = _wait_for_pods(
        configuration, secrets, ns, before, started, timeout_s, f"with container {container} restarted and Ready",
        lambda old, now: (now["restarts"] > old["restarts"] or now["uid"] != old["uid"]) and now["ready"])
    return result


def _sts(configuration, secrets, namespace: str, name: str) -> dict[str, Any]:
    apps = api.apps_v1(configuration, secrets)
    return api.call_json(f"reading statefulset {namespace}/{name}", apps.read_namespaced_stateful_set, name,
                         namespace)


@action_result
def wait_for_statefulset_ready(name: str, namespace: str = "", replicas: int = 0, timeout_s: float = 600.0,
                               configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Wait until the StatefulSet has ``replicas`` (default: its spec) Ready pods, all on the current revision."""
    ns = api.namespace_of(configuration, namespace)
    started = time.monotonic()
    while True:
        sts = _sts(configuration, secrets, ns, name)
        want = int(replicas or sts["spec"]["replicas"])
        st = sts.get("status") or {}
        if (st.get("readyReplicas") or 0) >= want and (st.get("updatedReplicas") or 0) >= want \
                and st.get("observedGeneration", 0) >= sts["metadata"].get("generation", 0):
            return {"targets": [_statefulset_entry(name, ns)], "name": name, "namespace": ns,
                    "ready": st.get("readyReplicas"), "replicas": want,
                    "waited_s": round(time.monotonic() - started, 3)}
        if time.monotonic() - started > float(timeout_s):
            raise ChaosDBError(f"statefulset {ns}/{name}: {st.get('readyReplicas') or 0}/{want} Ready, "
                               f"{st.get('updatedReplicas') or 0} updated after {timeout_s:g}s")
        time.sleep(0.2)


@action_result
def scale_statefulset(name: str, replicas: int, namespace: str = "", wait: bool = True,
                      timeout_s: float = 600.0, configuration: Configuration = None,
                      secrets: Secrets = None) -> Dict[str, Any]:
    """Scale a StatefulSet (scale-out: the Kubernetes evaluation's elasticity test) through its ``/scale``
    subresource. Refuses to scale to fewer than 1 replica. With ``wait`` returns the time until every new pod
    is Ready (the database still has to rebalance: see ``ranges_per_node_over_time``)."""
    if isinstance(replicas, str) and replicas.strip().isdigit():
        replicas = int(replicas)      # from an environment variable
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise ChaosDBError(f"replicas must be an integer >= 1, got {replicas!r}")
    ns = api.namespace_of(configuration, namespace)
    apps = api.apps_v1(configuration, secrets)
    before = api.call_json(f"reading scale of {ns}/{name}", apps.read_namespaced_stateful_set_scale, name, ns)
    previous = before["spec"]["replicas"]
    api.call_json(f"scaling {ns}/{name} to {replicas}", apps.patch_namespaced_stateful_set_scale, name, ns,
             {"spec": {"replicas": replicas}})
    out: dict[str, Any] = {"targets": [_statefulset_entry(name, ns)], "name": name, "namespace": ns,
                           "previous_replicas": previous, "replicas": replicas}
    if wait:
        out["ready_after_s"] = wait_for_statefulset_ready(name, ns, replicas, timeout_s, configuration,
                                                          secrets)["waited_s"]
    return out


@action_result
def restart_statefulset(name: str, namespace: str = "", image: str = "", container: str = "",
                        wait: bool = True, timeout_s: float = 1200.0, poll_s: float = 1.0, selector: str = "",
                        configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Rolling restart (as ``kubectl rollout restart``: the ``kubectl.kubernetes.io/restartedAt`` template
    annotation) or, with ``image`` and ``container``, a version change (hot swap). The StatefulSet replaces
    pods one at a time from the highest ordinal. Refused when a pod is not Ready beforehand. With ``wait``
    returns when the controller reports all Ready on the new revision, with each pod's down time (polled every
    ``poll_s``; ``resolution_s`` is the longest gap between two polls), how many were down together and
    whether each was replaced. ``selector`` (default: the StatefulSet's own) picks the pods to watch."""
    ns = api.namespace_of(configuration, namespace)
    if bool(image) != bool(container):
        raise ChaosDBError("an image change needs both image and container")
    if wait:
        done = rollout.rolling_restart(configuration, secrets, name, ns, selector, image=image or None,
                                       container=container or None, timeout_s=timeout_s, poll_s=poll_s)
        return {"targets": [_statefulset_entry(name, ns)], "name": name, **done}
    previous = rollout.start_rollout(configuration, secrets, name, ns, image or None, container or None)
    return {"targets": [_statefulset_entry(name, ns)], "name": name, "statefulset": name, "namespace": ns,
            "image": image or None, "previous_image": previous}


def exec_in_pod(namespace: str, pod: str, container: str, command: List[str], timeout_s: Optional[float] = 30.0,
                configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, str]:
    """Not an activity: run *command* in a container of a pod (the engine's one exec), for database packages that
    reach this engine by name (:func:`chaosdb.core.engines.engine_action`), e.g. CockroachDB's CLI in its own
    pod. Returns ``{"stdout", "stderr"}``."""
    out, err = pods.exec_command(configuration, secrets, namespace, pod, container, command, timeout_s)
    return {"stdout": out, "stderr": err}


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), {}, {"scale_statefulset": {"replicas": number("replicas", 1, integer=True)}},
                target=check_target, signal=choice("signal", *SIGNALS), pid=number("pid", 1, integer=True),
                grace_period_s=number("grace_period_s", 0, integer=True, hint=" (seconds)"),
                replicas=number("replicas", 0, integer=True), extras=("k8s",))
