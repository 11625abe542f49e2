"""Every activity of an experiment checked against its function's argument rules, values substituted.

``chaos validate`` and the validation ``chaos run`` does first already check the literal values (see
:mod:`chaosdb.core.arguments`); values that come from the configuration or secrets (``${name}``) are known
only once the run has loaded them. :func:`refuse_bad_arguments` checks every activity of the hypothesis,
the method and the rollbacks with those values, and is called before anything starts by the experiment
control and by the controls that start something (the embedded cluster, the load).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from chaoslib import substitute

from chaosdb.core.arguments import (
    control_argument_problems,
    duplicate_control_problems,
    missing_control_modules,
    problems_in_call,
    with_argument_checks,
)
from chaosdb.core.claims import busy_message
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import check_cluster_name
from chaosdb.core.libpq import libpq_parameters
from chaosdb.core.tls import SERVICES, as_bool, client_tls, tls_keys
from chaosdb.experiment.context import run_context
from chaosdb.experiment.refusals import refused

__all__ = ["activities_of", "experiment_problems", "refuse_bad_arguments", "configuration_problems", "output_problems",
           "control_problems", "duplicate_control_problems", "control_argument_problems", "with_argument_checks"]


def activities_of(experiment: dict[str, Any]) -> list[dict[str, Any]]:
    """The hypothesis's probes, the method and the rollbacks (references resolved)."""
    return _activities(experiment)


def _activities(experiment: dict[str, Any]) -> list[dict[str, Any]]:
    found = list((experiment.get("steady-state-hypothesis") or {}).get("probes") or [])
    found += list(experiment.get("method") or []) + list(experiment.get("rollbacks") or [])
    by_name = {a.get("name"): a for a in found if isinstance(a, dict) and "name" in a}
    return [by_name.get(a["ref"], a) if isinstance(a, dict) and "ref" in a else a for a in found]


def experiment_problems(experiment: dict[str, Any], configuration: dict[str, Any] | None = None,
                        secrets: dict[str, Any] | None = None) -> list[str]:
    """``"activity 'name': problem"`` for every problem with an activity's argument values, and the TLS settings
    of the configuration (files that do not exist, a certificate without its key, a flag that is not true/false)."""
    problems = []
    for part in (lambda: size_problems(experiment), lambda: configuration_problems(configuration),
                 lambda: unresolved_problems(experiment, configuration, secrets),
                 lambda: output_problems(experiment, configuration, secrets),
                 lambda: control_problems(experiment, configuration, secrets)):
        try:
            problems += [p for p in part() if p not in problems]
        except ChaosDBError as exc:  # a part that cannot look further says why (a bad name it had to follow)
            if str(exc) not in " ".join(problems):
                problems.append(str(exc))
    for activity in _activities(experiment):
        provider = activity.get("provider") if isinstance(activity, dict) else None
        if not isinstance(provider, dict) or provider.get("type") != "python":
            continue
        module, name = provider.get("module"), provider.get("func")
        if not isinstance(module, str) or not isinstance(name, str):
            continue  # the file's shape (chaosdb.experiment.malformed) says so
        try:
            func = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError):
            continue  # chaoslib's own validation reports a missing module or function
        arguments = substitute(provider.get("arguments") or {}, configuration or {}, secrets or {})
        for problem in problems_in_call(func, arguments):
            problems.append(f"activity '{activity.get('name', '?')}': {problem}")
    return problems


#: the largest experiment accepted: a journal copies the experiment whole, and a report reads the journal
MAX_EXPERIMENT_BYTES = 1 << 20


def size_problems(experiment: dict[str, Any]) -> list[str]:
    """``"experiment: ..."`` when the experiment is larger than :data:`MAX_EXPERIMENT_BYTES`."""
    size = len(json.dumps(experiment, default=str))
    if size > MAX_EXPERIMENT_BYTES:
        return [f"experiment: it is {size / 1e6:.1f} MB, over the {MAX_EXPERIMENT_BYTES >> 20} MiB this pack accepts "
                "(a journal copies the experiment whole): keep data in files the activities read"]
    return []


def control_problems(experiment: dict[str, Any], configuration: dict[str, Any] | None = None,
                     secrets: dict[str, Any] | None = None) -> list[str]:
    """``"control 'name': problem"`` for each control declared twice (Chaos Toolkit would run its hooks twice: two
    loads, two clusters) and each argument of this pack's controls that cannot work: unknown names, wrong shapes and
    the rules of the module's ``CONTROL_ARGUMENTS`` (values substituted)."""
    controls = experiment.get("controls") or []
    problems = duplicate_control_problems(controls) + missing_control_modules(controls)
    for control in controls if isinstance(controls, list) else []:
        provider = control.get("provider") if isinstance(control, dict) else None
        if not isinstance(provider, dict):
            continue  # the file's shape (chaosdb.experiment.malformed) says so before the run
        module = str(provider.get("module") or "")
        if not module.startswith("chaosdb."):
            continue
        label = f"control '{control.get('name', '?')}'"
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue  # no such module (said above) or a missing extra (the control's own validation says so)
        raw = provider.get("arguments")
        if raw is not None and not isinstance(raw, dict):
            problems.append(f"{label}: its arguments must be an object of name: value, not {type(raw).__name__}")
            continue
        arguments = substitute(raw or {}, configuration or {}, secrets or {})
        own = control_argument_problems(found, arguments)
        if not own and callable(getattr(found, "input_problems", None)):  # what it can tell before it starts
            own = found.input_problems(experiment, arguments, configuration, secrets)
        problems += [f"{label}: {p}" for p in own]
    return problems


