"""What the API server and the Chaos Mesh admission webhook check beyond the CRD schema.

Sources (see ``crds/PROVENANCE.md`` and Chaos Mesh's ``api/v1alpha1`` webhook code at that revision): Kubernetes object
metadata rules (DNS-1123 names), Chaos Mesh ``PodSelector.Validate`` (``value`` per ``mode``),
``PodChaosSpec.Validate`` (container-kill needs containerNames), StressChaos (a stressor, memory size),
NetworkChaos (float strings, ``target`` for ``from``/``both``, no externalTargets with them), Go
``time.ParseDuration`` for durations and time offsets, Schedule cron specs, Workflow template references.

:func:`admission_errors` lists what the server would refuse, plus one check that is ours: stressor
``workers`` above 0. Chaos Mesh's ``Stressor.Validate`` requires it, but the webhook never calls that method
(its signature is not the one the webhook walks), and the real server admits ``workers: 0`` (tested against it in
``tests/integration/test_k8s_local.py``); we refuse it before anything is sent.
:func:`admission_errors` also :func:`advice` lists what it would accept but
what would not do what a game day needs (a pod-failure without a duration stays failed until deleted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chaosdb.core.timeutil import parse_go_duration

__all__ = ["CHAOS_KINDS", "NETEM_ACTIONS", "admission_errors", "advice", "metadata_errors"]

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")
_OBJECT_META = {"name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences",
                "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                "deletionGracePeriodSeconds", "managedFields", "selfLink"}
_HUMAN_SIZE = re.compile(r"(\d+(\.\d+)*) ?([kKmMgGtTpP])?[iI]?[bB]?")
_PERCENT_SIZE = re.compile(r"(\d+)%")
_RATE = re.compile(r"\d+(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)")
_CRON_FIELD = re.compile(r"[\d*/,\-?A-Za-z]+")
_CRON_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

#: Chaos kinds (spec under the lower-camel key in Schedules and Workflows).
CHAOS_KINDS = {"PodChaos": "podChaos", "StressChaos": "stressChaos", "NetworkChaos": "networkChaos",
               "IOChaos": "ioChaos", "TimeChaos": "timeChaos", "PhysicalMachineChaos": "physicalmachineChaos"}

#: PhysicalMachineChaos actions carried out with netem (chaosd's tc qdiscs), refused where the kernel lacks it
NETEM_ACTIONS = ("network-delay", "network-loss", "network-corrupt", "network-duplicate")


def _label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return bool(_LABEL_NAME.fullmatch(name))


def metadata_errors(obj: dict[str, Any]) -> list[str]:
    """What the API server checks in ``metadata`` (the CRD schema does not cover it)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ["metadata: required (a mapping with at least a name)"]
    errors = [f"metadata.{k}: not an ObjectMeta field (did you mean 'namespace'?)" if k in ("ns", "namespaces")
              else f"metadata.{k}: not an ObjectMeta field" for k in meta if k not in _OBJECT_META]
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        errors.append("metadata.name: required")
    elif name is not None and (not isinstance(name, str) or len(name) > 253
                               or not _DNS1123_SUBDOMAIN.fullmatch(name)):
        errors.append(f"metadata.name: {name!r} is not a DNS-1123 subdomain (lower case letters, digits, '-', '.';"
                      " starts and ends with a letter or digit; at most 253 characters)")
    ns = meta.get("namespace")
    if ns is not None and (not isinstance(ns, str) or len(ns) > 63 or not _DNS1123_LABEL.fullmatch(ns)):
        errors.append(f"metadata.namespace: {ns!r} is not a DNS-1123 label")
    for field in ("labels", "annotations"):
        items = meta.get(field)
        if items is None:
            continue
        if not isinstance(items, dict):
            errors.append(f"metadata.{field}: must be a mapping of strings")
            continue
        for k, v in items.items():
            if not isinstance(k, str) or not _label_key_ok(k):
                errors.append(f"metadata.{field}: invalid key {k!r}")
            if not isinstance(v, str):
                errors.append(f"metadata.{field}.{k}: {v!r} must be a string (quote it in YAML)")
            elif field == "labels" and not _LABEL_VALUE.fullmatch(v):
                errors.append(f"metadata.labels.{k}: {v!r} is not a valid label value")
    return errors


