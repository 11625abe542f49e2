"""Rolling restarts and image changes of a StatefulSet, with each pod's down time measured.

``kubectl rollout restart`` (or ``kubectl set image``) starts the rollout; ``kubectl rollout status``
waits for it while the pods are polled every ``poll_s``: a pod is *down* from the first poll that sees
it not Ready (or gone, or terminating) until the first poll that sees it Ready again, so each down time
is accurate to the time between two polls: ``resolution_s`` is the longest such gap measured (``poll_s``
plus the time each poll took, which a busy machine stretches), each end of a down span within it.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any, Callable

from chaosdb.core.commands import describe_argv
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.timeutil import iso_from_epoch
from chaosdb.k8s import kubectl

__all__ = ["DowntimeTracker", "rolling_restart"]


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


def _ready_map(configuration: dict[str, Any], selector: str) -> tuple[dict[str, bool], dict[str, dict]]:
    pods = kubectl.list_pods(configuration, selector)
    return {p["name"]: p["ready"] for p in pods}, {p["name"]: p for p in pods}


def rolling_restart(configuration: dict[str, Any], statefulset: str, selector: str, image: str | None = None,
                    container: str | None = None, timeout_s: float = 900.0, poll_s: float = 1.0,
                    clock: Callable[[], float] = time.time) -> dict[str, Any]:
    if poll_s <= 0 or timeout_s <= 0:
        raise ChaosDBError("poll_s and timeout_s must be positive")
    if image is not None and not container:
        raise ChaosDBError("changing the image needs the container name (container)")
    before_ready, before = _ready_map(configuration, selector)
    if not before:
        raise ChaosDBError(f"no pod matches {selector!r} in namespace {kubectl.namespace_of(configuration)}")
    not_ready = sorted(n for n, ok in before_ready.items() if not ok)
    if not_ready:
        raise ChaosDBError(f"pods not Ready before the rollout: {', '.join(not_ready)}; refusing to restart more")
    t0 = clock()
    if image is None:
        started = kubectl.run_kubectl(configuration, "rollout", "restart", f"statefulset/{statefulset}")
    else:
        started = kubectl.run_kubectl(configuration, "set", "image", f"statefulset/{statefulset}",
                                      f"{container}={image}")
    argv = kubectl.kubectl_argv(configuration, "rollout", "status", f"statefulset/{statefulset}",
                                f"--timeout={int(timeout_s)}s")
    tracker = DowntimeTracker(sorted(before))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    poll_errors = 0
    try:
        while True:
            try:
                ready, _ = _ready_map(configuration, selector)
                tracker.observe(clock(), ready)
            except ChaosDBError:
                poll_errors += 1  # the API server may blink; the rollout status decides
            if proc.poll() is not None:
                break
            time.sleep(poll_s)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # after the rollout reports done, keep polling until every pod is Ready again (bounded by the timeout)
    deadline = t0 + timeout_s
    while proc.returncode == 0 and tracker.down_since and clock() < deadline:
        time.sleep(poll_s)
        ready, _ = _ready_map(configuration, selector)
        tracker.observe(clock(), ready)
    t_end = clock()
    ready, after = _ready_map(configuration, selector)
    result = tracker.result(t_end, t0)
    for name, rec in result["pods"].items():
        rec["restarted"] = (after.get(name, {}).get("uid") != before[name]["uid"]
                            or after.get(name, {}).get("restarts", 0) > before[name]["restarts"])
        rec["image_before"] = before[name]["images"]
        rec["image_after"] = after.get(name, {}).get("images")
    result.update({
        "statefulset": statefulset, "started_at": iso_from_epoch(t0), "duration_s": round(t_end - t0, 3),
        "poll_s": poll_s, "completed": proc.returncode == 0, "kubectl": started.strip(),
        "rollout_status": (out or "").strip().splitlines()[-1:] or [], "poll_errors": poll_errors,
        "total_down_s": round(sum(p["down_s"] for p in result["pods"].values()), 3),
    })
    if proc.returncode != 0:
        raise ChaosDBError(f"{describe_argv(argv)} failed: {(err or out).strip()[-300:]} "
                           f"(down so far: {result['pods']})")
    return result
