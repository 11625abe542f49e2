"""A local stand-in of the Kubernetes API server, with a StatefulSet controller, Chaos Mesh and Litmus.

Serves the real REST paths, verbs and status codes the ``kubernetes`` Python client uses:

- core/v1 pods: list (``labelSelector``), get, delete (``gracePeriodSeconds``; the pod is Terminating, then
  the StatefulSet recreates it with a new uid, not Ready for ``restart_s``), exec over WebSocket
  (``v4.channel.k8s.io``: ``kill -s SIG 1`` restarts the container, bumping ``restartCount``);
- apps/v1 statefulsets: get, patch (template annotation or image: a rolling update from the highest ordinal,
  one pod at a time), ``/scale`` get/patch (scale out/in);
- chaos-mesh.org/v1alpha1 chaos kinds, Schedules, Workflows: create (CRD schema + webhook checks, 422/403
  like the server), get/list/patch/delete, with the controller's status: records appear once pods are
  selected (``Selected``), become ``Injected`` (``AllInjected``), go back to ``Not Injected`` when the
  duration is over or the pause annotation is ``"true"`` (``AllRecovered``, ``desiredPhase: Stop``); the
  ``chaos-mesh/records`` finalizer holds a deleted object until it is recovered; no status subresource;
  pod-kill / container-kill really act on the simulated pods; the spec is immutable (webhook refusal);
- litmuschaos.io/v1alpha1 ChaosEngine / ChaosExperiment / ChaosResult with the operator's status and the
  ``<engine>-<experiment>`` ChaosResult (phase, verdict, probeSuccessPercentage as a string). The real operator,
  runner and litmus-go run on the real node (``tests/integration/test_k8s_litmus.py``); this part stays for what a
  test cannot make them do: a Fail verdict and a partial probe success at will, an engine stopped midway, the
  CockroachDB and TiKV engines (those databases do not run here).

Requests need ``Authorization: Bearer <token>`` (401 otherwise), as with a real kubeconfig user token.
Times are in seconds; tests shrink them.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import struct
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from chaosdb.manifests.admission import admission_errors
from chaosdb.manifests.schema import schema_errors

#: the simulating CockroachDB CLI that an exec of ``cockroach`` in a pod runs
COCKROACH_CLI = Path(__file__).resolve().parents[1] / "data" / "cockroach" / "standin" / "cockroach"

CHAOS_PLURALS = {"podchaos": "PodChaos", "stresschaos": "StressChaos", "networkchaos": "NetworkChaos",
                 "iochaos": "IOChaos", "timechaos": "TimeChaos", "schedules": "Schedule", "workflows": "Workflow"}
LITMUS_PLURALS = {"chaosengines": "ChaosEngine", "chaosexperiments": "ChaosExperiment",
                  "chaosresults": "ChaosResult"}
ONE_SHOT = {"pod-kill", "container-kill"}
TOKEN = "standin-token-7f3a"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def _match(labels: dict[str, str], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.strip()) != v.strip().lstrip("="):
                return False
        elif labels.get(term.strip()) is None:
            return False
    return True


@dataclass
class SimPod:
    name: str
    namespace: str
    labels: dict[str, str]
    containers: list[str]
    image: str
    ordinal: int
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    created: float = field(default_factory=time.time)
    ready_at: float = 0.0
    deleting_at: float | None = None
    gone_at: float | None = None
    restarts: int = 0
    failed_until: float | None = None      # Chaos Mesh pod-failure
    template_hash: str = "rev1"

    def ready(self, now: float) -> bool:
        return (self.deleting_at is None and now >= self.ready_at
                and not (self.failed_until and now < self.failed_until))

    def body(self, now: float) -> dict[str, Any]:
        ready = self.ready(now)
        meta = {"name": self.name, "namespace": self.namespace, "uid": self.uid, "labels": dict(self.labels),
                "creationTimestamp": _iso(self.created), "resourceVersion": str(int(self.created * 1000)),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": self.name.rsplit("-", 1)[0],
                                     "uid": "sts", "controller": True}]}
        if self.deleting_at is not None:
            meta["deletionTimestamp"] = _iso(self.deleting_at)
            meta["deletionGracePeriodSeconds"] = max(0, int((self.gone_at or now) - self.deleting_at))
        return {
            "apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": c, "image": self.image} for c in self.containers],
                     "nodeName": f"worker-{self.ordinal % 3}"},
            "status": {"phase": "Running", "startTime": _iso(self.created),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "containerStatuses": [{"name": c, "ready": ready, "restartCount": self.restarts,
                                              "image": self.image} for c in self.containers]},
        }


class KubeStandin:
    """Start with :meth:`start`; add a StatefulSet with :meth:`add_statefulset`; stop with :meth:`stop`."""

    def __init__(self, restart_s: float = 0.6, select_s: float = 0.2, inject_s: float = 0.3,
                 recover_s: float = 0.2, litmus_run_s: float = 1.0) -> None:
        self.restart_s, self.select_s, self.inject_s, self.recover_s = restart_s, select_s, inject_s, recover_s
        self.litmus_run_s = litmus_run_s
        self.litmus_verdict = "Pass"
        self.litmus_probe_success = "100"
        self.lock = threading.RLock()
        self.pods: dict[tuple[str, str], SimPod] = {}
        self.statefulsets: dict[tuple[str, str], dict[str, Any]] = {}
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}   # (group, plural, ns, name)
        self.requests: list[tuple[str, str]] = []
        self.execs: list[dict[str, Any]] = []
        self.deletions: list[dict[str, Any]] = []     # every pod deletion: pod, namespace, grace_period_s asked
        self.posted: list[dict[str, Any]] = []        # every object a client tried to create
        self.events: list[dict[str, Any]] = []
        self.server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "KubeStandin":
        standin = self

        class Handler(_Handler):
            pass

        Handler.standin = standin
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def url(self) -> str:
        assert self.server
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def write_kubeconfig(self, path, namespace: str = "default", token: str = TOKEN) -> str:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": token}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "tester",
                                                         "namespace": namespace}}],
        }))
        return str(path)

    # ---- StatefulSet controller ------------------------------------------------------------------
    def add_statefulset(self, name: str, namespace: str, replicas: int, labels: dict[str, str],
                        containers: tuple[str, ...] = ("db",), image: str = "cockroachdb/cockroach:v23.2.4") -> None:
        with self.lock:
            self.statefulsets[(namespace, name)] = {
                "name": name, "namespace": namespace, "replicas": replicas, "labels": dict(labels),
                "containers": list(containers), "image": image, "annotations": {}, "revision": "rev1",
                "current_revision": "rev1",
                "generation": 1, "rolling": None}
            for i in range(replicas):
                self._new_pod(namespace, name, i, ready_now=True)

    def _new_pod(self, ns: str, sts_name: str, ordinal: int, ready_now: bool = False) -> SimPod:
        sts = self.statefulsets[(ns, sts_name)]
        now = time.time()
        pod = SimPod(f"{sts_name}-{ordinal}", ns, dict(sts["labels"]), list(sts["containers"]), sts["image"], ordinal,
                     created=now, ready_at=now if ready_now else now + self.restart_s,
                     template_hash=sts["revision"])
        self.pods[(ns, pod.name)] = pod
        return pod

    def _tick(self) -> None:
        """Advance the controllers to now (called on every request)."""
        now = time.time()
        with self.lock:
            for key, pod in list(self.pods.items()):
                if pod.gone_at is not None and now >= pod.gone_at:
                    del self.pods[key]
                    sts = self.statefulsets.get((pod.namespace, pod.name.rsplit("-", 1)[0]))
                    if sts and pod.ordinal < sts["replicas"]:
                        new = self._new_pod(pod.namespace, sts["name"], pod.ordinal)
                        new.created = pod.gone_at
                        new.ready_at = pod.gone_at + self.restart_s
            for (ns, name), sts in self.statefulsets.items():
                for i in range(sts["replicas"]):
                    if (ns, f"{name}-{i}") not in self.pods:
                        self._new_pod(ns, name, i)
                for (pns, pname), pod in list(self.pods.items()):
                    if pns == ns and pname.rsplit("-", 1)[0] == name and pod.ordinal >= sts["replicas"] \
                            and pod.deleting_at is None:
                        pod.deleting_at, pod.gone_at = now, now + 0.05
                if sts["rolling"]:
                    self._roll(sts, now)
            for obj in list(self.objects.values()):
                self._reconcile(obj, now)

    def _roll(self, sts: dict[str, Any], now: float) -> None:
        ns, name = sts["namespace"], sts["name"]
        pods = [self.pods.get((ns, f"{name}-{i}")) for i in range(sts["replicas"])]
        if any(p is None or not p.ready(now) for p in pods):
            return   # one at a time: wait for the replaced pod to be Ready
        stale = [p for p in pods if p.template_hash != sts["revision"]]
        if not stale:
            sts["rolling"] = None
            return
        victim = max(stale, key=lambda p: p.ordinal)
        victim.deleting_at, victim.gone_at = now, now + 0.05

    # ---- Chaos Mesh controller -------------------------------------------------------------------
    def _selected_pods(self, spec: dict[str, Any], default_ns: str) -> list[SimPod]:
        sel = spec.get("selector") or {}
        if sel.get("pods"):
            out = [self.pods.get((ns, n)) for ns, names in sel["pods"].items() for n in names]
            return [p for p in out if p and p.deleting_at is None]
        namespaces = sel.get("namespaces") or [default_ns]
        labels = sel.get("labelSelectors") or {}
        expressions = sel.get("expressionSelectors") or []

        def expr_ok(pod_labels: dict[str, str], e: dict[str, Any]) -> bool:
            op, have = e.get("operator"), pod_labels.get(e.get("key"))
            return {"In": have in (e.get("values") or []),
                    "NotIn": have not in (e.get("values") or []),
                    "Exists": have is not None, "DoesNotExist": have is None}[op]

        pods = [p for p in self.pods.values() if p.namespace in namespaces and p.deleting_at is None
                and all(p.labels.get(k) == v for k, v in labels.items())
                and all(expr_ok(p.labels, e) for e in expressions)]
        pods.sort(key=lambda p: p.name)
        mode, value = spec.get("mode"), spec.get("value")
        if mode == "one":
            return pods[:1]
        if mode == "fixed":
            return pods[:int(value)]
        if mode in ("fixed-percent", "random-max-percent"):
            return pods[:max(1, len(pods) * int(value) // 100)]
        return pods

    def _reconcile(self, obj: dict[str, Any], now: float) -> None:
        if obj["kind"] not in CHAOS_PLURALS.values() or obj["kind"] in ("Schedule", "Workflow"):
            if obj["kind"] in LITMUS_PLURALS.values():
                self._reconcile_litmus(obj, now)
            return
        meta, spec, sim = obj["metadata"], obj["spec"], obj["_sim"]
        created = sim["created"]
        paused = (meta.get("annotations") or {}).get("experiment.chaos-mesh.org/pause") == "true"
        action = spec.get("action")
        one_shot = obj["kind"] == "PodChaos" and action in ONE_SHOT
        duration = sim.get("duration_s")
        stop = meta.get("deletionTimestamp") is not None or paused or (
            not one_shot and duration is not None and now >= created + duration)
        if sim["targets"] is None and now >= created + self.select_s:
            targets = self._selected_pods(spec, meta["namespace"])
            if not targets:
                if not sim.get("no_target_event"):
                    sim["no_target_event"] = True
                    self.events.append({"object": meta["name"], "type": "Failed",
                                        "message": "Failed to select targets: no target has been selected"})
            else:
                sim["targets"] = [p.name for p in targets]
                sim["target_ns"] = targets[0].namespace
                sim["records"] = [{"id": f"{p.namespace}/{p.name}", "selectorKey": ".", "phase": "Not Injected",
                                   "injectedCount": 0, "recoveredCount": 0, "events": []} for p in targets]
        records = sim.get("records")
        if records:
            for rec in records:
                ns, pname = rec["id"].split("/", 1)
                if not stop and rec["phase"] == "Not Injected" and now >= created + self.select_s + self.inject_s \
                        and (one_shot is False or rec["injectedCount"] == 0):
                    rec["phase"] = "Injected"
                    rec["injectedCount"] += 1
                    rec["events"].append({"type": "Succeeded", "operation": "Apply", "timestamp": _iso(now)})
                    self._apply(obj, ns, pname, now)
                elif stop and rec["phase"] == "Injected" and not one_shot:
                    rec.setdefault("_recover_at", now + self.recover_s)
                    if now >= rec["_recover_at"]:
                        rec["phase"] = "Not Injected"
                        rec["recoveredCount"] += 1
                        rec.pop("_recover_at", None)
                        rec["events"].append({"type": "Succeeded", "operation": "Recover", "timestamp": _iso(now)})
                        pod = self.pods.get((ns, pname))
                        if pod and obj["kind"] == "PodChaos" and action == "pod-failure":
                            pod.failed_until = now
                elif stop and one_shot and rec["phase"] == "Injected":
                    rec["phase"] = "Not Injected"   # one-shot records recover at once on deletion
        phases = [r["phase"] for r in records or []]
        conditions = {
            "Selected": bool(records),
            "AllInjected": bool(records) and all(p == "Injected" for p in phases),
            "AllRecovered": bool(records) and all(p == "Not Injected" for p in phases),
            "Paused": paused,
        }
        order = list(conditions)
        order.reverse() if int(now * 10) % 2 else None      # the real order is not stable either
        obj["status"] = {
            "conditions": [{"type": k, "status": "True" if conditions[k] else "False", "reason": ""} for k in order],
            "experiment": {"desiredPhase": "Stop" if stop else "Run",
                           "containerRecords": [{k: v for k, v in r.items() if not k.startswith("_")}
                                                for r in records] if records else None},
        }
        if meta.get("deletionTimestamp") and (not records or conditions["AllRecovered"]):
            meta["finalizers"] = []

    def _apply(self, obj: dict[str, Any], ns: str, pname: str, now: float) -> None:
        pod = self.pods.get((ns, pname))
        if pod is None or obj["kind"] != "PodChaos":
            return
        action, spec = obj["spec"].get("action"), obj["spec"]
        if action == "pod-kill":
            grace = int(spec.get("gracePeriod") or 0)
            pod.deleting_at, pod.gone_at = now, now + min(grace, 2) * 0.1 + 0.05
        elif action == "container-kill":
            pod.restarts += 1
            pod.ready_at = now + self.restart_s
        elif action == "pod-failure":
            pod.failed_until = now + (obj["_sim"].get("duration_s") or 3600)

    # ---- Litmus operator -------------------------------------------------------------------------
    def _reconcile_litmus(self, obj: dict[str, Any], now: float) -> None:
        if obj["kind"] != "ChaosEngine":
            return
        meta, spec, sim = obj["metadata"], obj["spec"], obj["_sim"]
        ns = meta["namespace"]
        exps = spec.get("experiments") or []
        statuses = []
        engine_status = "initialized"
        for exp in exps:
            ename = exp["name"]
            if ("litmuschaos.io", "chaosexperiments", ns, ename) not in self.objects:
                statuses.append({"name": ename, "status": "ChaosExperiment Not Found", "verdict": "Awaited",
                                 "runner": f"{meta['name']}-runner", "experimentPod": "",
                                 "lastUpdateTime": _iso(now)})
                continue
            rkey = ("litmuschaos.io", "chaosresults", ns, f"{meta['name']}-{ename}")
            started = sim["created"] + 0.2
            stopped = spec.get("engineState") == "stop"
            if now < started and not stopped:
                statuses.append({"name": ename, "status": "Waiting for Job Creation", "verdict": "Awaited",
                                 "lastUpdateTime": _iso(now)})
                continue
            done = now >= sim["created"] + self.litmus_run_s
            if stopped and not sim.get("finished"):
                phase, verdict, pct, st = "Stopped", "Stopped", "0", "Forcefully Aborted"
                sim["finished"] = "stopped"
                engine_status = "stopped"
            elif sim.get("finished") == "stopped":
                phase, verdict, pct, st = "Stopped", "Stopped", "0", "Forcefully Aborted"
                engine_status = "stopped"
            elif done:
                verdict = self.litmus_verdict
                phase = "Completed" if verdict == "Pass" else "Completed_With_Probe_Failure"
                pct, st = self.litmus_probe_success, "Completed"
                sim["finished"] = "done"
                engine_status = "completed"
            else:
                phase, verdict, pct, st = "Running", "Awaited", "Awaited", "Running"
            probes = (exp.get("spec") or {}).get("probe") or []
            self.objects[rkey] = {
                "apiVersion": "litmuschaos.io/v1alpha1", "kind": "ChaosResult",
                "metadata": {"name": rkey[3], "namespace": ns, "uid": sim["uid"] + "-r",
                             "labels": {"chaosUID": sim["uid"], "name": rkey[3]},
                             "creationTimestamp": _iso(started)},
                "spec": {"engine": meta["name"], "experiment": ename, "instance": ""},
                "status": {"experimentStatus": {"phase": phase, "verdict": verdict, "probeSuccessPercentage": pct},
                           "probeStatuses": [{"name": p.get("name"), "type": p.get("type"), "mode": p.get("mode"),
                                              "status": {"verdict": "Passed" if verdict == "Pass" else (
                                                  "Awaited" if verdict == "Awaited" else "Failed")}}
                                             for p in probes],
                           "history": {"passedRuns": int(verdict == "Pass"), "failedRuns": int(verdict == "Fail"),
                                       "stoppedRuns": int(verdict == "Stopped")}},
                "_sim": {"created": started, "uid": sim["uid"] + "-r"},
            }
            statuses.append({"name": ename, "runner": f"{meta['name']}-runner",
                             "experimentPod": f"{ename}-abc12", "status": st, "verdict": verdict,
                             "lastUpdateTime": _iso(now)})
        obj["status"] = {"engineStatus": engine_status, "experiments": statuses}

    # ---- request handling ------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        self._tick()
        self.requests.append((method, path))
        with self.lock:
            m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?", path)
            if m:
                return self._pods(method, m.group(1), m.group(2), query, body)
            m = re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/statefulsets/([^/]+)(/scale)?", path)
            if m:
                return self._statefulset(method, m.group(1), m.group(2), bool(m.group(3)), body)
            m = re.fullmatch(r"/apis/(chaos-mesh\.org|litmuschaos\.io)/v1alpha1/namespaces/([^/]+)/([a-z]+)"
                             r"(?:/([^/]+))?(/status)?", path)
            if m:
                group, ns, plural, name, status = m.groups()
                plurals = CHAOS_PLURALS if group == "chaos-mesh.org" else LITMUS_PLURALS
                if plural not in plurals:
                    return 404, _status(404, "NotFound", "the server could not find the requested resource")
                if status and plural not in ("workflows",):
                    return 404, _status(404, "NotFound", "the server could not find the requested resource")
                return self._custom(method, group, plural, plurals[plural], ns, name, query, body)
        return 404, _status(404, "NotFound", "the server could not find the requested resource")

    def _pods(self, method, ns, name, query, body):
        now = time.time()
        if name is None:
            sel = (query.get("labelSelector") or [""])[0]
            items = [p.body(now) for (pns, _), p in sorted(self.pods.items()) if pns == ns and _match(p.labels, sel)]
            return 200, {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}
        pod = self.pods.get((ns, name))
        if pod is None:
            return 404, _status(404, "NotFound", f'pods "{name}" not found')
        if method == "GET":
            return 200, pod.body(now)
        if method == "DELETE":
            grace = (body or {}).get("gracePeriodSeconds")
            if grace is None and query.get("gracePeriodSeconds"):
                grace = int(query["gracePeriodSeconds"][0])
            self.deletions.append({"pod": name, "namespace": ns, "grace_period_s": grace})
            if grace is None:
                grace = 30  # the pod's terminationGracePeriodSeconds (Kubernetes' default)
            if pod.deleting_at is None:
                pod.deleting_at = now
                pod.gone_at = now + (0.05 if int(grace) == 0 else min(int(grace), 3) * 0.15)
            return 200, pod.body(now)
        return 405, _status(405, "MethodNotAllowed", "method not allowed")

    def _sts_body(self, sts):
        now = time.time()
        pods = [self.pods.get((sts["namespace"], f"{sts['name']}-{i}")) for i in range(sts["replicas"])]
        ready = sum(1 for p in pods if p and p.ready(now))
        updated = sum(1 for p in pods if p and p.template_hash == sts["revision"])
        return {"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": sts["name"], "namespace": sts["namespace"], "generation": sts["generation"],
                             "labels": dict(sts["labels"])},
                "spec": {"replicas": sts["replicas"], "serviceName": sts["name"],
                         "selector": {"matchLabels": dict(sts["labels"])},
                         "template": {"metadata": {"labels": dict(sts["labels"]),
                                                   "annotations": dict(sts["annotations"])},
                                      "spec": {"containers": [{"name": c, "image": sts["image"]}
                                                              for c in sts["containers"]]}}},
                "status": {"replicas": len([p for p in pods if p]), "readyReplicas": ready,
                           "currentReplicas": len(pods) - updated, "updatedReplicas": updated,
                           "observedGeneration": sts["generation"],
                           # as the real controller: the current revision becomes the update revision once every
                           # pod runs it
                           "currentRevision": sts["revision"] if updated == len(pods) else sts["current_revision"],
                           "updateRevision": sts["revision"]}}

    def _statefulset(self, method, ns, name, scale, body):
        sts = self.statefulsets.get((ns, name))
        if sts is None:
            return 404, _status(404, "NotFound", f'statefulsets.apps "{name}" not found')
        if scale:
            if method == "PATCH":
                replicas = ((body or {}).get("spec") or {}).get("replicas")
                if not isinstance(replicas, int) or replicas < 0:
                    return 422, _status(422, "Invalid", "spec.replicas: Invalid value: must be a non-negative int")
                sts["replicas"] = replicas
                sts["generation"] += 1
                self._tick()
            return 200, {"apiVersion": "autoscaling/v1", "kind": "Scale",
                         "metadata": {"name": name, "namespace": ns},
                         "spec": {"replicas": sts["replicas"]},
                         "status": {"replicas": sts["replicas"], "selector": ",".join(
                             f"{k}={v}" for k, v in sts["labels"].items())}}
        if method == "PATCH":
            tmpl = ((body or {}).get("spec") or {}).get("template") or {}
            ann = ((tmpl.get("metadata") or {}).get("annotations")) or {}
            containers = ((tmpl.get("spec") or {}).get("containers")) or []
            changed = False
            if ann:
                sts["annotations"].update(ann)
                changed = True
            for c in containers:
                if c.get("name") not in sts["containers"]:
                    return 422, _status(422, "Invalid", f"container {c.get('name')!r} not in the template")
                if c.get("image") and c["image"] != sts["image"]:
                    sts["image"] = c["image"]
                    changed = True
            if changed:
                sts["current_revision"] = sts["revision"]
                sts["generation"] += 1
                sts["revision"] = f"rev{sts['generation']}"
                sts["rolling"] = True
        return 200, self._sts_body(sts)

    def _custom(self, method, group, plural, kind, ns, name, query, body):
        now = time.time()
        if method == "POST":
            self.posted.append(copy.deepcopy(body or {}))
            obj = copy.deepcopy(body or {})
            meta = obj.setdefault("metadata", {})
            name = meta.get("name")
            if (group, plural, ns, name) in self.objects:
                return 409, _status(409, "AlreadyExists", f'{plural}.{group} "{name}" already exists')
            if obj.get("kind") != kind:
                return 400, _status(400, "BadRequest", f"the kind {obj.get('kind')!r} does not match {kind}")
            errors = schema_errors(obj)
            if errors:
                return 422, _status(422, "Invalid", f'{kind}.{group} "{name}" is invalid: ' + "; ".join(errors))
            errors = admission_errors(obj)
            if errors and group == "chaos-mesh.org":
                return 403, _status(403, "Forbidden", f'admission webhook "v{kind.lower()}.kb.io" denied the '
                                                      f"request: {'; '.join(errors)}")
            meta.update({"namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": _iso(now),
                         "resourceVersion": str(int(now * 1000)), "generation": 1})
            if group == "chaos-mesh.org" and kind not in ("Schedule", "Workflow"):
                meta["finalizers"] = ["chaos-mesh/records"]
            from chaosdb.core.timeutil import parse_go_duration
            spec = obj.get("spec") or {}
            obj["_sim"] = {"created": now, "uid": meta["uid"], "targets": None, "records": None,
                           "duration_s": parse_go_duration(spec["duration"]) if spec.get("duration") else None}
            self.objects[(group, plural, ns, name)] = obj
            self._tick()
            return 201, self._public(obj)
        if name is None:
            sel = (query.get("labelSelector") or [""])[0]
            items = [self._public(o) for (g, p, n, _), o in sorted(self.objects.items())
                     if g == group and p == plural and n == ns and _match(o["metadata"].get("labels") or {}, sel)]
            return 200, {"apiVersion": f"{group}/v1alpha1", "kind": f"{kind}List", "metadata": {}, "items": items}
        key = (group, plural, ns, name)
        obj = self.objects.get(key)
        if obj is None:
            return 404, _status(404, "NotFound", f'{plural}.{group} "{name}" not found')
        if method == "GET":
            result = self._public(obj)
            if obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
                del self.objects[key]
            return 200, result
        if method == "PATCH":
            patch = body or {}
            if "spec" in patch and group == "chaos-mesh.org":
                return 403, _status(403, "Forbidden", f'admission webhook "v{kind.lower()}.kb.io" denied the '
                                                      "request: the chaos is immutable, you can't update it")
            if "spec" in patch:
                obj["spec"].update(patch["spec"])
            for k, v in ((patch.get("metadata") or {}).get("annotations") or {}).items():
                anns = obj["metadata"].setdefault("annotations", {})
                if v is None:
                    anns.pop(k, None)
                else:
                    anns[k] = v
            self._tick()
            return 200, self._public(obj)
        if method == "DELETE":
            if not obj["metadata"].get("finalizers"):
                del self.objects[key]
                return 200, self._public(obj)
            obj["metadata"].setdefault("deletionTimestamp", _iso(now))
            self._tick()
            return 200, self._public(obj)
        return 405, _status(405, "MethodNotAllowed", "method not allowed")

    @staticmethod
    def _public(obj: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy({k: v for k, v in obj.items() if not k.startswith("_")})

    # ---- exec ------------------------------------------------------------------------------------
    def exec_in_pod(self, ns: str, name: str, container: str | None, command: list[str]) -> tuple[str, dict]:
        self._tick()
        with self.lock:
            pod = self.pods.get((ns, name))
            self.execs.append({"pod": name, "namespace": ns, "container": container, "command": command})
            if pod is None:
                return "", {"status": "Failure", "message": f'pods "{name}" not found', "reason": "NotFound"}
            if container is None:
                container = pod.containers[0]
            if container not in pod.containers:
                return "", {"status": "Failure", "reason": "BadRequest",
                            "message": f"container {container} is not valid for pod {name}"}
            if command and os.path.basename(command[0]) == "cockroach":  # the CockroachDB CLI "in the pod": the
                # simulating CLI (tests/data/cockroach/standin), with this process's STANDIN_* environment
                done = subprocess.run([str(COCKROACH_CLI), *command[1:]], capture_output=True, text=True,
                                      timeout=60)
                if done.returncode == 0:
                    return done.stdout, {"metadata": {}, "status": "Success"}
                return done.stdout + done.stderr, {
                    "status": "Failure", "reason": "NonZeroExitCode",
                    "message": f"command terminated with non-zero exit code: exit status {done.returncode}",
                    "details": {"causes": [{"reason": "ExitCode", "message": str(done.returncode)}]}}
            if command[:1] == ["kill"] and command[-1:] == ["1"]:
                pod.restarts += 1
                pod.ready_at = time.time() + self.restart_s
                return "", {"metadata": {}, "status": "Success"}
            return "", {"status": "Failure", "reason": "NonZeroExitCode", "message": "command terminated with "
                        "non-zero exit code: exit status 127",
                        "details": {"causes": [{"reason": "ExitCode", "message": "127"}]}}


class _Handler(BaseHTTPRequestHandler):
    standin: KubeStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            return False
        return True

    def _dispatch(self, method: str) -> None:
        if not self._authorised():
            return
        url = urlparse(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        if method == "GET" and self.headers.get("Upgrade", "").lower() == "websocket" and url.path.endswith("/exec"):
            self._exec(url.path, query)
            return
        code, out = self.standin.handle(method, url.path, query, body)
        self._send(code, out)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _exec(self, path: str, query: dict[str, list[str]]) -> None:
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec", path)
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.send_header("Sec-WebSocket-Protocol", "v4.channel.k8s.io")
        self.end_headers()
        ns, name = m.group(1), m.group(2)
        stdout, status = self.standin.exec_in_pod(ns, name, (query.get("container") or [None])[0],
                                                  query.get("command") or [])
        if stdout:
            self._frame(b"\x01" + stdout.encode())
        self._frame(b"\x03" + json.dumps(status).encode())
        self._frame(struct.pack("!H", 1000), opcode=0x8)
        self.close_connection = True

    def _frame(self, payload: bytes, opcode: int = 0x2) -> None:
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([n])
        elif n < 65536:
            head += bytes([126]) + struct.pack("!H", n)
        else:
            head += bytes([127]) + struct.pack("!Q", n)
        self.wfile.write(head + payload)
        self.wfile.flush()


def main(argv: list[str] | None = None) -> None:
    """Run the stand-in by hand, to try the Kubernetes experiments without a cluster::

        python -m tests.unit.k8s_api_standin --kubeconfig /tmp/standin.kubeconfig \\
            --statefulset cockroachdb/cockroachdb=3 --litmus pod-delete
        CHAOSDB_KUBECONFIG=/tmp/standin.kubeconfig chaos run experiments/kubernetes/...json
    """
    import argparse
    from pathlib import Path

    from chaosdb.manifests.templates import render

    ap = argparse.ArgumentParser(description="A local Kubernetes API stand-in with Chaos Mesh and Litmus")
    ap.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig pointing at it")
    ap.add_argument("--statefulset", action="append", default=[], metavar="NAMESPACE/NAME=REPLICAS",
                    help="a StatefulSet with CockroachDB Helm labels and containers db (repeatable)")
    ap.add_argument("--litmus", action="append", default=[], metavar="FAULT",
                    help="pre-install the ChaosExperiment of a Litmus fault in every StatefulSet's namespace")
    ap.add_argument("--verdict", default="Pass", choices=["Pass", "Fail"], help="Litmus verdict to report")
    args = ap.parse_args(argv)
    standin = KubeStandin(restart_s=3.0, select_s=0.5, inject_s=1.0, recover_s=0.5, litmus_run_s=20.0).start()
    standin.litmus_verdict = args.verdict
    standin.litmus_probe_success = "100" if args.verdict == "Pass" else "0"
    namespaces = set()
    for spec in args.statefulset or ["cockroachdb/cockroachdb=3"]:
        where, _, replicas = spec.partition("=")
        ns, _, name = where.partition("/")
        standin.add_statefulset(name, ns, int(replicas or 3), {"app.kubernetes.io/name": "cockroachdb",
                                                               "app.kubernetes.io/instance": name})
        namespaces.add(ns)
    for fault in args.litmus:
        for ns in namespaces:
            for obj in render(f"litmus/{fault}-setup", {"NAMESPACE": ns}).objects:
                if obj["kind"] == "ChaosExperiment":
                    standin.handle("POST", f"/apis/litmuschaos.io/v1alpha1/namespaces/{ns}/chaosexperiments", {},
                                   obj)
    standin.write_kubeconfig(Path(args.kubeconfig))
    print(f"Kubernetes API stand-in on {standin.url}; kubeconfig {args.kubeconfig}; Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        standin.stop()


if __name__ == "__main__":
    main()
