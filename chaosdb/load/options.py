"""The load's options as one typed model: what the load control's arguments (or a direct call of
:func:`chaosdb.load.runner.start_load`) say about the load, built and checked once, then handed to the runner.

Each option has one rule (:data:`RULES`, and the rules :func:`chaosdb.core.arguments.checked_signature` gives every
``*_s`` duration); :data:`ARGUMENTS` is the same rules as a :class:`~chaosdb.core.arguments.CheckedSignature`, which
``chaos validate`` and the check before any control starts apply to the control's arguments, and
:meth:`LoadOptions.from_arguments` applies them when the load is built. Either way a bad value is refused with one
sentence naming its key (``users must be >= 1 and <= 10000, got 0``). Values substituted from the configuration
arrive as strings: ``"8"`` is 8 users, ``"true"`` is true. ``null`` for a text option means "not given".
"""

from __future__ import annotations

import difflib
import inspect
import os
from pathlib import Path
from typing import Any, Literal, Mapping, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from chaosdb.core.arguments import (
    MAX_SECONDS,
    CheckedSignature,
    boolean,
    checked_signature,
    choice,
    number,
    value_problems,
)
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.tls import as_bool

__all__ = ["Workload", "Isolation", "LOCUSTFILES", "ETCD_WORKLOADS", "HISTORY_MODELS", "LoadOptions", "RULES", "ARGUMENTS"]

#: the pack's workloads
Workload = Literal["tpcc", "ycsb", "ycsb-etcd", "list-append", "rw-register", "register-etcd"]
#: the workloads whose clients talk to etcd (the DSN is a list of etcd client URLs)
ETCD_WORKLOADS = frozenset({"ycsb-etcd", "register-etcd"})
#: the workloads that record an operation history (:mod:`chaosdb.workloads.histories`) and their model
HISTORY_MODELS = {"list-append": "list-append", "rw-register": "rw-register", "register-etcd": "register"}
#: the transaction isolation levels the Locust users may ask for
Isolation = Literal["default", "read_committed", "repeatable_read", "serializable"]
#: the Locust file of each workload
LOCUSTFILES: dict[str, str] = {"tpcc": str(Path(__file__).with_name("locust_tpcc.py")),
                               "ycsb": str(Path(__file__).with_name("locust_ycsb.py")),
                               "ycsb-etcd": str(Path(__file__).with_name("locust_ycsb.py")),
                               **{w: str(Path(__file__).with_name("locust_history.py")) for w in HISTORY_MODELS}}


class LoadOptions(BaseModel):
    """What the load is: its workload and size, how long it warms up and measures the baseline, where its samples
    go, how it is spread over processes or machines, what of the database is watched beside it. The DSN (``dsn``,
    else the secret ``load_dsn``, ``CHAOSDB_LOAD_DSN``, the embedded cluster) is found when the load starts
    (:func:`chaosdb.load.dsn.resolve_dsn`), with the run's configuration and secrets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workload: Workload = "tpcc"
    records: int = 10000
    keys: int = 0
    key_window_s: float = 0.0
    users: int = 10
    spawn_rate: float = 0.0
    warmup_s: float = 10.0
    baseline_s: float = 30.0
    samples_dir: str = ""
    locustfile: str = ""
    processes: int = 0
    isolation: Isolation = "default"
    wait: float = 0.0
    rate: float = 0.0
    max_run_s: float = 3600.0
    start_timeout_s: float = 60.0
    extra_args: tuple[str, ...] = ()
    dsn: str = ""
    progress_s: float = 5.0
    replace_samples: bool = False
    workers: int = 0
    remote_workers: int = 0
    master_bind_host: str = "127.0.0.1"
    master_port: int = 0
    observe: str = "auto"
    observe_s: float = 0.5

    @classmethod
    def signature(cls) -> inspect.Signature:
        """The options as keyword-only parameters with their types and defaults (what the rules of
        :func:`chaosdb.core.arguments.checked_signature` are chosen by)."""
        return inspect.Signature([inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=field.default,
                                                    annotation=field.annotation)
                                  for name, field in cls.model_fields.items()])

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> LoadOptions:
        """The options *arguments* give (option name -> value, values from the configuration as strings);
        :class:`ChaosDBError` naming every key that is wrong, one sentence each."""
        try:
            return cls.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ChaosDBError("; ".join(dict.fromkeys(_sentence(e, arguments) for e in exc.errors()))) from None

    @property
    def distributed(self) -> bool:
        """Locust's master/worker mode: workers started here or connecting from elsewhere."""
        return self.workers + self.remote_workers > 0

    @property
    def locust_file(self) -> str:
        """The Locust file the load runs: ``locustfile``, else the workload's own."""
        return self.locustfile or LOCUSTFILES[self.workload]

    @field_validator("*", mode="before")
    @classmethod
    def _checked(cls, value: Any, info: ValidationInfo) -> Any:
        """The option's rule (the sentence the check before the run gives), then its value as its type."""
        name = str(info.field_name)
        kind = cls.model_fields[name].annotation
        shape = value_problems(name, value)
        if shape:
            raise ValueError(shape[0])
        rule = ARGUMENTS.checks.get(name)
        if rule is not None:
            try:
                rule(value)
            except ChaosDBError as exc:
                raise ValueError(str(exc)) from None
        if name == "extra_args":
            if value is None:
                return ()
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"extra_args must be a list of strings (Locust's own options), got {value!r}")
            return tuple(value)
        if kind is str:
            if value is None:  # not given: what the empty text means (e.g. dsn: found from the secrets...)
                return ""
            if isinstance(value, os.PathLike):
                return os.fspath(value)
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {value!r}")
            return value
        if kind is bool:
            return as_bool(value, default=False)
        if kind is int:
            return value if isinstance(value, int) else int(float(value))
        if kind is float:
            return float(value)
        return value

    @model_validator(mode="after")
    def _together(self) -> LoadOptions:
        if self.distributed and self.processes:
            raise ValueError("give processes (Locust forks workers on this machine) or workers / remote_workers "
                             "(master and workers, possibly on other machines), not both")
        return self