def _duration_error(path: str, value: Any, allow_negative: bool = False) -> list[str]:
    """Go ``time.ParseDuration``: ``"0"``, or numbers with units, optionally signed."""
    if value is None:
        return []
    text = str(value).strip()
    sign = text[:1] if text[:1] in "+-" else ""
    body = text[len(sign):]
    if body != "0" and parse_go_duration(body) is None:
        return [f"{path}: {value!r} is not a Go duration (e.g. \"30s\", \"1m30s\", \"500ms\")"]
    if sign == "-" and not allow_negative:
        return [f"{path}: {value!r} must not be negative"]
    return []


def _float_string(path: str, value: Any) -> list[str]:
    if value is None:
        return []
    try:
        float(str(value))
    except ValueError:
        return [f"{path}: {value!r} must be a number in a string (e.g. \"25\")"]
    return []


def _selector_errors(path: str, spec: dict[str, Any]) -> list[str]:
    """``PodSelector.Validate``: ``value`` must suit ``mode``; plus the shape of ``pods``."""
    errors: list[str] = []
    mode, value = spec.get("mode"), spec.get("value")
    if mode in ("fixed", "fixed-percent", "random-max-percent"):
        if value in (None, ""):
            errors.append(f"{path}value: mode {mode!r} needs a value (a number in a string, e.g. \"1\")")
        else:
            try:
                n = int(str(value))
            except ValueError:
                errors.append(f"{path}value: {value!r} is not an integer")
            else:
                if mode == "fixed" and n <= 0:
                    errors.append(f"{path}value: mode 'fixed' needs a value above 0, got {value!r}")
                if mode != "fixed" and not 0 < n <= 100:
                    errors.append(f"{path}value: mode {mode!r} needs a percentage in (0, 100], got {value!r}")
    selector = spec.get("selector") or {}
    pods = selector.get("pods") if isinstance(selector, dict) else None
    if isinstance(pods, dict):
        for ns, names in pods.items():
            if not names:
                errors.append(f"{path}selector.pods.{ns}: list at least one pod name")
    return errors


def _pod_chaos(spec: dict[str, Any], path: str) -> list[str]:
    errors = []
    if spec.get("action") == "container-kill" and not spec.get("containerNames"):
        errors.append(f"{path}containerNames: container-kill needs at least one container name")
    return errors


def _stress_chaos(spec: dict[str, Any], path: str) -> list[str]:
    errors = []
    stressors = spec.get("stressors") or {}
    if not spec.get("stressngStressors") and not (stressors.get("cpu") or stressors.get("memory")):
        errors.append(f"{path}stressors: give a cpu or memory stressor (or stressngStressors)")
    for name in ("cpu", "memory"):
        s = stressors.get(name)
        if isinstance(s, dict) and isinstance(s.get("workers"), int) and s["workers"] <= 0:
            errors.append(f"{path}stressors.{name}.workers: must be above 0 (Chaos Mesh would admit it, "
                          "but its own Stressor.Validate says so)")
    memory = stressors.get("memory")
    if isinstance(memory, dict) and memory.get("size") is not None:
        size = str(memory["size"])
        pct = _PERCENT_SIZE.fullmatch(size)
        if pct and not 0 <= int(pct.group(1)) <= 100:
            errors.append(f"{path}stressors.memory.size: {size!r}: a percentage must be within 0..100")
        elif not pct and not _HUMAN_SIZE.fullmatch(size):
            errors.append(f"{path}stressors.memory.size: {size!r} is neither N% nor a size like \"256MB\"")
    return errors


