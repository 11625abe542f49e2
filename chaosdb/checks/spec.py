"""What a check is, and where checks come from.

A check is a name, a Chaos Toolkit probe activity (``"type": "probe"``, a ``python``, ``http`` or ``process``
provider, a ``tolerance`` as in a steady-state hypothesis probe) and ``for_s``: how many seconds it must fail without
a pass before ``chaosdb serve`` answers 503 for it (default 0: at once). Checks come from either

* a **checks file** (JSON, or YAML when its name ends in ``.yaml``/``.yml``)::

      {"configuration": {...}, "secrets": {...},
       "checks": [{"name": "has-primary", "for_s": 10,
                   "probe": {"type": "probe", "name": "has-primary", "tolerance": true,
                             "provider": {"type": "python", "module": "chaosdb.postgres.probes",
                                          "func": "has_primary"}}}]}

  (a probe without a ``name`` takes the check's); ``shipped:NAME`` names one this pack ships (``shipped:patroni``);
* a **Chaos Toolkit experiment**: each probe of its ``steady-state-hypothesis`` is a check named by the probe's
  ``name``; the hypothesis as a whole is the group of those checks under its ``title`` (selecting the title selects
  them all; ``chaosdb serve`` answers for it 200 only when every one of them answers 200), unless a probe has that
  same name. Everything else of the experiment (method, rollbacks, controls) is left alone.

Configuration and secrets follow Chaos Toolkit: ``chaoslib``'s own loaders read them (``{"type": "env", "key":
...}`` entries), ``--var`` and ``--var-file`` override them as they do for ``chaos run`` (a ``--var`` whose key the
configuration does not declare is added, where ``chaos run`` would drop it). Every check is validated before any
runs (:func:`load_checks`): its shape, Chaos Toolkit's own activity and tolerance validation, this pack's argument
rules with the configuration substituted (:mod:`chaosdb.experiment.checks`) and the extras its modules need; a
problem is one sentence (:class:`CheckInputError`).
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoslib import convert_vars, merge_vars
from chaoslib.activity import ensure_activity_is_valid
from chaoslib.configuration import load_configuration, load_dynamic_configuration
from chaoslib.exceptions import ChaosException
from chaoslib.hypothesis import ensure_hypothesis_tolerance_is_valid
from chaoslib.secret import load_secrets
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from chaosdb.core.arguments import did_you_mean
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import MissingExtra, experiment_extras, missing_modules
from chaosdb.core.plugins import modules_named
from chaosdb.core.redact import redact, secret_strings
from chaosdb.core.settings import SETTINGS, secret_environment_values
from chaosdb.experiment.checks import experiment_problems
from chaosdb.experiment.malformed import file_problems
from chaosdb.experiment.shape import kind_of, shape_problems
from chaosdb.shipped import checks_dir

__all__ = ["Check", "CheckSet", "CheckInputError", "ChecksFile", "CheckEntry", "load_checks", "resolve_source",
           "read_document", "SHIPPED_PREFIX"]

#: what names a checks file this pack ships: ``shipped:patroni``
SHIPPED_PREFIX = "shipped:"
_HYPOTHESIS_PLACE = re.compile(r"steady-state-hypothesis\.probes\[(\d+)\]")
_WHAT = ("a checks file is an object with 'checks' (and optionally 'configuration' and 'secrets'); an experiment "
         "has a 'steady-state-hypothesis' with probes")


class CheckInputError(ChaosDBError):
    """The checks cannot be read, or one of them could never run: one sentence that says why (exit status 2)."""


class CheckEntry(BaseModel):
    """One check of a checks file: its name, its probe (with a tolerance) and how long it may fail (``for_s``)."""

    model_config = ConfigDict(extra="forbid")
    name: StrictStr = Field(min_length=1)
    probe: dict[str, Any]
    for_s: float = Field(0.0, ge=0, allow_inf_nan=False)
    description: StrictStr | None = None


class ChecksFile(BaseModel):
    """A whole checks file: configuration and secrets as in an experiment, and the checks."""

    model_config = ConfigDict(extra="forbid")
    title: StrictStr | None = None
    description: StrictStr | None = None
    configuration: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, dict[str, Any]] = Field(default_factory=dict)
    checks: list[CheckEntry] = Field(min_length=1)


@dataclass(frozen=True)
class Check:
    """One check: its name, its probe activity (with its tolerance) and ``for_s``."""

    name: str
    probe: dict[str, Any]
    for_s: float = 0.0


@dataclass(frozen=True)
class CheckSet:
    """The checks of one file, with the configuration and secrets they run with (loaded: environment values read,
    ``--var`` applied), and the groups (the hypothesis's title -> its checks)."""

    source: str
    checks: tuple[Check, ...]
    configuration: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, Any] = field(default_factory=dict)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def names(self) -> list[str]:
        """Every check's name, in the file's order."""
        return [c.name for c in self.checks]

    def get(self, name: str) -> Check | None:
        """The check called *name*, None when there is none (a group is not a check)."""
        return next((c for c in self.checks if c.name == name), None)

    def select(self, names: Sequence[str]) -> list[Check]:
        """The checks *names* name (a group's name stands for its checks), in the file's order; every check when
        *names* is empty. An unknown name is refused with the known ones."""
        if not names:
            return list(self.checks)
        wanted: set[str] = set()
        for name in names:
            if name in self.groups:
                wanted.update(self.groups[name])
            elif self.get(name) is not None:
                wanted.add(name)
            else:
                raise CheckInputError(f"{self.source} has no check named {name!r}{did_you_mean(name, self.known())}; "
                                      f"its checks: {', '.join(self.known())}")
        return [c for c in self.checks if c.name in wanted]

    def known(self) -> list[str]:
        """Every name that can be selected: the checks, then the groups."""
        return self.names() + [g for g in self.groups if g not in self.names()]

    def mask(self) -> list[str]:
        """Every value that must never be shown: the secrets (each DSN's password too), the configuration values of
        the settings that are secrets, the secret variables set in this environment."""
        secret_settings = [v for k, v in self.configuration.items() if k in SETTINGS and SETTINGS[k].secret]
        return secret_strings([self.secrets, secret_settings]) + secret_environment_values()


