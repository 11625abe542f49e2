"""Checking an activity's argument values before anything runs.

Chaos Toolkit validates an experiment (``chaos validate``, and ``chaos run`` before it starts) by binding
each Python activity's arguments to the function's signature: that finds missing and unknown arguments,
never a negative count or a misspelt role. Every activity module of this package therefore ends with::

    check_arguments(globals(), target=check_selector, method=choice("switchover", "shutdown"))

which gives each function named in the module's ``__all__`` a :class:`CheckedSignature`. Its ``bind``
also checks the values, with the rules below, and raises :class:`chaoslib.exceptions.InvalidActivity`
listing every problem: so ``chaos validate`` and the validation at the start of ``chaos run`` refuse bad
input before any control or activity runs. A value still holding a ``${variable}`` is checked once it is
known, by :mod:`chaosdb.experiment.control` before anything starts (see :func:`problems_in_call`).

Rules, by argument name, for every activity (a module adds or overrides its own):

* ``count``: a positive integer or ``"all"`` (the targets' rule);
* a name ending in ``_s`` (seconds) with a numeric type: a number >= 0; ``timeout_s``, ``window_s``,
  ``interval_s``, ``poll_s``, ``period_s``, ``quota_s`` and ``grace_s`` must be > 0;
* ``percentile`` in (0, 100]; ``loss_percent`` in (0, 100); other numbers by their own rules below.

A check is a function of one value that raises :class:`ChaosDBError` with the message the action itself
would give; a *combination* check receives every argument (after defaults) as a dict.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import math
import unicodedata
from typing import Any, Callable, Iterable, Mapping

from chaoslib.exceptions import InvalidActivity, InvalidControl

from chaosdb.core.adapters import check_role_count
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import experiment_being_validated, experiment_missing_extra, missing_modules
from chaosdb.core.targets import parse_count
from chaosdb.core.tls import as_bool

__all__ = ["Check", "CheckedSignature", "check_arguments", "choice", "number", "one_of_or_names",
           "problems_in_call", "is_unresolved", "GENERIC_CHECKS", "checked_signature", "MAX_SECONDS", "boolean",
           "value_problems", "control_argument_problems", "with_argument_checks", "duplicate_control_problems",
           "missing_control_modules", "did_you_mean"]

Check = Callable[[Any], None]
Combination = Callable[[dict[str, Any]], None]


def is_unresolved(value: Any) -> bool:
    """A value that still holds a ``${variable}`` (known only once the configuration is loaded)."""
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, Mapping):
        return any(is_unresolved(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(is_unresolved(v) for v in value)
    return False


def _as_number(name: str, value: Any, integer: bool) -> float:
    if isinstance(value, bool) or value is None:
        raise ChaosDBError(f"{name} must be a number, got {value!r}")
    try:
        n = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ChaosDBError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(n):
        raise ChaosDBError(f"{name} must be a finite number, got {value!r}")
    if integer and n != int(n):
        raise ChaosDBError(f"{name} must be a whole number, got {value!r}")
    return n


def value_problems(name: str, value: Any, depth: int = 0) -> list[str]:
    """What no argument of this pack may hold, at any depth of *value*: a number that is not finite (NaN,
    Infinity: JSON parsers accept them, nothing here can use them), a control character in a string (a name
    with a trailing newline or an escape), nesting deeper than any activity reads."""
    if depth > _MAX_DEPTH:
        return [f"{name} is nested more than {_MAX_DEPTH} levels deep"]
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{name} must be a finite number, got {value!r}"]
    if isinstance(value, str):
        bad = sorted({c for c in value if unicodedata.category(c) == "Cc" and c not in _TEXT_CONTROLS})
        if bad:
            return [f"{name} holds control character(s) {', '.join(repr(c) for c in bad)}: {value!r}"]
        return []
    if isinstance(value, Mapping):
        found = []
        for key, item in value.items():
            found += value_problems(f"{name}.{key}", item, depth + 1)
        return found
    if isinstance(value, (list, tuple)):
        found = []
        for i, item in enumerate(value):
            found += value_problems(f"{name}[{i}]", item, depth + 1)
        return found
    return []


#: the deepest an argument's value may nest (role targets and Kubernetes specs are far shallower)
_MAX_DEPTH = 32
#: control characters a free text may hold (names hold none: their own checks refuse every one)
_TEXT_CONTROLS = frozenset("\t\n\r")


def _fmt(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def number(name: str, minimum: float | None = None, *, above: float | None = None, maximum: float | None = None,
           below: float | None = None, integer: bool = False, hint: str = "") -> Check:
    """A number (or its string: configuration values arrive as strings) within the given bounds."""
    def check(value: Any) -> None:
        n = _as_number(name, value, integer)
        bounds = []
        if minimum is not None:
            bounds.append((n >= minimum, f">= {_fmt(minimum)}"))
        if above is not None:
            bounds.append((n > above, f"> {_fmt(above)}"))
        if maximum is not None:
            bounds.append((n <= maximum, f"<= {_fmt(maximum)}"))
        if below is not None:
            bounds.append((n < below, f"< {_fmt(below)}"))
        failed = [text for ok, text in bounds if not ok]
        if failed:
            wanted = " and ".join(text for _, text in bounds)
            raise ChaosDBError(f"{name} must be {wanted}{hint}, got {value!r}")

    return check


def boolean(name: str) -> Check:
    """True or false (or their strings: configuration values arrive as strings)."""
    def check(value: Any) -> None:
        try:
            as_bool(value, default=False)
        except ChaosDBError:
            raise ChaosDBError(f"{name} must be true or false, got {value!r}") from None

    return check


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the option closest to *word*, or ``""`` when none is close."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _did_you_mean(word: str, options: Iterable[str]) -> str:
    return did_you_mean(word.strip().lower(), options)


def choice(name: str, *values: Any) -> Check:
    """One of *values* (strings, or numbers such as an API version)."""
    def check(value: Any) -> None:
        if value not in values:
            raise ChaosDBError(f"{name} must be one of {', '.join(map(str, values))}, got {value!r}"
                               f"{_did_you_mean(str(value), values)}")

    return check


def one_of_or_names(name: str, selectors: Iterable[str], name_rule: Callable[[str], bool],
                    names_hint: str) -> Check:
    """A selector word (``leader``, ...) or node names accepted by *name_rule* (a comma separated string or a
    list), e.g. the local cluster's ``target``."""
    words = tuple(selectors)

    def check(value: Any) -> None:
        if isinstance(value, (list, tuple)):
            parts = [str(v).strip() for v in value]
        elif isinstance(value, str):
            if value.strip().lower() in words:
                return
            parts = [p.strip() for p in value.split(",")]
        else:
            raise ChaosDBError(f"{name} must be a role ({', '.join(words)}) or node names, got {value!r}")
        parts = [p for p in parts if p]
        if not parts:
            raise ChaosDBError(f"{name} is empty: give a role ({', '.join(words)}) or node names")
        bad = [p for p in parts if not name_rule(p)]
        if bad:
            raise ChaosDBError(f"unknown {name} {', '.join(bad)}: selectors are {', '.join(words)} or node "
                               f"names ({names_hint}){_did_you_mean(bad[0], words)}")

    return check