def _network_chaos(spec: dict[str, Any], path: str) -> list[str]:
    errors = []
    for key, fields in (("delay", ("correlation",)), ("loss", ("loss", "correlation")),
                        ("duplicate", ("duplicate", "correlation")), ("corrupt", ("corrupt", "correlation"))):
        block = spec.get(key)
        if isinstance(block, dict):
            for f in fields:
                errors += _float_string(f"{path}{key}.{f}", block.get(f))
            if key == "delay" and isinstance(block.get("reorder"), dict):
                for f in ("reorder", "correlation"):
                    errors += _float_string(f"{path}delay.reorder.{f}", block["reorder"].get(f))
    if spec.get("action") != "partition":
        direction = spec.get("direction") or "to"
        if direction in ("from", "both") and not spec.get("target"):
            errors.append(f"{path}target: direction {direction!r} needs a target")
        if direction in ("from", "both") and spec.get("externalTargets"):
            errors.append(f"{path}externalTargets: cannot be combined with direction {direction!r}")
    action = spec.get("action")
    needs = {"delay": "delay", "loss": "loss", "duplicate": "duplicate", "corrupt": "corrupt",
             "bandwidth": "bandwidth"}
    if action in needs and not spec.get(needs[action]):
        errors.append(f"{path}{needs[action]}: action {action!r} needs its {needs[action]!r} settings")
    bandwidth = spec.get("bandwidth")
    if isinstance(bandwidth, dict) and bandwidth.get("rate") is not None \
            and not _RATE.fullmatch(str(bandwidth["rate"]).lower()):
        errors.append(f"{path}bandwidth.rate: {bandwidth['rate']!r} is not a rate: an integer followed by "
                      "bit, kbit, mbit, gbit, tbit (bits/s) or bps, kbps, mbps, gbps, tbps (bytes/s)")
    target = spec.get("target")
    if isinstance(target, dict):
        errors += _selector_errors(f"{path}target.", target)
    return errors


def _io_chaos(spec: dict[str, Any], path: str) -> list[str]:
    errors = []
    if spec.get("action") == "latency":
        if not spec.get("delay"):
            errors.append(f"{path}delay: action 'latency' needs a delay (e.g. \"100ms\")")
        errors += _duration_error(f"{path}delay", spec.get("delay"))
    percent = spec.get("percent")
    if isinstance(percent, int) and not 0 <= percent <= 100:
        errors.append(f"{path}percent: must be within 0..100")
    if spec.get("action") == "fault" and not spec.get("errno"):
        errors.append(f"{path}errno: action 'fault' needs an errno (e.g. 5 for EIO)")
    return errors


def _time_chaos(spec: dict[str, Any], path: str) -> list[str]:
    return _duration_error(f"{path}timeOffset", spec.get("timeOffset"), allow_negative=True)


def _percent(path: str, value: Any, allow_zero: bool) -> list[str]:
    """``CheckPercent``: a number in a string within 0..100 (0 only where allowed; empty = 0)."""
    text = str(value or "")
    try:
        number = float(text) if text else 0.0
    except ValueError:
        return [f"{path}: {value!r} must be a percentage in a string (e.g. \"25\")"]
    if not 0 <= number <= 100 or (number == 0 and not allow_zero):
        return [f"{path}: {value!r} must be within {'0' if allow_zero else 'above 0'}..100"]
    return []


