"""Game-day suites: what to run, how often, with which parameters, and what to do between runs.

A suite is a YAML or JSON file::

    name: thesis-node-failure-levels          # letters, digits, '-', '_'
    description: three node-failure levels, repeated, the primary on each node in turn
    cluster:                                   # the embedded cluster every run uses (optional)
      name: gameday                            # -> configuration chaosdb_cluster of every run
      address_base: 127.0.0.41                 # -> configuration address_base
      keep_between_runs: true                  # one cluster for the whole suite (faster, and the
                                               #   between-run steps below need it); false: each
                                               #   experiment's own control decides
      down_after: true                         # take it down when the suite ends (purge: delete data)
      purge: true
    configuration: {baseline_s: 20}            # configuration values for every run
    repetitions: 3                             # default for every scenario
    order: sequential                          # or interleaved: r1 of every scenario, then r2, ...
    between:                                   # before every run, in this order
      restore: true                            #   restart stopped nodes, resume hung ones, remove
                                               #   local fault residue, copy again from the leader a
                                               #   replica that cannot catch up (its WAL removed)
      wait_healthy_s: 120                      #   every node streams with a small lag (0: skip)
      reset_tpcc: false                        #   reload TPC-C to its freshly loaded state
      cooldown_s: 10                           #   then wait (not before the first run)
    scenarios:
      - name: level-1-process-kill
        experiment: ../thesis-1-process-kill.json   # relative to the suite file
        repetitions: 3
        set:                                   # fixed parameter values
          activity:kill-the-primary-postgres-process.target: leader
        cycle:                                 # run i uses values[i % len(values)]
          parameter: cluster:leader            #   (cluster:leader = switch the primary to it first)
          values: [node1, node2, node3]
        sweep:                                 # every value x every repetition
          parameter: activity:limit-the-leader-cpu-to-5pct.quota_s
          from: 0.05
          to: 0.2
          step: 0.01                           # or values: [...]
        prepare: {synchronous_standbys: 1}     # cluster settings before each of its runs
        upb: {K: 1, F: 1}                      # this scenario measures T[K][F] (UPB)
        between: {cooldown_s: 0}               # overrides of the suite's between-run steps

Parameters name where a value goes in the experiment:

* ``configuration:KEY``           the experiment's configuration value ``KEY``;
* ``activity:NAME.ARG``            argument ``ARG`` of every activity (method, rollbacks, hypothesis)
  named ``NAME``; ``activity:NAME.pauses.after`` / ``.pauses.before`` its pauses;
* ``control:NAME.ARG``             argument ``ARG`` of the control named ``NAME``;
* ``cluster:leader``               not in the experiment: the runner switches the embedded
  cluster's primary to this node before the run (cycling which machine leads);
* ``cluster:synchronous_standbys`` not in the experiment: Patroni's synchronous standbys (UPB's K).

Everything is checked before anything runs: unknown keys, types, ranges (the model in
:mod:`chaosdb.gameday.suite_schema`, whose JSON Schema ``chaosdb gameday schema`` prints for editors), experiment
files, every parameter path against its experiment, and each run's experiment with Chaos Toolkit's own validation.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ChaosException
from chaoslib.experiment import ensure_experiment_is_valid

from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.layout import parse_ipv4
from chaosdb.gameday.suite_schema import BetweenSpec, PrepareSpec, parse_suite

__all__ = ["Suite", "Scenario", "PlannedRun", "load_suite", "plan_runs", "apply_parameters", "SuiteError",
           "sweep_values", "BETWEEN_DEFAULTS"]

BETWEEN_DEFAULTS: dict[str, Any] = {"restore": True, "wait_healthy_s": 120.0, "reset_tpcc": False,
                                    "cooldown_s": 0.0}
#: the cluster parameters a run can set (``cluster:leader``), the keys of a scenario's ``prepare``
PREPARE_KEYS = tuple(PrepareSpec.model_fields)
MAX_RUNS = 5000


class SuiteError(ChaosDBError):
    """The suite file is wrong; the message says where and how to fix it."""


@dataclass
class Scenario:
    name: str
    experiment: Path
    repetitions: int
    set: dict[str, Any]
    cycle: dict[str, Any] | None
    sweep: dict[str, Any] | None
    prepare: dict[str, Any]
    upb: dict[str, int] | None
    between: dict[str, Any]
    description: str = ""
    timeout_s: float = 1800.0


@dataclass
class Suite:
    name: str
    path: Path
    description: str
    cluster: dict[str, Any]
    configuration: dict[str, Any]
    order: str
    scenarios: list[Scenario]
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlannedRun:
    id: str
    scenario: str
    repetition: int
    parameters: dict[str, Any]  # every path -> value this run sets (set + cycle + sweep)
    sweep: dict[str, Any] | None  # {"parameter": p, "value": v}
    upb: dict[str, int] | None
    experiment: dict[str, Any]  # the exact experiment that runs (parameters applied)
    source: str  # the experiment file it came from
    prepare: dict[str, Any]
    between: dict[str, Any]
    timeout_s: float

    @property
    def spec_hash(self) -> str:
        """A short hash of what defines the run (experiment, preparation, parameters): a resumed game day reruns a run
        whose definition changed."""
        body = json.dumps({"experiment": self.experiment, "prepare": self.prepare, "parameters": self.parameters},
                          sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        """The run as the manifest and ``gameday validate`` show it."""
        return {"id": self.id, "scenario": self.scenario, "repetition": self.repetition,
                "parameters": self.parameters, "sweep": self.sweep, "upb": self.upb, "experiment": self.source,
                "prepare": self.prepare, "spec": self.spec_hash}


def _where(ctx: str, key: str) -> str:
    return f"{ctx}.{key}" if ctx else key


def _num(value: Any, ctx: str, lo: float | None = None, hi: float | None = None, integer: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SuiteError(f"{ctx}: must be a number, got {value!r}")
    if integer and int(value) != value:
        raise SuiteError(f"{ctx}: must be a whole number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise SuiteError(f"{ctx}: must be within {lo}..{hi}, got {value!r}")
    return int(value) if integer else float(value)


def sweep_values(sweep: dict[str, Any], ctx: str = "sweep") -> list[Any]:
    """The values of a sweep: ``values`` as given, or from..to by step (decimal steps stay exact:
    0.05..0.2 step 0.01 gives 0.05, 0.06, ..., 0.2)."""
    if "values" in sweep:
        if any(k in sweep for k in ("from", "to", "step")):
            raise SuiteError(f"{ctx}: give either values or from/to/step, not both")
        vals = sweep["values"]
        if not isinstance(vals, list) or not vals:
            raise SuiteError(f"{ctx}.values: must be a non-empty list")
        return list(vals)
    missing = [k for k in ("from", "to", "step") if k not in sweep]
    if missing:
        raise SuiteError(f"{ctx}: needs values, or from, to and step (missing {', '.join(missing)})")
    lo, hi, step = (_num(sweep[k], f"{ctx}.{k}") for k in ("from", "to", "step"))
    if step <= 0:
        raise SuiteError(f"{ctx}.step: must be > 0, got {sweep['step']}")
    if hi < lo:
        raise SuiteError(f"{ctx}: from ({sweep['from']}) is above to ({sweep['to']})")
    d_lo, d_step, d_hi = (Decimal(str(sweep[k])) for k in ("from", "step", "to"))
    count = int((d_hi - d_lo) / d_step) + 1
    if count > 1000:
        raise SuiteError(f"{ctx}: {count} values; at most 1000")
    integral = all(isinstance(sweep[k], int) and not isinstance(sweep[k], bool) for k in ("from", "to", "step"))
    out = [d_lo + i * d_step for i in range(count)]
    return [int(v) if integral else float(v) for v in out]


def _parse_path(path: Any, ctx: str) -> tuple[str, str, str]:
    """'activity:NAME.ARG' -> ('activity', NAME, ARG); 'configuration:KEY' -> ('configuration', KEY, '')."""
    if not isinstance(path, str) or ":" not in path:
        raise SuiteError(f"{ctx}: parameter {path!r} must look like activity:NAME.ARG, control:NAME.ARG, "
                         "configuration:KEY, cluster:leader or cluster:synchronous_standbys")
    kind, _, rest = path.partition(":")
    if kind == "configuration":
        if not rest:
            raise SuiteError(f"{ctx}: {path!r} names no configuration key")
        return kind, rest, ""
    if kind == "cluster":
        if rest not in PREPARE_KEYS:
            raise SuiteError(f"{ctx}: {path!r}: the cluster parameters are cluster:leader and "
                             "cluster:synchronous_standbys")
        return kind, rest, ""
    if kind in ("activity", "control"):
        for marker in (".pauses.after", ".pauses.before"):
            if kind == "activity" and rest.endswith(marker):
                return kind, rest[: -len(marker)], marker[1:]
        name, dot, arg = rest.rpartition(".")
        if not dot or not name or not arg:
            raise SuiteError(f"{ctx}: {path!r} must be {kind}:NAME.ARG")
        return kind, name, arg
    raise SuiteError(f"{ctx}: {path!r}: unknown parameter kind {kind!r} (activity, control, configuration, cluster)")


def _activities(experiment: dict[str, Any]) -> list[dict[str, Any]]:
    acts = list(experiment.get("method") or []) + list(experiment.get("rollbacks") or [])
    acts += list((experiment.get("steady-state-hypothesis") or {}).get("probes") or [])
    return [a for a in acts if isinstance(a, dict)]


def apply_parameters(experiment: dict[str, Any], parameters: dict[str, Any], ctx: str = "") -> dict[str, Any]:
    """A copy of *experiment* with every parameter set; a path that names nothing is an error."""
    exp = copy.deepcopy(experiment)
    for path, value in parameters.items():
        kind, name, arg = _parse_path(path, ctx or "parameters")
        if kind == "cluster":
            continue
        if kind == "configuration":
            exp.setdefault("configuration", {})[name] = value
            continue
        if kind == "control":
            targets = [c for c in exp.get("controls") or [] if c.get("name") == name]
            names = [c.get("name") for c in exp.get("controls") or []]
        else:
            targets = [a for a in _activities(exp) if a.get("name") == name]
            names = sorted({a.get("name") for a in _activities(exp)})
        if not targets:
            near = difflib.get_close_matches(name, [n for n in names if n], n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; it has: {', '.join(map(str, names))}"
            raise SuiteError(f"{ctx or 'parameters'}: {path!r}: the experiment {exp.get('title', '')!r} has no "
                             f"{kind} named {name!r}{hint}")
        for t in targets:
            if arg.startswith("pauses."):
                t.setdefault("pauses", {})[arg.split(".", 1)[1]] = value
            else:
                provider = t.setdefault("provider", {})
                provider.setdefault("arguments", {})[arg] = value
    return exp


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise SuiteError(f"suite file {path} does not exist")
    text = path.read_text()
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml  # noqa: PLC0415 - needs the k8s extra

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # yaml.YAMLError / json.JSONDecodeError: both say line and column
        raise SuiteError(f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'}: {exc}") from None
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: a suite is a mapping with name and scenarios")
    return data


def _between(spec: BetweenSpec, base: dict[str, Any]) -> dict[str, Any]:
    return {**base, **spec.given()}


def _prepare(spec: PrepareSpec) -> dict[str, Any]:
    return spec.model_dump(exclude_none=True)


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file (no experiment is run): its shape by the model
    (:mod:`chaosdb.gameday.suite_schema`), then what only the files can say."""
    path = Path(path)
    data = _read(path)
    try:
        spec = parse_suite(data)
    except ValueError as exc:
        raise SuiteError(str(exc)) from None
    cluster = spec.cluster.model_dump()
    if cluster["address_base"]:
        try:
            parse_ipv4(cluster["address_base"])
        except ChaosDBError as exc:
            raise SuiteError(f"cluster.address_base: {exc}") from None
    between = _between(spec.between, BETWEEN_DEFAULTS)
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for i, sc in enumerate(spec.scenarios):
        ctx = f"scenarios[{i}] ({sc.name})"
        if sc.name in seen:
            raise SuiteError(f"{ctx}: a scenario named {sc.name!r} comes twice")
        seen.add(sc.name)
        exp_path = (path.parent / sc.experiment).resolve()
        if not exp_path.is_file():
            raise SuiteError(f"{ctx}.experiment: {exp_path} does not exist (paths are relative to the suite file)")
        cycle = None
        if sc.cycle is not None:
            _parse_path(sc.cycle.parameter, f"{ctx}.cycle.parameter")
            cycle = sc.cycle.model_dump()
        sweep = None
        if sc.sweep is not None:
            _parse_path(sc.sweep.parameter, f"{ctx}.sweep.parameter")
            sweep = {"parameter": sc.sweep.parameter, "values": sweep_values(sc.sweep.given(), f"{ctx}.sweep")}
        for p in sc.set:
            _parse_path(p, f"{ctx}.set")
        upb = None
        if sc.upb is not None:
            if sc.upb.F > sc.upb.K:
                raise SuiteError(f"{ctx}.upb: F ({sc.upb.F}) > K ({sc.upb.K}): UPB measures at most K failed nodes")
            upb = sc.upb.model_dump()
        scenarios.append(Scenario(
            name=sc.name, experiment=exp_path, description=sc.description,
            repetitions=sc.repetitions if sc.repetitions is not None else spec.repetitions,
            set=dict(sc.set), cycle=cycle, sweep=sweep, prepare=_prepare(sc.prepare), upb=upb,
            between=_between(sc.between, between),
            timeout_s=sc.timeout_s if sc.timeout_s is not None else spec.timeout_s))
    suite = Suite(name=spec.name, path=path.resolve(), description=spec.description, cluster=cluster,
                  configuration=dict(spec.configuration), order=spec.order, scenarios=scenarios, raw=data)
    plan_runs(suite)  # every path against its experiment, every run's experiment through Chaos Toolkit
    return suite