def _count(value: Any) -> None:
    parse_count(value)


#: argument name -> check, for every activity (a module's own checks take precedence)
GENERIC_CHECKS: dict[str, Check] = {
    "count": _count,
    "percentile": number("percentile", above=0, maximum=100),
    "loss_percent": number("loss_percent", above=0, below=100),
}
#: durations (seconds) that must be > 0; every other ``*_s`` number must be >= 0
POSITIVE_DURATIONS = frozenset({"timeout_s", "window_s", "interval_s", "poll_s", "period_s", "quota_s",
                                "grace_s"})
_NUMERIC = (int, float, "int", "float")


#: the longest duration any argument may give: a larger one is a mistake (an epoch, milliseconds), never a plan
MAX_SECONDS = 30 * 24 * 3600


def _generic_check(param: inspect.Parameter) -> Check | None:
    if param.name in GENERIC_CHECKS:
        return GENERIC_CHECKS[param.name]
    if param.name.endswith("_s") and param.annotation in _NUMERIC:
        if param.name in POSITIVE_DURATIONS:
            return number(param.name, above=0, maximum=MAX_SECONDS, hint=" (seconds; at most 30 days)")
        return number(param.name, 0, maximum=MAX_SECONDS, hint=" (seconds; at most 30 days)")
    return None


def checked_signature(func: Callable[..., Any] | inspect.Signature, where: str = "",
                      combination: Combination | None = None, extras: tuple[str, ...] = (),
                      **checks: Check) -> CheckedSignature:
    """*func*'s signature (or *func* itself when it is a signature, e.g. a typed model's fields) with the generic
    rules, overridden by *checks* (argument name -> check), and *combination*; for functions that are not
    activities (a control's arguments: :data:`CONTROL_ARGUMENTS` of its module, checked with the configuration
    substituted before any control starts anything)."""
    plain = func if isinstance(func, inspect.Signature) else inspect.signature(func)
    sig = CheckedSignature(list(plain.parameters.values()), return_annotation=plain.return_annotation)
    rules: dict[str, Check] = {}
    for param in plain.parameters.values():
        rule = checks.get(param.name) or _generic_check(param)
        if rule is not None:
            rules[param.name] = rule
    sig.checks = rules
    sig.combination = combination
    sig.where = where or f"{getattr(func, '__module__', '')}.{getattr(func, '__name__', 'arguments')}"
    sig.extras = tuple(extras)
    return sig