def _physical_machine_chaos(spec: dict[str, Any], path: str) -> list[str]:
    """``PhysicalMachineChaosSpec.Validate``: the action's own block is given and holds what chaosd needs; the
    machines are named by ``address`` or by ``selector.physicalMachines``."""
    action = str(spec.get("action") or "")
    errors = []
    selector = spec.get("selector") or {}
    if not spec.get("address") and not (isinstance(selector, dict) and selector.get("physicalMachines")):
        errors.append(f"{path}address: name the machines: address (chaosd's URLs) or selector.physicalMachines")
    if any(not a for a in spec.get("address") or []):
        errors.append(f"{path}address: an address is empty")
    block = spec.get(action)
    if not isinstance(block, dict):
        return errors + [f"{path}{action}: action {action!r} needs its {action!r} settings"]
    where = f"{path}{action}."
    if action == "stress-cpu":
        errors += [f"{where}{k}: must not be 0" for k in ("load", "workers") if not block.get(k)]
    elif action in ("stress-mem", "disk-fill") and not block.get("size"):
        errors.append(f"{where}size: required (e.g. \"256MB\")")
    elif action.startswith("network-") and action not in ("network-dns", "network-down", "network-flood",
                                                          "network-bandwidth"):
        if not block.get("device"):
            errors.append(f"{where}device: required (the interface that carries the traffic, lo for 127.x)")
        if not block.get("ip-address") and not block.get("hostname"):
            errors.append(f"{where}ip-address: one of ip-address and hostname is required")
        if action == "network-partition":
            if block.get("direction") not in ("to", "from"):
                errors.append(f"{where}direction: must be 'to' or 'from' (two objects for both)")
            if block.get("accept-tcp-flags") and block.get("ip-protocol") != "tcp":
                errors.append(f"{where}ip-protocol: must be 'tcp' when accept-tcp-flags is set")
        else:
            errors += _percent(f"{where}correlation", block.get("correlation"), True)
            if action != "network-delay":
                errors += _percent(f"{where}percent", block.get("percent"), False)
    elif action == "process":
        errors += [f"{where}{k}: required" for k in ("process", "signal") if not block.get(k)]
    elif action == "clock":
        if not isinstance(block.get("pid"), int) or block["pid"] <= 0:
            errors.append(f"{where}pid: required (the process whose clock to skew)")
        if not block.get("time-offset"):
            errors.append(f"{where}time-offset: required (e.g. \"-5m\")")
        else:
            errors += _duration_error(f"{where}time-offset", block["time-offset"], allow_negative=True)
    elif action == "user_defined":
        errors += [f"{where}{k}: required" for k in ("attackCmd", "recoverCmd") if not block.get(k)]
    return errors


_SPEC_RULES: dict[str, Callable[[dict[str, Any], str], list[str]]] = {
    "PodChaos": _pod_chaos, "StressChaos": _stress_chaos, "NetworkChaos": _network_chaos,
    "IOChaos": _io_chaos, "TimeChaos": _time_chaos, "PhysicalMachineChaos": _physical_machine_chaos,
}


def _chaos_spec_errors(kind: str, spec: Any, path: str) -> list[str]:
    if not isinstance(spec, dict):
        return [f"{path.rstrip('.') or 'spec'}: missing"]
    errors = _selector_errors(path, spec) + _duration_error(f"{path}duration", spec.get("duration"))
    return errors + _SPEC_RULES[kind](spec, path)


def _cron_errors(path: str, text: Any) -> list[str]:
    if not isinstance(text, str) or not text.strip():
        return [f"{path}: a cron schedule is required"]
    text = text.strip()
    if text.startswith("@every "):
        return _duration_error(path, text.removeprefix("@every ").strip())
    if text in _CRON_DESCRIPTORS:
        return []
    fields = text.split()
    if fields and fields[0].startswith("CRON_TZ=") or fields and fields[0].startswith("TZ="):
        fields = fields[1:]
    if len(fields) != 5 or not all(_CRON_FIELD.fullmatch(f) for f in fields):
        return [f"{path}: {text!r} is not a 5-field cron spec (minute hour day month weekday), "
                "a descriptor like @hourly, or @every <duration>"]
    return []


def _schedule_errors(spec: dict[str, Any]) -> list[str]:
    errors = _cron_errors("spec.schedule", spec.get("schedule"))
    kind = spec.get("type")
    if kind in CHAOS_KINDS:
        key = CHAOS_KINDS[kind]
        errors += _chaos_spec_errors(kind, spec.get(key), f"spec.{key}.")
        others = [k for k in CHAOS_KINDS.values() if k != key and k in spec]
        if others:
            errors.append(f"spec: type {kind!r} but also {', '.join(others)} given")
    elif kind == "Workflow":
        errors += _workflow_errors(spec.get("workflow") or {}, "spec.workflow.")
    return errors


