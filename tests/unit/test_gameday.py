"""Game-day suites (validation, expansion), aggregation and the regression gate, without running chaos."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.gameday.aggregate import aggregate, spread
from chaosdb.gameday.gate import gate, load_summary, parse_check
from chaosdb.gameday.render import write_report
from chaosdb.gameday.suite import SuiteError, apply_parameters, load_suite, plan_runs, sweep_values
from chaosdb.report.upb import upb_indices

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"


def write_suite(tmp_path, body, name="suite.yaml"):
    import yaml

    path = tmp_path / name
    path.write_text(yaml.safe_dump(body) if name.endswith(".yaml") else json.dumps(body))
    return path


def base_suite(**scenario):
    sc = {"name": "kill", "experiment": str(EXPERIMENTS / "thesis-3-node-kill.json")}
    sc.update(scenario)
    return {"name": "t", "cluster": {"name": "gd", "address_base": "127.0.0.71"}, "scenarios": [sc]}


def test_sweep_values_are_exact_decimal_steps():
    cpu = sweep_values({"from": 0.05, "to": 0.2, "step": 0.01})
    assert len(cpu) == 16 and cpu[0] == 0.05 and cpu[5] == 0.1 and cpu[-1] == 0.2
    assert all(isinstance(v, float) for v in cpu)
    mem = sweep_values({"from": 128, "to": 512, "step": 32})
    assert mem == list(range(128, 513, 32)) and all(isinstance(v, int) for v in mem)
    assert sweep_values({"values": ["a", 3]}) == ["a", 3]
    for bad, msg in (({"from": 1, "to": 0, "step": 1}, "above"), ({"from": 0, "to": 1, "step": 0}, "> 0"),
                     ({"from": 0, "to": 1}, "missing step"), ({"values": [], "from": 1}, "not both"),
                     ({"from": 0, "to": 5000, "step": 1}, "at most 1000")):
        with pytest.raises(SuiteError, match=msg):
            sweep_values(bad)


def test_a_suite_expands_to_runs_with_parameters_applied(tmp_path):
    body = base_suite(repetitions=3, cycle={"parameter": "activity:kill-the-primary-node.target",
                                            "values": ["node1", "node2"]},
                      set={"activity:kill-the-primary-node.pauses.after": 12, "control:tpcc-load.users": 4})
    suite = load_suite(write_suite(tmp_path, body))
    runs = plan_runs(suite, validate=False)
    assert [r.id for r in runs] == ["kill-r01", "kill-r02", "kill-r03"]
    targets = []
    for r in runs:
        kill = next(a for a in r.experiment["method"] if a["name"] == "kill-the-primary-node")
        targets.append(kill["provider"]["arguments"]["target"])
        assert kill["pauses"]["after"] == 12
        controls = {c["name"]: c["provider"].get("arguments", {}) for c in r.experiment["controls"]}
        assert controls["tpcc-load"]["users"] == 4
        assert controls["embedded-cluster"]["down_after"] is False  # one cluster for the whole suite
        assert r.experiment["configuration"]["chaosdb_cluster"] == "gd"
        assert r.experiment["configuration"]["address_base"] == "127.0.0.71"
    assert targets == ["node1", "node2", "node1"]
    # the source file is untouched and the runs' specs differ only where their parameters do
    source = json.loads((EXPERIMENTS / "thesis-3-node-kill.json").read_text())
    assert source["method"][0]["provider"]["arguments"]["target"] == "leader"
    assert runs[0].spec_hash == runs[2].spec_hash != runs[1].spec_hash


def test_sweeps_cycles_and_interleaving(tmp_path):
    body = {"name": "s", "order": "interleaved", "repetitions": 2, "scenarios": [
        {"name": "cpu", "experiment": str(EXPERIMENTS / "cpu-limit-leader.json"),
         "sweep": {"parameter": "activity:limit-the-leader-cpu-to-5pct.quota_s", "from": 0.05, "to": 0.07,
                   "step": 0.01}},
        {"name": "kill", "experiment": str(EXPERIMENTS / "thesis-3-node-kill.json"), "repetitions": 1,
         "cycle": {"parameter": "cluster:leader", "values": ["node3"]}, "prepare": {"synchronous_standbys": 1}}]}
    runs = plan_runs(load_suite(write_suite(tmp_path, body, "s.json")), validate=False)
    assert [r.id for r in runs] == ["cpu-v0.05-r01", "kill-r01", "cpu-v0.05-r02", "cpu-v0.06-r01", "cpu-v0.06-r02",
                                    "cpu-v0.07-r01", "cpu-v0.07-r02"]
    quotas = [r.experiment["method"][0]["provider"]["arguments"]["quota_s"] for r in runs if r.scenario == "cpu"]
    assert quotas == [0.05, 0.05, 0.06, 0.06, 0.07, 0.07]
    kill = next(r for r in runs if r.scenario == "kill")
    assert kill.prepare == {"synchronous_standbys": 1, "leader": "node3"}
    assert kill.sweep is None and runs[0].sweep == {"parameter": "activity:limit-the-leader-cpu-to-5pct.quota_s",
                                                    "value": 0.05}


@pytest.mark.parametrize("change,message", [
    ({"repetitons": 3}, "unknown key (did you mean 'repetitions'?)"),
    ({"experiment": "nope.json"}, "does not exist"),
    ({"set": {"activity:kill-the-primry-node.target": "leader"}}, "did you mean 'kill-the-primary-node'"),
    ({"set": {"method:x.y": 1}}, "unknown parameter kind"),
    ({"set": {"activity:kill-the-primary-node": 1}}, "must be activity:NAME.ARG"),
    ({"upb": {"K": 1, "F": 2}}, "F (2) > K (1)"),
    ({"repetitions": 0}, "within 1..1000"),
    ({"cycle": {"parameter": "cluster:leader", "values": ["primary"]}}, "node name like node1"),
    ({"set": {"activity:kill-the-primary-node.tagret": "leader"}}, "Chaos Toolkit refuses"),
    ({"between": {"cooldown_s": "ten"}}, "must be a number"),
])
def test_bad_suites_are_refused_with_a_clear_message(tmp_path, change, message):
    with pytest.raises(SuiteError) as err:
        load_suite(write_suite(tmp_path, base_suite(**change)))
    assert message in str(err.value)


def test_bad_suite_file_level_errors(tmp_path):
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    with pytest.raises(SuiteError, match="not valid YAML"):
        load_suite(tmp_path / "broken.yaml")
    with pytest.raises(SuiteError, match="a scenario named 'kill' comes twice"):
        body = base_suite()
        body["scenarios"].append(dict(body["scenarios"][0]))
        load_suite(write_suite(tmp_path, body))
    with pytest.raises(SuiteError, match="cluster.address_base"):
        body = base_suite()
        body["cluster"]["address_base"] = "10.0.0.1"
        load_suite(write_suite(tmp_path, body))


def test_apply_parameters_reaches_hypothesis_probes_and_configuration():
    exp = json.loads((EXPERIMENTS / "thesis-3-node-kill.json").read_text())
    out = apply_parameters(exp, {"activity:p99-vs-baseline-last-10s.window_s": 5, "configuration:baseline_s": 9})
    probe = next(p for p in out["steady-state-hypothesis"]["probes"] if p["name"] == "p99-vs-baseline-last-10s")
    assert probe["provider"]["arguments"]["window_s"] == 5 and out["configuration"]["baseline_s"] == 9


def test_every_ready_suite_is_valid():
    suites = sorted((EXPERIMENTS / "gamedays").glob("*.yaml"))
    assert len(suites) >= 5
    for path in suites:
        suite = load_suite(path)  # validates every run's experiment with Chaos Toolkit too
        assert plan_runs(suite, validate=False)


# ------------------------------------------------------------------------------------------ aggregation

def fake_metrics(p99, recovery, tps=500.0, impact_tps=400.0, error_rate=0.01, disturbed=True):
    base = {"mean_ms": 5.0, "std_ms": 2.0, "p50_ms": 4.0, "p95_ms": 10.0, "p99_ms": 20.0, "throughput_tps": tps,
            "error_rate": 0.0}
    impact = {"mean_ms": 7.0, "std_ms": 3.0, "p50_ms": p99 / 5, "p95_ms": p99 / 2, "p99_ms": p99,
              "throughput_tps": impact_tps, "error_rate": error_rate}
    return {"baseline": base, "impact": impact,
            "recovery": {"duration_s": recovery if disturbed else None, "onset_ts": 1.0 if disturbed else None,
                         "unavailability_s": 2.0,
                         "disturbances": [{}] if disturbed else []},
            "degradation": {"throughput_pct": round((1 - impact_tps / tps) * 100, 3)}}


def fake_results(tmp_path, runs, sweeps=None, upb=None, name="fake"):
    """runs: list of (scenario, status, metrics|None, sweep_value|None)."""
    res = tmp_path / name
    entries = []
    scenarios = {}
    for i, (scenario, status, metrics, value) in enumerate(runs):
        rid = f"{scenario}-{i}"
        d = res / "runs" / rid
        d.mkdir(parents=True)
        if metrics is not None:
            (d / "metrics.json").write_text(json.dumps(metrics))
        entry = {"id": rid, "scenario": scenario, "status": status, "dir": f"runs/{rid}",
                 "parameters": {"cluster:leader": f"node{i % 3 + 1}"},
                 "sweep": {"parameter": "p", "value": value} if value is not None else None,
                 "upb": (upb or {}).get(scenario)}
        entries.append(entry)
        scenarios.setdefault(scenario, {"name": scenario, "experiment": "x.json", "upb": (upb or {}).get(scenario),
                                        "sweep": (sweeps or {}).get(scenario)})
    manifest = {"suite": {"name": name, "scenarios": list(scenarios.values())}, "runs": entries}
    (res / "manifest.json").write_text(json.dumps(manifest))
    return res


def test_aggregate_medians_spread_flakiness_and_table(tmp_path):
    res = fake_results(tmp_path, [
        ("a", "completed", fake_metrics(100, 5.0), None),
        ("a", "deviated", fake_metrics(300, 9.0), None),
        ("a", "completed", fake_metrics(200, None, error_rate=0.0, disturbed=False), None),
        ("a", "interrupted", None, None),
        ("b", "completed", fake_metrics(50, 1.0), None),
    ])
    s = aggregate(res)
    a = next(x for x in s["scenarios"] if x["scenario"] == "a")
    assert a["planned"] == 4 and a["finished"] == 3 and a["unfinished"] == {"interrupted": 1}
    assert a["p99_ms"] == {"n": 3, "median": 200.0, "min": 100.0, "q1": 150.0, "q3": 250.0, "max": 300.0}
    assert a["hypothesis_failed"] == round(1 / 3, 3) and a["manifested"] == round(2 / 3, 3)
    assert a["recovery"]["values"] == [5.0, 9.0, None] and a["recovery"]["not_recovered"] == 1
    assert a["recovery"]["median"] == statistics.median([5.0, 9.0])
    assert a["targets"] == ["node1", "node2", "node3"]
    t = s["table_6_1"]
    assert [r["scenario"] for r in t["scenarios"]] == ["a", "b"] and t["scenarios"][0]["p99_ms"] == 200.0
    assert t["scenarios"][0]["p99_change_pct"] == pytest.approx((200 / 20 - 1) * 100, abs=0.1)
    out = write_report(res)
    assert {"summary.json", "report.md", "report.html", "recovery.png"} <= set(out["files"])
    html = (res / "report.html").read_text()
    assert "Table 6.1" in html and "data:image/png;base64," in html and "<script" not in html
    assert "| a | 3/4 | 0.33 | 0.67 |" in (res / "report.md").read_text()


def test_sweep_curves_and_upb_matrix(tmp_path):
    runs = [("cpu", "completed" if v > 0.05 else "deviated", fake_metrics(1000 * (0.25 - v), 10.0), v)
            for v in (0.05, 0.1, 0.2) for _rep in range(2)]
    upb = {"k0": {"K": 0, "F": 0}, "k1f1": {"K": 1, "F": 1}, "k2f1": {"K": 2, "F": 1}, "k2f2": {"K": 2, "F": 2}}
    runs += [("k0", "completed", fake_metrics(10, None, tps=240.0, impact_tps=0.0), None),
             ("k1f1", "completed", fake_metrics(10, None, tps=156.0, impact_tps=152.0), None),
             ("k1f1", "completed", fake_metrics(10, None, tps=158.0, impact_tps=150.0), None),
             ("k2f1", "completed", fake_metrics(10, None, tps=112.0, impact_tps=110.0), None),
             ("k2f2", "completed", fake_metrics(10, None, tps=113.0, impact_tps=109.0), None)]
    res = fake_results(tmp_path, runs, sweeps={"cpu": {"parameter": "quota", "values": [0.05, 0.1, 0.2]}}, upb=upb)
    s = aggregate(res)
    (sweep,) = s["sweeps"]
    assert [p["value"] for p in sweep["points"]] == [0.05, 0.1, 0.2]
    assert [p["hypothesis_failed"] for p in sweep["points"]] == [1.0, 0.0, 0.0]
    assert [p["p99_ms"]["median"] for p in sweep["points"]] == pytest.approx([200.0, 150.0, 50.0])
    T = s["upb"]["T"]
    assert T == {"0": {"0": 240.0}, "1": {"0": 157.0, "1": 151.0}, "2": {"0": 112.5, "1": 110.0, "2": 109.0}}
    assert s["upb"]["indices"] == upb_indices({"T": T})
    assert "sweep-cpu.png" in write_report(res)["files"]


# ------------------------------------------------------------------------------------------------- gate

def test_gate_passes_within_limits_and_fails_beyond(tmp_path):
    base = load_summary(fake_results(tmp_path, [("a", "completed", fake_metrics(100, 5.0), None)], name="base"))
    same = load_summary(tmp_path / "base")
    checks = [parse_check("p99_ms:+20%"), parse_check("recovery_s:+2")]
    assert gate(same, base, checks)["passed"]
    worse = fake_results(tmp_path, [("a", "completed", fake_metrics(130, 6.0), None)], name="worse")
    r = gate(load_summary(worse), base, checks)
    assert not r["passed"] and r["failed"] == 1
    row = next(x for x in r["rows"] if x["metric"] == "p99_ms")
    assert row["verdict"] == "worse" and row["change_pct"] == 30.0
    assert next(x for x in r["rows"] if x["metric"] == "recovery_s")["verdict"] == "ok"  # 1 s worse, 2 allowed
    never = fake_results(tmp_path, [("a", "completed", fake_metrics(100, None), None)], name="never")
    r = gate(load_summary(never), base, [parse_check("recovery_s:+100%")])
    assert not r["passed"] and "disappeared" in r["rows"][0]["detail"]
    slower = fake_results(tmp_path, [("a", "completed", fake_metrics(100, 5.0, impact_tps=300.0), None)],
                          name="slower")
    assert not gate(load_summary(slower), base, [parse_check("throughput_tps:+10%")])["passed"]  # lower is worse
    other = fake_results(tmp_path, [("b", "completed", fake_metrics(100, 5.0), None)], name="other")
    assert gate(load_summary(other), base, checks)["rows"][0]["verdict"] == "missing"
    assert gate(load_summary(other), base, checks, allow_missing=True)["passed"]


@pytest.mark.parametrize("text", ["p99", "p99_ms:20", "latency:+5%", "p99_ms:-5%", "p99_ms:+x"])
def test_gate_check_syntax_errors(text):
    from chaosdb.core.errors import ChaosDBError

    if text == "p99_ms:20":  # a bare number is an absolute limit
        assert parse_check(text)["relative"] is False
        return
    with pytest.raises(ChaosDBError):
        parse_check(text)


def test_gate_cli_exit_codes(tmp_path):
    fake_results(tmp_path, [("a", "completed", fake_metrics(100, 5.0), None)], name="base")
    fake_results(tmp_path, [("a", "completed", fake_metrics(200, 5.0), None)], name="worse")
    cli = [sys.executable, "-m", "chaosdb.cli", "gameday", "gate"]
    ok = subprocess.run(cli + [str(tmp_path / "base"), "--baseline", str(tmp_path / "base")], capture_output=True,
                        text=True)
    assert ok.returncode == 0 and "gate: PASSED" in ok.stdout
    bad = subprocess.run(cli + [str(tmp_path / "worse"), "--baseline", str(tmp_path / "base"), "--check",
                                "p99_ms:+50%"], capture_output=True, text=True)
    assert bad.returncode == 1 and "WORSE" in bad.stdout and "FAILED (1 regression" in bad.stdout
    wrong = subprocess.run(cli + [str(tmp_path / "worse"), "--baseline", str(tmp_path / "base"), "--check", "p99"],
                           capture_output=True, text=True)
    assert wrong.returncode == 2 and "METRIC:+N%" in wrong.stderr
    missing = subprocess.run(cli + [str(tmp_path / "nothing"), "--baseline", str(tmp_path / "base")],
                             capture_output=True, text=True)
    assert missing.returncode == 2


def test_a_fault_manifests_by_a_real_disturbance_or_errors():
    from chaosdb.gameday.aggregate import manifested

    blip = fake_metrics(20, 0.03, error_rate=0.0)  # five slow operations in a row at 1,000/s
    assert not manifested(blip)
    assert manifested(fake_metrics(20, 0.6, error_rate=0.0))
    assert manifested(fake_metrics(20, 0.03, error_rate=0.001))
    never = fake_metrics(20, None, error_rate=0.0)  # onset found, never ended within the run
    assert manifested(never)
    later = fake_metrics(20, 0.03, error_rate=0.0)
    later["recovery"]["disturbances"] = [{"duration_s": 0.03, "after_fault": "kill"},
                                         {"duration_s": 4.0, "after_fault": "kill"}]
    later["faults"] = [{"name": "kill", "start_ts": 10.0}, {"name": "restart", "start_ts": 40.0}]
    assert manifested(later)
    later["recovery"]["disturbances"][1]["after_fault"] = "restart"  # the restart's bump is not the fault
    assert not manifested(later)


def test_upb_throughput_is_measured_while_the_nodes_are_down():
    from chaosdb.gameday.aggregate import fault_window_tps

    m = fake_metrics(10, None, impact_tps=300.0)
    m["faults"] = [{"name": "stop-f-replicas", "start_ts": 100.0, "end_ts": 102.0},
                   {"name": "make-sure-every-node-runs", "start_ts": 135.0, "end_ts": 140.0, "rollback": True}]
    m["windows"] = [{"start_ts": t, "seconds": 5.0, "tps": tps} for t, tps in
                    ((95.0, 500.0), (100.0, 50.0), (105.0, 200.0), (110.0, 210.0), (115.0, 190.0), (120.0, 200.0),
                     (125.0, 200.0), (130.0, 200.0), (135.0, 80.0), (140.0, 500.0))]
    # windows 105..130 lie between the stop's end (102) and the restart (135): mean 200
    assert fault_window_tps(m) == 200.0
    m["windows"] = []
    assert fault_window_tps(m) == 300.0  # no windows: the impact window's throughput


def test_spread_ignores_missing_values():
    assert spread([None, None]) is None
    assert spread([3, None, 1])["median"] == 2.0


def test_the_suite_model_is_a_json_schema_editors_can_use_and_it_agrees_with_the_loader(tmp_path):
    """``chaosdb gameday schema`` prints a valid JSON Schema; every shipped suite fits it, and a suite the loader
    refuses for its shape is refused by the schema too (one model behind both)."""
    import subprocess
    import sys

    import jsonschema
    import yaml

    done = subprocess.run([sys.executable, "-m", "chaosdb.cli", "gameday", "schema"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    shipped = sorted((EXPERIMENTS / "gamedays").glob("*.yaml"))
    assert len(shipped) >= 5
    for path in shipped:
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path.name, [e.message for e in errors])
    for change in ({"repetitons": 3}, {"upb": {"K": 1}}, {"repetitions": 0}, {"between": {"cooldown_s": "ten"}},
                   {"prepare": {"leader": "primary"}}):
        body = base_suite(**change)
        assert list(validator.iter_errors(body)), change
        with pytest.raises(SuiteError):
            load_suite(write_suite(tmp_path, body))


def test_history_anomalies_are_spread_across_runs_and_the_gate_holds_them(tmp_path):
    def with_history(anomalies, info):
        return {**fake_metrics(100, 5.0), "history": {"anomaly_count": anomalies, "info": info}}

    old = fake_results(tmp_path, [("a", "completed", with_history(0, 3), None),
                                  ("a", "completed", with_history(0, 5), None)], name="old")
    new = fake_results(tmp_path, [("a", "completed", with_history(2, 4), None),
                                  ("a", "completed", with_history(4, 6), None)], name="new")
    a = next(x for x in aggregate(new)["scenarios"] if x["scenario"] == "a")
    assert a["history_anomalies"]["median"] == 3.0 and a["history_info"]["max"] == 6.0
    result = gate(aggregate(new), aggregate(old), [parse_check("history_anomalies:+0")])
    assert result["passed"] is False and result["rows"][0]["worse_by"] == 3.0
