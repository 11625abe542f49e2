"""The Patroni-on-Kubernetes experiments and their postgres/ Chaos Mesh templates: generated, valid offline, each
fault aimed at a Patroni role with a kind this kernel carries out, the hypothesis measuring the load (and the outage
where the primary moves), and the game-day suite pairing the leader with a follower."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chaosdb.chaosmesh import capabilities
from chaosdb.chaosmesh.capabilities import NETEM_NETWORK_ACTIONS, refuse_what_this_kernel_cannot
from chaosdb.core.errors import ChaosDBError
from chaosdb.gameday.suite import load_suite, plan_runs
from chaosdb.manifests.templates import render
from chaosdb.manifests.validate import validate_object
from tools import make_k8s_experiments, make_manifests

ROOT = Path(__file__).resolve().parents[2]
K8S_DIR = ROOT / "experiments" / "kubernetes"
SUITE = ROOT / "experiments" / "gamedays" / "chaos-mesh-fault-matrix.yaml"
LOCAL_API = "https://127.0.0.1:6443"

#: the Chaos Mesh ones (the chaosk8s experiment beside them has a test of its own)
PATRONI = sorted(name for name, exp in make_k8s_experiments.EXPERIMENTS.items()
                 if "patroni" in exp["tags"] and "chaos-mesh" in exp["tags"])
#: experiments whose fault moves the primary: the hypothesis bounds the new leader's election and the commit gap
MOVES_THE_PRIMARY = {"chaosmesh-pod-failure-patroni-primary", "chaosmesh-partition-patroni-primary-from-api"}
#: the primary restarts in its own pod, or a recreated pod with the same member name takes its lock back (measured
#: on the real node: 2 pod-kills of 5): the commit gap is bounded, the leader may stay the same
GAP_ONLY = {"chaosmesh-container-kill-patroni-primary", "chaosmesh-pod-kill-patroni-primary"}


def _experiment(name: str) -> dict[str, Any]:
    return json.loads((K8S_DIR / f"{name}.json").read_text())


def _fault(exp: dict[str, Any]) -> dict[str, Any]:
    faults = [a for a in exp["method"] if a["provider"]["func"] == "create_chaos"]
    assert len(faults) == 1, exp["title"]
    return faults[0]


def _defaults(exp: dict[str, Any]) -> dict[str, str]:
    return {k: str(v.get("default", "")) for k, v in exp["configuration"].items()}


def _rendered(exp: dict[str, Any]) -> dict[str, Any]:
    """The chaos object the experiment's fault creates with the configuration's defaults (before the target narrows
    its selector)."""
    args = _fault(exp)["provider"]["arguments"]
    config = _defaults(exp)
    values = {k: re.sub(r"\$\{(\w+)\}", lambda m: config[m.group(1)], v) for k, v in args["variables"].items()}
    return render(args["template"], values).objects[0]


def test_the_set_is_the_matrix_plus_what_only_kubernetes_has():
    assert set(PATRONI) == {
        "chaosmesh-pod-kill-patroni-primary", "chaosmesh-pod-kill-patroni-replica",
        "chaosmesh-container-kill-patroni-primary", "chaosmesh-pod-failure-patroni-primary",
        "chaosmesh-stress-cpu-patroni-primary", "chaosmesh-stress-cpu-patroni-replica",
        "chaosmesh-stress-memory-patroni-primary", "chaosmesh-stress-memory-patroni-replica",
        "chaosmesh-partition-patroni-primary", "chaosmesh-partition-patroni-replica",
        "chaosmesh-partition-patroni-primary-from-api", "chaosmesh-time-skew-patroni-replica"}


@pytest.mark.parametrize("name", PATRONI)
def test_committed_file_is_what_the_generator_writes(name):
    assert (K8S_DIR / f"{name}.json").read_text() == make_k8s_experiments.render(name), \
        "run: python -m tools.make_k8s_experiments"


@pytest.mark.parametrize("name", PATRONI)
def test_the_fault_aims_at_a_patroni_role_with_a_kind_this_kernel_carries_out(name, monkeypatch):
    exp = _experiment(name)
    args = _fault(exp)["provider"]["arguments"]
    assert args["template"].startswith("postgres/") and args["wait"] is True
    role = "patroni-primary" if "-primary" in name else "patroni-replica"
    assert args["target"] == {"role": role, "namespace": "${k8s_namespace}"}
    obj = _rendered(exp)
    assert validate_object(obj).ok
    assert obj["kind"] != "IOChaos"
    assert not (obj["kind"] == "NetworkChaos" and obj["spec"]["action"] in NETEM_NETWORK_ACTIONS)
    # on the local cluster (an API on loopback with a real node) and a kernel without netem it is not refused ...
    monkeypatch.setattr(capabilities, "netem_available", lambda: False)
    refuse_what_this_kernel_cannot(obj, LOCAL_API, lambda: True)
    # ... where a netem kind is (the check is live)
    with pytest.raises(ChaosDBError, match="refused before it was created"):
        refuse_what_this_kernel_cannot(render("cockroachdb/network-delay").objects[0], LOCAL_API, lambda: True)
    # the rollback deletes exactly the object the method creates
    (rollback,) = exp["rollbacks"]
    assert rollback["provider"]["func"] == "delete_chaos"
    assert rollback["provider"]["arguments"] == {"kind": obj["kind"], "name": args["name"],
                                                 "namespace": "${chaos_namespace}"}


@pytest.mark.parametrize("name", PATRONI)
def test_the_hypothesis_holds_the_load_the_cluster_and_where_the_primary_moves_the_outage(name):
    exp = _experiment(name)
    probes = {p["name"]: p for p in exp["steady-state-hypothesis"]["probes"]}
    funcs = {p["provider"]["func"] for p in probes.values()}
    assert {"cluster_is_healthy", "statefulset_is_ready", "latency_ratio_to_baseline", "error_rate"} <= funcs
    assert probes["p99-vs-baseline-last-10s"]["tolerance"] == {"type": "range", "range": [0, 3]}
    assert probes["error-rate-last-10s"]["tolerance"] == {"type": "range", "range": [0, 0.01]}
    outage = funcs & {"longest_commit_gap_s", "time_to_new_leader_s"}
    if name in MOVES_THE_PRIMARY:
        assert outage == {"longest_commit_gap_s", "time_to_new_leader_s"}
    elif name in GAP_ONLY:
        assert outage == {"longest_commit_gap_s"}
    else:
        assert not outage
    # the load is required (its probes are in the hypothesis): refused without a DSN, not a failed hypothesis
    controls = {c["name"]: c for c in exp["controls"]}
    assert list(controls) == ["verdict", "chaosdb-kubernetes", "tpcc-load", "report"]
    assert controls["tpcc-load"]["provider"]["arguments"]["only_with_dsn"] is False


@pytest.mark.parametrize("name", PATRONI)
def test_the_method_observes_then_waits_for_a_healthy_converged_cluster(name):
    exp = _experiment(name)
    fault = _fault(exp)
    assert exp["method"][0]["name"] == fault["name"]
    assert 20 <= fault["pauses"]["after"] <= 40
    funcs = [a["provider"]["func"] for a in exp["method"]]
    timed = "DURATION" in fault["provider"]["arguments"]["variables"]
    assert funcs == ["create_chaos", *(["wait_until_recovered"] if timed else []), "wait_until_healthy",
                     "wait_for_statefulset_ready"]
    healthy = next(a for a in exp["method"] if a["provider"]["func"] == "wait_until_healthy")
    assert healthy["provider"]["arguments"] == {"timeout_s": 300, "converged": True, "stable_s": 5}
    if timed:  # a fault with a duration reverts itself: it ends within the observation (or is waited for)
        duration = _defaults(exp)["chaos_duration"]
        assert fault["provider"]["arguments"]["variables"]["DURATION"] == "${chaos_duration}"
        assert int(duration.rstrip("s")) <= fault["pauses"]["after"]
    config = _defaults(exp)
    assert (config["k8s_namespace"], config["statefulset"]) == ("postgres", "postgres")
    assert exp["configuration"]["patroni_urls"]["key"] == "CHAOSDB_PATRONI_URLS"
    assert exp["description"].count("Expected") >= 1


def test_the_faults_say_what_they_do():
    objects = {name: _rendered(_experiment(name)) for name in PATRONI}
    api = objects["chaosmesh-partition-patroni-primary-from-api"]["spec"]
    assert api["externalTargets"] == ["10.96.0.1"] and api["direction"] == "to" and "target" not in api
    assert api["duration"] == "40s"  # longer than Patroni's ttl (20 s): a failover is expected
    partition = objects["chaosmesh-partition-patroni-primary"]["spec"]
    assert partition["direction"] == "both" and partition["target"]["selector"] == partition["selector"]
    skew = objects["chaosmesh-time-skew-patroni-replica"]["spec"]
    assert skew["clockIds"] == ["CLOCK_REALTIME"] and skew["timeOffset"] == "5m" and skew["duration"] == "30s"
    assert objects["chaosmesh-pod-failure-patroni-primary"]["spec"]["duration"] == "30s"
    memory = objects["chaosmesh-stress-memory-patroni-primary"]["spec"]["stressors"]["memory"]
    assert memory == {"workers": 2, "size": "256MB"}  # fits a machine shared with other work
    for obj in objects.values():
        spec = obj["spec"]
        assert spec["selector"]["labelSelectors"] == {"application": "spilo", "cluster-name": "postgres"}
        assert spec.get("containerNames", ["postgres"]) == ["postgres"]


def test_every_postgres_template_is_valid_with_its_defaults():
    family = [rel for rel in make_manifests.render_all() if rel.startswith("postgres/")]
    assert len(family) == len(make_manifests.PROFILES["postgres"].faults) == 8
    for rel in family:
        (obj,) = render(rel.removesuffix(".yaml")).objects
        report = validate_object(obj, rel)
        assert report.ok, (rel, report.errors)
        assert obj["spec"]["selector"]["namespaces"] == ["postgres"]
        assert obj["kind"] in ("PodChaos", "StressChaos", "NetworkChaos", "TimeChaos")
        if obj["kind"] == "TimeChaos":
            assert obj["spec"]["clockIds"] == ["CLOCK_REALTIME"]


def test_the_patroni_experiments_pass_chaos_toolkits_validation_with_the_clusters_environment(tmp_path, monkeypatch):
    from chaoslib.exceptions import InvalidActivity
    from chaoslib.experiment import ensure_experiment_is_valid
    from chaoslib.loader import load_experiment

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    for key, value in {"CHAOSDB_KUBECONFIG": str(kubeconfig), "CHAOSDB_PATRONI_URLS": "http://127.0.50.1:8008",
                       "CHAOSDB_LOAD_DSN": "postgresql://chaosdb@127.0.50.1:5432/chaosdb?connect_timeout=3",
                       "CHAOSDB_K8S_NAMESPACE": "postgres", "CHAOSDB_STATEFULSET": "postgres"}.items():
        monkeypatch.setenv(key, value)
    for name in PATRONI:
        ensure_experiment_is_valid(load_experiment(str(K8S_DIR / f"{name}.json")))
    # the template's variables are checked there too
    bad = tmp_path / "bad.json"
    bad.write_text((K8S_DIR / "chaosmesh-time-skew-patroni-replica.json").read_text().replace(
        '"TIME_OFFSET": "5m"', '"TIME_OFFSET": "five minutes"'))
    with pytest.raises(InvalidActivity, match="TIME_OFFSET='five minutes' is not valid"):
        ensure_experiment_is_valid(load_experiment(str(bad)))


def test_the_game_day_suite_pairs_the_leader_with_a_follower_for_each_fault():
    suite = load_suite(SUITE)  # validates every run's experiment too
    assert suite.cluster["down_after"] is False  # no embedded cluster of the user's is taken down at the end
    runs = {r.scenario: r for r in plan_runs(suite, validate=False)}
    faults = set()
    for scenario, run in runs.items():
        kind, _, role = scenario.removeprefix("pods-").rpartition("-")
        assert role in ("leader", "follower")
        args = _fault(run.experiment)["provider"]["arguments"]
        assert args["target"]["role"] == ("patroni-primary" if role == "leader" else "patroni-replica")
        if role == "leader":
            twin = _fault(runs[f"pods-{kind}-follower"].experiment)["provider"]["arguments"]
            assert (twin["template"], twin["variables"]) == (args["template"], args["variables"])
            faults.add(args["template"])
    assert faults == {"postgres/pod-kill", "postgres/stress-cpu", "postgres/stress-memory",
                      "postgres/network-partition"}


def test_the_chaostoolkit_kubernetes_experiment_mixes_chaosk8s_with_the_packs_checks():
    exp = _experiment("chaosk8s-terminate-patroni-replica")
    assert make_k8s_experiments.render("chaosk8s-terminate-patroni-replica") == \
        (K8S_DIR / "chaosk8s-terminate-patroni-replica.json").read_text()
    action = exp["method"][0]["provider"]
    assert (action["module"], action["func"]) == ("chaosk8s.pod.actions", "terminate_pods")
    assert "role=replica" in action["arguments"]["label_selector"]
    modules = {p["provider"]["module"] for p in exp["steady-state-hypothesis"]["probes"]}
    assert {"chaosk8s.pod.probes", "chaosdb.postgres.probes", "chaosdb.load.probes"} <= modules
    assert [c["name"] for c in exp["controls"]] == ["verdict", "chaosdb-kubernetes", "tpcc-load", "report"]

