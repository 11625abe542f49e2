"""Chaos Mesh probes: the status of a chaos object as a plain record (read with a plain GET: the chaos kinds
have no ``/status`` subresource)."""

from typing import Any, Dict, List

from chaoslib.types import Configuration, Secrets

from chaosdb.chaosmesh.objects import (
    GROUP,
    KINDS,
    MANAGED_BY,
    VERSION,
    list_objects,
    plural_of,
    summarise,
)
from chaosdb.core.arguments import check_arguments, choice
from chaosdb.k8s import api

__all__ = ["chaos_status", "chaos_is_injected", "chaos_is_recovered", "chaos_objects"]


def chaos_status(kind: str, name: str, namespace: str = "", configuration: Configuration = None,
                 secrets: Secrets = None) -> Dict[str, Any]:
    """Phase (waiting / injecting / injected / paused / recovering / recovered / deleting), the four
    conditions looked up by type, targets, per-target records and failed events."""
    namespace = api.namespace_of(configuration, namespace)
    custom = api.custom_objects(configuration, secrets)
    obj = api.call_json(f"reading {kind} {namespace}/{name}", custom.get_namespaced_custom_object,
                   GROUP, VERSION, namespace, plural_of(kind), name)
    return summarise(obj)


def chaos_is_injected(kind: str, name: str, namespace: str = "", configuration: Configuration = None,
                      secrets: Secrets = None) -> bool:
    """True when ``Selected`` and ``AllInjected`` are both True."""
    return bool(chaos_status(kind, name, namespace, configuration, secrets)["injected"])


def chaos_is_recovered(kind: str, name: str, namespace: str = "", configuration: Configuration = None,
                       secrets: Secrets = None) -> bool:
    """True when ``desiredPhase`` is Stop and ``AllRecovered`` is True (or the object no longer exists)."""
    try:
        return bool(chaos_status(kind, name, namespace, configuration, secrets)["recovered"])
    except api.K8sApiError as e:
        if e.status == 404:
            return True
        raise


def chaos_objects(namespace: str = "", managed_only: bool = True, configuration: Configuration = None,
                  secrets: Secrets = None) -> List[Dict[str, Any]]:
    """Every chaos object in ``namespace`` (by default only those this pack created), summarised."""
    namespace = api.namespace_of(configuration, namespace)
    custom = api.custom_objects(configuration, secrets)
    selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items()) if managed_only else ""
    out: list[dict[str, Any]] = []
    for kind in KINDS:
        out += [summarise(item) for item in list_objects(custom, kind, namespace, selector)]
    return out


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), kind=choice("kind", *KINDS), extras=("k8s",))