class CheckedSignature(inspect.Signature):
    """A signature whose ``bind`` also checks argument values (see the module's documentation)."""

    checks: dict[str, Check]
    combination: Combination | None
    where: str
    extras: tuple[str, ...] = ()

    def problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """Every problem with these arguments' values (a value holding ``${...}`` is skipped), after the
        extras the activity needs that are not installed. Total: a check that breaks on a value it did not expect
        reports that value as a problem, never lets it through."""
        found = []
        missing = missing_modules(self.extras)
        if missing:
            found.append(str(experiment_missing_extra("this activity", missing)))
        given = {k: v for k, v in arguments.items() if k not in ("configuration", "secrets")}
        for name, value in given.items():
            if is_unresolved(value):
                continue
            shape = value_problems(name, value)
            if shape:
                found += shape
                continue
            check = getattr(self, "checks", {}).get(name)
            if check is None:
                continue
            if value is None and self.parameters.get(name) is not None \
                    and self.parameters[name].default is None:
                continue  # an optional argument left out explicitly
            found += _run_check(name, check, value)
        combination = getattr(self, "combination", None)
        # a combination sees the values once all are known, or at once when it checks what is known (``partial``)
        if combination is not None and not found and (not is_unresolved(given) or getattr(combination, "partial",
                                                                                          False)):
            values = {name: p.default for name, p in self.parameters.items()
                      if p.default is not inspect.Parameter.empty}
            values.update(given)
            found += _run_check("the arguments together", combination, values)
        if not found and "target" in given and "count" in given and not is_unresolved(given):
            found += _run_check("count", lambda c: check_role_count(given["target"], c), given["count"])
        return found

    def bind(self, *args: Any, **kwargs: Any) -> inspect.BoundArguments:
        """Bind the arguments as :class:`inspect.Signature` does, then refuse values that break the activity's rules."""
        bound = super().bind(*args, **kwargs)
        found = self.problems(bound.arguments)
        if found:
            raise InvalidActivity(f"{getattr(self, 'where', 'activity')}: " + "; ".join(found))
        return bound


def _run_check(name: str, check: Callable[[Any], None], value: Any) -> list[str]:
    """The problem *check* finds in *value*: its own message, or, when the check itself breaks on a value it did not
    expect, that the value could not be checked (a refusal, never a value let through)."""
    try:
        check(value)
    except ChaosDBError as exc:
        return [str(exc)]
    except Exception as exc:  # noqa: BLE001 - any break in a check refuses the value it could not judge
        return [f"{name} could not be checked ({type(exc).__name__}: {exc}): got {_short_repr(value)}"]
    return []