def resolve_source(source: str) -> Path:
    """The file *source* names: a path, or ``shipped:NAME`` for a checks file this pack ships."""
    if not source.startswith(SHIPPED_PREFIX):
        return Path(source)
    name = source[len(SHIPPED_PREFIX):].removesuffix(".yaml")
    shipped = sorted(p.stem for p in checks_dir().glob("*.yaml"))
    if name not in shipped:
        raise CheckInputError(f"no shipped checks file {name!r}{did_you_mean(name, shipped)}; shipped: "
                              f"{', '.join(SHIPPED_PREFIX + s for s in shipped)}")
    return checks_dir() / f"{name}.yaml"


def read_document(path: Path) -> dict[str, Any]:
    """The parsed file (JSON, or YAML by its name), an object; anything else is one sentence."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CheckInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not raw.decode("utf-8", errors="replace").strip():
        raise CheckInputError(f"{path} is empty: {_WHAT}")
    is_yaml = path.suffix.lower() in (".yaml", ".yml")
    if is_yaml:
        try:
            import yaml  # noqa: PLC0415 - only for YAML files (chaostoolkit-lib brings it, and the k8s extra)
        except ModuleNotFoundError:
            raise MissingExtra(f"reading the YAML file {path}", {"k8s": ["yaml"]}) from None
    try:
        text = raw.decode("utf-8")
        document = yaml.safe_load(text) if is_yaml else json.loads(text)
    except Exception:  # noqa: BLE001 - the malformed-file reader says what is wrong, in one sentence
        problems = file_problems(str(path))
        raise CheckInputError(problems[0] if problems else f"{path} cannot be read as "
                              f"{'YAML' if is_yaml else 'JSON'}") from None
    if not isinstance(document, dict):
        raise CheckInputError(f"{path} holds {kind_of(document)}: {_WHAT}")
    return document


def _pydantic_sentence(path: Path, exc: ValidationError) -> str:
    """The first problem pydantic found in a checks file, as a sentence naming its place (``checks[0].for_s``)."""
    error = exc.errors()[0]
    place = ""
    for part in error.get("loc", ()):
        place += f"[{part}]" if isinstance(part, int) else (f".{part}" if place else str(part))
    kind, value = error.get("type"), error.get("input")
    if kind == "missing":
        return f"{path}: '{place}' is missing"
    if kind == "extra_forbidden":
        known = list(CheckEntry.model_fields) if "." in place or "[" in place else list(ChecksFile.model_fields)
        last = place.rsplit(".", 1)[-1]
        return f"{path}: '{place}' is not a key of a checks file{did_you_mean(last, known)}; known: {', '.join(known)}"
    if place.endswith("for_s"):
        return f"{path}: '{place}' must be a number of seconds >= 0, got {json.dumps(value, default=str)}"
    if kind == "too_short" and place == "checks":
        return f"{path}: 'checks' is empty: give at least one check"
    return f"{path}: '{place}' {str(error.get('msg', 'is not valid')).lower()}, got {kind_of(value)}"


def _from_checks_file(path: Path, document: dict[str, Any], default_for_s: float | None
                      ) -> tuple[list[Check], dict[str, Any], dict[str, Any]]:
    try:
        model = ChecksFile.model_validate(document)
    except ValidationError as exc:
        raise CheckInputError(_pydantic_sentence(path, exc)) from None
    checks = []
    for entry in model.checks:
        probe = copy.deepcopy(entry.probe)
        probe.setdefault("name", entry.name)
        for_s = entry.for_s if "for_s" in entry.model_fields_set or default_for_s is None else default_for_s
        checks.append(Check(entry.name, probe, for_s))
    return checks, model.configuration, model.secrets


def _from_experiment(path: Path, document: dict[str, Any], default_for_s: float | None
                     ) -> tuple[list[Check], dict[str, Any], dict[str, Any], dict[str, tuple[str, ...]]]:
    problems = shape_problems(document)
    if problems:
        raise CheckInputError(f"{path}: {problems[0]}")
    hypothesis = document.get("steady-state-hypothesis") or {}
    probes = hypothesis.get("probes") or []
    if not probes:
        raise CheckInputError(f"{path} is an experiment without steady-state-hypothesis probes: nothing to check")
    declared = [a for key in ("method", "rollbacks") for a in document.get(key) or [] if isinstance(a, dict)]
    declared += [p for p in probes if isinstance(p, dict) and "ref" not in p]
    by_name = {a.get("name"): a for a in declared if a.get("name")}
    checks = []
    for i, probe in enumerate(probes):
        if "ref" in probe:  # Chaos Toolkit runs the activity named, with this entry's tolerance
            found = by_name.get(probe["ref"])
            if found is None:
                raise CheckInputError(f"{path}: steady-state-hypothesis.probes[{i}] refers to {probe['ref']!r}, "
                                      "which no activity of the experiment is called")
            probe = {**found, **{k: v for k, v in probe.items() if k != "ref"}}
        name = probe.get("name")
        if not isinstance(name, str) or not name:
            raise CheckInputError(f"{path}: steady-state-hypothesis.probes[{i}] has no name: a check is named by its "
                                  "probe's name")
        checks.append(Check(name, copy.deepcopy(probe), default_for_s or 0.0))
    title = hypothesis.get("title")
    groups = {title: tuple(c.name for c in checks)} if isinstance(title, str) and title \
        and title not in {c.name for c in checks} else {}
    return checks, document.get("configuration") or {}, document.get("secrets") or {}, groups


def _exception_sentence(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__


def _module_hint(provider: dict[str, Any]) -> str:
    """" (did you mean ...?)" for a misspelt module or function of this pack, else ""."""
    module, func = provider.get("module"), provider.get("func")
    if not isinstance(module, str) or not module.startswith("chaosdb"):
        return ""
    try:
        found = importlib.import_module(module)
    except ImportError:
        known = modules_named("probes") + modules_named("actions")
        return did_you_mean(module, known).replace("'", "")
    return did_you_mean(str(func), list(getattr(found, "__all__", []))) if isinstance(func, str) else ""


def _probe_problem(check: Check) -> str | None:
    """Why *check*'s probe could never run or be judged, in one sentence; None when it can."""
    label, probe = f"check '{check.name}'", check.probe
    kind = probe.get("type")
    if kind != "probe":
        what = "an action" if kind == "action" else f"of type {json.dumps(kind)}"
        return f"{label}: its activity is {what}; a check runs a probe (\"type\": \"probe\")"
    if "tolerance" not in probe:
        return (f"{label}: its probe has no 'tolerance' (the value that passes, as in a steady-state hypothesis: "
                "true, a number, a string, [low, high], or a range, regex, jsonpath or probe object)")
    try:
        ensure_activity_is_valid(probe)
    except (ChaosException, TypeError, ValueError, AttributeError) as exc:
        provider = probe.get("provider")
        hint = _module_hint(provider) if isinstance(provider, dict) else ""
        return f"{label}: {_exception_sentence(exc)}{hint}"
    try:
        ensure_hypothesis_tolerance_is_valid(probe["tolerance"])
    except (ChaosException, TypeError, ValueError, AttributeError) as exc:
        return f"{label}: its tolerance is not one Chaos Toolkit can use: {_exception_sentence(exc)}"
    return None