def _sentence(error: Any, arguments: Mapping[str, Any]) -> str:
    """One pydantic error as the sentence the rules give (they name the key themselves)."""
    key = str(error["loc"][0]) if error.get("loc") else ""
    if error.get("type") == "extra_forbidden":
        known = list(LoadOptions.model_fields)
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown load option '{key}'{hint}; it takes {', '.join(sorted(known))}"
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    if error.get("type") == "value_error" or not key:
        return message
    return f"{key}: {message}, got {arguments.get(key)!r}"


def _together(values: dict[str, Any]) -> None:
    """The whole model over the arguments, for what no single rule sees (processes and workers both given)."""
    LoadOptions.from_arguments({k: v for k, v in values.items() if k in LoadOptions.model_fields})


#: each option's rule, beside the ones every ``*_s`` duration gets (>= 0, at most 30 days)
RULES = {
    "users": number("users", 1, maximum=10_000, integer=True),
    "records": number("records", 1, maximum=100_000_000, integer=True),
    "keys": number("keys", 0, maximum=100_000, integer=True, hint=" (keys in play at a time of a history workload; "
                   "0: its default)"),
    "key_window_s": number("key_window_s", 0, maximum=3600, hint=" (seconds a set of keys of a history workload is "
                           "in play; 0: its default)"),
    "spawn_rate": number("spawn_rate", 0, maximum=10_000),
    "baseline_s": number("baseline_s", 0, maximum=MAX_SECONDS, hint=" (seconds of load measured before the fault)"),
    "processes": number("processes", 0, maximum=256, integer=True),
    "workers": number("workers", 0, maximum=256, integer=True),
    "remote_workers": number("remote_workers", 0, maximum=1024, integer=True),
    "rate": number("rate", 0, maximum=1_000_000),
    "wait": number("wait", 0, maximum=3600),
    "master_port": number("master_port", 0, maximum=65535, integer=True),
    "workload": choice("workload", *get_args(Workload)),
    "observe_s": number("observe_s", 0.1, maximum=60, hint=" (seconds between two questions to the database)"),
    "replace_samples": boolean("replace_samples"),
    "isolation": choice("isolation", *get_args(Isolation)),
    "progress_s": number("progress_s", 0, maximum=3600, hint=" (seconds between two progress lines)"),
}
#: the options' rules as a checked signature: the load control's arguments (its ``CONTROL_ARGUMENTS``)
ARGUMENTS: CheckedSignature = checked_signature(LoadOptions.signature(), "the load control", _together, (), **RULES)
