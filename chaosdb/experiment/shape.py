"""The shape of a Chaos Toolkit experiment as one typed model: where Chaos Toolkit needs an object, a list, a string,
it gets one, at every depth its loader and runner read.

Chaos Toolkit (chaoslib 1.44) reads an experiment without checking the types of most of what it reads: a secrets
scope given as a string, an activity's ``module`` given as a number, a control's ``provider`` given as a string, a
``pauses`` list, an environment reference without its ``key`` each end ``chaos validate`` or ``chaos run`` in a
Python traceback. :func:`shape_problems` checks the parsed experiment against the model below and says each problem
in one sentence (``'method[0].provider.module' must be a string, not a number``). Keys the model does not name are
left to Chaos Toolkit (extensions of the format stay possible); what it accepts, the model accepts.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

__all__ = ["Experiment", "shape_problems", "kind_of"]

_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
          bool: "true or false", type(None): "null"}


def kind_of(value: Any) -> str:
    """The JSON kind of *value* in words (``an object``, ``a list``, ``a string``...)."""
    return _NAMES.get(type(value), type(value).__name__)


def _reference(value: Any) -> Any:
    """A value that is an object with ``type: env`` (or ``vault``) must name its ``key`` as a string."""
    if isinstance(value, dict) and value.get("type") in ("env", "vault"):
        if "key" not in value and value.get("type") == "env":
            raise ValueError("is an environment reference without its 'key' (the variable's name)")
        if "key" in value and not isinstance(value["key"], str):
            raise ValueError(f"has a 'key' that must be a string, not {kind_of(value['key'])}")
    return value


def _number_or_text(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"must be a number of seconds (or a ${{variable}}), not {kind_of(value)}")
    return value


_Open = ConfigDict(extra="allow")
Number = Union[StrictInt, StrictFloat]
Entry = Annotated[Any, AfterValidator(_reference)]
Seconds = Annotated[Any, AfterValidator(_number_or_text)]


class Provider(BaseModel):
    """An activity's provider: ``python`` (module, func, arguments), ``http`` (url...) or ``process`` (path...)."""

    model_config = _Open
    type: StrictStr
    module: StrictStr | None = None
    func: StrictStr | None = None
    arguments: Union[dict[str, Any], StrictStr, list[Any], None] = None
    url: StrictStr | None = None
    method: StrictStr | None = None
    headers: dict[str, Any] | None = None
    path: StrictStr | None = None
    timeout: Union[Number, list[Number], None] = None
    secrets: Union[list[StrictStr], StrictStr, None] = None


class ControlProvider(BaseModel):
    """A control's provider: a Python module and its arguments."""

    model_config = _Open
    type: StrictStr
    module: StrictStr | None = None
    arguments: dict[str, Any] | None = None


class Control(BaseModel):
    """A control: a name and a provider (or a ``ref`` to a control of the experiment)."""

    model_config = _Open
    name: StrictStr | None = None
    provider: ControlProvider | None = None
    ref: StrictStr | None = None
    scope: StrictStr | None = None
    automatic: StrictBool | None = None


class Pauses(BaseModel):
    """Seconds to pause before and after an activity."""

    model_config = _Open
    before: Seconds = None
    after: Seconds = None


class Activity(BaseModel):
    """A probe or an action (or a ``ref`` to one declared elsewhere in the experiment)."""

    model_config = _Open
    type: Any = None
    name: Any = None
    ref: Any = None
    provider: Provider | None = None
    pauses: Pauses | None = None
    controls: list[Control] | None = None


class Hypothesis(BaseModel):
    """The steady-state hypothesis: a title and its probes."""

    model_config = _Open
    probes: list[Activity] | None = None


class Extension(BaseModel):
    """An entry of the experiment's ``extensions``."""

    model_config = _Open
    name: StrictStr | None = None


