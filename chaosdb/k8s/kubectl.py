"""kubectl calls and what comes back from them, as plain records."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from typing import Any

from chaosdb.core.commands import run_argv
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.podnames import statefulset_pod

__all__ = ["statefulset_pod", "kubectl_argv", "run_kubectl", "get_json", "pod_summary", "list_pods", "get_pod", "SIGNALS",
           "exec_kill", "delete_pod", "namespace_of"]





SIGNALS = ("TERM", "KILL", "INT", "QUIT", "STOP", "CONT", "HUP")


def namespace_of(configuration: dict[str, Any]) -> str:
    return str(configuration.get("k8s_namespace") or "default")


def kubectl_argv(configuration: dict[str, Any], *args: str) -> list[str]:
    binary = str(configuration.get("k8s_kubectl") or "kubectl")
    if not shutil.which(binary):
        raise ChaosDBError(f"{binary} is not on PATH: install kubectl or set k8s_kubectl")
    argv = [binary]
    if configuration.get("k8s_kubeconfig"):
        argv.append(f"--kubeconfig={configuration['k8s_kubeconfig']}")
    if configuration.get("k8s_context"):
        argv.append(f"--context={configuration['k8s_context']}")
    argv += ["-n", namespace_of(configuration), *map(str, args)]
    return argv


def run_kubectl(configuration: dict[str, Any], *args: str, timeout: float = 60.0) -> str:
    return run_argv(kubectl_argv(configuration, *args), timeout)


def get_json(configuration: dict[str, Any], *args: str, timeout: float = 30.0) -> Any:
    out = run_kubectl(configuration, "get", *args, "-o", "json", timeout=timeout)
    try:
        return json.loads(out)
    except ValueError:
        raise ChaosDBError(f"kubectl get {' '.join(args)} did not return JSON") from None


def _ts(s: str | None) -> float | None:
    if not s:
        return None
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def pod_summary(item: dict[str, Any]) -> dict[str, Any]:
    """A pod object -> name, uid, phase, ready, deleting, restarts, images, node, started_at."""
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


def list_pods(configuration: dict[str, Any], selector: str) -> list[dict[str, Any]]:
    body = get_json(configuration, "pods", "-l", selector)
    return sorted((pod_summary(i) for i in body.get("items") or []), key=lambda p: p["name"] or "")


def get_pod(configuration: dict[str, Any], name: str) -> dict[str, Any]:
    return pod_summary(get_json(configuration, "pod", name))


def exec_kill(configuration: dict[str, Any], pod: str, container: str, signal: str = "KILL",
              pid: int | str = 1, timeout: float = 30.0) -> str:
    """``kubectl exec POD -c CONTAINER -- kill -s SIGNAL PID`` (PID 1: the database when the container
    execs it, as the CockroachDB StatefulSet does)."""
    sig = str(signal).upper().removeprefix("SIG")
    if sig not in SIGNALS:
        raise ChaosDBError(f"signal must be one of {', '.join(SIGNALS)}; got {signal!r}")
    if not container:
        raise ChaosDBError("name the container to exec into (k8s_container / container): pods with sidecars "
                           "would otherwise pick the default one")
    if not str(pid).isdigit():
        raise ChaosDBError(f"pid must be a number, got {pid!r}")
    return run_kubectl(configuration, "exec", pod, "-c", container, "--", "kill", "-s", sig, str(pid),
                       timeout=timeout)


def delete_pod(configuration: dict[str, Any], pod: str, grace_period_s: int | None = None, force: bool = False,
               timeout: float = 60.0) -> str:
    """``kubectl delete pod`` with a grace period, or forced (``--grace-period=0 --force``); does not wait."""
    args = ["delete", "pod", pod, "--wait=false"]
    if force:
        if grace_period_s not in (None, 0):
            raise ChaosDBError("force deletion has no grace period: leave grace_period_s unset or 0")
        args += ["--grace-period=0", "--force"]
    elif grace_period_s is not None:
        if int(grace_period_s) < 1:
            raise ChaosDBError("grace_period_s must be at least 1 (0 means force: set force=true)")
        args.append(f"--grace-period={int(grace_period_s)}")
    return run_kubectl(configuration, *args, timeout=timeout)
