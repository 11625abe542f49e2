"""The game-day suite file's shape as a pydantic model: the keys, their types, ranges and defaults in one place,
the checks a suite gets before anything runs, and the JSON Schema editors use to complete and check a suite
(``chaosdb gameday schema``).

What a schema cannot say is checked after the model by :func:`chaosdb.gameday.suite.load_suite`: experiment
files exist, parameter paths name something in their experiment, sweeps expand, scenario names are unique, the
address base is a usable loopback address. Every refusal names where (``scenarios[0] (kill).upb.F``) and how to fix
it.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal, Optional, Union

from annotated_types import Ge, Le
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictStr, ValidationError

__all__ = ["SuiteSpec", "ScenarioSpec", "ClusterSpec", "BetweenSpec", "PrepareSpec", "CycleSpec", "SweepSpec",
           "UpbSpec", "NAME_PATTERN", "parse_suite", "suite_json_schema", "error_text"]

#: scenario and suite names: letters, digits, '-', '_' (they become folder and run names)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$"
Name = Annotated[StrictStr, Field(pattern=NAME_PATTERN, description="letters, digits, '-' and '_'")]


def _within(lo: float, hi: float, integer: bool = False) -> Any:
    """The check of a number within lo..hi (a whole one with *integer*): true/false and strings are refused, not
    converted."""

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number, got {value!r}")
        if integer and int(value) != value:
            raise ValueError(f"must be a whole number, got {value!r}")
        if not lo <= value <= hi:
            raise ValueError(f"must be within {lo:g}..{hi:g}, got {value!r}")
        return int(value) if integer else float(value)

    return BeforeValidator(check)


Seconds = Annotated[float, Ge(0), Le(86400), _within(0, 86400)]
Timeout = Annotated[float, Ge(10), Le(86400), _within(10, 86400)]
Repetitions = Annotated[int, Ge(1), Le(1000), _within(1, 1000, integer=True)]
Members = Annotated[int, Ge(0), Le(8), _within(0, 8, integer=True)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ClusterSpec(_Spec):
    """The embedded cluster every run uses."""

    name: Union[Name, Literal[""]] = Field("", description="-> configuration chaosdb_cluster of every run")
    address_base: StrictStr = Field("", description="first loopback address of the nodes (-> address_base)")
    keep_between_runs: StrictBool = Field(True, description="one cluster for the whole suite (the between-run "
                                                            "steps need it); false: each experiment's control decides")
    down_after: StrictBool = Field(True, description="take it down when the suite ends")
    purge: StrictBool = Field(True, description="with down_after: delete its data too")


class BetweenSpec(_Spec):
    """What happens before every run (not given: the suite's value, else the default)."""

    restore: Optional[StrictBool] = Field(None, description="restart stopped nodes, resume hung ones, remove "
                                                            "fault residue, re-copy a replica that cannot catch up "
                                                            "(default true)")
    wait_healthy_s: Optional[Seconds] = Field(None, description="wait until every node streams (0: skip; "
                                                                "default 120)")
    reset_tpcc: Optional[StrictBool] = Field(None, description="reload TPC-C to its freshly loaded state "
                                                               "(default false)")
    cooldown_s: Optional[Seconds] = Field(None, description="then wait, not before the first run (default 0)")

    def given(self) -> dict[str, Any]:
        """The keys the file sets."""
        return self.model_dump(exclude_none=True)


class PrepareSpec(_Spec):
    """Cluster settings before each run of a scenario."""

    synchronous_standbys: Optional[Members] = Field(None, description="Patroni's synchronous standbys (UPB's K)")
    leader: Optional[Annotated[StrictStr, Field(pattern=r"^node[1-9]$")]] = Field(
        None, description="switch the primary to this node first")


class CycleSpec(_Spec):
    """Run i uses values[i % len(values)]."""

    parameter: StrictStr = Field(description="activity:NAME.ARG, control:NAME.ARG, configuration:KEY, "
                                             "cluster:leader or cluster:synchronous_standbys")
    values: list[Any] = Field(min_length=1)


class SweepSpec(_Spec):
    """Every value times every repetition: ``values``, or ``from``..``to`` by ``step`` (exact decimal steps)."""

    parameter: StrictStr
    values: Optional[list[Any]] = None
    from_: Optional[Union[int, float]] = Field(None, alias="from")
    to: Optional[Union[int, float]] = None
    step: Optional[Union[int, float]] = None

    def given(self) -> dict[str, Any]:
        """The keys the file sets, under their names in the file."""
        return self.model_dump(by_alias=True, exclude_none=True)


class UpbSpec(_Spec):
    """This scenario measures the UPB's T[K][F]."""

    K: Members = Field(description="tolerated failures (synchronous standbys)")
    F: Members = Field(description="failed nodes (at most K)")


class ScenarioSpec(_Spec):
    """One experiment, repeated, with its parameters."""

    name: Name
    description: StrictStr = ""
    experiment: StrictStr = Field(min_length=1, description="a Chaos Toolkit experiment file, relative to the suite")
    repetitions: Optional[Repetitions] = Field(None, description="default: the suite's")
    set: dict[str, Any] = Field(default_factory=dict, description="parameter path -> fixed value")
    cycle: Optional[CycleSpec] = None
    sweep: Optional[SweepSpec] = None
    prepare: PrepareSpec = Field(default_factory=lambda: PrepareSpec())
    upb: Optional[UpbSpec] = None
    between: BetweenSpec = Field(default_factory=lambda: BetweenSpec())
    timeout_s: Optional[Timeout] = Field(None, description="default: the suite's")


class SuiteSpec(_Spec):
    """A game-day suite: what to run, how often, with which parameters, what to do between runs."""

    name: Name
    description: StrictStr = ""
    cluster: ClusterSpec = Field(default_factory=lambda: ClusterSpec())
    configuration: dict[str, Any] = Field(default_factory=dict, description="configuration values for every run")
    repetitions: Repetitions = 1
    order: Literal["sequential", "interleaved"] = Field("sequential", description="interleaved: r1 of every "
                                                                                 "scenario, then r2, ...")
    between: BetweenSpec = Field(default_factory=lambda: BetweenSpec())
    scenarios: list[ScenarioSpec] = Field(min_length=1)
    timeout_s: Timeout = 1800.0


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """``("scenarios", 0, "upb", "F")`` -> ``scenarios[0] (kill).upb.F`` (the scenario's name when it has one)."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str) and out.startswith("scenarios"):
                out += f" ({node['name']})"
        else:
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _model_at(loc: tuple[Any, ...]) -> Optional[type[BaseModel]]:
    """The model whose keys *loc* names (for a did-you-mean on an unknown key)."""
    model: Any = SuiteSpec
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return None
        model = next((a for a in getattr(field.annotation, "__args__", ()) if isinstance(a, type)
                      and issubclass(a, BaseModel)), field.annotation)
        if getattr(model, "__origin__", None) is list:
            model = model.__args__[0]
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def error_text(exc: ValidationError, data: Any) -> str:
    """The first problem of *exc* as a sentence that names where it is and what is allowed."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if p not in ("function-after", "function-before", "int", "float", "str",
                                                      "literal['']") and not str(p).startswith("constrained-str"))
    where, kind, given = _where(data, loc), err["type"], err.get("input")
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = _keys(model) if model else []
        near = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else f" (allowed: {', '.join(allowed)})"
        return f"{where}: unknown key{hint}"
    if kind == "missing":
        return f"{where}: required"
    if kind in ("model_type", "dict_type"):
        return f"{where}: must be a mapping, got {type(given).__name__}"
    if kind == "bool_type":
        return f"{where}: must be true or false, got {given!r}"
    if kind == "string_type":
        return f"{where}: must be a string, got {given!r}"
    if kind == "string_pattern_mismatch":
        if loc and loc[-1] == "leader":
            return f"{where}: must be a node name like node1, got {given!r}"
        return f"{where}: letters, digits, '-' and '_' (got {given!r})"
    if kind in ("list_type", "too_short"):
        return f"{where}: must be a non-empty list"
    if kind == "value_error":
        return f"{where}: {str(err['msg']).removeprefix('Value error, ')}"
    return f"{where}: {err['msg']} (got {given!r})"


def parse_suite(data: Any) -> SuiteSpec:
    """*data* (a suite file's contents) as a :class:`SuiteSpec`; :class:`ValueError` with :func:`error_text`'s
    sentence when it does not fit."""
    try:
        return SuiteSpec.model_validate(data)
    except ValidationError as exc:
        raise ValueError(error_text(exc, data)) from None


def suite_json_schema() -> dict[str, Any]:
    """The JSON Schema of a suite file (draft 2020-12), for editors and other tools."""
    schema = SuiteSpec.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
            "title": "chaostoolkit-db game-day suite"}