class Experiment(BaseModel):
    """A whole experiment, as far as Chaos Toolkit reads it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    title: StrictStr | None = None
    description: StrictStr | None = None
    tags: list[Any] | None = None
    contributions: dict[str, Any] | None = None
    configuration: dict[str, Entry] | None = None
    secrets: dict[str, dict[str, Entry]] | None = None
    extensions: list[Extension] | None = None
    controls: list[Control] | None = None
    hypothesis: Hypothesis | None = Field(None, alias="steady-state-hypothesis")
    method: list[Activity] | None = None
    rollbacks: list[Activity] | None = None


_WANTED = {"dict_type": "an object", "model_type": "an object", "model_attributes_type": "an object",
           "list_type": "a list", "string_type": "a string", "bool_type": "true or false", "int_type": "a number",
           "float_type": "a number"}


def shape_problems(experiment: Any) -> list[str]:
    """One sentence per place where the parsed experiment has a value of a kind Chaos Toolkit cannot use."""
    if not isinstance(experiment, dict):
        return [f"the file holds {kind_of(experiment)}; an experiment is one object with a title and a method"]
    try:
        Experiment.model_validate(experiment)
    except ValidationError as exc:
        return _sentences(experiment, exc)
    return _python_arguments(experiment)


def _sentences(experiment: dict[str, Any], exc: ValidationError) -> list[str]:
    by_place: dict[str, list[Any]] = {}
    for error in exc.errors():
        loc = [p for p in error.get("loc", ()) if not _is_tag(p)]
        by_place.setdefault(_place(loc), []).append((loc, error))
    out = []
    for place, errors in by_place.items():
        loc, error = errors[0]
        value = _at(experiment, loc)
        if error.get("type") == "value_error":
            out.append(f"'{place}' {str(error.get('msg', '')).removeprefix('Value error, ')}")
            continue
        wanted = sorted({_WANTED.get(e.get("type"), "") for _, e in errors} - {""})
        if loc and isinstance(loc[-1], int) and "an object" in wanted and len(loc) >= 2 \
                and loc[-2] in ("method", "rollbacks", "probes"):
            out.append(f"'{place}' must be an activity object, not {kind_of(value)}")
        elif wanted:
            out.append(f"'{place}' must be {' or '.join(wanted)}, not {kind_of(value)}")
        else:
            out.append(f"'{place}' {error.get('msg', 'is not valid')}")
    return out


def _python_arguments(experiment: dict[str, Any]) -> list[str]:
    """A Python activity's ``arguments`` must be an object (a process activity's may be a string or a list)."""
    places: list[tuple[str, Any]] = []
    hypothesis = experiment.get("steady-state-hypothesis")
    if isinstance(hypothesis, dict):
        places += [(f"steady-state-hypothesis.probes[{i}]", a) for i, a in enumerate(hypothesis.get("probes") or [])]
    for key in ("method", "rollbacks"):
        places += [(f"{key}[{i}]", a) for i, a in enumerate(experiment.get(key) or [])]
    out = []
    for where, activity in places:
        provider = activity.get("provider") if isinstance(activity, dict) else None
        arguments = provider.get("arguments") if isinstance(provider, dict) else None
        if provider and provider.get("type") == "python" and arguments is not None and not isinstance(arguments, dict):
            label = f"'{where}'" + (f" ('{activity['name']}')" if isinstance(activity.get("name"), str) else "")
            out.append(f"the arguments of {label} must be an object of name: value, not {kind_of(arguments)}")
    return out


def _is_tag(part: Any) -> bool:
    """pydantic names the member of a union it tried (``str``, ``list[...]``, ``function-after[...]``)."""
    return isinstance(part, str) and (part in ("str", "int", "float", "bool", "none") or "[" in part
                                      or part.startswith(("function-", "nullable", "union")) or part in
                                      ("Provider", "ControlProvider", "Control", "Pauses", "Activity", "Hypothesis",
                                       "Extension"))


def _place(loc: list[Any]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the experiment"


def _at(document: Any, loc: list[Any]) -> Any:
    for part in loc:
        try:
            document = document[part]
        except (KeyError, IndexError, TypeError):
            return None
    return document
