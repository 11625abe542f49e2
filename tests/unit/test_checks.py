"""``chaosdb check`` and ``chaosdb serve`` (chaosdb.checks): checks read from a checks file or an experiment, refused
in one sentence when they could never run, judged with Chaos Toolkit's own tolerance semantics, secrets masked, one
JSON line and an exit status for a cmdProbe, 200/503/404 with for_s hysteresis for a StatusCheck or an httpProbe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
import yaml

from chaosdb import cli
from chaosdb.checks.evaluate import describe_tolerance, evaluate, evaluate_all, json_safe
from chaosdb.checks.server import NOT_EVALUATED, CheckServer, StateStore, create_app, run_server
from chaosdb.checks.spec import Check, CheckInputError, CheckSet, load_checks
from chaosdb.core import extras
from chaosdb.core.redact import MASK
from chaosdb.postgres import probes as patroni_probes
from chaosdb.tikv import probes as tikv_probes
from tests.unit.pd_standin import PDStandin

ROOT = Path(__file__).resolve().parents[2]
HELPERS = "tests.unit.checks_probes"


def _probe(func: str, tolerance=True, arguments=None, **extra) -> dict:
    provider = {"type": "python", "module": HELPERS, "func": func, **({"arguments": arguments} if arguments else {})}
    return {"type": "probe", "tolerance": tolerance, "provider": provider, **extra}


def _write(tmp_path: Path, document, name: str = "checks.json") -> str:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else
                    (yaml.safe_dump(document) if name.endswith(".yaml") else json.dumps(document)))
    return str(path)


def _checks_file(tmp_path: Path, checks: list[dict], name: str = "checks.json", **top) -> str:
    return _write(tmp_path, {**top, "checks": checks}, name)


def _one_check(probe: dict, configuration=None, secrets=None, name: str = "c") -> CheckSet:
    return CheckSet("test", (Check(name, {"name": name, **probe}),), configuration or {}, secrets or {})


# --- where checks come from --------------------------------------------------------------------------------------


def test_a_checks_file_in_yaml_with_configuration_from_the_environment_and_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKS_TEST_ANSWER", "42")
    monkeypatch.setenv("CHECKS_TEST_PASSWORD", "s3cret-pass")
    path = _checks_file(tmp_path, [
        {"name": "answer", "for_s": 10, "probe": _probe("configured", "42", {"key": "answer"})},
        {"name": "always", "probe": _probe("constant", True)},
    ], "checks.yaml", configuration={"answer": {"type": "env", "key": "CHECKS_TEST_ANSWER"}, "plain": 1},
        secrets={"db": {"password": {"type": "env", "key": "CHECKS_TEST_PASSWORD"}}})
    checks = load_checks(path)
    assert checks.names() == ["answer", "always"]
    assert [c.for_s for c in checks.checks] == [10.0, 0.0]
    assert checks.checks[1].probe["name"] == "always"  # a probe without a name takes its check's
    assert checks.configuration == {"answer": "42", "plain": 1}
    assert checks.secrets == {"db": {"password": "s3cret-pass"}}
    assert "s3cret-pass" in checks.mask()
    # --var overrides a declared key (as chaos run) and adds one the file does not declare
    checks = load_checks(path, ["answer:int=7", "extra=x"])
    assert checks.configuration["answer"] == 7 and checks.configuration["extra"] == "x"
    # --for-s is the for_s of the checks that do not set their own
    assert [c.for_s for c in load_checks(path, default_for_s=3).checks] == [10.0, 3.0]


def test_a_var_file_sets_configuration_and_secrets(tmp_path):
    path = _checks_file(tmp_path, [{"name": "c", "probe": _probe("configured", "b", {"key": "a"})}],
                        configuration={"a": "x"}, secrets={"db": {"password": "from-file"}})
    var_file = _write(tmp_path, {"configuration": {"a": "b"}, "secrets": {"db": {"password": "from-var-file"}}},
                      "vars.json")
    checks = load_checks(path, var_files=[var_file])
    assert checks.configuration == {"a": "b"} and checks.secrets == {"db": {"password": "from-var-file"}}


EXPERIMENT = {
    "title": "an experiment",
    "description": "its hypothesis is what the checks are",
    "configuration": {"answer": 42},
    "steady-state-hypothesis": {"title": "the database answers", "probes": [
        {**_probe("configured", 42, {"key": "answer"}), "name": "answers"},
        {"ref": "always-true", "tolerance": True},
    ]},
    "method": [{**_probe("constant", True), "name": "always-true"},
               {"type": "action", "name": "do-something", "provider": {"type": "python", "module": HELPERS,
                                                                       "func": "constant"}}],
    "rollbacks": [],
}


def test_an_experiment_gives_its_hypothesis_probes_and_its_title_as_a_group(tmp_path):
    path = _write(tmp_path, EXPERIMENT, "experiment.json")
    checks = load_checks(path)
    assert checks.names() == ["answers", "always-true"]  # a "ref" is the activity it names, with its tolerance
    assert checks.groups == {"the database answers": ("answers", "always-true")}
    assert [c.name for c in checks.select(["the database answers"])] == ["answers", "always-true"]
    assert [c.name for c in checks.select(["always-true"])] == ["always-true"]
    assert all(c.for_s == 0 for c in checks.checks)
    assert [c.for_s for c in load_checks(path, default_for_s=5).checks] == [5.0, 5.0]
    result = evaluate_all(checks, ["the database answers"])
    assert result["ok"] and [r["check"] for r in result["checks"]] == ["answers", "always-true"]


def test_a_probe_named_as_the_hypothesis_keeps_its_name_and_no_group_is_made(tmp_path):
    experiment = {"title": "t", "method": [], "steady-state-hypothesis": {
        "title": "healthy", "probes": [{**_probe("constant"), "name": "healthy"}]}}
    checks = load_checks(_write(tmp_path, experiment, "e.json"))
    assert checks.names() == ["healthy"] and checks.groups == {}


def test_the_shipped_checks_files_read_and_validate():
    patroni = load_checks("shipped:patroni")
    assert patroni.names() == ["has-primary", "replication-lag", "cluster-healthy"]
    assert patroni.get("has-primary").for_s > 0
    assert patroni.get("has-primary").probe["provider"]["func"] == "has_primary"
    tikv = load_checks("shipped:tikv")
    assert tikv.names() == ["pd-healthy", "no-leaderless-region"]
    assert tikv.get("no-leaderless-region").probe["provider"]["func"] == "regions_without_leader"
    funcs = {c.probe["provider"]["func"] for s in (patroni, tikv) for c in s.checks}
    assert all(callable(getattr(patroni_probes, f, None) or getattr(tikv_probes, f, None)) for f in funcs)


# --- bad input: one sentence, exit status 2, before anything runs ------------------------------------------------


def _refusal(tmp_path, document, *words, name="checks.json", var=(), var_file=()) -> str:
    path = _write(tmp_path, document, name) if document is not None else str(tmp_path / name)
    with pytest.raises(CheckInputError) as refused:
        load_checks(path, var, var_file)
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message, message
    for word in words:
        assert word in message, message
    return message


def test_a_file_that_cannot_be_read_is_one_sentence(tmp_path):
    _refusal(tmp_path, None, "cannot read", "checks.json")
    _refusal(tmp_path, "", "is empty")
    _refusal(tmp_path, '{"checks": [', "is not valid JSON", "line 1")
    _refusal(tmp_path, "checks: [\n  - name: x\n bad", "is not valid YAML", name="checks.yaml")
    _refusal(tmp_path, "[1, 2]", "holds a list")
    _refusal(tmp_path, {"probes": []}, "neither a checks file nor an experiment")


def test_a_checks_file_of_the_wrong_shape_is_refused_naming_the_place(tmp_path):
    _refusal(tmp_path, {"checks": []}, "'checks' is empty")
    _refusal(tmp_path, {"checks": [{"name": "x"}]}, "'checks[0].probe' is missing")
    _refusal(tmp_path, {"checks": [{"name": "x", "probe": _probe("constant"), "for_S": 3}]},
             "'checks[0].for_S' is not a key of a checks file", "did you mean 'for_s'")
    _refusal(tmp_path, {"checks": [{"name": "x", "probe": _probe("constant"), "for_s": -1}]},
             "'checks[0].for_s' must be a number of seconds >= 0")
    _refusal(tmp_path, {"checks": [{"name": "x", "probe": _probe("constant")}], "configurations": {}},
             "'configurations' is not a key", "did you mean 'configuration'")
    _refusal(tmp_path, {"checks": [{"name": "x", "probe": {**_probe("constant"),
                                                             "provider": {"type": "python", "module": 3}}}]},
             "'checks[0].probe.provider.module' must be a string")
    _refusal(tmp_path, {"checks": [{"name": "x", "probe": _probe("constant")},
                                   {"name": "x", "probe": _probe("constant")}]}, "more than one check is named 'x'")


def test_a_probe_that_could_never_run_or_be_judged_is_refused(tmp_path):
    def one(probe):
        return {"checks": [{"name": "c", "probe": probe}]}

    without_tolerance = _probe("constant")
    del without_tolerance["tolerance"]
    _refusal(tmp_path, one(without_tolerance), "check 'c': its probe has no 'tolerance'")
    _refusal(tmp_path, one({**_probe("constant"), "type": "action"}), "check 'c': its activity is an action")
    _refusal(tmp_path, one(_probe("no_such_function")), "check 'c'", "does not expose a function called "
                                                                         "'no_such_function'")
    _refusal(tmp_path, one({**_probe("constant"), "provider": {"type": "python", "module": "tests.unit.nope",
                                                                "func": "x"}}),
             "could not find Python module 'tests.unit.nope'")
    message = _refusal(tmp_path, one({**_probe("constant"), "provider": {
        "type": "python", "module": "chaosdb.postgress.probes", "func": "has_primary"}}), "could not find")
    assert "did you mean chaosdb.postgres.probes" in message
    _refusal(tmp_path, one({**_probe("constant"), "provider": {
        "type": "python", "module": "chaosdb.postgres.probes", "func": "has_primari"}}), "did you mean 'has_primary'")
    _refusal(tmp_path, one(_probe("constant", {"type": "range", "range": [0]})),
             "its tolerance is not one Chaos Toolkit can use", "two values")
    _refusal(tmp_path, one(_probe("constant", arguments={"nope": 1})), "argument 'nope' is not part of the function")
    # this pack's own argument rules, with the configuration substituted
    _refusal(tmp_path, {**one({"type": "probe", "tolerance": True, "provider": {
        "type": "python", "module": "chaosdb.tikv.probes", "func": "region_for_key",
        "arguments": {"key": "k", "mode": "${mode}"}}}), "configuration": {"mode": "rawr"}},
        "check 'c'", "mode must be one of raw, txn")
    _refusal(tmp_path, {**one({"type": "probe", "tolerance": True, "provider": {
        "type": "python", "module": "chaosdb.tikv.probes", "func": "region_for_key",
        "arguments": {"key": "${missing}"}}})}, "check 'c'", "${missing} is defined neither")


def test_configuration_and_vars_that_cannot_be_loaded_are_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("CHECKS_TEST_UNSET", raising=False)
    checks = [{"name": "c", "probe": _probe("constant")}]
    _refusal(tmp_path, {"checks": checks, "configuration": {"x": {"type": "env", "key": "CHECKS_TEST_UNSET"}}},
             "environment key that does not exist: CHECKS_TEST_UNSET")
    _refusal(tmp_path, {"checks": checks, "secrets": {"s": {"x": {"type": "env", "key": "CHECKS_TEST_UNSET"}}}},
             "CHECKS_TEST_UNSET")
    _refusal(tmp_path, {"checks": checks}, "--var 'novalue'", var=["novalue"])
    _refusal(tmp_path, {"checks": checks}, "--var 'n:int=x'", var=["n:int=x"])
    _refusal(tmp_path, {"checks": checks}, "--var-file", "no such file", var_file=[str(tmp_path / "none.json")])


def test_an_experiment_without_hypothesis_probes_or_with_a_bad_reference_is_refused(tmp_path):
    _refusal(tmp_path, {"title": "t", "method": []}, "without steady-state-hypothesis probes")
    _refusal(tmp_path, {"title": "t", "method": [], "steady-state-hypothesis": {
        "title": "h", "probes": [{"ref": "nothing", "tolerance": True}]}}, "refers to 'nothing'")
    _refusal(tmp_path, {"title": "t", "method": [], "steady-state-hypothesis": {"title": "h", "probes": ["x"]}},
             "'steady-state-hypothesis.probes[0]' must be an activity object")


def test_an_unknown_name_is_refused_with_the_known_ones(tmp_path):
    checks = load_checks(_write(tmp_path, EXPERIMENT, "experiment.json"))
    with pytest.raises(CheckInputError, match=r"no check named 'answer' \(did you mean 'answers'\?\); its checks: "
                                              r"answers, always-true, the database answers"):
        checks.select(["answer"])
    with pytest.raises(CheckInputError, match="no shipped checks file 'patron'.*did you mean 'patroni'"):
        load_checks("shipped:patron")


def test_a_probe_module_whose_extra_is_missing_is_refused_with_its_install_line(tmp_path, monkeypatch):
    real = extras._installed
    monkeypatch.setattr(extras, "_installed", lambda m: m != "psycopg" and real(m))
    path = _checks_file(tmp_path, [{"name": "lag", "probe": {"type": "probe", "tolerance": [0, 1], "provider": {
        "type": "python", "module": "chaosdb.postgres.probes", "func": "replication_lag"}}}])
    with pytest.raises(extras.MissingExtra, match=r"needs the postgres extra .*pip install 'chaostoolkit-db\[postgres\]'"):
        load_checks(path)


# --- evaluation: Chaos Toolkit's tolerance semantics --------------------------------------------------------------


@pytest.mark.parametrize("value,tolerance,ok", [
    (True, True, True), (False, True, False), (0, 0, True), (3, 0, False), ("leader", "leader", True),
    (5, [0, 10], True), (11, [0, 10], False), ("b", ["a", "b", "c"], True),
    (5, {"type": "range", "range": [0, 10]}, True), (10.5, {"type": "range", "range": [0, 10]}, False),
    ({"lag": 3}, {"type": "range", "range": [0, 10], "target": "lag"}, True),
    ("pd-1 is leader", {"type": "regex", "pattern": "^pd-\\d"}, True),
    ("tikv", {"type": "regex", "pattern": "^pd-"}, False),
    ({"status": 200, "body": "x"}, 200, True), ({"status": 503}, [200, 204], False),
])
def test_tolerances_are_judged_as_chaos_toolkit_judges_them(value, tolerance, ok):
    result = evaluate(Check("c", _probe("constant", tolerance, {"value": value})))
    assert result["ok"] is ok and result["value"] == json_safe(value)
    assert (result["reason"] is None) is ok
    if not ok:
        assert result["reason"].startswith(f"the probe returned {json.dumps(value)}, which is not ")


def test_a_probe_tolerance_is_handed_the_value():
    tolerance = {"type": "probe", "name": "is-even", "provider": {"type": "python", "module": HELPERS,
                                                                   "func": "is_even", "arguments": {}}}
    check = Check("c", _probe("constant", tolerance, {"value": 4}))
    assert evaluate(check)["ok"] is True
    odd = evaluate(Check("c", _probe("constant", tolerance, {"value": 3})))
    assert odd["ok"] is False and "accepted by the tolerance probe 'is-even'" in odd["reason"]
    assert check.probe["tolerance"]["provider"]["arguments"] == {}  # evaluated on a copy


def test_a_string_tolerance_is_substituted_from_the_configuration():
    check = Check("c", _probe("constant", "${expected}", {"value": "node2"}))
    assert evaluate(check, {"expected": "node2"})["ok"] is True
    assert evaluate(check, {"expected": "node1"})["reason"] == 'the probe returned "node2", which is not exactly "node1"'


def test_a_jsonpath_tolerance(tmp_path):
    tolerance = {"type": "jsonpath", "path": "$.members[?(@.role = 'leader')].name", "expect": "node2"}
    try:
        import jsonpath2  # noqa: F401
    except ImportError:  # chaoslib's own refusal, one sentence: chaostoolkit-lib[jsonpath] is not installed here
        _refusal(tmp_path, {"checks": [{"name": "c", "probe": _probe("constant", tolerance)}]},
                 "check 'c'", "jsonpath2")
        return
    members = {"members": [{"name": "node1", "role": "replica"}, {"name": "node2", "role": "leader"}]}
    assert evaluate(Check("c", _probe("constant", tolerance, {"value": members})))["ok"] is True
    members["members"][1]["role"] = "replica"
    result = evaluate(Check("c", _probe("constant", tolerance, {"value": members})))
    assert result["ok"] is False and "matched by the JSON path" in result["reason"]


def test_a_probe_that_raises_is_a_failed_check_with_its_message_never_a_traceback():
    result = evaluate(Check("c", _probe("boom", True, {"message": "no leader\nright now"})))
    assert result == {**result, "check": "c", "ok": False, "value": None,
                      "reason": "the probe failed: RuntimeError: no leader right now"}
    assert result["latency_ms"] >= 0 and result["at"].endswith("+00:00")


def test_this_packs_errors_read_as_their_sentence_and_a_false_says_what_the_probe_warned(monkeypatch):
    from chaosdb.core.errors import ChaosDBError

    def no_leader(configuration=None, secrets=None):
        raise ChaosDBError("the Patroni cluster has no leader right now")

    monkeypatch.setattr(patroni_probes, "current_primary", no_leader)
    probe = {"type": "probe", "tolerance": "node1", "provider": {"type": "python", "module": "chaosdb.postgres.probes",
                                                                 "func": "current_primary"}}
    assert evaluate(Check("c", probe))["reason"] == "the probe failed: the Patroni cluster has no leader right now"

    class Client:
        def health_problems(self, max_lag, expected):
            return [], ["node3 is not streaming"]

    monkeypatch.setattr(patroni_probes, "patroni_client", lambda configuration, secrets: Client())
    probe = {"type": "probe", "tolerance": True, "provider": {"type": "python", "module": "chaosdb.postgres.probes",
                                                              "func": "cluster_is_healthy"}}
    assert evaluate(Check("c", probe))["reason"] == ("the probe returned false, which is not exactly true (it said: "
                                                     "chaosdb: the Patroni cluster is not healthy: node3 is not "
                                                     "streaming)")


def test_values_are_made_json_safe():
    assert json_safe({1: b"x", "f": float("nan"), "t": (1, 2), "o": object}) == \
        {"1": "x", "f": "nan", "t": [1, 2], "o": str(object)}
    assert describe_tolerance({"type": "range", "range": [0, 5], "target": "lag"}) == "between 0 and 5 (its 'lag')"


# --- secrets never shown -------------------------------------------------------------------------------------------


def test_secrets_are_masked_in_the_value_and_the_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHECKS_TEST_DSN", "postgresql://app:dsn-pass-9@db:5432/app")
    path = _checks_file(tmp_path, [
        {"name": "leaky", "probe": {**_probe("leak", {"type": "range", "range": [0, 1]}), "provider": {
            "type": "python", "module": HELPERS, "func": "leak", "secrets": ["db"]}}},
        {"name": "leaky-failure", "probe": {**_probe("leak_and_fail"), "provider": {
            "type": "python", "module": HELPERS, "func": "leak_and_fail", "secrets": ["db"]}}},
        {"name": "dsn", "probe": {**_probe("constant"), "provider": {
            "type": "python", "module": HELPERS, "func": "constant", "arguments": {"value": "dsn-pass-9 leaked"}}}},
    ], secrets={"db": {"password": "hunter2-secret", "dsn": {"type": "env", "key": "CHECKS_TEST_DSN"}}})
    assert cli.main(["check", path]) == 1
    out = capsys.readouterr().out
    assert "hunter2-secret" not in out and "dsn-pass-9" not in out, out
    results = {r["check"]: r for r in json.loads(out)["checks"]}
    assert results["leaky"]["value"]["given"]["password"] == MASK
    assert results["leaky"]["value"]["note"] == f"connected with {MASK}"
    assert MASK in results["leaky"]["reason"]
    assert results["leaky-failure"]["reason"] == f"the probe failed: RuntimeError: login refused for password {MASK}"
    assert results["dsn"]["value"] == f"{MASK} leaked"


def test_a_secret_in_a_refusal_is_masked(tmp_path):
    path = _checks_file(tmp_path, [{"name": "c", "probe": {"type": "probe", "tolerance": True, "provider": {
        "type": "python", "module": "chaosdb.tikv.probes", "func": "region_for_key", "secrets": ["s"],
        "arguments": {"key": "k", "mode": "${token}"}}}}], secrets={"s": {"token": "very-secret-mode"}})
    with pytest.raises(CheckInputError) as refused:
        load_checks(path)
    assert "very-secret-mode" not in str(refused.value) and MASK in str(refused.value)


# --- chaosdb check: one JSON line, exit 0 / 1 / 2 ------------------------------------------------------------------


def _check(capsys, *argv) -> tuple[int, dict, str]:
    status = cli.main(["check", *argv])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1, captured.out
    return status, json.loads(lines[0]), captured.err


def test_check_exits_0_when_every_check_passes_1_when_one_fails_2_on_bad_input(tmp_path, capsys):
    path = _checks_file(tmp_path, [{"name": "good", "probe": _probe("constant", True)},
                                   {"name": "bad", "probe": _probe("boom", True)}])
    status, result, _ = _check(capsys, path, "good")
    assert status == 0 and result["ok"] is True and [r["check"] for r in result["checks"]] == ["good"]
    assert set(result) == {"ok", "checks", "latency_ms"}
    assert set(result["checks"][0]) == {"check", "ok", "value", "reason", "latency_ms", "at"}
    status, result, _ = _check(capsys, path)
    assert status == 1 and result["ok"] is False and [r["ok"] for r in result["checks"]] == [True, False]
    status, result, err = _check(capsys, path, "nope")
    assert status == 2 and result["ok"] is False and "no check named 'nope'" in result["error"]
    assert err.strip() == f"chaosdb: error: {result['error']}"
    status, result, err = _check(capsys, str(tmp_path / "missing.json"))
    assert status == 2 and "cannot read" in result["error"] and len(err.splitlines()) == 1


def test_check_within_evaluates_again_until_every_check_passes_or_the_time_is_up(tmp_path, capsys):
    counter = tmp_path / "calls"
    path = _checks_file(tmp_path, [{"name": "back", "probe": _probe("passes_from_call", True, {
        "counter": str(counter), "call": 3})}])
    status, result, _ = _check(capsys, path, "--within", "30", "--every", "0.05")
    assert status == 0 and result["ok"] is True and result["rounds"] == 3 and counter.read_text() == "3"
    counter.unlink()
    status, result, _ = _check(capsys, path)
    assert status == 1 and "rounds" not in result and counter.read_text() == "1"
    never = _checks_file(tmp_path, [{"name": "back", "probe": _probe("passes_from_call", True, {
        "counter": str(counter), "call": 10**6})}])
    status, result, _ = _check(capsys, never, "--within", "0.2", "--every", "0.05")
    assert status == 1 and result["ok"] is False and result["rounds"] >= 1


def test_check_with_var_overrides_the_configuration(tmp_path, capsys):
    path = _checks_file(tmp_path, [{"name": "c", "probe": _probe("configured", "b", {"key": "a"})}],
                        configuration={"a": "x"})
    assert _check(capsys, path)[0] == 1
    assert _check(capsys, path, "--var", "a=b")[0] == 0


# --- chaosdb serve: the app, the hysteresis, the real server -------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _result(name: str, ok: bool, reason: str | None = None) -> dict:
    return {"check": name, "ok": ok, "value": ok, "reason": None if ok else (reason or "it is down"),
            "latency_ms": 1.0, "at": "2026-11-27T04:00:00.000+00:00"}


@pytest.fixture
def served():
    checks = CheckSet("test", (Check("primary", _probe("constant"), for_s=10), Check("lag", _probe("constant"))),
                      groups={"everything": ("primary", "lag")})
    clock = FakeClock()
    states = StateStore(checks, clock)
    return create_app(checks, states).test_client(), states, clock


def test_a_check_not_evaluated_yet_answers_503_and_an_unknown_one_404(served):
    client, _, _ = served
    answer = client.get("/checks/primary")
    assert answer.status_code == 503 and answer.json["reason"] == NOT_EVALUATED
    unknown = client.get("/checks/primry")
    assert unknown.status_code == 404 and unknown.json["checks"] == ["primary", "lag", "everything"]
    assert client.get("/healthz").status_code == 200
    assert client.get("/checks").status_code == 503


def test_a_failing_check_answers_503_only_after_failing_for_its_for_s(served):
    client, states, clock = served
    assert states.record(_result("primary", True)) == "passing"
    assert states.record(_result("primary", True)) is None
    assert client.get("/checks/primary").status_code == 200
    assert states.record(_result("primary", False, "no leader")) == "failing"
    clock.now += 4
    states.record(_result("primary", False, "no leader"))
    answer = client.get("/checks/primary")
    assert answer.status_code == 200 and answer.json["failing_for_s"] == 4.0
    assert answer.json["consecutive_failures"] == 2 and answer.json["for_s"] == 10
    assert answer.json["reason"] == "failing for 4.0 s, under its for_s of 10 s: no leader"
    assert answer.json["failing_since"] == "2026-11-27T04:00:00.000+00:00" and answer.json["ok"] is False
    clock.now += 6  # ten seconds without a pass
    answer = client.get("/checks/primary")
    assert answer.status_code == 503 and answer.json["reason"] == "failing for 10.0 s (for_s 10 s): no leader"
    assert states.record(_result("primary", True)) == "passing"
    answer = client.get("/checks/primary")
    assert answer.status_code == 200 and answer.json["failing_since"] is None and answer.json["reason"] is None
    # a new failure starts the count again
    states.record(_result("primary", False))
    clock.now += 9
    assert client.get("/checks/primary").status_code == 200


def test_for_s_zero_answers_503_at_the_first_failure_and_the_whole_answers_with_its_worst(served):
    client, states, clock = served
    states.record(_result("primary", True))
    states.record(_result("lag", True))
    assert client.get("/checks").status_code == 200 and client.get("/checks/everything").status_code == 200
    states.record(_result("lag", False))
    assert client.get("/checks/lag").status_code == 503
    everything = client.get("/checks")
    assert everything.status_code == 503 and [c["status"] for c in everything.json["checks"]] == [200, 503]
    group = client.get("/checks/everything")
    assert group.status_code == 503 and group.json["reason"] == "lag answer 503"


def _wait_for(predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_the_real_server_answers_on_a_free_port_and_stops(tmp_path):
    checks = load_checks(_checks_file(tmp_path, [{"name": "good", "probe": _probe("constant", True)},
                                                 {"name": "bad", "probe": _probe("boom", True)}]))
    servers: list[CheckServer] = []
    thread = threading.Thread(target=run_server, args=(checks, "127.0.0.1", 0, 0.2), kwargs={"ready": servers.append})
    thread.start()
    try:
        server = _wait_for(lambda: servers and servers[0])
        assert server.port > 0
        good = _wait_for(lambda: (r := requests.get(f"{server.url}/checks/good", timeout=5)).status_code == 200 and r)
        assert good.json()["ok"] is True and good.json()["check"] == "good"
        bad = requests.get(f"{server.url}/checks/bad", timeout=5)
        assert bad.status_code == 503 and "RuntimeError: the database is on fire" in bad.json()["reason"]
        assert requests.get(f"{server.url}/checks/none", timeout=5).status_code == 404
        assert requests.get(f"{server.url}/healthz", timeout=5).status_code == 200
    finally:
        if servers:
            servers[0].stop()
        thread.join(timeout=15)
    assert not thread.is_alive() and not servers[0].poller.is_alive()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{servers[0].url}/healthz", timeout=2)


def test_sigterm_stops_chaosdb_serve(tmp_path):
    path = _checks_file(tmp_path, [{"name": "good", "probe": _probe("constant", True)}])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "chaosdb.cli", "serve", path, "--port", "0",
                                "--interval", "0.2"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not any("passes" in line for line in lines):
            line = process.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        url = next(line for line in lines if "serving" in line).split(" on ", 1)[1].split("/checks")[0]
        assert requests.get(f"{url}/checks/good", timeout=5).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert "stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_serve_without_its_extra_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    real = extras._installed
    monkeypatch.setattr(extras, "_installed", lambda m: m != "waitress" and real(m))
    path = _checks_file(tmp_path, [{"name": "good", "probe": _probe("constant", True)}])
    assert cli.main(["serve", path]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'chaostoolkit-db[serve]'" in err, err


def test_a_port_in_use_is_one_sentence(tmp_path):
    checks = load_checks(_checks_file(tmp_path, [{"name": "good", "probe": _probe("constant", True)}]))
    first = CheckServer(checks, port=0)
    try:
        with pytest.raises(Exception, match=f"cannot listen on 127.0.0.1:{first.port}"):
            CheckServer(checks, port=first.port)
    finally:
        first.server.close()


# --- the probes the shipped checks name --------------------------------------------------------------------------


def test_the_shipped_tikv_checks_against_the_pd_stand_in():
    with PDStandin() as pd:
        pd.state.regions[1]["leader"] = None
        checks = load_checks("shipped:tikv", [f"pd_url={pd.url}"])
        result = evaluate_all(checks)
        by_name = {r["check"]: r for r in result["checks"]}
        assert by_name["pd-healthy"]["ok"] is True
        assert by_name["no-leaderless-region"]["ok"] is False and by_name["no-leaderless-region"]["value"] == 1


def test_the_manifests_in_the_docs_validate():
    from chaosdb.manifests.validate import validate_text

    text = (ROOT / "docs" / "checks.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    manifests = [b for b in blocks if b.startswith("apiVersion:")]
    assert len(manifests) == 2
    reports = [r for m in manifests for r in validate_text(m, "docs/checks.md")]
    assert [r.as_dict()["kind"] for r in reports] == ["Deployment", "Service", "Workflow"]
    assert all(r.ok for r in reports), [r.lines() for r in reports]