def _variables(variables: Sequence[str], var_files: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--var KEY[:TYPE]=VALUE`` and ``--var-file F`` as Chaos Toolkit reads them: (configuration, secrets)."""
    values: dict[str, Any] = {}
    for item in variables:
        try:
            values.update(convert_vars([item]))
        except ValueError as exc:
            raise CheckInputError(f"--var {item!r}: {_exception_sentence(exc)} (KEY=VALUE, or KEY:TYPE=VALUE with "
                                  "TYPE str, int, float, bool, bytes or json)") from None
    for name in var_files:
        path = Path(name)
        if not path.is_file():
            raise CheckInputError(f"--var-file {name}: no such file")
        if path.suffix.lower() in (".json", ".yaml", ".yml"):
            document = read_document(path)
            unknown = sorted(set(document) - {"configuration", "secrets"})
            if unknown:
                raise CheckInputError(f"--var-file {name}: {', '.join(unknown)} is not a key of a var file "
                                      "(it holds 'configuration' and 'secrets')")
    return merge_vars(values or None, list(var_files) or None)


def _load(path: Path, configuration_info: dict[str, Any], secrets_info: dict[str, Any],
          config_vars: dict[str, Any], secret_vars: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The configuration and the secrets, loaded by Chaos Toolkit's own loaders."""
    try:
        configuration = load_configuration(configuration_info, dict(config_vars))
        configuration.update({k: v for k, v in config_vars.items() if k not in configuration_info})
        secrets = load_secrets(secrets_info, configuration, dict(secret_vars))
        configuration = load_dynamic_configuration(configuration, secrets)
    except (ChaosException, KeyError, TypeError, ValueError) as exc:
        raise CheckInputError(f"{path}: {_exception_sentence(exc)}") from None
    return configuration, secrets


def load_checks(source: str, variables: Sequence[str] = (), var_files: Sequence[str] = (),
                default_for_s: float | None = None) -> CheckSet:
    """Read and validate the checks of *source* (a checks file, an experiment, or ``shipped:NAME``) with the
    ``--var`` *variables* and *var_files* applied; *default_for_s* is the ``for_s`` of the checks that do not set
    their own (every check of an experiment). Nothing runs when anything is wrong: :class:`CheckInputError` (or
    :class:`chaosdb.core.extras.MissingExtra`) says what, in one sentence."""
    path = resolve_source(source)
    document = read_document(path)
    groups: dict[str, tuple[str, ...]] = {}
    if "checks" in document:
        checks, configuration_info, secrets_info = _from_checks_file(path, document, default_for_s)
        problems = shape_problems({"configuration": configuration_info, "secrets": secrets_info,
                                   "steady-state-hypothesis": {"probes": [c.probe for c in checks]}})
        if problems:  # said in the checks file's words: checks[0].probe, not the hypothesis's probes[0]
            raise CheckInputError(f"{path}: " + _HYPOTHESIS_PLACE.sub(r"checks[\1].probe", problems[0]))
    elif "steady-state-hypothesis" in document or "method" in document:
        checks, configuration_info, secrets_info, groups = _from_experiment(path, document, default_for_s)
    else:
        raise CheckInputError(f"{path} is neither a checks file nor an experiment: {_WHAT}")
    names = [c.name for c in checks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CheckInputError(f"{path}: more than one check is named {', '.join(map(repr, twice))}: each name must "
                              "be unique (it is the check's URL in 'chaosdb serve')")
    # the probes as one hypothesis, named as their checks: what the pack's experiment checks read
    hypothesis = {"steady-state-hypothesis": {"title": "checks",
                                              "probes": [{**c.probe, "name": c.name} for c in checks]}}
    missing = missing_modules(experiment_extras(hypothesis))
    if missing:
        raise MissingExtra(f"the checks of {path}", missing)
    problems = [p for p in (_probe_problem(c) for c in checks) if p]
    if problems:
        raise CheckInputError("; ".join(problems))
    config_vars, secret_vars = _variables(variables, var_files)
    configuration, secrets = _load(path, configuration_info, secrets_info, config_vars, secret_vars)
    checked = CheckSet(str(source), tuple(checks), configuration, secrets, groups)
    problems = [p.replace("activity '", "check '", 1) for p in experiment_problems(hypothesis, configuration, secrets)]
    if problems:
        raise CheckInputError(redact("; ".join(problems), checked.mask()))
    return checked
