"""PhysicalMachineChaos: a chaosd attack carried out by the Chaos Mesh controller instead of by this pack.

The chaosd engine (:mod:`chaosdb.chaosd.actions`) builds each attack as chaosd's API body (``kind`` + body, field
names from chaosd's ``pkg/core``); :func:`spec_of` turns it into a PhysicalMachineChaos spec the way the controller
turns it back (``spec.action`` is ``<kind>-<body action>``, or the kind alone for ``process``, ``clock`` and
``user_defined``; the action's block holds the other fields). Two names differ between the CRD and chaosd:
``disk-fill.fill-by-fallocate`` (chaosd reads ``fallocate``, so through the controller a fill is written, not
allocated) and the partition's ``direction``, which the webhook allows only as ``to`` or ``from``.

``spec.uid`` is the id chaosd keeps the attack under. We choose it (a UUID) and write it into the fault record
before the object is created, so a run that dies between the two still knows what to recover; the mutating webhook
only fills it in when it is empty. :func:`recover_object` deletes the object and waits until the controller has
recovered the attack and removed its finalizer.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chaosdb.chaosmesh.objects import GROUP, VERSION, build_object, plural_of, summarise
from chaosdb.core.chaosd import MACHINES_FILE, ended_process, transient_refusal
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.netem import NO_NETEM, netem_available
from chaosdb.core.processes import same_process
from chaosdb.k8s import api
from chaosdb.manifests.admission import NETEM_ACTIONS

__all__ = ["KIND", "MACHINE_KIND", "K8S_KEYS", "refuse_netem_here", "spec_of", "machines", "new_object",
           "create_objects", "recover_object", "register_machines", "registered_machines", "unregister_machines"]

KIND = "PhysicalMachineChaos"
MACHINE_KIND = "PhysicalMachine"
#: the configuration keys a fault record keeps to find the Kubernetes API again from another process (no secrets)
K8S_KEYS = ("k8s_kubeconfig", "k8s_context", "k8s_in_cluster")
_SINGLE = ("process", "clock", "user_defined")
#: chaosd API field -> the CRD's name for it, where they differ
_RENAMED = {"fallocate": "fill-by-fallocate"}


def _local(address: str) -> bool:
    host = urlsplit(address if "://" in address else f"http://{address}").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def refuse_netem_here(obj: dict[str, Any]) -> None:
    """Refuse a PhysicalMachineChaos that needs netem (delay, loss, corruption, duplication) on this machine when
    its kernel lacks netem: chaosd would fail and the controller retry it again and again. Loss without netem:
    the ``physical-machines/network-loss`` template (an iptables ``statistic`` rule)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") != KIND or spec.get("action") not in NETEM_ACTIONS:
        return
    if any(_local(str(a)) for a in spec.get("address") or []) and not netem_available():
        raise ChaosDBError(f"{KIND} {obj['metadata'].get('name')} ({spec['action']}) refused before it was created: "
                           f"{NO_NETEM}. For packet loss use the physical-machines/network-loss template (iptables "
                           "statistic match); delay needs a kernel with sch_netem")


def machines(chaosd_url: str, physical_machine: str) -> dict[str, Any]:
    """Where the controller sends the attack: the PhysicalMachine ``namespace/name`` (selector), else chaosd's
    URL as the controller reaches it (``address``)."""
    if physical_machine:
        namespace, _, name = physical_machine.rpartition("/")
        if not namespace or not name:
            raise ChaosDBError(f"physical_machine must be namespace/name, got {physical_machine!r}")
        return {"selector": {"physicalMachines": {namespace: [name]}}}
    return {"address": [chaosd_url]}


def spec_of(kind: str, body: dict[str, Any], where: dict[str, Any], duration_s: float = 0) -> dict[str, Any]:
    """The PhysicalMachineChaos spec that makes the controller send *body* to chaosd's ``/api/attack/<kind>``."""
    sub = str(body.get("action") or "")
    action = kind if kind in _SINGLE else f"{kind}-{sub}"
    block = {_RENAMED.get(k, k): v for k, v in body.items() if k != "action"}
    spec: dict[str, Any] = {"action": action, "mode": "all", action: block, **where}
    if duration_s:
        spec["duration"] = f"{float(duration_s):g}s"
    return spec


