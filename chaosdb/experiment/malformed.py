"""What is wrong with a malformed experiment file, in plain sentences.

Chaos Toolkit's loader (chaoslib 1.44) turns YAML errors into a message but lets everything else escape as a
Python traceback from ``chaos validate`` and ``chaos run``: a file that is not UTF-8, JSON that is truncated or
empty, a list where the experiment or an activity's ``arguments`` must be an object. :func:`file_problems` reads
the file as the loader does and says what is wrong with its shape; :func:`install_hook` (called when Chaos Toolkit
loads this pack's CLI plugin, before it reads the experiment) prints those sentences instead of the traceback
when ``chaos validate|run FILE`` dies on such a file. An exception on a well-formed file keeps its traceback:
that is a defect to report, not a file to fix.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

__all__ = ["file_problems", "chaos_source", "install_hook"]

#: top-level keys and the JSON type Chaos Toolkit needs them to have
_TOP_LEVEL_TYPES: dict[str, type] = {
    "title": str, "description": str, "tags": list, "contributions": dict, "configuration": dict,
    "secrets": dict, "extensions": list, "controls": list, "steady-state-hypothesis": dict, "method": list,
    "rollbacks": list,
}
_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def file_problems(path: str) -> list[str]:
    """One sentence per problem that keeps Chaos Toolkit from reading the experiment at ``path`` (empty when the
    file reads as an experiment; what the file means is left to ``chaos validate``)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        return [f"cannot read {path}: {exc.strerror or exc}"]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return [f"{path} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line}, column {column} "
                "cannot be read (save the file as UTF-8)"]
    if not text.strip():
        return [f"{path} is empty: an experiment is a JSON or YAML object with a title and a method"]
    if os.path.splitext(path)[1].lower() in (".yaml", ".yml"):
        import yaml  # noqa: PLC0415 - only for YAML experiments; a dependency of chaostoolkit-lib

        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            return [f"{path} is not valid YAML: {' '.join(str(exc).split())}"]
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            truncated = exc.pos >= len(text.rstrip()) or text.rstrip()[-1] not in "}]"
            hint = "; the file ends before the JSON does: is it cut short?" if truncated else ""
            return [f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}){hint}"]
    return [f"{path}: {problem}" for problem in shape_problems(document)]


def shape_problems(experiment: Any) -> list[str]:
    """Where the parsed experiment has a value of a type Chaos Toolkit cannot use."""
    if not isinstance(experiment, dict):
        return [f"the file holds {_kind(experiment)}; an experiment is one object with a title and a method"]
    problems = []
    for key, wanted in _TOP_LEVEL_TYPES.items():
        if key in experiment and not isinstance(experiment[key], wanted):
            problems.append(f"'{key}' must be {_TYPE_NAMES[wanted]}, not {_kind(experiment[key])}")
    hypothesis = experiment.get("steady-state-hypothesis")
    places: list[tuple[str, Any]] = []
    if isinstance(hypothesis, dict):
        probes = hypothesis.get("probes", [])
        if not isinstance(probes, list):
            problems.append(f"'steady-state-hypothesis.probes' must be a list, not {_kind(probes)}")
        else:
            places += [(f"steady-state-hypothesis.probes[{i}]", a) for i, a in enumerate(probes)]
    for key in ("method", "rollbacks"):
        if isinstance(experiment.get(key), list):
            places += [(f"{key}[{i}]", a) for i, a in enumerate(experiment[key])]
    for where, activity in places:
        problems += _activity_problems(where, activity)
    controls = experiment.get("controls")
    for i, control in enumerate(controls if isinstance(controls, list) else []):
        if not isinstance(control, dict):
            problems.append(f"'controls[{i}]' must be an object with a name and a provider, not {_kind(control)}")
    return problems


def _activity_problems(where: str, activity: Any) -> list[str]:
    if not isinstance(activity, dict):
        return [f"'{where}' must be an activity object, not {_kind(activity)}"]
    label = f"'{where}'" + (f" ('{activity['name']}')" if isinstance(activity.get("name"), str) else "")
    if "ref" in activity:
        return []
    provider = activity.get("provider")
    if provider is None:
        return []  # chaos validate says that an activity needs a provider
    if not isinstance(provider, dict):
        return [f"the provider of {label} must be an object, not {_kind(provider)}"]
    arguments = provider.get("arguments")
    if provider.get("type") == "python" and arguments is not None and not isinstance(arguments, dict):
        return [f"the arguments of {label} must be an object of name: value, not {_kind(arguments)}"]
    return []


def chaos_source(argv: Sequence[str], group: Any) -> str | None:
    """The experiment file of a ``chaos validate|run`` command line (``group`` is Chaos Toolkit's click group),
    or None for other commands and for sources that are not local files."""
    try:
        context = group.make_context("chaos", list(argv[1:]), resilient_parsing=True)
        rest = [*getattr(context, "_protected_args", []), *context.args]
        if not rest or rest[0] not in ("validate", "run"):
            return None
        command = group.get_command(context, rest[0])
        sub = command.make_context(rest[0], rest[1:], parent=context, resilient_parsing=True)
        source = sub.params.get("source")
    except Exception:  # noqa: BLE001 - a command line we cannot read leaves Chaos Toolkit's own output alone
        return None
    return source if isinstance(source, str) and os.path.isfile(source) else None


def install_hook(argv: Sequence[str] | None = None) -> None:
    """Print :func:`file_problems` instead of a traceback when ``chaos validate|run FILE`` dies on a malformed
    FILE (exit status 1, as Chaos Toolkit's own refusals)."""
    previous: Callable[..., Any] = sys.excepthook
    arguments = list(sys.argv if argv is None else argv)

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        problems: list[str] = []
        if not issubclass(kind, KeyboardInterrupt):
            try:
                from chaostoolkit.cli import cli  # noqa: PLC0415 - only in the chaos process

                source = chaos_source(arguments, cli)
                problems = file_problems(source) if source else []
            except Exception:  # noqa: BLE001 - never hide the original error behind one of ours
                problems = []
        if not problems:
            previous(kind, exc, tb)
            return
        for problem in problems:
            print(f"chaos: error: {problem}", file=sys.stderr)

    sys.excepthook = hook