def _value_tag(value: Any) -> str:
    text = re.sub(r"[^A-Za-z0-9.]+", "_", str(value)).strip("_")
    return text[:24] or "x"


def _load_experiment(path: Path, ctx: str) -> dict[str, Any]:
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml  # noqa: PLC0415 - needs the k8s extra

            return yaml.safe_load(path.read_text())
        return json.loads(path.read_text())
    except Exception as exc:
        raise SuiteError(f"{ctx}: {path} is not a readable experiment: {exc}") from None


def _suite_overrides(suite: Suite, experiment: dict[str, Any]) -> dict[str, Any]:
    """Configuration and control values the suite itself sets on every run."""
    out: dict[str, Any] = {f"configuration:{k}": v for k, v in suite.configuration.items()}
    if suite.cluster["name"]:
        out["configuration:chaosdb_cluster"] = suite.cluster["name"]
    if suite.cluster["address_base"]:
        out["configuration:address_base"] = suite.cluster["address_base"]
    for c in experiment.get("controls") or []:
        if (c.get("provider") or {}).get("module") == "chaosdb.clusters.postgres_ha.control" and suite.cluster["keep_between_runs"]:
            out[f"control:{c['name']}.down_after"] = False
    return out


def plan_runs(suite: Suite, validate: bool = True) -> list[PlannedRun]:
    """Every run of the suite in the order it runs, each with its exact experiment."""
    per_scenario: list[list[PlannedRun]] = []
    validated: set[str] = set()
    for sc in suite.scenarios:
        ctx = f"scenario {sc.name}"
        base = _load_experiment(sc.experiment, ctx)
        values = sc.sweep["values"] if sc.sweep else [None]
        runs: list[PlannedRun] = []
        for value in values:
            for rep in range(1, sc.repetitions + 1):
                params = dict(_suite_overrides(suite, base))
                params.update(sc.set)
                if sc.cycle:
                    cycle_values = sc.cycle["values"]
                    params[sc.cycle["parameter"]] = cycle_values[(rep - 1) % len(cycle_values)]
                sweep = None
                if sc.sweep:
                    params[sc.sweep["parameter"]] = value
                    sweep = {"parameter": sc.sweep["parameter"], "value": value}
                prepare = dict(sc.prepare)
                for p, v in params.items():
                    if p.startswith("cluster:"):
                        prepare[p.split(":", 1)[1]] = v
                if "leader" in prepare and not re.fullmatch(r"node[1-9]", str(prepare["leader"])):
                    raise SuiteError(f"{ctx}: cluster:leader must be a node name like node1, got {prepare['leader']!r}")
                experiment = apply_parameters(base, params, ctx)
                rid = sc.name + (f"-v{_value_tag(value)}" if sc.sweep else "") + f"-r{rep:02d}"
                run = PlannedRun(id=rid, scenario=sc.name, repetition=rep, parameters=params, sweep=sweep,
                                 upb=sc.upb, experiment=experiment, source=str(sc.experiment), prepare=prepare,
                                 between=sc.between, timeout_s=sc.timeout_s)
                if validate:
                    key = json.dumps(experiment, sort_keys=True, default=str)
                    if key not in validated:
                        _validate_experiment(experiment, f"{ctx} (run {rid})")
                        validated.add(key)
                runs.append(run)
        per_scenario.append(runs)
    if suite.order == "interleaved":
        ordered = [r for i in range(max(len(x) for x in per_scenario)) for x in per_scenario if i < len(x)
                   for r in [x[i]]]
    else:
        ordered = [r for x in per_scenario for r in x]
    if len(ordered) > MAX_RUNS:
        raise SuiteError(f"the suite expands to {len(ordered)} runs; at most {MAX_RUNS}")
    return ordered


def _validate_experiment(experiment: dict[str, Any], ctx: str) -> None:
    try:
        ensure_experiment_is_valid(copy.deepcopy(experiment))
    except ChaosException as exc:
        raise SuiteError(f"{ctx}: Chaos Toolkit refuses the experiment: {exc}") from None
