"""Issue 43: one checked input, total; a refusal writes nothing but its sentence; inline secrets never reach the
journal or the log.

Items 3-7 of the issue, each against the real ``chaos validate`` / ``chaos run`` where the item is about them, on
experiments whose activities need no cluster: a non-finite number in a control makes the check refuse (never crash
and let the fault in), wrong types at any depth of a role target, a name with a control character, a CPU quota
above the machine's cores, a control declared twice, a count larger than a role can name are refused before
anything starts; a refused run writes no report, no samples, a journal with status ``refused``; the shapes Chaos
Toolkit's own loader trips on get sentences, not tracebacks; inline secrets are masked in the journal and the log.
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.core.adapters import check_role_count, check_role_target
from chaosdb.core.arguments import number, problems_in_call, value_problems
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import check_cluster_name
from chaosdb.experiment import checks, malformed, refusals
from chaosdb.experiment.secrets import LogMask, inline_secrets, mask_journal, secret_values
from chaosdb.faults import actions as fault_actions

CHAOS = str(Path(sys.executable).parent / "chaos")
VERDICT = {"name": "verdict", "provider": {"type": "python", "module": "chaosdb.experiment.control"}}


def _run(tmp_path: Path, experiment: dict, *args: str, env: dict | None = None) -> tuple[int, str, dict]:
    path = tmp_path / "experiment.json"
    path.write_text(json.dumps(experiment, allow_nan=True))
    proc = subprocess.run([CHAOS, "--no-log-file", *args, str(path)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    journal_path = tmp_path / "journal.json"
    journal = json.loads(journal_path.read_text()) if journal_path.exists() else {}
    return proc.returncode, proc.stdout + proc.stderr, journal


def _experiment(tmp_path: Path, method: list, controls: list | None = None, configuration: dict | None = None,
                secrets: dict | None = None) -> dict:
    out = {"title": "input", "description": "issue 43",
           "configuration": {"chaosdb_cluster_dir": str(tmp_path / "no-such-cluster"), **(configuration or {})},
           "controls": controls if controls is not None else [VERDICT],
           "method": method}
    if secrets:
        out["secrets"] = secrets
    return out


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])


def _limit_cpu(target: object, **arguments: object) -> dict:
    return {"type": "action", "name": "limit-cpu", "provider": {
        "type": "python", "module": "chaosdb.faults.actions", "func": "limit_cpu",
        "arguments": {"target": target, **arguments}}}


# ---------------------------------------------------------------------------
# values: finite numbers, no control characters, at any depth


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "Infinity", "nan", "-inf"])
def test_a_number_that_is_not_finite_is_refused(value):
    with pytest.raises(ChaosDBError, match="must be a finite number"):
        number("nodes", 1, maximum=9, integer=True)(value)


def test_values_are_checked_at_any_depth():
    assert value_problems("target", {"role": "x", "row": [1, [2, {"k": math.nan}]]}) == [
        "target.row[1][1].k must be a finite number, got nan"]
    assert "control character" in value_problems("target", ["node1\x07"])[0]
    assert value_problems("query", "SELECT 1\nFROM t\twhere x") == []  # free text keeps its newlines and tabs


def test_a_check_that_breaks_refuses_the_value_it_could_not_judge():
    def broken(value):
        raise OverflowError("cannot convert float infinity to integer")

    signature = fault_actions.limit_cpu.__signature__
    original = signature.checks["quota_s"]
    signature.checks["quota_s"] = broken
    try:
        problems = signature.problems({"quota_s": 0.5})
    finally:
        signature.checks["quota_s"] = original
    assert problems == ["quota_s could not be checked (OverflowError: cannot convert float infinity to integer): "
                        "got 0.5"]


def test_a_broken_input_check_stops_the_run(monkeypatch):
    monkeypatch.setattr(checks, "experiment_problems", lambda *a: 1 / 0)
    refusals.forget()
    with pytest.raises(Exception, match="the input check itself could not run .ZeroDivisionError"):
        checks.refuse_bad_arguments({"title": "new object"})
    assert refusals.nothing_started()
    refusals.forget()


# ---------------------------------------------------------------------------
# role targets: keys and types at any depth, counts a role can hold


@pytest.mark.parametrize("target, message", [
    ({"role": "patroni-primary", "cluster": 5}, "target key 'cluster' is not one the role patroni-primary takes"),
    ({"role": "patroni-primary", "namspace": "db"}, "(did you mean 'namespace'?)"),
    ({"role": "embedded-leader", "cluster": 5}, "target key 'cluster' of embedded-leader must be a cluster name"),
    ({"role": "embedded-leader", "cluster": "adv-a27\n"}, "may contain only letters, digits"),
    ({"role": "embedded-node", "names": [1, 2]}, "must be a name or a list of names, got [1, 2]"),
    ({"role": "embedded-node", "names": "node1\n"}, "holds control character(s) '\\n'"),
    ({"role": "tikv-leader", "key": {"a": 1}}, "target key 'key' of tikv-leader must be a name"),
    ({"role": "tikv-store", "store": 2.5}, "must be a whole number or a name, got 2.5"),
    ({"role": "cockroach-leaseholder", "table": "t", "row": [math.nan]}, "target key 'row' of cockroach-leaseholder"),
    ({"role": 5}, "target role must be a string"),
])
def test_a_role_target_is_checked_by_its_typed_model(target, message):
    with pytest.raises(ChaosDBError) as exc:
        check_role_target(target)
    assert message in str(exc.value)


def test_good_role_targets_pass():
    for target in ({"role": "patroni-primary", "namespace": "db"}, {"role": "tikv-leader", "key": "user1"},
                   {"role": "tikv-store", "store": "4"}, {"role": "embedded-node", "names": ["node1", "node2"]},
                   {"role": "cockroach-leaseholder", "table": "warehouse", "row": [1]},
                   {"role": "embedded-replica", "cluster": "second", "components": ["postgres"]}):
        check_role_target(target)


@pytest.mark.parametrize("target, count, ok", [
    ("leader", 1_000_000_000, False), ({"role": "embedded-leader"}, 2, False), ({"role": "patroni-primary"}, 2, False),
    ("leader", "all", True), ("replica", 2, True), ({"role": "embedded-replica"}, 2, True), ("node1,node2", 2, True),
])
def test_a_count_larger_than_the_role_can_name_is_refused(target, count, ok):
    if ok:
        check_role_count(target, count)
    else:
        with pytest.raises(ChaosDBError, match="names at most 1 node"):
            check_role_count(target, count)


@pytest.mark.parametrize("name", ["adv-a27\n", "a\x07b", "-x", "a/b", "x" * 64])
def test_a_cluster_name_with_a_trailing_newline_or_a_control_character_is_refused(name):
    with pytest.raises(ChaosDBError, match="may contain only letters"):
        check_cluster_name(name)


def test_a_cpu_quota_above_the_machines_cores_is_refused():
    cores = os.cpu_count() or 1
    problems = problems_in_call(fault_actions.limit_cpu, {"quota_s": cores + 3.0, "period_s": 1.0})
    assert problems and f"more than the {cores} core(s) this machine has" in problems[0]
    assert problems_in_call(fault_actions.limit_cpu, {"quota_s": 0.5, "period_s": 1.0}) == []


# ---------------------------------------------------------------------------
# controls: declared twice, arguments


def test_a_control_declared_twice_is_refused_before_anything_starts():
    faults = {"name": "local-faults", "provider": {"type": "python", "module": "chaosdb.faults.control"}}
    twice = checks.duplicate_control_problems([VERDICT, faults, copy.deepcopy(faults)])
    renamed = checks.duplicate_control_problems([VERDICT, faults, {**copy.deepcopy(faults), "name": "again"}])
    assert twice == ["control 'local-faults': declared twice (each declaration runs its hooks: keep one)"]
    assert renamed and "is already declared as control 'local-faults'" in renamed[0]


def test_control_arguments_are_checked_with_their_names():
    experiment = {"controls": [{"name": "load", "provider": {"type": "python", "module": "chaosdb.load.control",
                                                              "arguments": {"userz": 8, "users": "${u}"}}},
                               {"name": "cluster", "provider": {"type": "python", "module": "chaosdb.clusters.postgres_ha.control",
                                                                "arguments": [3]}}]}
    problems = checks.control_problems(experiment, {"u": "Infinity"})
    assert any("unknown argument 'userz' (did you mean 'users'?)" in p for p in problems), problems
    assert any("users must be a finite number" in p for p in problems), problems
    assert any("control 'cluster': its arguments must be an object" in p for p in problems), problems


def test_chaos_validate_refuses_a_control_argument_that_is_not_finite(tmp_path):
    controls = [VERDICT, {"name": "embedded-cluster", "provider": {"type": "python", "module": "chaosdb.clusters.postgres_ha.control",
                                                                   "arguments": {"nodes": math.inf}}}]
    code, out, _ = _run(tmp_path, _experiment(tmp_path, [], controls=controls), "validate")
    assert code == 1 and "Traceback" not in out
    assert "control 'embedded-cluster' (chaosdb.clusters.postgres_ha.control): nodes must be a finite number, got inf" in out


def test_a_substituted_infinity_stops_the_run_and_the_fault_never_goes_in(tmp_path):
    """The issue's item 3: ``nodes: Infinity`` crashed the checking control (OverflowError, logged at DEBUG), the CPU
    fault went in, status completed, exit 0. Now: refused before any control starts anything."""
    sleeper = _sleeper()
    try:
        controls = [VERDICT, {"name": "embedded-cluster", "provider": {
            "type": "python", "module": "chaosdb.clusters.postgres_ha.control", "arguments": {"nodes": "${nodes}"}}}]
        method = [_limit_cpu({"pids": [sleeper.pid], "name": "sleeper"}, quota_s=0.05, period_s=1.0)]
        experiment = _experiment(tmp_path, method, controls=controls, configuration={"nodes": "Infinity"})
        code, out, journal = _run(tmp_path, experiment, "run", "--journal-path", "journal.json",
                                  env={"CHAOSDB_FAULTS_DIR": str(tmp_path / "faults")})
    finally:
        sleeper.kill()
        sleeper.wait()
    assert code == 1 and "Traceback" not in out
    assert journal["status"] == "refused" and journal["run"] == [], journal["status"]
    assert journal["chaosdb_verdict"]["sentence"].startswith("Nothing was started: the experiment's arguments are "
                                                             "wrong: control 'embedded-cluster': nodes must be a "
                                                             "finite number")
    assert not (tmp_path / "no-such-cluster").exists()
    assert not list((tmp_path / "faults").glob("*.json")) if (tmp_path / "faults").exists() else True
    assert out.count("chaosdb verdict:") == 1, out[-3000:]


# ---------------------------------------------------------------------------
# a refusal writes nothing but its sentence


def test_a_refused_run_writes_no_report_no_samples_and_is_journalled_as_refused(tmp_path):
    controls = [VERDICT,
                {"name": "load", "provider": {"type": "python", "module": "chaosdb.load.control",
                                              "arguments": {"users": 1, "samples_dir": "${report_dir}/samples"}}},
                {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                                "arguments": {"out_dir": "${report_dir}"}}}]
    (tmp_path / "work").mkdir()
    experiment = _experiment(tmp_path, [], controls=controls, configuration={"report_dir": "../x"})
    path = tmp_path / "work" / "experiment.json"
    path.write_text(json.dumps(experiment))
    proc = subprocess.run([CHAOS, "--no-log-file", "run", "--journal-path", "journal.json", str(path)],
                          capture_output=True, text=True, cwd=tmp_path / "work", timeout=300, stdin=subprocess.DEVNULL)
    journal = json.loads((tmp_path / "work" / "journal.json").read_text())
    assert proc.returncode == 1
    assert journal["status"] == "refused" and "goes up with '..'" in journal["chaosdb_refused"]
    assert not (tmp_path / "x").exists(), "a refused run wrote into the folder it refused"
    assert "chaosdb_report" not in journal and "chaosdb_load" not in journal


def test_an_oversized_experiment_is_refused_and_not_copied_into_the_journal(tmp_path):
    method = [{"type": "probe", "name": "big", "provider": {"type": "python", "module": "os.path", "func": "exists",
                                                           "arguments": {"path": "x" * (checks.MAX_EXPERIMENT_BYTES + 10)}}}]
    code, _, journal = _run(tmp_path, _experiment(tmp_path, method), "run", "--journal-path", "journal.json")
    assert code == 1 and journal["status"] == "refused"
    assert (tmp_path / "journal.json").stat().st_size < 100_000
    assert "was refused for its size" in journal["experiment"]["chaosdb_omitted"]


# ---------------------------------------------------------------------------
# shapes Chaos Toolkit's loader trips on: sentences, never a traceback


SHAPES = {
    "secrets-scope-string": ({"secrets": {"db": "x"}}, "'secrets.db' must be an object, not a string"),
    "module-number": ({"method": [{"type": "action", "name": "a", "provider": {"type": "python", "module": 5,
                                                                               "func": "f"}}]},
                      "'method[0].provider.module' must be a string, not a number"),
    "control-provider-string": ({"controls": [{"name": "c", "provider": "chaosdb.faults.control"}]},
                                "'controls[0].provider' must be an object, not a string"),
    "pauses-list": ({"method": [{"type": "action", "name": "a", "pauses": [1],
                                 "provider": {"type": "process", "path": "true"}}]},
                    "'method[0].pauses' must be an object, not a list"),
    "env-without-key": ({"secrets": {"db": {"password": {"type": "env"}}}},
                        "'secrets.db.password' is an environment reference without its 'key'"),
    "env-key-number": ({"configuration": {"x": {"type": "env", "key": 5}}},
                       "'configuration.x' has a 'key' that must be a string, not a number"),
    "extension-string": ({"extensions": ["x"]}, "'extensions[0]' must be an object, not a string"),
    "process-path-number": ({"method": [{"type": "probe", "name": "p", "provider": {"type": "process", "path": 5}}]},
                            "'method[0].provider.path' must be a string, not a number"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_chaos_toolkit_trips_on_gets_one_sentence(name):
    patch, message = SHAPES[name]
    experiment = {"title": "t", "description": "d", "method": [], **patch}
    problems = malformed.shape_problems(experiment)
    assert len(problems) == 1 and problems[0].startswith(message), problems


@pytest.mark.parametrize("name", ["secrets-scope-string", "module-number", "control-provider-string"])
def test_chaos_validate_says_the_shape_problem_instead_of_a_traceback(tmp_path, name):
    patch, message = SHAPES[name]
    code, out, _ = _run(tmp_path, {"title": "t", "description": "d", "method": [], **patch}, "validate")
    assert code == 1 and "Traceback" not in out, out[-2000:]
    assert message in out


def test_every_shipped_experiment_fits_the_model():
    root = Path(__file__).resolve().parents[2] / "experiments"
    for path in sorted(root.rglob("*.json")):
        assert malformed.shape_problems(json.loads(path.read_text())) == [], path


# ---------------------------------------------------------------------------
# inline secrets


SECRETS = {"db": {"load_dsn": "postgresql://app:CanaryDsnPw42@127.0.0.1:1/x", "postgres_password": "Canary-PG-456",
                  "patroni_password": {"type": "env", "key": "CHAOSDB_TEST_CANARY"}}}


def test_secret_values_cover_inline_environment_and_dsn_passwords(monkeypatch):
    monkeypatch.setenv("CHAOSDB_TEST_CANARY", "EnvCanary-777")
    experiment = {"secrets": SECRETS, "configuration": {"other_dsn": "postgresql://u:CfgPw9876@h/db", "dsn2":
                                                        "postgresql://u@h/db", "note": "hello"}}
    values = secret_values(experiment)
    for value in ("Canary-PG-456", "CanaryDsnPw42", "EnvCanary-777", "CfgPw9876"):
        assert value in values
    assert "postgresql://u@h/db" not in values and "hello" not in values
    assert inline_secrets(experiment) == ["secrets.db.load_dsn", "secrets.db.postgres_password",
                                          "configuration.other_dsn"]
    journal = {"experiment": experiment, "run": [{"output": "pw=Canary-PG-456"}]}
    mask_journal(journal, values)
    assert "Canary" not in json.dumps(journal) and "CfgPw9876" not in json.dumps(journal)


def test_the_log_mask_hides_values_in_messages_and_arguments():
    import logging

    record = logging.LogRecord("chaostoolkit", logging.DEBUG, __file__, 1, "  => succeeded with '%s'",
                               ("dsn postgresql://app:CanaryDsnPw42@h/x",), None)
    LogMask(["CanaryDsnPw42"]).filter(record)
    assert record.getMessage() == "  => succeeded with 'dsn postgresql://app:***@h/x'"


def test_inline_secrets_never_reach_the_journal_or_the_log(tmp_path):
    method = [{"type": "probe", "name": "echo", "provider": {
        "type": "process", "path": "echo", "arguments": "Canary-PG-456 EnvCanary-777"}},
        {"type": "probe", "name": "py", "provider": {"type": "python", "module": "os.path", "func": "basename",
                                                      "arguments": {"p": "${load_dsn}"}, "secrets": ["db"]}}]
    experiment = _experiment(tmp_path, method, secrets=SECRETS)
    path = tmp_path / "experiment.json"
    path.write_text(json.dumps(experiment))
    (tmp_path / "journal.json").write_text("{}")
    os.chmod(tmp_path / "journal.json", 0o644)
    proc = subprocess.run([CHAOS, "--log-file", str(tmp_path / "chaos.log"), "run", "--journal-path", "journal.json",
                           str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, "CHAOSDB_TEST_CANARY": "EnvCanary-777"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    journal_text = (tmp_path / "journal.json").read_text()
    log_text = (tmp_path / "chaos.log").read_text()
    for canary in ("Canary-PG-456", "CanaryDsnPw42", "EnvCanary-777"):
        assert canary not in journal_text and canary not in log_text and canary not in proc.stdout + proc.stderr
    journal = json.loads(journal_text)
    assert journal["experiment"]["secrets"]["db"]["postgres_password"] == "***"
    assert journal["run"][0]["output"]["stdout"] == "*** ***\n"
    assert (tmp_path / "journal.json").stat().st_mode & 0o077 == 0, "the journal of a run with secrets is private"
    assert log_text.count("the experiment holds secrets inline (secrets.db.load_dsn, secrets.db.postgres_password)") \
        == 1
