"""Chaos Mesh, Litmus and Kubernetes-level activities through the official ``kubernetes`` client against a
local stand-in of the Kubernetes API (tests/unit/k8s_api_standin.py: real REST paths, verbs, status codes,
Chaos Mesh status transitions, WebSocket exec). No Kubernetes can run here; the opt-in end-to-end test is
tests/integration/test_k8s_real.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from chaosdb.chaosmesh import actions as cm
from chaosdb.chaosmesh import probes as cmp
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import record_problems
from chaosdb.k8s import actions as k8s
from chaosdb.k8s import api
from chaosdb.k8s.roles import resolve_target
from chaosdb.litmus import actions as litmus
from chaosdb.litmus import probes as litmus_probes
from chaosdb.manifests.templates import render
from chaosdb.manifests.validate import validate_object
from tests.chaosrun import ChaosRun
from tests.unit.k8s_api_standin import KubeStandin
from tests.unit.pd_standin import PDStandin
from tests.unit.test_cockroach_actions import crdb  # noqa: F401 - the simulated CockroachDB cluster fixture

ROOT = Path(__file__).resolve().parents[2]
CRDB_LABELS = {"app.kubernetes.io/name": "cockroachdb", "app.kubernetes.io/instance": "cockroachdb"}


@pytest.fixture
def kube(tmp_path):
    api.reset_clients()
    standin = KubeStandin().start()
    standin.add_statefulset("cockroachdb", "crdb", 3, CRDB_LABELS, containers=("db", "log-shipper"))
    cfg = {"k8s_kubeconfig": standin.write_kubeconfig(tmp_path / "kubeconfig"), "k8s_namespace": "crdb"}
    standin.cfg = cfg
    yield standin
    standin.stop()
    api.reset_clients()
    # every object the activities sent passes the offline validation (schema + webhook rules)
    for body in standin.posted:
        report = validate_object(body)
        assert report.ok, (body.get("kind"), report.errors)


def _template_vars(**extra):
    return {"NAMESPACE": "crdb", "DB_NAMESPACE": "crdb", **extra}


def _uid(kube, pod):
    return kube.pods[("crdb", pod)].uid


# ---- Chaos Mesh ----------------------------------------------------------------------------------

def test_chaos_lifecycle_inject_pause_resume_recover_delete(kube):
    cfg = kube.cfg
    made = cm.create_chaos(template="cockroachdb/network-delay", variables=_template_vars(DURATION="3s"),
                           configuration=cfg)
    assert made["phase"] == "injected" and made["selected"] and made["all_injected"]
    assert made["selected_pods"] == ["crdb/cockroachdb-0"]
    obj = kube.objects[("chaos-mesh.org", "networkchaos", "crdb", "cockroachdb-network-delay")]
    assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "chaostoolkit-db"
    assert obj["spec"]["delay"] == {"latency": "100ms", "jitter": "10ms", "correlation": "25"}

    paused = cm.pause_chaos("NetworkChaos", made["name"], configuration=cfg)
    assert paused["paused"] and paused["all_recovered"]
    assert obj["metadata"]["annotations"] == {"experiment.chaos-mesh.org/pause": "true"}
    resumed = cm.resume_chaos("NetworkChaos", made["name"], configuration=cfg)
    assert resumed["injected"] and "experiment.chaos-mesh.org/pause" not in obj["metadata"]["annotations"]
    assert resumed["records"][0]["injected_count"] == 2 and resumed["records"][0]["recovered_count"] == 1

    done = cm.wait_until_recovered("NetworkChaos", made["name"], timeout_s=120, configuration=cfg)
    assert done["phase"] == "recovered" and done["desired_phase"] == "Stop"
    assert cmp.chaos_is_recovered("NetworkChaos", made["name"], configuration=cfg) is True

    gone = cm.delete_chaos("NetworkChaos", made["name"], configuration=cfg)
    assert gone["existed"] and gone["deleted"]
    assert ("chaos-mesh.org", "networkchaos", "crdb", made["name"]) not in kube.objects
    again = cm.delete_chaos("NetworkChaos", made["name"], configuration=cfg)
    assert again["existed"] is False      # idempotent: safe as a rollback
    # status was read with plain GETs: these kinds have no /status subresource
    assert not any(p.endswith("/status") for _, p in kube.requests)


def test_pod_kill_aimed_at_a_named_pod_really_kills_it_and_never_recovers(kube):
    cfg = kube.cfg
    before = _uid(kube, "cockroachdb-2")
    made = cm.create_chaos(template="cockroachdb/pod-kill", variables=_template_vars(), target={"pod": "cockroachdb-2"},
                           configuration=cfg)
    spec = kube.objects[("chaos-mesh.org", "podchaos", "crdb", made["name"])]["spec"]
    assert spec["selector"] == {"namespaces": ["crdb"], "pods": {"crdb": ["cockroachdb-2"]}} and spec["mode"] == "all"
    assert "value" not in spec
    with pytest.raises(ChaosDBError, match="one-shot pod-kill: it never recovers"):
        cm.wait_until_recovered("PodChaos", made["name"], configuration=cfg)
    k8s.wait_for_statefulset_ready("cockroachdb", configuration=cfg, timeout_s=120)
    assert _uid(kube, "cockroachdb-2") != before and _uid(kube, "cockroachdb-0") != before
    cm.delete_chaos("PodChaos", made["name"], configuration=cfg)


def test_nothing_selected_fails_and_rolls_back(kube):
    with pytest.raises(ChaosDBError, match="no pod was selected: check the selector"):
        cm.create_chaos(template="cockroachdb/stress-cpu", variables=_template_vars(LABEL_VALUE="other"), timeout_s=1.5,
                        configuration=kube.cfg)
    assert not [k for k in kube.objects if k[1] == "stresschaos"]      # deleted after the failed wait


def test_invalid_objects_never_reach_the_server(kube):
    with pytest.raises(ChaosDBError, match="would be refused, nothing was created"):
        cm.create_chaos(kind="NetworkChaos", name="loss", spec={"action": "loss", "mode": "one", "selector": {},
                                                                "loss": {"loss": 5}}, configuration=kube.cfg)
    with pytest.raises(ChaosDBError, match="LATENCY='fast' is not valid"):
        cm.create_chaos(template="tikv/network-delay", variables={"LATENCY": "fast"}, configuration=kube.cfg)
    with pytest.raises(ChaosDBError, match="either template"):
        cm.create_chaos(configuration=kube.cfg)
    assert not [r for r in kube.requests if r[0] == "POST"]


def test_server_refusals_are_explained(kube, tmp_path):
    cfg = kube.cfg
    made = cm.create_chaos(template="cockroachdb/stress-memory", variables=_template_vars(), configuration=cfg)
    with pytest.raises(api.K8sApiError, match="HTTP 409 .*already exists"):
        cm.create_chaos(template="cockroachdb/stress-memory", variables=_template_vars(), configuration=cfg)
    custom = api.custom_objects(cfg)
    with pytest.raises(api.K8sApiError, match="HTTP 403 .*immutable.*RBAC"):
        api.call_json("patching", custom.patch_namespaced_custom_object, "chaos-mesh.org", "v1alpha1", "crdb",
                      "stresschaos", made["name"], {"spec": {"duration": "5s"}})
    with pytest.raises(api.K8sApiError, match="HTTP 404 .*CRD is installed"):
        cmp.chaos_status("StressChaos", "missing", configuration=cfg)
    bad = dict(cfg, k8s_kubeconfig=kube.write_kubeconfig(tmp_path / "bad", token="wrong-token"))
    with pytest.raises(api.K8sApiError, match="HTTP 401 .*credentials rejected") as err:
        cmp.chaos_objects(configuration=bad)
    assert "wrong-token" not in str(err.value) and "standin-token" not in str(err.value)
    with pytest.raises(ChaosDBError, match="no kubeconfig at"):
        cmp.chaos_objects(configuration={"k8s_kubeconfig": str(tmp_path / "absent")})
    cm.delete_chaos("StressChaos", made["name"], configuration=cfg)


def test_delete_all_chaos_removes_only_what_this_pack_created(kube):
    cfg = kube.cfg
    cm.create_chaos(template="cockroachdb/io-latency", variables=_template_vars(), configuration=cfg)
    cm.create_chaos(template="cockroachdb/schedule-pod-kill", variables=_template_vars(), configuration=cfg)
    foreign = render("cockroachdb/time-skew", _template_vars(NAME="someone-elses")).objects[0]
    foreign["metadata"]["labels"].pop("app.kubernetes.io/managed-by", None)
    api.custom_objects(cfg).create_namespaced_custom_object("chaos-mesh.org", "v1alpha1", "crdb", "timechaos",
                                                            foreign)
    listed = cmp.chaos_objects(configuration=cfg)
    assert sorted(o["kind"] for o in listed) == ["IOChaos", "Schedule"]
    removed = cm.delete_all_chaos(configuration=cfg)
    assert sorted(r["kind"] for r in removed["deleted"]) == ["IOChaos", "Schedule"]
    assert sorted(t["kind"] for t in removed["targets"]) == ["IOChaos", "Schedule"]
    assert [k[3] for k in kube.objects] == ["someone-elses"]


def test_role_targets_cockroach_leaseholder_and_tikv_leader(kube, crdb):  # noqa: F811
    cfg = dict(crdb(), **kube.cfg)
    resolved = resolve_target({"role": "cockroach-leaseholder", "table": "movr.public.vehicles",
                               "row": ["boston", "22222222-2222-4200-8000-000000000002"]}, cfg)
    assert resolved["pods"] == ["cockroachdb-1"] and resolved["detail"]["node_id"] == 2
    other = resolve_target({"role": "cockroach-not-leaseholder", "table": "movr.public.vehicles",
                            "row": ["boston", "22222222-2222-4200-8000-000000000002"]}, cfg)
    assert other["pods"] == ["cockroachdb-0"]          # n1, a live replica of r57 without the lease
    made = cm.create_chaos(template="cockroachdb/network-partition", variables=_template_vars(),
                           target={"role": "cockroach-leaseholder", "table": "movr.public.vehicles",
                                   "row": ["boston", "22222222-2222-4200-8000-000000000002"]}, configuration=cfg)
    assert made["selected_pods"] == ["crdb/cockroachdb-1"] and made["target"]["detail"]["range"]["range_id"] == 57
    cm.delete_chaos("NetworkChaos", made["name"], configuration=cfg)

    address = "basic-tikv-{i}.basic-tikv-peer.tidb-cluster.svc:{port}"
    with PDStandin(address=address) as pd:
        tcfg = {"pd_url": pd.url}
        leader = resolve_target({"role": "tikv-leader", "key": "usertable:user1", "namespace": "tidb-cluster"}, tcfg)
        follower = resolve_target({"role": "tikv-follower", "key": "usertable:user1"}, tcfg)
        assert leader["pods"] == ["basic-tikv-1"] and leader["namespace"] == "tidb-cluster"
        assert follower["pods"] != leader["pods"] and follower["pods"][0].startswith("basic-tikv-")
        by_store = resolve_target({"role": "tikv-store", "store": 3}, tcfg)
        assert by_store["pods"] == ["basic-tikv-3"]
    with pytest.raises(ChaosDBError, match="unknown target role"):
        resolve_target({"role": "the-leader"}, cfg)
    with pytest.raises(ChaosDBError, match="not a StatefulSet pod address"):
        with PDStandin() as pd:
            resolve_target({"role": "tikv-leader", "key": "k"}, {"pd_url": pd.url})


# ---- Kubernetes-level failures -------------------------------------------------------------------

def test_delete_pod_force_and_grace_wait_for_the_replacement(kube):
    cfg = kube.cfg
    old = _uid(kube, "cockroachdb-1")
    forced = k8s.delete_pods({"pod": "cockroachdb-1"}, force=True, timeout_s=120, configuration=cfg)
    assert forced["grace_period_s"] == 0 and forced["old_uids"] == {"cockroachdb-1": old}
    assert [t["name"] for t in forced["targets"]] == ["cockroachdb-1"] and not record_problems(forced), forced
    assert _uid(kube, "cockroachdb-1") != old and forced["ready_after_s"]["cockroachdb-1"] > 0
    graceful = k8s.delete_pods({"pods": ["cockroachdb-0"]}, grace_period_s=2, timeout_s=120, configuration=cfg)
    assert graceful["grace_period_s"] == 2 and graceful["ready_after_s"]["cockroachdb-0"] > 0.25
    with pytest.raises(api.K8sApiError, match='pods "cockroachdb-9" not found'):
        k8s.delete_pods({"pod": "cockroachdb-9"}, configuration=cfg)


def test_exec_kill_names_the_container_and_waits_for_the_restart(kube):
    cfg = kube.cfg
    out = k8s.kill_container_process({"pod": "cockroachdb-2"}, container="db", signal="SIGKILL", timeout_s=120,
                                     configuration=cfg)
    assert kube.execs[-1] == {"pod": "cockroachdb-2", "namespace": "crdb", "container": "db",
                              "command": ["kill", "-s", "KILL", "1"]}
    assert out["restarts_before"] == {"cockroachdb-2": 0} and kube.pods[("crdb", "cockroachdb-2")].restarts == 1
    assert out["ready_after_s"]["cockroachdb-2"] > 0
    with pytest.raises(ChaosDBError, match="has no container 'cockroach' \\(it has db, log-shipper\\)"):
        k8s.kill_container_process({"pod": "cockroachdb-2"}, container="cockroach", configuration=cfg)
    with pytest.raises(ChaosDBError, match="name the container"):
        k8s.kill_container_process({"pod": "cockroachdb-2"}, container="", configuration=cfg)
    with pytest.raises(ChaosDBError, match="signal must be one of"):
        k8s.kill_container_process({"pod": "cockroachdb-2"}, container="db", signal="BOOM", configuration=cfg)
    assert len(kube.execs) == 1


def test_scale_out_and_rolling_restart_and_image_change(kube):
    cfg = kube.cfg
    scaled = k8s.scale_statefulset("cockroachdb", 4, timeout_s=120, configuration=cfg)
    assert scaled["previous_replicas"] == 3 and scaled["replicas"] == 4 and ("crdb", "cockroachdb-3") in kube.pods
    with pytest.raises(ChaosDBError, match="replicas must be an integer >= 1"):
        k8s.scale_statefulset("cockroachdb", 0, configuration=cfg)
    uids = {p: _uid(kube, p) for p in ("cockroachdb-0", "cockroachdb-3")}
    rolled = k8s.restart_statefulset("cockroachdb", timeout_s=120, configuration=cfg)
    assert rolled["max_not_ready_together"] == 1            # one pod at a time
    assert all(_uid(kube, p) != u for p, u in uids.items())
    annotations = kube.statefulsets[("crdb", "cockroachdb")]["annotations"]
    assert "kubectl.kubernetes.io/restartedAt" in annotations
    swapped = k8s.restart_statefulset("cockroachdb", image="cockroachdb/cockroach:v24.1.0", container="db",
                                      timeout_s=120, configuration=cfg)
    assert swapped["previous_image"] == "cockroachdb/cockroach:v23.2.4"
    assert {p.image for p in kube.pods.values()} == {"cockroachdb/cockroach:v24.1.0"}
    with pytest.raises(ChaosDBError, match="needs both image and container"):
        k8s.restart_statefulset("cockroachdb", image="x:1", configuration=cfg)


# ---- Litmus --------------------------------------------------------------------------------------

def _install_litmus_setup(cfg, fault="pod-delete"):
    custom = api.custom_objects(cfg)
    for obj in render(f"litmus/{fault}-setup", {"NAMESPACE": "crdb"}).objects:
        if obj["kind"] == "ChaosExperiment":
            custom.create_namespaced_custom_object("litmuschaos.io", "v1alpha1", "crdb", "chaosexperiments", obj)


def test_litmus_engine_verdict_and_probe_success(kube):
    cfg = kube.cfg
    with pytest.raises(ChaosDBError, match="ChaosExperiment pod-delete is not installed in crdb"):
        litmus.run_chaos_engine(template="litmus/cockroachdb-pod-delete-engine", variables={"NAMESPACE": "crdb"},
                                configuration=cfg)
    _install_litmus_setup(cfg)
    result = litmus.run_chaos_engine(template="litmus/cockroachdb-pod-delete-engine",
                                     variables={"NAMESPACE": "crdb", "APP_NAMESPACE": "crdb"}, timeout_s=120,
                                     configuration=cfg)
    assert result["verdict"] == "Pass" and result["probe_success_percentage"] == 100.0
    assert result["name"] == "cockroachdb-pod-delete-pod-delete" and result["engine_status"] == "completed"
    assert [{k: v for k, v in p.items() if k != "description"} for p in result["probes"]] == [
        {"name": "cockroachdb-ready", "type": "httpProbe", "mode": "Continuous", "verdict": "Passed"}]
    assert litmus_probes.probe_success_percentage("cockroachdb-pod-delete", "pod-delete", configuration=cfg) == 100
    deleted = litmus.delete_chaos_engine("cockroachdb-pod-delete", configuration=cfg)
    assert deleted["deleted"] and deleted["targets"][0]["name"] == "cockroachdb-pod-delete"
    assert not record_problems(deleted) and not record_problems(result), result

    kube.litmus_verdict, kube.litmus_probe_success = "Fail", "50"
    with pytest.raises(ChaosDBError, match="verdict Fail \\(probe success 50.0%\\)"):
        litmus.run_chaos_engine(template="litmus/cockroachdb-pod-delete-engine",
                                variables={"NAMESPACE": "crdb", "NAME": "second"}, fail_on_verdict=True,
                                timeout_s=120, configuration=cfg)


def test_litmus_engine_stopped_midway(kube):
    cfg = kube.cfg
    _install_litmus_setup(cfg, "pod-network-latency")
    kube.litmus_run_s = 30
    started = litmus.run_chaos_engine(template="litmus/tikv-pod-network-latency-engine",
                                      variables={"NAMESPACE": "crdb"}, wait=False, configuration=cfg)
    assert started["verdict"] == "Awaited"
    time.sleep(0.4)
    assert litmus_probes.probe_success_percentage(started["engine"], "pod-network-latency", configuration=cfg) == -1
    assert litmus.stop_chaos_engine(started["engine"], configuration=cfg)["stopped"]
    result = litmus.wait_for_verdict(started["engine"], "pod-network-latency", timeout_s=120, configuration=cfg)
    assert result["verdict"] == "Stopped" and result["engine_status"] == "stopped"
    assert litmus.delete_chaos_engine(started["engine"], configuration=cfg)["deleted"]
    assert litmus.delete_chaos_engine(started["engine"], configuration=cfg)["existed"] is False


# ---- as a user would: chaos run ------------------------------------------------------------------

def test_chaos_run_of_the_kubernetes_experiment_against_the_standin(kube, tmp_path):
    experiment = ROOT / "experiments" / "kubernetes" / "chaosmesh-pod-failure-statefulset.json"
    journal = tmp_path / "journal.json"
    env = dict(os.environ, CHAOSDB_KUBECONFIG=kube.cfg["k8s_kubeconfig"], CHAOSDB_K8S_NAMESPACE="crdb",
               CHAOSDB_CHAOS_NAMESPACE="crdb", CHAOSDB_STATEFULSET="cockroachdb", CHAOSDB_CHAOS_DURATION="2s",
               CHAOSDB_TARGET_POD="cockroachdb-1")
    proc = subprocess.run([sys.executable, "-m", "chaostoolkit", "--log-file", str(tmp_path / "chaos.log"), "run",
                           "--journal-path", str(journal), str(experiment)], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    result = json.loads(journal.read_text())
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert result["status"] == "completed" and result["steady_states"]["after"]["steady_state_met"]
    names = [r["activity"]["name"] for r in result["run"]]
    assert names[0] == "pod-failure-on-one-pod" and result["run"][0]["output"]["injected"]
    assert [r["activity"]["name"] for r in result["rollbacks"]] == ["delete-the-pod-failure"]
    assert result["rollbacks"][0]["status"] == "succeeded"
    assert not [k for k in kube.objects if k[0] == "chaos-mesh.org"]          # nothing left behind
    text = journal.read_text() + (tmp_path / "chaos.log").read_text()
    assert "standin-token" not in text


def test_status_is_read_by_condition_type_not_order_and_failures_surface():
    from chaosdb.chaosmesh.objects import summarise

    obj = {"kind": "NetworkChaos", "metadata": {"name": "d", "namespace": "crdb"},
           "status": {"conditions": [{"type": "Paused", "status": "False"}, {"type": "AllInjected", "status": "False"},
                                     {"type": "Selected", "status": "True"},
                                     {"type": "AllRecovered", "status": "False"}],
                      "experiment": {"desiredPhase": "Run", "containerRecords": [
                          {"id": "crdb/cockroachdb-0", "phase": "Not Injected", "injectedCount": 0,
                           "events": [{"type": "Failed", "operation": "Apply",
                                       "message": "unable to flush ip sets"}]}]}}}
    s = summarise(obj)
    assert s["phase"] == "injecting" and s["selected"] and not s["injected"]
    assert s["failures"] == [{"target": "crdb/cockroachdb-0", "operation": "Apply",
                              "message": "unable to flush ip sets"}]
    obj["status"]["conditions"].reverse()
    assert summarise(obj)["phase"] == "injecting"
    assert summarise({"kind": "PodChaos", "metadata": {}, "status": {}})["phase"] == "waiting"


def _network_chaos(desired: str, phase: str, injected: int, last_event: str, all_injected: bool = False) -> dict:
    """A NetworkChaos as the controller reports it, with one record."""
    return {"kind": "NetworkChaos", "metadata": {"name": "p", "namespace": "db"},
            "status": {"conditions": [{"type": "Selected", "status": "True"},
                                      {"type": "AllInjected", "status": str(all_injected)}],
                       "experiment": {"desiredPhase": desired, "containerRecords": [
                           {"id": "db/pg-1", "phase": phase, "injectedCount": injected,
                            "events": [{"type": last_event, "operation": "Apply",
                                        "message": "failed to apply for pod db/pg-1: xtables lock"}]}]}}}


@pytest.fixture
def scripted_chaos(monkeypatch):
    """wait_until_injected reading *states* one per poll (the last one stays), on a clock that moves 1 s a poll."""
    clock = {"now": 0.0}
    seen: list[dict] = []

    def play(states: list[dict]) -> list[dict]:
        monkeypatch.setattr(cm, "_get", lambda *a, **k: seen.append(states[min(len(seen), len(states) - 1)])
                            or seen[-1])
        return seen

    monkeypatch.setattr(cm.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(cm.time, "sleep", lambda s: clock.__setitem__("now", clock["now"] + 1.0))
    monkeypatch.setattr(cm.api, "namespace_of", lambda cfg, ns: ns)
    return play


def test_a_failed_injection_that_chaos_mesh_retries_is_waited_out(scripted_chaos):
    """Chaos Mesh retries a failed attempt (a busy chaos-daemon, the xtables lock): the wait goes on while the
    failure is younger than FAILURE_GRACE_S and returns once the retry injected the target."""
    failing = _network_chaos("Run", "Not Injected/Wait", 0, "Failed")
    done = _network_chaos("Run", "Injected", 1, "Succeeded", all_injected=True)
    seen = scripted_chaos([failing] * 5 + [done])
    state = cm.wait_until_injected("NetworkChaos", "p", "db", timeout_s=120)
    assert state["injected"] and len(seen) == 6


def test_a_failure_that_lasts_ends_the_wait_with_chaos_meshs_message(scripted_chaos):
    scripted_chaos([_network_chaos("Run", "Not Injected/Wait", 0, "Failed")])
    with pytest.raises(ChaosDBError, match=r"failed to inject for 15s: db/pg-1: failed to apply .*xtables lock"):
        cm.wait_until_injected("NetworkChaos", "p", "db", timeout_s=120)


def test_a_fault_whose_duration_ran_out_before_injection_is_not_reported_injected(scripted_chaos):
    scripted_chaos([_network_chaos("Run", "Not Injected", 0, "Succeeded"),
                    _network_chaos("Stop", "Not Injected", 0, "Succeeded")])
    with pytest.raises(ChaosDBError, match=r"stopped before Chaos Mesh injected db/pg-1 .*duration ran out"):
        cm.wait_until_injected("NetworkChaos", "p", "db", timeout_s=120)


def test_a_short_fault_injected_and_already_ending_is_reported_injected(scripted_chaos):
    """A record injected once and now recovering (a 1 s fault between two polls) was in force: no refusal."""
    scripted_chaos([_network_chaos("Stop", "Injected", 1, "Succeeded", all_injected=True)])
    assert cm.wait_until_injected("NetworkChaos", "p", "db", timeout_s=120)["injected"]
    scripted_chaos([_network_chaos("Stop", "Not Injected", 1, "Succeeded")])  # ... and already recovered
    state = cm.wait_until_injected("NetworkChaos", "p", "db", timeout_s=120)
    assert state["records"][0]["injected_count"] == 1 and state["desired_phase"] == "Stop"


def test_committed_kubernetes_experiments_are_what_the_generator_writes():
    from tools.make_k8s_experiments import EXPERIMENTS
    from tools.make_k8s_experiments import render as render_experiment

    folder = ROOT / "experiments" / "kubernetes"
    assert sorted(p.stem for p in folder.glob("*.json")) == sorted(EXPERIMENTS)
    for name, exp in EXPERIMENTS.items():
        assert (folder / f"{name}.json").read_text() == render_experiment(name), "run: python -m tools.make_k8s_experiments"
        for activity in exp["method"]:
            args = activity["provider"]["arguments"]
            if activity["provider"]["func"] in ("create_chaos", "run_chaos_engine"):
                render(args["template"], {k: v for k, v in args["variables"].items() if "${" not in v})


def test_an_interrupted_run_leaves_no_chaos_object_behind(kube, tmp_path):
    experiment = ROOT / "experiments" / "kubernetes" / "chaosmesh-pod-failure-statefulset.json"
    journal = tmp_path / "journal.json"
    env = dict(os.environ, CHAOSDB_KUBECONFIG=kube.cfg["k8s_kubeconfig"], CHAOSDB_K8S_NAMESPACE="crdb",
               CHAOSDB_CHAOS_NAMESPACE="crdb", CHAOSDB_CHAOS_DURATION="600s")
    run = ChaosRun(["--log-file", str(tmp_path / "chaos.log"), "run", "--journal-path", str(journal),
                    str(experiment)], env=env, cwd=tmp_path)
    key = ("chaos-mesh.org", "podchaos", "crdb", "chaosdb-pod-failure")
    try:  # the phase under test: the fault is injected and the method waits for its recovery
        assert run.wait_for("Action: wait-until-recovered"), run.output[-2000:]
        obj = kube.objects.get(key) or {}
        records = (obj.get("status") or {}).get("experiment", {}).get("containerRecords") or [{}]
        assert records[0].get("phase") == "Injected", obj
    finally:
        run.interrupt()
        run.kill()
    assert json.loads(journal.read_text())["status"] == "interrupted"
    assert key not in kube.objects            # the control deleted it; the rollbacks were skipped
    assert "deleted PodChaos crdb/chaosdb-pod-failure that the experiment left behind" in \
        (tmp_path / "chaos.log").read_text()
    assert kube.pods[("crdb", "cockroachdb-0")].failed_until <= time.time()


def test_a_target_aims_every_pod_chaos_of_a_workflow_and_leaves_its_other_templates():
    from chaosdb.chaosmesh.objects import aim_at
    from chaosdb.manifests.templates import render

    workflow = yaml.safe_load(render("kubernetes/gameday-workflow", {"IMAGE": "chaosdb.local/chaosdb:1"}).text)
    aimed = aim_at("Workflow", workflow["spec"], "postgres", ["postgres-1"])
    templates = {t["name"]: t for t in aimed["templates"]}
    assert templates["fault"]["podChaos"]["selector"] == {"namespaces": ["postgres"],
                                                          "pods": {"postgres": ["postgres-1"]}}
    assert templates["fault"]["podChaos"]["mode"] == "all"
    assert templates["steady-state"] == {t["name"]: t for t in workflow["spec"]["templates"]}["steady-state"]
    assert workflow["spec"]["templates"][3]["podChaos"]["selector"] == {"pods": {"postgres": ["postgres-0"]}}
    with pytest.raises(ChaosDBError, match="no chaos template on pods"):
        aim_at("Workflow", {"entry": "x", "templates": [{"name": "x", "templateType": "Suspend"}]}, "ns", ["p"])
    with pytest.raises(ChaosDBError, match="not to a Schedule"):
        aim_at("Schedule", {}, "ns", ["p"])
    assert aim_at("PodChaos", {"action": "pod-kill", "mode": "fixed", "value": "1"}, "ns", ["p"]) == {
        "action": "pod-kill", "mode": "all", "selector": {"namespaces": ["ns"], "pods": {"ns": ["p"]}}}


def test_a_workflow_is_built_with_an_annotation_so_that_a_status_check_can_abort_it():
    from chaosdb.chaosmesh.objects import WORKFLOW_ANNOTATIONS, build_object
    from chaosdb.manifests.templates import render

    workflow = yaml.safe_load(render("kubernetes/gameday-workflow", {"IMAGE": "chaosdb.local/chaosdb:1"}).text)
    assert workflow["metadata"]["annotations"] == WORKFLOW_ANNOTATIONS
    built = build_object("Workflow", "w", "chaos-testing", workflow["spec"])
    assert built["metadata"]["annotations"] == WORKFLOW_ANNOTATIONS
    pod_chaos = build_object("PodChaos", "p", "chaos-testing", {"action": "pod-kill", "mode": "one",
                                                                 "selector": {"namespaces": ["db"]}})
    assert "annotations" not in pod_chaos["metadata"]