def _short_repr(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def check_arguments(namespace: dict[str, Any], combinations: Mapping[str, Combination] | None = None,
                    functions: Mapping[str, Mapping[str, Check]] | None = None, *,
                    extras: tuple[str, ...] | Mapping[str, tuple[str, ...]] = (), **checks: Check) -> None:
    """Give every function in the module's ``__all__`` a :class:`CheckedSignature`: the generic rules,
    overridden by *checks* (argument name -> check) where a function has that argument, overridden in turn
    by *functions* (function name -> {argument name -> check}); and the function's entry of *combinations*
    (function name -> check of all its arguments). *extras*: the optional extras the module's activities need
    (:mod:`chaosdb.core.extras`), or function name -> its extras; one that is not installed is the first problem
    ``chaos validate`` reports."""
    module = namespace.get("__name__", "")
    for fname in namespace.get("__all__", []):
        func = namespace.get(fname)
        if not inspect.isfunction(func):
            continue
        func.__signature__ = checked_signature(  # type: ignore[attr-defined]
            func, f"{module}.{fname}", (combinations or {}).get(fname),
            tuple(extras.get(fname, ()) if isinstance(extras, Mapping) else extras),
            **{**checks, **(functions or {}).get(fname, {})})


def problems_in_call(func: Callable[..., Any], arguments: Mapping[str, Any]) -> list[str]:
    """The problems :class:`CheckedSignature` finds in *arguments* for *func* (none for other functions);
    missing or unknown arguments are chaoslib's to report."""
    sig = inspect.signature(func)
    if not isinstance(sig, CheckedSignature):
        return []
    return sig.problems(arguments)


#: what Chaos Toolkit hands every control hook itself: never an argument of the experiment's
_HOOK_PARAMETERS = frozenset({"context", "state", "configuration", "secrets", "experiment", "event_registry",
                              "settings", "extensions", "kwargs"})


def control_argument_problems(module: Any, arguments: dict[str, Any]) -> list[str]:
    """The problems with the arguments of a control of *module*: a name none of its hooks takes, and the rules of
    its ``CONTROL_ARGUMENTS`` (:class:`chaosdb.core.arguments.CheckedSignature`)."""
    signature = getattr(module, "CONTROL_ARGUMENTS", None)
    known = set(signature.parameters) if signature is not None else set()
    for name in dir(module):
        hook = getattr(module, name)
        if name.startswith(("before_", "after_", "configure_")) and name.endswith("_control") and callable(hook):
            try:
                known |= set(inspect.signature(hook).parameters)
            except (TypeError, ValueError):
                continue
    known -= _HOOK_PARAMETERS
    problems = [f"unknown argument '{k}'{_did_you_mean(str(k), sorted(known))}; it takes "
                f"{', '.join(sorted(known)) or 'no argument'}" for k in arguments if k not in known]
    if signature is not None:
        problems += signature.problems({k: v for k, v in arguments.items() if k in signature.parameters})
    return problems


def duplicate_control_problems(controls: Any) -> list[str]:
    """A control named twice, or one of this pack's control modules declared under two names."""
    if not isinstance(controls, list):
        return []
    problems, names, modules = [], set(), {}  # type: ignore[var-annotated]
    for control in controls:
        if not isinstance(control, dict):
            continue
        name = control.get("name")
        module = (control.get("provider") or {}).get("module") if isinstance(control.get("provider"), dict) else None
        if isinstance(name, str) and name in names:
            problems.append(f"control '{name}': declared twice (each declaration runs its hooks: keep one)")
        elif isinstance(module, str) and module.startswith("chaosdb.") and module in modules:
            problems.append(f"control '{name}': the module {module} is already declared as control "
                            f"'{modules[module]}' (its hooks would run twice: keep one)")
        if isinstance(name, str):
            names.add(name)
        if isinstance(module, str):
            modules.setdefault(module, name)
    return problems


def _module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # its parent package does not exist either
        return False


def missing_control_modules(controls: Any) -> list[str]:
    """A control naming a module of this pack that does not exist (Chaos Toolkit only warns and runs without it)."""
    problems = []
    for control in controls if isinstance(controls, list) else []:
        provider = control.get("provider") if isinstance(control, dict) else None
        module = provider.get("module") if isinstance(provider, dict) else None
        if isinstance(module, str) and module.startswith("chaosdb.") and not _module_exists(module):
            problems.append(f"control '{control.get('name', '?')}': there is no module {module} in this pack"
                            f"{_control_module_hint(module)}: Chaos Toolkit would skip the control silently")
    return problems


def _control_module_hint(module: str) -> str:
    """" (did you mean 'chaosdb.x.control'?)" for a misspelt control module of this pack, or ""."""
    import difflib  # noqa: PLC0415 - only for a misspelt name

    from chaosdb.core.plugins import modules_named  # noqa: PLC0415 - only for a misspelt name

    close = difflib.get_close_matches(module, list(modules_named("control")), n=1, cutoff=0.8)
    return f" (did you mean {close[0]}?)" if close else ""


def with_argument_checks(validate: Callable[[dict[str, Any]], None], module: str) -> Callable[[dict[str, Any]], None]:
    """A control module's ``validate_control`` that also refuses its literal arguments when they cannot work
    (unknown names, wrong shapes, ``CONTROL_ARGUMENTS``' rules; values holding ``${...}`` wait for the run), so
    ``chaos validate`` says it before any run."""

    def validate_control(control: dict[str, Any]) -> None:
        validate(control)
        provider = control.get("provider") if isinstance(control, dict) else None
        arguments = provider.get("arguments") if isinstance(provider, dict) else None
        label = f"control '{control.get('name', '?') if isinstance(control, dict) else '?'}'"
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidControl(f"{label}: its arguments must be an object of name: value, not "
                                 f"{type(arguments).__name__}")
        problems = [f"{label} ({module}): {p}" for p in
                    control_argument_problems(importlib.import_module(module), arguments or {})]
        experiment = experiment_being_validated()
        if experiment is not None:  # what only the whole experiment shows: a control twice, a misspelt one
            problems += duplicate_control_problems(experiment.get("controls"))
            problems += missing_control_modules(experiment.get("controls"))
        if problems:
            raise InvalidControl("; ".join(problems))

    validate_control.__doc__ = validate.__doc__
    return validate_control