def unresolved_problems(experiment: dict[str, Any], configuration: dict[str, Any] | None,
                        secrets: dict[str, Any] | None) -> list[str]:
    """A ``${name}`` in an argument of this pack's activities or controls that neither the configuration nor the
    secrets define: its value could never be checked, and the activity would get the text ``${name}``."""
    places: list[tuple[str, Any]] = []
    for activity in _activities(experiment):
        provider = activity.get("provider") if isinstance(activity, dict) else None
        if isinstance(provider, dict) and str(provider.get("module") or "").startswith("chaosdb."):
            places.append((f"activity '{activity.get('name', '?')}'", provider.get("arguments")))
    for control in experiment.get("controls") or [] if isinstance(experiment.get("controls"), list) else []:
        provider = control.get("provider") if isinstance(control, dict) else None
        if isinstance(provider, dict) and str(provider.get("module") or "").startswith("chaosdb."):
            places.append((f"control '{control.get('name', '?')}'", provider.get("arguments")))
    problems = []
    for label, arguments in places:
        if arguments is None:
            continue
        left = sorted(set(_references(substitute(arguments, configuration or {}, secrets or {}))))
        if left:
            problems.append(f"{label}: {', '.join('${' + name + '}' for name in left)} is defined neither in the "
                            "configuration nor in the secrets")
    return problems


def _references(value: Any) -> list[str]:
    import re  # noqa: PLC0415 - small and rare

    if isinstance(value, str):
        return re.findall(r"\$\{([^}]*)\}", value)
    if isinstance(value, dict):
        return [name for v in value.values() for name in _references(v)]
    if isinstance(value, (list, tuple)):
        return [name for v in value for name in _references(v)]
    return []


def output_problems(experiment: dict[str, Any], configuration: dict[str, Any] | None = None,
                    secrets: dict[str, Any] | None = None) -> list[str]:
    """``"control 'name': problem"`` for each folder a control would write that another live run is writing."""
    problems = []
    for control in experiment.get("controls") or []:
        provider = (control or {}).get("provider") or {}
        module = str(provider.get("module") or "")
        try:
            spec = getattr(importlib.import_module(module), "OUTPUT_FOLDER", None) if module.startswith("chaosdb.") \
                else None
        except ImportError:
            continue  # its extra is missing: the control's own validation says so
        if spec is None:
            continue
        arguments = substitute(provider.get("arguments") or {}, configuration or {}, secrets or {})
        folder = arguments.get(spec[0]) if isinstance(arguments, dict) else None
        if folder and ".." in Path(str(folder)).parts:
            problems.append(f"control '{control.get('name', '?')}': {spec[1]} {folder} goes up with '..' (it would "
                            f"be {Path(str(folder)).resolve()}): give the folder without '..' ({spec[2]})")
            continue
        busy = busy_message(str(folder), *spec[1:]) if folder else ""
        if busy:
            problems.append(f"control '{control.get('name', '?')}': {busy}")
    return problems


def configuration_problems(configuration: dict[str, Any] | None) -> list[str]:
    """``"configuration: problem"`` for each service whose TLS keys (:mod:`chaosdb.core.tls`) cannot work."""
    problems = []
    name = (configuration or {}).get("chaosdb_cluster")
    if name:
        try:
            check_cluster_name(str(name))
        except ChaosDBError as exc:
            problems.append(f"configuration: chaosdb_cluster: {exc}")
    for service in SERVICES:
        if any((configuration or {}).get(key) not in (None, "") for key in tls_keys(service)):
            try:
                client_tls(service, configuration)
            except ChaosDBError as exc:
                problems.append(f"configuration: {exc}")
    try:
        as_bool((configuration or {}).get("secure"), default=False)
    except ChaosDBError as exc:
        problems.append(f"configuration: secure: {exc}")
    try:
        libpq_parameters(configuration)
    except ChaosDBError as exc:
        if f"configuration: {exc}" not in problems:
            problems.append(f"configuration: {exc}")
    return problems


def refuse_bad_arguments(experiment: dict[str, Any], configuration: dict[str, Any] | None = None,
                         secrets: dict[str, Any] | None = None) -> None:
    """Raise :class:`InterruptExecution` naming every problem, before anything is started (checked once per
    experiment object). A check that cannot run stops the run too: a problem it could not look for is never let
    through."""
    key, checked = id(experiment), run_context(experiment).checks
    if key not in checked:
        checked.clear()
        try:
            checked[key] = experiment_problems(experiment, configuration, secrets)
        except Exception as exc:  # noqa: BLE001 - whatever broke the check, the run must not go on unchecked
            checked[key] = [f"the input check itself could not run ({type(exc).__name__}: {exc}); nothing may "
                             "start on input nobody checked"]
    if checked[key]:
        raise refused("the experiment's arguments are wrong: " + "; ".join(checked[key]),
                      nothing_started=True)