def new_object(kind: str, body: dict[str, Any], name: str, namespace: str, where: dict[str, Any],
               duration_s: float = 0) -> dict[str, Any]:
    """A validated PhysicalMachineChaos with a fresh ``spec.uid``."""
    spec = {**spec_of(kind, body, where, duration_s), "uid": str(uuid.uuid4())}
    return build_object(KIND, name, namespace, spec)


def _read(custom: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The object, or None once it is gone."""
    try:
        return api.call_json(f"reading {KIND} {namespace}/{name}", custom.get_namespaced_custom_object, GROUP,
                             VERSION, namespace, plural_of(KIND), name)
    except api.K8sApiError as exc:
        if exc.status == 404:
            return None
        raise


def create_objects(objects: list[dict[str, Any]], configuration: dict[str, Any] | None,
                   secrets: dict[str, Any] | None, timeout_s: float = 60.0,
                   skip_ended: bool = False) -> list[dict[str, Any]]:
    """Create the objects, then wait until the controller reports each one injected (``AllInjected``); its
    failure message when chaosd refused. A refusal because some other process exited while chaosd listed them
    all is waited out (the controller asks again). With *skip_ended*, an object whose process attack found no
    such process (it ended since it was listed) is deleted and its state says ``ended`` (the pid) instead of
    failing. The states (see :func:`summarise`) in the objects' order."""
    custom = api.custom_objects(configuration, secrets)
    for obj in objects:
        meta = obj["metadata"]
        api.call_json(f"creating {KIND} {meta['namespace']}/{meta['name']}", custom.create_namespaced_custom_object,
                      GROUP, VERSION, meta["namespace"], plural_of(KIND), obj)
    deadline = time.monotonic() + timeout_s
    states = []
    for obj in objects:
        meta = obj["metadata"]
        what = f"{KIND} {meta['namespace']}/{meta['name']}"
        while True:
            state = summarise(_read(custom, meta["namespace"], meta["name"]) or {})
            if state["injected"]:
                break
            messages = [str(f["message"]) for f in state["failures"]]
            ended = [p for p in map(ended_process, messages) if p is not None]
            if ended and skip_ended:
                _delete(custom, meta["namespace"], meta["name"])
                _wait_gone(custom, meta["namespace"], meta["name"], max(deadline - time.monotonic(), 10.0), True)
                state = {**state, "ended": ended[0]}
                break
            if messages and not all(map(transient_refusal, messages)):
                raise ChaosDBError(f"Chaos Mesh could not inject {what}: "
                                   + "; ".join(f"{f['target']}: {f['message']}" for f in state["failures"]))
            if time.monotonic() > deadline:
                raise ChaosDBError(f"{what} not injected after {timeout_s:g} s (phase {state['phase']}"
                                   + (f", last refusal: {messages[-1]}" if messages else "")
                                   + "): is the Chaos Mesh controller running, and can it reach chaosd at "
                                   f"{obj['spec'].get('address') or obj['spec'].get('selector')}?")
            time.sleep(0.1)
        states.append(state)
    return states


def _delete(custom: Any, namespace: str, name: str) -> bool:
    """Delete the object: True, or False when it was gone already."""
    try:
        api.call_json(f"deleting {KIND} {namespace}/{name}", custom.delete_namespaced_custom_object, GROUP, VERSION,
                      namespace, plural_of(KIND), name)
    except api.K8sApiError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _wait_gone(custom: Any, namespace: str, name: str, timeout_s: float, process_gone: bool) -> None:
    """Wait until the deleted object is gone (the controller recovered the attack and removed its finalizer). With
    *process_gone* (the attacked process exited: chaosd cannot recover it and the controller would retry for ever)
    its finalizers are removed instead."""
    what = f"{KIND} {namespace}/{name}"
    deadline = time.monotonic() + timeout_s
    while True:
        obj = _read(custom, namespace, name)
        if obj is None:
            return
        if process_gone and obj["metadata"].get("finalizers"):
            try:
                api.call_json(f"removing the finalizers of {what}", custom.patch_namespaced_custom_object, GROUP,
                              VERSION, namespace, plural_of(KIND), name, {"metadata": {"finalizers": []}})
            except api.K8sApiError as exc:
                if exc.status == 404:  # the controller removed it in between
                    return
                raise
        if time.monotonic() > deadline:
            failures = summarise(obj)["failures"]
            raise ChaosDBError(f"{what} still there {timeout_s:g} s after it was deleted: the controller could not "
                               "recover the attack" + (": " + "; ".join(f["message"] for f in failures)
                                                       if failures else ""))
        time.sleep(0.1)


def recover_object(entry: dict[str, Any], timeout_s: float = 60.0) -> bool:
    """Delete the object a fault record's entry names and wait until it is gone (the controller recovered the
    attack through chaosd and removed its finalizer): True, or False when it was gone already. When the attacked
    process has exited since (a PostgreSQL backend), chaosd cannot recover it and the controller would retry for
    ever: the object's finalizers are removed instead (nothing is left to undo)."""
    ref = entry["object"]
    custom = api.custom_objects(dict(entry.get("k8s") or {}))
    if not _delete(custom, ref["namespace"], ref["name"]):
        return False
    process_gone = bool(entry.get("target_process")) and not same_process(entry["target_process"])
    _wait_gone(custom, ref["namespace"], ref["name"], timeout_s, process_gone)
    return True


def _machine_name(cluster: str, node: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", f"{cluster}-{node}".lower()).strip("-")
    return name[:63].rstrip("-")


def register_machines(cluster_dir: str, cluster: str, nodes: list[str], chaosd_url: str,
                      configuration: dict[str, Any] | None, secrets: dict[str, Any] | None = None) -> dict[str, str]:
    """One PhysicalMachine per node (``<cluster>-<node>`` in ``k8s_namespace``, its address *chaosd_url*: the
    chaosd serving that node's machine), created or updated, and remembered in the cluster folder so that
    ``via: chaos-mesh`` attacks select the target node's machine and :func:`unregister_machines` removes them.
    Node -> ``namespace/name``."""
    cfg = dict(configuration or {})
    namespace = api.namespace_of(cfg)
    custom = api.custom_objects(cfg, secrets)
    plural = plural_of(MACHINE_KIND)
    out = {}
    for node in nodes:
        name = _machine_name(cluster, node)
        obj = build_object(MACHINE_KIND, name, namespace, {"address": chaosd_url},
                           labels={"chaosdb/cluster": _machine_name(cluster, ""), "chaosdb/node": node})
        try:
            api.call_json(f"creating {MACHINE_KIND} {namespace}/{name}", custom.create_namespaced_custom_object,
                          GROUP, VERSION, namespace, plural, obj)
        except api.K8sApiError as exc:
            if exc.status != 409:
                raise
            api.call_json(f"updating {MACHINE_KIND} {namespace}/{name}", custom.patch_namespaced_custom_object,
                          GROUP, VERSION, namespace, plural, name, {"spec": {"address": chaosd_url}})
        out[node] = f"{namespace}/{name}"
    record = {"machines": out, "k8s": {k: cfg[k] for k in K8S_KEYS if cfg.get(k) not in (None, "")}}
    path = Path(cluster_dir) / MACHINES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return out


def registered_machines(cluster_dir: str) -> dict[str, str]:
    """Node -> ``namespace/name`` of the PhysicalMachines registered for the cluster in *cluster_dir* ({} when
    none are)."""
    try:
        return dict(json.loads((Path(cluster_dir) / MACHINES_FILE).read_text()).get("machines") or {})
    except (OSError, ValueError):
        return {}


def unregister_machines(cluster_dir: str) -> list[str]:
    """Delete the PhysicalMachines :func:`register_machines` created for the cluster; the ones deleted."""
    path = Path(cluster_dir) / MACHINES_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    custom = api.custom_objects(dict(record.get("k8s") or {}))
    deleted = []
    for ref in (record.get("machines") or {}).values():
        namespace, _, name = str(ref).partition("/")
        try:
            api.call_json(f"deleting {MACHINE_KIND} {ref}", custom.delete_namespaced_custom_object, GROUP, VERSION,
                          namespace, plural_of(MACHINE_KIND), name)
            deleted.append(str(ref))
        except api.K8sApiError as exc:
            if exc.status != 404:
                raise
    path.unlink()
    return deleted
