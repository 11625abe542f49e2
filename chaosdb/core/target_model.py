"""The typed model of a role target: every key a role target may carry, with its type, checked at any depth before
anything asks a database.

A role target is ``{"role": "<adapter>-<role>", ...}``. Keys every role target may carry are :data:`COMMON_KEYS`
(``namespace`` for the Kubernetes engines, ``components`` for the host engine); an adapter lists its own in
``DatabaseAdapter.target_keys`` (name -> type, e.g. ``{"key": str, "api_version": int}``). For an adapter that lists
its keys, any other key is refused (a misspelt ``nmaes`` never passes silently); one that lists none (a plug-in
written before the keys were declared) may carry other keys, whose values are still checked for shape (finite
numbers, no control characters). Names (strings) never hold a control character, numbers are finite.
"""

from __future__ import annotations

import difflib
import functools
import unicodedata
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, create_model

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import check_cluster_name

__all__ = ["Name", "ClusterName", "COMMON_KEYS", "target_model_problems", "check_target_model"]


def _no_controls(value: str) -> str:
    bad = sorted({c for c in value if unicodedata.category(c) in ("Cc", "Cf")})
    if bad:
        raise ValueError(f"holds control character(s) {', '.join(repr(c) for c in bad)}")
    if value != value.strip():
        raise ValueError("starts or ends with white space")
    return value


#: a name in a target (a node, a cluster, a pod, a key): text without control characters or surrounding spaces
Name = Annotated[str, AfterValidator(_no_controls)]
def _cluster_name(value: str) -> str:
    try:
        return check_cluster_name(value)
    except ChaosDBError as exc:
        raise ValueError(str(exc)) from None


#: a local cluster's name (letters, digits, ``-``, ``_``; never a path)
ClusterName = Annotated[str, AfterValidator(_cluster_name)]
#: keys every role target may carry, whatever its database
COMMON_KEYS: dict[str, Any] = {
    "role": Name,
    "namespace": Name,  # the Kubernetes engines: where the database's pods run
    "components": Union[Name, list[Name]],  # the host engine: which of a node's processes a fault takes
}


@functools.cache
def _model(adapter_name: str, keys: tuple[tuple[str, Any], ...] | None) -> type[BaseModel]:
    fields: dict[str, Any] = {k: (Union[t, None], None) for k, t in COMMON_KEYS.items()}
    for key, kind in keys or ():
        fields[key] = (Union[kind, None], None)
    config = ConfigDict(extra="forbid" if keys is not None else "allow", allow_inf_nan=False, strict=False)
    return create_model(f"{adapter_name}_target", __config__=config, **fields)


def target_model_problems(adapter_name: str, role: str, keys: dict[str, Any] | None,
                          target: dict[str, Any]) -> list[str]:
    """What is wrong with *target*'s keys and their types for the role ``<adapter_name>-<role>`` (*keys*: the
    adapter's own keys and types, or None when it lists none); one sentence per key, empty when it fits."""
    frozen = tuple(sorted(keys.items())) if keys is not None else None
    model = _model(adapter_name, frozen)
    try:
        model.model_validate(target)
    except ValidationError as exc:
        kinds = {**COMMON_KEYS, **(keys or {})}
        by_key: dict[str, list[Any]] = {}
        for error in exc.errors():
            by_key.setdefault(str(error.get("loc", ("?",))[0]), []).append(error)
        return [_sentence(f"{adapter_name}-{role}", key, errors, kinds, target) for key, errors in by_key.items()]
    except Exception as exc:  # noqa: BLE001 - a target the model cannot even read is refused, never let through
        return [f"target {target!r} could not be checked ({type(exc).__name__}: {exc})"]
    return []


def _sentence(role: str, key: str, errors: list[Any], kinds: dict[str, Any], target: dict[str, Any]) -> str:
    if errors[0].get("type") == "extra_forbidden":
        allowed = sorted(kinds)
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"target key '{key}' is not one the role {role} takes{hint}; it takes {', '.join(allowed)}"
    value = target.get(key)
    reasons = [str(e.get("msg", "")).removeprefix("Value error, ") for e in errors if e.get("type") == "value_error"]
    if reasons:  # a name with a control character, a cluster name that is a path: the rule says it best
        return f"target key '{key}' of {role}: {reasons[0][0].lower() + reasons[0][1:]} (got {value!r})"
    return f"target key '{key}' of {role} must be {describe(kinds.get(key))}, got {value!r}"


def describe(kind: Any) -> str:
    """A type of :data:`COMMON_KEYS` or an adapter's ``target_keys`` in words (``"a name or a list of names"``)."""
    if kind is Name or kind is ClusterName or kind is str:
        return "a name" if kind is not ClusterName else "a cluster name"
    if kind is int:
        return "a whole number"
    if kind is float:
        return "a finite number"
    if kind is bool:
        return "true or false"
    origin, args = get_origin(kind), get_args(kind)
    if origin is Union:
        return " or ".join(describe(a) for a in args if a is not type(None))
    if origin is list:
        inner = describe(args[0]) if args else "values"
        return f"a list of {inner.removeprefix('a ').removeprefix('an ')}s" if inner.startswith(("a ", "an ")) \
            and " or " not in inner else f"a list (each {inner})"
    return "a value of the right type"


def check_target_model(adapter_name: str, role: str, keys: dict[str, Any] | None, target: dict[str, Any]) -> None:
    """Raise :class:`ChaosDBError` naming every problem :func:`target_model_problems` finds."""
    problems = target_model_problems(adapter_name, role, keys, target)
    if problems:
        raise ChaosDBError("; ".join(dict.fromkeys(problems)))
