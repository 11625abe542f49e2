"""Rolling restarts and image changes of a StatefulSet, with each pod's down time measured (official client).

The rollout starts as ``kubectl rollout restart`` does (the ``kubectl.kubernetes.io/restartedAt`` template
annotation) or as ``kubectl set image`` does (the container's image in the template); it is done when the
StatefulSet controller reports every replica updated and Ready on the new revision. Meanwhile the pods are
polled every ``poll_s``: a pod is *down* from the first poll that sees it not Ready (or gone, or terminating)
until the first poll that sees it Ready again, so each down time is accurate to the time between two polls:
``resolution_s`` is the longest such gap measured (``poll_s`` plus the time each poll took, which a busy machine
stretches), each end of a down span within it.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.timeutil import iso_from_epoch
from chaosdb.k8s import api, pods

__all__ = ["DowntimeTracker", "rolling_restart", "start_rollout"]


class DowntimeTracker:
    """Per-pod down intervals from successive snapshots of ``{name: ready}``."""

    def __init__(self, expected: list[str]):
        self.expected = list(expected)
        self.down_since: dict[str, float] = {}
        self.intervals: dict[str, list[list[float]]] = {p: [] for p in expected}
        self.max_down_together = 0
        self.polls = 0
        self.last_t: float | None = None
        self.max_gap_s = 0.0  # the real resolution: the longest time between two observations

    def observe(self, t: float, ready: dict[str, bool]) -> None:
        """Note which pods were Ready at time *t* (one poll)."""
        self.polls += 1
        if self.last_t is not None:
            self.max_gap_s = max(self.max_gap_s, t - self.last_t)
        self.last_t = t
        down_now = 0
        for name in self.expected:
            ok = ready.get(name, False)
            if not ok:
                down_now += 1
                self.down_since.setdefault(name, t)
            elif name in self.down_since:
                self.intervals[name].append([self.down_since.pop(name), t])
        self.max_down_together = max(self.max_down_together, down_now)

    def result(self, t_end: float, t0: float) -> dict[str, Any]:
        """Each pod's spans without readiness and their total, the longest gap between polls (the measurement's
        resolution), from *t0* to *t_end*."""
        pods = {}
        for name in self.expected:
            spans = [list(x) for x in self.intervals[name]]
            still = name in self.down_since
            if still:
                spans.append([self.down_since[name], t_end])
            pods[name] = {
                "down_s": round(sum(b - a for a, b in spans), 3),
                "down": [[round(a - t0, 3), round(b - t0, 3)] for a, b in spans],
                "down_at_end": still,
            }
        return {"pods": pods, "max_down_together": self.max_down_together, "polls": self.polls,
                "resolution_s": round(self.max_gap_s, 3)}


def _statefulset(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, namespace: str,
                 name: str) -> dict[str, Any]:
    apps = api.apps_v1(configuration, secrets)
    return api.call_json(f"reading statefulset {namespace}/{name}", apps.read_namespaced_stateful_set, name,
                         namespace)


def _rolled_out(sts: dict[str, Any]) -> bool:
    """The controller's own verdict: it saw the latest spec, and every replica is updated, Ready and on the
    update revision."""
    want = int((sts.get("spec") or {}).get("replicas") or 0)
    st = sts.get("status") or {}
    return (st.get("observedGeneration", 0) >= (sts.get("metadata") or {}).get("generation", 0)
            and (st.get("updatedReplicas") or 0) >= want and (st.get("readyReplicas") or 0) >= want
            and (not st.get("updateRevision") or st.get("currentRevision") == st.get("updateRevision")))


def start_rollout(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, statefulset: str,
                  namespace: str, image: str | None = None, container: str | None = None,
                  sts: dict[str, Any] | None = None) -> str | None:
    """Start the rollout (``image`` of ``container`` changed, else the restart annotation) and return the image
    it replaces (None for a restart). A container the StatefulSet does not have is refused first."""
    if image and not container:
        raise ChaosDBError("changing the image needs the container name (container)")
    sts = sts or _statefulset(configuration, secrets, namespace, statefulset)
    containers = sts["spec"]["template"]["spec"]["containers"]
    if container and container not in [c["name"] for c in containers]:
        raise ChaosDBError(f"statefulset {namespace}/{statefulset} has no container {container!r} "
                           f"(it has {', '.join(c['name'] for c in containers)})")
    patch: dict[str, Any]
    if image:
        patch = {"spec": {"template": {"spec": {"containers": [{"name": container, "image": image}]}}}}
    else:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        patch = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}}}}
    apps = api.apps_v1(configuration, secrets)
    api.call_json(f"patching statefulset {namespace}/{statefulset}", apps.patch_namespaced_stateful_set,
                  statefulset, namespace, patch)
    return next((c.get("image") for c in containers if c["name"] == container), None) if image else None


def rolling_restart(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, statefulset: str,
                    namespace: str, selector: str = "", image: str | None = None, container: str | None = None,
                    timeout_s: float = 900.0, poll_s: float = 1.0,
                    clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """Restart every pod of the StatefulSet (or change ``container``'s image), wait until the controller has
    rolled it out, and measure each pod's down time. ``selector`` defaults to the StatefulSet's own. Refused
    when a pod is not Ready beforehand (a rollout would take a second replica down)."""
    if poll_s <= 0 or timeout_s <= 0:
        raise ChaosDBError("poll_s and timeout_s must be positive")
    if image and not container:
        raise ChaosDBError("changing the image needs the container name (container)")
    sts = _statefulset(configuration, secrets, namespace, statefulset)
    selector = selector or ",".join(f"{k}={v}" for k, v in (sts["spec"]["selector"].get("matchLabels") or {}).items())

    def ready_map() -> tuple[dict[str, bool], dict[str, dict[str, Any]]]:
        found = pods.list_pods(configuration, secrets, namespace, selector)
        return {p["name"]: p["ready"] for p in found}, {p["name"]: p for p in found}

    before_ready, before = ready_map()
    if not before:
        raise ChaosDBError(f"no pod matches {selector!r} in namespace {namespace}")
    not_ready = sorted(n for n, ok in before_ready.items() if not ok)
    if not_ready:
        raise ChaosDBError(f"pods not Ready before the rollout: {', '.join(not_ready)}; refusing to restart more")
    tracker = DowntimeTracker(sorted(before))
    t0 = clock()
    previous_image = start_rollout(configuration, secrets, statefulset, namespace, image, container, sts)
    deadline = time.monotonic() + float(timeout_s)
    poll_errors = 0
    completed = False
    while True:
        try:
            ready, _ = ready_map()
            tracker.observe(clock(), ready)
            completed = _rolled_out(_statefulset(configuration, secrets, namespace, statefulset))
        except ChaosDBError:
            poll_errors += 1  # the API server may blink; the next poll decides
        if completed and not tracker.down_since:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(poll_s)
    t_end = clock()
    _, after = ready_map()
    result = tracker.result(t_end, t0)
    for name, rec in result["pods"].items():
        rec["restarted"] = (after.get(name, {}).get("uid") != before[name]["uid"]
                            or after.get(name, {}).get("restarts", 0) > before[name]["restarts"])
        rec["image_before"] = before[name]["images"]
        rec["image_after"] = after.get(name, {}).get("images")
    result.update({
        "statefulset": statefulset, "namespace": namespace, "image": image or None,
        "previous_image": previous_image, "started_at": iso_from_epoch(t0),
        "duration_s": round(t_end - t0, 3), "poll_s": poll_s, "completed": completed, "poll_errors": poll_errors,
        "total_down_s": round(sum(p["down_s"] for p in result["pods"].values()), 3),
        # the names the Kubernetes engine's restart_statefulset has always returned
        "max_not_ready_together": result["max_down_together"],
        "pods_seen_not_ready": sorted(n for n, p in result["pods"].items() if p["down"]),
    })
    if not completed:
        raise ChaosDBError(f"rolling restart of {namespace}/{statefulset} not finished after {timeout_s:g} s "
                           f"(down so far: {result['pods']})")
    return result