def _workflow_errors(spec: dict[str, Any], path: str = "spec.") -> list[str]:
    errors: list[str] = []
    templates = spec.get("templates") or []
    names = [str(t.get("name")) for t in templates if isinstance(t, dict)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        errors.append(f"{path}templates: duplicate names {dupes}")
    if spec.get("entry") not in names:
        errors.append(f"{path}entry: {spec.get('entry')!r} is not the name of a template")
    for i, t in enumerate(templates):
        if not isinstance(t, dict):
            continue
        tpath = f"{path}templates[{i}]."
        errors += _duration_error(f"{tpath}deadline", t.get("deadline"))
        ttype = t.get("templateType")
        for child in t.get("children") or []:
            if child not in names:
                errors.append(f"{tpath}children: {child!r} is not the name of a template")
        if ttype in ("Serial", "Parallel") and not t.get("children"):
            errors.append(f"{tpath}children: a {ttype} template needs children")
        if ttype in CHAOS_KINDS:
            key = CHAOS_KINDS[ttype]
            errors += _chaos_spec_errors(ttype, t.get(key), f"{tpath}{key}.")
        if ttype == "Suspend" and not t.get("deadline"):
            errors.append(f"{tpath}deadline: a Suspend template needs a deadline")
    return errors


def _litmus_engine_errors(spec: dict[str, Any]) -> list[str]:
    errors = []
    if not spec.get("experiments"):
        errors.append("spec.experiments: name at least one ChaosExperiment")
    for i, exp in enumerate(spec.get("experiments") or []):
        env = (((exp or {}).get("spec") or {}).get("components") or {}).get("env") or []
        seen = set()
        for j, item in enumerate(env):
            name = (item or {}).get("name")
            if name in seen:
                errors.append(f"spec.experiments[{i}].spec.components.env[{j}]: {name} is set twice")
            seen.add(name)
    return errors


def admission_errors(obj: dict[str, Any]) -> list[str]:
    """What the API server (metadata) and the Chaos Mesh webhook would refuse, as ``path: message``."""
    if not isinstance(obj, dict):
        return []
    errors = metadata_errors(obj)
    kind, spec = obj.get("kind"), obj.get("spec")
    group = str(obj.get("apiVersion") or "").split("/")[0]
    if group == "chaos-mesh.org":
        if kind in CHAOS_KINDS:
            errors += _chaos_spec_errors(kind, spec, "spec.")
        elif kind == "Schedule" and isinstance(spec, dict):
            errors += _schedule_errors(spec)
        elif kind == "Workflow" and isinstance(spec, dict):
            errors += _workflow_errors(spec)
    elif group == "litmuschaos.io" and kind == "ChaosEngine" and isinstance(spec, dict):
        errors += _litmus_engine_errors(spec)
    return errors


def advice(obj: dict[str, Any]) -> list[str]:
    """Accepted by the server, but probably not what a game day wants."""
    out: list[str] = []
    if not isinstance(obj, dict):
        return out
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind == "PodChaos" and spec.get("action") == "pod-failure" and not spec.get("duration"):
        out.append("spec.duration: a pod-failure without a duration keeps the pods failed until the object is "
                   "deleted")
    one_shot = kind == "PhysicalMachineChaos" and spec.get("action") == "process" \
        and (spec.get("process") or {}).get("signal") != 19
    if kind in ("StressChaos", "NetworkChaos", "IOChaos", "TimeChaos", "PhysicalMachineChaos") \
            and not spec.get("duration") and not one_shot:
        out.append(f"spec.duration: without a duration the {kind} stays injected until it is paused or deleted")
    if kind in CHAOS_KINDS and kind != "PhysicalMachineChaos" and spec.get("mode") == "all" \
            and not (spec.get("selector") or {}).get("pods"):
        out.append("spec.mode: 'all' hits every selected pod at once: a replicated database loses its quorum")
    if kind == "ChaosEngine" and not spec.get("chaosServiceAccount"):
        out.append("spec.chaosServiceAccount: without it the runner uses the namespace's default account, which "
                   "usually cannot delete pods")
    return out
