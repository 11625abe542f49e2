"""The load's options as one typed model (issue 44): built once from the load control's arguments, checked with the
rules the check before the run applies, and handed to the runner; ``start_load`` called with keyword arguments builds
the same model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest
from chaoslib import substitute

from chaosdb.core.arguments import control_argument_problems
from chaosdb.core.errors import ChaosDBError
from chaosdb.load import control as load_control
from chaosdb.load import runner
from chaosdb.load.options import ARGUMENTS, LOCUSTFILES, LoadOptions, Workload

ROOT = Path(__file__).resolve().parents[2]


def _load_controls() -> list[tuple[Path, dict]]:
    """Every load control of the experiments in the repository and of the shipped ones, with its file."""
    found = []
    for path in sorted([*ROOT.glob("experiments/**/*.json"), *(ROOT / "chaosdb" / "shipped").glob("**/*.json")]):
        try:
            experiment = json.loads(path.read_text())
        except ValueError:
            continue
        for control in experiment.get("controls") or [] if isinstance(experiment, dict) else []:
            provider = control.get("provider") or {}
            if provider.get("module") == "chaosdb.load.control":
                found.append((path, provider.get("arguments") or {}))
    return found


def test_every_experiments_load_control_builds_the_model_unchanged():
    controls = _load_controls()
    assert len(controls) > 100, "the experiments' load controls were not found"
    configuration = {"baseline_s": "30", "report_dir": "reports/run", "cockroach_url": "postgresql://root@h:26257/db"}
    for path, arguments in controls:
        assert control_argument_problems(load_control, arguments) == [], path  # ${...} values wait for the run
        given = substitute(arguments, configuration, {})
        options = LoadOptions.from_arguments({k: v for k, v in given.items() if k not in load_control.CONTROL_OWN})
        assert options.baseline_s == 30.0 and options.samples_dir == "reports/run/samples", path
        for key, value in given.items():
            if key not in load_control.CONTROL_OWN and key != "baseline_s":
                assert getattr(options, key) == value, (path, key)


def test_the_control_checks_the_models_options_with_the_models_rules():
    assert list(load_control.CONTROL_ARGUMENTS.parameters) == list(LoadOptions.model_fields)
    assert load_control.CONTROL_ARGUMENTS is ARGUMENTS
    for bad, sentence in [({"users": 0}, "users must be >= 1 and <= 10000, got 0"),
                          ({"users": "8.5"}, "users must be a whole number, got '8.5'"),
                          ({"baseline_s": "-5"}, "baseline_s must be >= 0 and <= 2592000 (seconds of load measured "
                                                 "before the fault), got '-5'"),
                          ({"warmup_s": 1e12}, "warmup_s must be >= 0 and <= 2592000 (seconds; at most 30 days)"),
                          ({"workload": "tpc"}, "workload must be one of tpcc, ycsb, ycsb-etcd, list-append, rw-register, "
                                                "register-etcd, got 'tpc' (did you "
                                                "mean 'tpcc'?)"),
                          ({"replace_samples": "maybe"}, "replace_samples must be true or false, got 'maybe'"),
                          ({"master_port": 70000}, "master_port must be >= 0 and <= 65535, got 70000"),
                          ({"observe_s": "Infinity"}, "observe_s must be a finite number"),
                          ({"dsn": "postgresql://h/db\x1b"}, "dsn holds control character(s) '\\x1b'")]:
        with pytest.raises(ChaosDBError) as exc:
            LoadOptions.from_arguments(bad)
        assert str(exc.value).startswith(sentence), (bad, str(exc.value))
        assert ARGUMENTS.problems(bad)[0].startswith(sentence), (bad, ARGUMENTS.problems(bad))
    # what no single rule sees, and a type no rule names: refused before the run too
    together = {"processes": 2, "workers": 1}
    assert "not both" in ARGUMENTS.problems(together)[0]
    with pytest.raises(ChaosDBError, match="give processes .* not both"):
        LoadOptions.from_arguments(together)
    assert ARGUMENTS.problems({"dsn": 5}) == ["dsn must be a string, got 5"]
    assert ARGUMENTS.problems({"extra_args": "--foo"})[0].startswith("extra_args must be a list of strings")


def test_configuration_strings_become_the_options_types():
    options = LoadOptions.from_arguments({"users": "8", "records": "2000", "warmup_s": "15", "rate": "12.5",
                                          "replace_samples": "true", "dsn": None, "observe": None,
                                          "extra_args": ["--loglevel", "INFO"], "samples_dir": Path("runs/s")})
    assert (options.users, options.records, options.warmup_s, options.rate) == (8, 2000, 15.0, 12.5)
    assert options.replace_samples is True and options.dsn == "" and options.observe == ""
    assert options.extra_args == ("--loglevel", "INFO") and options.samples_dir == "runs/s"
    assert options == LoadOptions(users=8, records=2000, warmup_s=15, rate=12.5, replace_samples=True, dsn="",
                                  observe="", extra_args=("--loglevel", "INFO"), samples_dir="runs/s")
    assert set(get_args(Workload)) == set(LOCUSTFILES)
    assert LoadOptions().locust_file == LOCUSTFILES["tpcc"] and not LoadOptions().distributed
    assert LoadOptions(workload="ycsb", locustfile="/x.py").locust_file == "/x.py"
    assert LoadOptions(remote_workers=2).distributed
    with pytest.raises(ChaosDBError, match="unknown load option 'userz' \\(did you mean 'users'\\?\\)"):
        LoadOptions.from_arguments({"userz": 8})


def test_the_control_builds_the_options_once_and_hands_them_to_the_runner(monkeypatch):
    handed = []
    monkeypatch.setattr(load_control, "start_load",
                        lambda options, **kw: handed.append((options, sorted(kw))))
    load_control.before_experiment_control({}, configuration={}, secrets={}, users="8", warmup_s=1,
                                           dsn="postgresql://app@127.0.0.1:1/app", only_with_dsn=True,
                                           stop_timeout_s=5)
    assert handed == [(LoadOptions(users=8, warmup_s=1.0, dsn="postgresql://app@127.0.0.1:1/app"),
                       ["configuration", "secrets"])]


def test_start_load_builds_the_model_from_keyword_arguments_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "resolve_dsn", lambda *a: pytest.fail("nothing may start on bad options"))
    with pytest.raises(ChaosDBError, match="users must be >= 1"):
        runner.start_load(users=0, samples_dir=str(tmp_path / "s"))
    with pytest.raises(ChaosDBError, match="its options or keyword arguments, not both"):
        runner.start_load(LoadOptions(), users=3)
    assert not (tmp_path / "s").exists()
