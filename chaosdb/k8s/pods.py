"""Pods through the official client: what one looks like as a plain record, reading and listing them, deleting
one, and running a command (a signal, the CockroachDB CLI) inside one of its containers (``exec`` through the
client's stream API).

Every Kubernetes activity of the pack reaches pods through here (the database packages through
:mod:`chaosdb.k8s.actions`): one client, one record shape.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.signals import SIGNALS, signal_name
from chaosdb.k8s import api

__all__ = ["exec_command", "SIGNALS", "signal_name", "pod_summary", "read_pod", "list_pods", "delete_pod", "exec_signal"]

def _ts(s: str | None) -> float | None:
    if not s:
        return None
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def pod_summary(item: dict[str, Any]) -> dict[str, Any]:
    """A pod object -> name, uid, phase, ready, deleting, restarts, containers, images, node, started_at."""
    meta, status, spec = item.get("metadata") or {}, item.get("status") or {}, item.get("spec") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    cs = status.get("containerStatuses") or []
    return {
        "name": meta.get("name"), "uid": meta.get("uid"), "phase": status.get("phase"),
        "ready": bool(ready) and not meta.get("deletionTimestamp"),
        "deleting": bool(meta.get("deletionTimestamp")),
        "restarts": sum(int(c.get("restartCount") or 0) for c in cs),
        "containers": [c.get("name") for c in spec.get("containers") or []],
        "images": {c.get("name"): c.get("image") for c in spec.get("containers") or []},
        "node": spec.get("nodeName"), "started_at": _ts(status.get("startTime")),
    }


def read_pod(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, namespace: str,
             name: str) -> dict[str, Any]:
    """One pod as :func:`pod_summary`; a missing pod is a :class:`~chaosdb.k8s.api.K8sApiError` with status 404."""
    core = api.core_v1(configuration, secrets)
    return pod_summary(api.call_json(f"reading pod {namespace}/{name}", core.read_namespaced_pod, name, namespace))


def list_pods(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, namespace: str,
              selector: str) -> list[dict[str, Any]]:
    """The pods matching a label selector, by name."""
    core = api.core_v1(configuration, secrets)
    body = api.call_json(f"listing pods {selector!r} in {namespace}", core.list_namespaced_pod, namespace,
                         label_selector=selector)
    return sorted((pod_summary(p) for p in body.get("items") or []), key=lambda p: p["name"] or "")


def delete_pod(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, namespace: str, name: str,
               grace_period_s: int | None = None, force: bool = False) -> dict[str, Any]:
    """Delete one pod without waiting: with ``grace_period_s`` (None: the pod's own
    ``terminationGracePeriodSeconds``), or ``force`` (grace period 0: removed from the API at once)."""
    if force and grace_period_s not in (None, 0):
        raise ChaosDBError("force deletion has no grace period: leave grace_period_s unset or 0")
    if not force and grace_period_s is not None and int(grace_period_s) < 1:
        raise ChaosDBError("grace_period_s must be at least 1 (0 means force: set force=true)")
    grace = 0 if force else (None if grace_period_s is None else int(grace_period_s))
    core = api.core_v1(configuration, secrets)
    kwargs = {} if grace is None else {"grace_period_seconds": grace}
    api.call_json(f"deleting pod {namespace}/{name}", core.delete_namespaced_pod, name, namespace, **kwargs)
    return {"pod": name, "namespace": namespace, "grace_period_s": grace, "force": bool(force)}


def exec_command(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, namespace: str, pod: str,
                 container: str, command: list[str], timeout_s: float | None = 30.0) -> tuple[str, str]:
    """Run *command* (an argv, never a shell line) in ``container`` of ``pod`` through the API's exec stream;
    (stdout, stderr). The container must be named (a pod with sidecars would otherwise get its default one); a
    command that exits non-zero, or runs past *timeout_s*, is an error with what it printed."""
    from kubernetes.stream import stream  # noqa: PLC0415 - needs the k8s extra

    if not container:
        raise ChaosDBError("name the container to exec into (container, or k8s_container in the configuration): "
                           "pods with sidecars would otherwise get the default one")
    core = api.core_v1(configuration, secrets)
    what = f"{command[0] if command else '?'} in {namespace}/{pod} ({container})"
    resp = api.call(f"exec {what}", stream, core.connect_get_namespaced_pod_exec, pod, namespace,
                    command=list(map(str, command)), container=container, stderr=True, stdin=False, stdout=True,
                    tty=False, _preload_content=False)
    out: list[str] = []
    err: list[str] = []
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while resp.is_open():
            resp.update(timeout=1)
            out.append(resp.read_stdout() if resp.peek_stdout() else "")
            err.append(resp.read_stderr() if resp.peek_stderr() else "")
            if deadline is not None and time.monotonic() > deadline:
                raise ChaosDBError(f"{what} did not end within {timeout_s:g} s")
        code = resp.returncode
        status = resp.read_channel(3) if hasattr(resp, "read_channel") else ""  # the API's exit status record
    finally:
        resp.close()
    stdout, stderr = "".join(out), "".join(err)
    if code not in (0, None):
        tail = "\n".join((stderr or stdout or status).strip().splitlines()[-5:])
        raise ChaosDBError(f"{what} exited with {code}: {tail}")
    return stdout, stderr


def exec_signal(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, namespace: str, pod: str,
                container: str, signal: str = "KILL", pid: int | str = 1, timeout_s: float = 30.0) -> None:
    """``kill -s SIGNAL PID`` inside ``container`` of ``pod`` (PID 1: the database when the container execs
    it), through :func:`exec_command`."""
    sig = signal_name(signal)
    if not str(pid).isdigit():
        raise ChaosDBError(f"pid must be a number, got {pid!r}")
    exec_command(configuration, secrets, namespace, pod, container, ["kill", "-s", sig, str(pid)], timeout_s)
