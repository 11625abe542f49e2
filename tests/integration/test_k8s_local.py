"""The Kubernetes, Chaos Mesh and Litmus paths against real servers (``chaosdb cluster up --kind kubernetes``).

Real here: kube-apiserver (schemas of every CRD, RBAC, admission), kube-controller-manager (StatefulSets
recreating pods, rolling restarts, scaling, garbage collection of owned objects), kube-scheduler, kwok (fake
nodes that run the pods: Ready, with an IP) and the Chaos Mesh controller-manager with its admission webhooks
(defaulting and validation, selection, records, conditions, finalizers, pause, Schedule and Workflow children).
Not here, so not proven: chaos-daemon (NetworkChaos, StressChaos, IOChaos and TimeChaos are admitted, selected
and deleted, never injected: the tests stop there and say so), containers (no exec), the Litmus operator (its
objects are admitted by the real apiserver; nothing runs them). Binaries: see tests/realservers.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from chaosdb.chaosmesh import actions as cm
from chaosdb.chaosmesh import probes as cmp
from chaosdb.clusters.kubernetes import cluster as localkube
from chaosdb.clusters.pd import simulated_cluster
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import record_problems
from chaosdb.embedded.processes import node_processes
from chaosdb.k8s import actions as k8s
from chaosdb.k8s import api
from chaosdb.k8s import control as k8s_control
from chaosdb.k8s import probes as k8sp
from chaosdb.k8s.pods import pod_summary
from chaosdb.manifests.templates import list_templates, render
from chaosdb.manifests.validate import validate_object
from chaosdb.tikv import cluster as tikv_cluster
from tests.chaosrun import CHAOS, build_report
from tests.polling import poll
from tests.realservers import real_binaries

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHAOS_NS, CRDB_NS, TIKV_NS = "chaos-testing", "cockroachdb", "tidb-cluster"


def _poll(check, timeout: float = 120.0, every: float = 0.3):
    return poll(check, timeout, every)


@pytest.fixture(scope="module")
def kube(local_kubernetes):
    api.reset_clients()
    return local_kubernetes


@pytest.fixture
def cfg(kube):
    """Configuration for the activities; every chaos object a test leaves is deleted afterwards."""
    c = {**kube["configuration"], "k8s_namespace": CRDB_NS}
    yield c
    left = cm.delete_all_chaos(CHAOS_NS, configuration=c, timeout_s=120)["deleted"]
    assert not [x for x in left if x["existed"]] or all(x["deleted"] for x in left)


def _pod(cfg, ns: str, name: str) -> dict:
    core = api.core_v1(cfg)
    return pod_summary(api.call_json("reading pod", core.read_namespaced_pod, name, ns))


def _dynamic(cfg):
    from kubernetes.dynamic import DynamicClient

    return DynamicClient(api.api_client(cfg))


def _dry_run_create(cfg, obj: dict) -> None:
    """Create *obj* with ``dryRun=All``: schema, admission webhooks and RBAC all run; nothing is stored."""
    resource = _dynamic(cfg).resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    ns = obj["metadata"].get("namespace") if resource.namespaced else None
    resource.create(body=obj, namespace=ns, query_params=[("dryRun", "All")])


# --- the cluster itself --------------------------------------------------------------------------------------

def test_status_reports_every_server_the_nodes_and_the_workloads_ready(kube):
    st = localkube.status(kube["dir"])
    assert st["healthy"], st
    assert all(st["servers"].values()) and set(st["servers"]) == set(localkube.SERVERS)
    statefulsets = {(s["namespace"], s["name"]) for s in (
        k8sp.statefulset_status(n, ns, configuration=kube["configuration"])
        for ns, n in ((CRDB_NS, "cockroachdb"), (TIKV_NS, "basic-tikv"), (TIKV_NS, "basic-pd")))}
    assert len(statefulsets) == 3


def test_cli_up_status_down_of_a_second_cluster_leaves_nothing(kube, tmp_path):
    """The command a user runs, on its own address, without Chaos Mesh or workloads (the quick variant)."""
    d = tmp_path / "cli-kube"
    env = {**os.environ, "CHAOSDB_BIN_DIR": kube["bin_dir"]}
    base = [sys.executable, "-m", "chaosdb.cli", "cluster"]
    up = subprocess.run(base + ["up", "--kind", "kubernetes", "--dir", str(d), "--name", "cli-kube",
                                "--address-base", "127.0.53.1", "--workloads", "none", "--no-chaos-mesh",
                                "--nodes", "1"], env=env, capture_output=True, text=True, timeout=300, check=False)
    try:
        assert up.returncode == 0, up.stderr
        assert f"export KUBECONFIG={d / 'kubeconfig'}" in up.stdout
        st = subprocess.run(base + ["status", "--dir", str(d), "--json", "--check"], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
        assert st.returncode == 0, st.stdout + st.stderr
        status = json.loads(st.stdout)
        assert status["healthy"] and "chaos-controller-manager" not in status["servers"]
        assert oct((d / "kubeconfig").stat().st_mode & 0o777) == "0o600"
    finally:
        down = subprocess.run(base + ["down", "--dir", str(d), "--purge"], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout and not d.exists()


def test_a_missing_binary_is_named_with_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CHAOSDB_BIN_DIR", raising=False)
    with pytest.raises(ChaosDBError, match=r"no kube-apiserver binary .*build-local-kubernetes\.sh"):
        localkube.up(tmp_path / "k", bin_dir=str(tmp_path / "empty"))
    assert not (tmp_path / "k").exists()


# --- admission: every template and object, through the real apiserver and webhooks ------------------------

def _rendered_objects() -> list[tuple[str, dict]]:
    out = []
    for t in list_templates():
        required = {v.name: "registry.example/chaosdb:0.1.0" for v in t.variables.values() if v.required}
        for obj in render(t.name, required).objects:
            out.append((t.name, obj))
    return out


def test_every_bundled_template_is_admitted_by_the_real_apiserver_and_webhooks(kube):
    cfg = kube["configuration"]
    admitted, kinds = [], set()
    for name, obj in _rendered_objects():
        try:
            _dry_run_create(cfg, obj)
        except ApiException as e:  # the server's own words, for the report
            if not (e.status == 409 and obj["kind"] == "Namespace"):  # the CronJob's namespace exists here
                pytest.fail(f"{name}: {obj['kind']}/{obj['metadata']['name']} refused: {e.body}")
        admitted.append(name)
        kinds.add(obj["kind"])
    assert {"PodChaos", "NetworkChaos", "StressChaos", "IOChaos", "TimeChaos", "Schedule", "Workflow",
            "ChaosEngine", "ChaosExperiment", "CronJob", "Role", "RoleBinding", "ServiceAccount",
            "PersistentVolumeClaim", "Namespace"} <= kinds
    assert len(set(admitted)) == len(list_templates())


#: objects the webhook or the schema refuses, and whether our own validator refuses them too
BAD_SPECS = [
    ("PodChaos", {"action": "pod-kill", "mode": "fixed", "value": "0", "selector": {"namespaces": [CRDB_NS]}}),
    ("PodChaos", {"action": "container-kill", "mode": "one", "selector": {"namespaces": [CRDB_NS]}}),
    ("PodChaos", {"action": "pod-kill", "mode": "fixed-percent", "value": "150",
                  "selector": {"namespaces": [CRDB_NS]}}),
    ("PodChaos", {"action": "explode", "mode": "one", "selector": {"namespaces": [CRDB_NS]}}),
    ("PodChaos", {"action": "pod-kill", "mode": "one", "value": 1, "selector": {"namespaces": [CRDB_NS]}}),
    ("NetworkChaos", {"action": "delay", "mode": "one", "selector": {"namespaces": [CRDB_NS]},
                      "delay": {"latency": "10 parsecs"}}),
    ("NetworkChaos", {"action": "loss", "mode": "one", "selector": {"namespaces": [CRDB_NS]},
                      "loss": {"loss": "many"}}),
    ("StressChaos", {"mode": "one", "selector": {"namespaces": [CRDB_NS]}}),
    ("TimeChaos", {"mode": "one", "selector": {"namespaces": [CRDB_NS]}, "timeOffset": "soon"}),
    ("PodChaos", {"action": "pod-failure", "mode": "one", "duration": "forever",
                  "selector": {"namespaces": [CRDB_NS]}}),
]


@pytest.mark.parametrize("kind,spec", BAD_SPECS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(BAD_SPECS)])
def test_the_real_server_and_our_validator_refuse_the_same_objects(kube, kind, spec):
    """Our offline validator may never accept what the server refuses (the fault would fail late)."""
    obj = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": kind,
           "metadata": {"name": "bad", "namespace": CHAOS_NS}, "spec": spec}
    with pytest.raises(ApiException) as refused:
        _dry_run_create(kube["configuration"], obj)
    assert refused.value.status in (400, 403, 422), refused.value.body  # webhook denials are 403
    assert validate_object(obj).errors, f"the server refused it ({refused.value.body}) but our validator accepts it"


def test_where_our_validator_is_stricter_than_the_server(kube):
    """Stressor workers 0: Chaos Mesh's Stressor.Validate forbids it, but its webhook never calls that method, so
    the real server admits it; we refuse it (chaosdb/manifests/admission.py says why)."""
    obj = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "StressChaos",
           "metadata": {"name": "zero-workers", "namespace": CHAOS_NS},
           "spec": {"mode": "one", "selector": {"namespaces": [CRDB_NS]},
                    "stressors": {"cpu": {"workers": 0, "load": 50}}}}
    _dry_run_create(kube["configuration"], obj)
    assert any("workers: must be above 0" in e for e in validate_object(obj).errors)


def test_a_good_object_is_accepted_by_both(kube):
    obj = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "PodChaos",
           "metadata": {"name": "good", "namespace": CHAOS_NS},
           "spec": {"action": "pod-kill", "mode": "fixed", "value": "1", "selector": {"namespaces": [CRDB_NS]}}}
    _dry_run_create(kube["configuration"], obj)
    assert not validate_object(obj).errors


# --- Chaos Mesh faults, injected and recovered by the real controller -------------------------------------

def test_pod_kill_on_a_named_pod_replaces_it_and_deletion_removes_the_finalizer(cfg):
    before = _pod(cfg, CRDB_NS, "cockroachdb-1")
    made = cm.create_chaos(template="cockroachdb/pod-kill", name="t-pod-kill",
                           target={"pod": "cockroachdb-1", "namespace": CRDB_NS}, configuration=cfg)
    assert made["injected"] and made["selected_pods"] == [f"{CRDB_NS}/cockroachdb-1"], made
    assert made["targets"] == [{"name": "t-pod-kill", "kind": "PodChaos", "namespace": CHAOS_NS}], made
    assert made["action"] == "create_chaos" and not record_problems(made)
    assert made["records"][0]["phase"] == "Injected"

    def replaced():
        now = _pod(cfg, CRDB_NS, "cockroachdb-1") if _exists(cfg, CRDB_NS, "cockroachdb-1") else None
        return now if now and now["uid"] != before["uid"] and now["ready"] else None

    assert _poll(replaced), "the StatefulSet did not bring cockroachdb-1 back"
    others = {p["name"]: p["uid"] for p in k8sp.pods_of_statefulset("cockroachdb", CRDB_NS, configuration=cfg)}
    assert others["cockroachdb-0"] == _pod(cfg, CRDB_NS, "cockroachdb-0")["uid"]
    with pytest.raises(ChaosDBError, match="one-shot"):
        cm.wait_until_recovered("PodChaos", "t-pod-kill", CHAOS_NS, timeout_s=5, configuration=cfg)
    gone = cm.delete_chaos("PodChaos", "t-pod-kill", CHAOS_NS, configuration=cfg)
    assert gone["deleted"] and gone["existed"]
    assert cm.delete_chaos("PodChaos", "t-pod-kill", CHAOS_NS, configuration=cfg)["existed"] is False


def _exists(cfg, ns: str, name: str) -> bool:
    try:
        _pod(cfg, ns, name)
        return True
    except api.K8sApiError as e:
        if e.status == 404:
            return False
        raise


def _images(cfg, ns: str, name: str) -> list[str]:
    return list(_pod(cfg, ns, name)["images"].values())


def test_pod_failure_injects_pauses_resumes_and_recovers_by_itself(cfg):
    original = _images(cfg, CRDB_NS, "cockroachdb-2")
    made = cm.create_chaos(template="cockroachdb/pod-failure", name="t-pod-failure",
                           variables={"DURATION": "12s"}, target={"pod": "cockroachdb-2", "namespace": CRDB_NS},
                           configuration=cfg)
    assert made["phase"] == "injected"
    assert _poll(lambda: _images(cfg, CRDB_NS, "cockroachdb-2") != original), "no image swap seen"
    paused = cm.pause_chaos("PodChaos", "t-pod-failure", CHAOS_NS, timeout_s=60, configuration=cfg)
    assert paused["paused"] and paused["all_recovered"]
    assert _poll(lambda: _images(cfg, CRDB_NS, "cockroachdb-2") == original)
    resumed = cm.resume_chaos("PodChaos", "t-pod-failure", CHAOS_NS, timeout_s=60, configuration=cfg)
    assert resumed["injected"]
    done = cm.wait_until_recovered("PodChaos", "t-pod-failure", CHAOS_NS, timeout_s=180, configuration=cfg)
    assert done["recovered"] and done["records"][0]["recovered_count"] >= 2
    assert _poll(lambda: _images(cfg, CRDB_NS, "cockroachdb-2") == original)
    assert cmp.chaos_is_recovered("PodChaos", "t-pod-failure", CHAOS_NS, configuration=cfg)
    assert k8s.wait_for_statefulset_ready("cockroachdb", CRDB_NS, timeout_s=120, configuration=cfg)


def test_kinds_that_need_chaos_daemon_are_admitted_selected_and_deleted_never_injected(cfg):
    """The limit of what can be proven without chaos-daemon: admission, selection, status and deletion."""
    made = cm.create_chaos(template="tikv/network-delay", name="t-net", wait=False, configuration=cfg)
    state = _poll(lambda: (s := cmp.chaos_status("NetworkChaos", "t-net", CHAOS_NS, configuration=cfg))["selected"]
                  and s["records"] and s)
    assert state and not state["injected"], state
    assert {r["target"] for r in state["records"]} <= {f"{TIKV_NS}/basic-tikv-{i}" for i in range(3)}
    assert made["kind"] == "NetworkChaos"
    with pytest.raises(ChaosDBError, match="not injected after|failed to inject"):
        cm.wait_until_injected("NetworkChaos", "t-net", CHAOS_NS, timeout_s=5, configuration=cfg)
    # deletion: Chaos Mesh keeps its finalizer until every record is recovered, which needs the daemon too; the
    # rollback says which records are stuck (on a real cluster: until chaos-daemon answers again)
    with pytest.raises(ChaosDBError, match=r"still present 5s after deletion: records not recovered.*basic-tikv"):
        cm.delete_chaos("NetworkChaos", "t-net", CHAOS_NS, timeout_s=5, configuration=cfg)
    assert cmp.chaos_status("NetworkChaos", "t-net", CHAOS_NS, configuration=cfg)["phase"] == "deleting"
    _drop_finalizers(cfg, "networkchaos", "t-net")  # what an operator does once the pods are known clean
    assert _poll(lambda: not cmp.chaos_objects(CHAOS_NS, configuration=cfg))


def _drop_finalizers(cfg, plural: str, name: str) -> None:
    custom = api.custom_objects(cfg)
    api.call_json("dropping finalizers", custom.patch_namespaced_custom_object, "chaos-mesh.org", "v1alpha1",
                  CHAOS_NS, plural, name, {"metadata": {"finalizers": []}})


def test_schedule_children_are_made_by_the_controller_and_go_with_it(cfg):
    cm.create_chaos(template="cockroachdb/schedule-pod-kill", name="t-schedule",
                    variables={"SCHEDULE": "@every 3s"}, configuration=cfg)
    custom = api.custom_objects(cfg)

    def children():
        items = api.call_json("listing", custom.list_namespaced_custom_object, "chaos-mesh.org", "v1alpha1",
                              CHAOS_NS, "podchaos")["items"]
        return [i for i in items if any(o.get("kind") == "Schedule" and o.get("name") == "t-schedule"
                                        for o in i["metadata"].get("ownerReferences") or [])]

    assert _poll(children), "the controller made no PodChaos for the Schedule"
    paused = cm.pause_chaos("Schedule", "t-schedule", CHAOS_NS, configuration=cfg)
    assert paused["kind"] == "Schedule"
    assert cm.delete_chaos("Schedule", "t-schedule", CHAOS_NS, configuration=cfg)["deleted"]
    assert _poll(lambda: not children()), "the Schedule's children outlived it"


def test_workflow_nodes_are_made_by_the_controller_and_go_with_it(cfg):
    cm.create_chaos(template="cockroachdb/workflow-cascading", name="t-workflow", configuration=cfg)
    custom = api.custom_objects(cfg)

    def nodes():
        items = api.call_json("listing", custom.list_namespaced_custom_object, "chaos-mesh.org", "v1alpha1",
                              CHAOS_NS, "workflownodes")["items"]
        return [i for i in items if (i["metadata"].get("labels") or {}).get("chaos-mesh.org/workflow")
                == "t-workflow"]

    assert _poll(nodes), "the controller made no WorkflowNode"
    assert cm.delete_chaos("Workflow", "t-workflow", CHAOS_NS, timeout_s=120, configuration=cfg)["deleted"]
    assert _poll(lambda: not nodes()), "the WorkflowNodes outlived the Workflow"


def test_the_after_experiment_control_removes_what_an_interrupted_run_left(cfg):
    original = _images(cfg, CRDB_NS, "cockroachdb-0")
    cm.create_chaos(template="cockroachdb/pod-failure", name="t-left", variables={"DURATION": "10m"},
                    target={"pod": "cockroachdb-0", "namespace": CRDB_NS}, configuration=cfg)
    assert _images(cfg, CRDB_NS, "cockroachdb-0") != original or _poll(
        lambda: _images(cfg, CRDB_NS, "cockroachdb-0") != original)
    k8s_control.after_experiment_control()
    assert cmp.chaos_objects(CHAOS_NS, configuration=cfg) == []
    assert _poll(lambda: _images(cfg, CRDB_NS, "cockroachdb-0") == original), "the pod kept the pause image"


@pytest.fixture(scope="module")
def pd(tmp_path_factory):
    """A real PD with three simulated TiKV stores, standing for the TiDB cluster the fake pods pretend to be."""
    bins = real_binaries(tmp_path_factory, ["pd-server", "pd-simulator"])
    d = tmp_path_factory.mktemp("pd-for-k8s")
    res = simulated_cluster.up(d, "pytest-pd-k8s", members=1, stores=3, regions=30, address_base="127.0.40.21", bin_dir=bins)
    yield res["configuration"]
    simulated_cluster.down(d, purge=True)
    assert not node_processes(d)


def test_a_tikv_leader_target_is_resolved_by_real_pd_and_hit_by_chaos_mesh(cfg, pd):
    """``{"role": "tikv-leader", "key": ...}``: PD says which store leads the key's region, ``tikv_pods`` says
    which pod that store is, Chaos Mesh fails exactly that pod."""
    store_ids = sorted(s["id"] for s in tikv_cluster.stores(pd))
    c = {**cfg, **pd, "tikv_pods": {str(sid): f"basic-tikv-{i}" for i, sid in enumerate(store_ids)}}
    leader = tikv_cluster.resolve_store(c, "leader", key="usertable:user42")
    made = cm.create_chaos(template="tikv/pod-failure", name="t-tikv-leader", variables={"DURATION": "30s"},
                           target={"role": "tikv-leader", "key": "usertable:user42", "namespace": TIKV_NS},
                           configuration=c)
    pod = f"basic-tikv-{store_ids.index(leader['id'])}"
    assert made["target"]["pods"] == [pod] and made["target"]["detail"]["store_id"] == leader["id"]
    assert made["injected"] and made["selected_pods"] == [f"{TIKV_NS}/{pod}"], made
    follower = tikv_cluster.resolve_store(c, "follower", key="usertable:user42")
    assert follower["pod"] != pod and follower["pod"] in {f"basic-tikv-{i}" for i in range(3)}
    assert cm.delete_chaos("PodChaos", "t-tikv-leader", CHAOS_NS, configuration=c)["deleted"]
    assert k8s.wait_for_statefulset_ready("basic-tikv", TIKV_NS, timeout_s=120, configuration=c)


# --- Kubernetes actions, with the real controller-manager -------------------------------------------------

def test_delete_pods_waits_for_the_replacement(cfg):
    before = _pod(cfg, CRDB_NS, "cockroachdb-0")["uid"]
    res = k8s.delete_pods({"pod": "cockroachdb-0", "namespace": CRDB_NS}, grace_period_s=0, force=True,
                          timeout_s=120, configuration=cfg)
    assert res["ready_after_s"]["cockroachdb-0"] > 0
    assert _pod(cfg, CRDB_NS, "cockroachdb-0")["uid"] != before


def test_rolling_restart_replaces_every_pod_one_at_a_time(cfg):
    uids = {p["name"]: p["uid"] for p in k8sp.pods_of_statefulset("basic-tikv", TIKV_NS, configuration=cfg)}
    res = k8s.restart_statefulset("basic-tikv", TIKV_NS, timeout_s=300, configuration=cfg)
    after = {p["name"]: p["uid"] for p in k8sp.pods_of_statefulset("basic-tikv", TIKV_NS, configuration=cfg)}
    assert set(after) == set(uids) and all(after[n] != uids[n] for n in uids)
    assert res["max_not_ready_together"] <= 1, res  # one pod at a time
    # each pod's down time as the rollout tracker saw it, from the real controller's replacements
    assert res["completed"] and set(res["pods"]) == set(uids), res
    assert all(p["restarted"] and not p["down_at_end"] for p in res["pods"].values()), res["pods"]
    seen_down = [n for n, p in res["pods"].items() if p["down"]]
    firsts = sorted(seen_down, key=lambda n: res["pods"][n]["down"][0][0])
    assert firsts == sorted(seen_down, reverse=True), res["pods"]  # highest ordinal first
    assert k8sp.statefulset_is_ready("basic-tikv", TIKV_NS, configuration=cfg)


def test_scale_out_and_back(cfg):
    up = k8s.scale_statefulset("cockroachdb", 4, CRDB_NS, timeout_s=120, configuration=cfg)
    assert k8sp.statefulset_status("cockroachdb", CRDB_NS, configuration=cfg)["ready_replicas"] == 4, up
    k8s.scale_statefulset("cockroachdb", 3, CRDB_NS, timeout_s=120, configuration=cfg)
    assert _poll(lambda: len(k8sp.pods_of_statefulset("cockroachdb", CRDB_NS, configuration=cfg)) == 3)
    assert k8s.wait_for_statefulset_ready("cockroachdb", CRDB_NS, timeout_s=120, configuration=cfg)


# --- a real chaos run ------------------------------------------------------------------------------------

def test_chaos_run_of_the_pod_failure_experiment_against_the_local_cluster(cfg, kube, tmp_path):
    # the experiment's hypothesis needs the StatefulSet whole, as a game day would check first
    assert k8s.wait_for_statefulset_ready("cockroachdb", CRDB_NS, timeout_s=120, configuration=cfg)
    env = {**os.environ, "CHAOSDB_KUBECONFIG": kube["kubeconfig"], "CHAOSDB_CHAOS_DURATION": "8s",
           "CHAOSDB_TARGET_POD": "cockroachdb-1"}
    log = tmp_path / "chaos.log"
    try:
        done = subprocess.run([CHAOS, "--no-version-check", "--log-file", str(log), "run", "--journal-path",
                               str(tmp_path / "journal.json"),
                               str(ROOT / "experiments" / "kubernetes" / "chaosmesh-pod-failure-statefulset.json")],
                              env=env, capture_output=True, text=True, timeout=150, cwd=tmp_path, check=False)
    except subprocess.TimeoutExpired:
        state = {"statefulset": k8sp.statefulset_status("cockroachdb", CRDB_NS, configuration=cfg),
                 "pods": k8sp.pods_of_statefulset("cockroachdb", CRDB_NS, configuration=cfg)}
        pytest.fail(f"chaos run did not end within 150 s; the StatefulSet: {json.dumps(state, default=str)}\n"
                    f"its log:\n{log.read_text()[-2000:]}")
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert done.returncode == 0 and journal["status"] == "completed", log.read_text()[-4000:]
    assert journal["steady_states"]["after"]["steady_state_met"]
    runs = {r["activity"]["name"]: r for r in journal["run"]}
    assert runs["pod-failure-on-one-pod"]["output"]["selected_pods"] == [f"{CRDB_NS}/cockroachdb-1"]
    assert runs["wait-until-recovered"]["output"]["recovered"]
    assert cmp.chaos_objects(CHAOS_NS, configuration=cfg) == []
    report = build_report(tmp_path / "journal.json", tmp_path / "report")
    assert "pod-failure-on-one-pod" in report and "completed" in report


@pytest.fixture(scope="module")
def patroni(cluster_root):
    """A real one-node Patroni cluster (Patroni, etcd, PostgreSQL) of this module's own, on its own address: the
    primary a ``patroni-primary`` target asks Patroni's REST API for, standing for the fake ``postgres`` pods."""
    from chaosdb.clusters.postgres_ha import cluster as embedded
    from chaosdb.embedded.state import load_layout

    d = cluster_root / "k8s-patroni"
    embedded.up(d, "k8spatroni", nodes=1, address_base="127.0.0.71", timeout=180)
    try:
        yield load_layout(d)
    finally:
        embedded.down(load_layout(d), purge=True)
    assert not node_processes(d)


def test_chaos_run_of_the_patroni_primary_pod_kill_against_real_patroni_and_chaos_mesh(cfg, kube, patroni,
                                                                                        tmp_path):
    """The fault of experiments/kubernetes/chaosmesh-pod-kill-patroni-primary.json with ``chaos run``: real Patroni
    names its primary, ``patroni_pods`` (from the environment) maps that member to a pod, the real Chaos Mesh kills
    exactly that pod and the real controller-manager replaces it; the rollback leaves no chaos object. The pods are
    fake: no PostgreSQL runs in them, so no replica is promoted here, and the experiment's load, outage probes and
    waits are left out (the whole experiment, with its failover and report, runs on the real node:
    test_k8s_real_node.py)."""
    member = patroni.nodes[0]
    pod = "postgres-2"  # not the first pod: the map, not the ordinal, picks it
    assert k8s.wait_for_statefulset_ready("postgres", "postgres", timeout_s=120, configuration=cfg)
    uid = _pod(cfg, "postgres", pod)["uid"]
    env = {**os.environ, "CHAOSDB_KUBECONFIG": kube["kubeconfig"],
           "CHAOSDB_PATRONI_URLS": f"http://{member.host}:{member.api_port}", "CHAOSDB_PATRONI_PODS": f"{member.name}={pod}"}
    experiment = json.loads((ROOT / "experiments" / "kubernetes" / "chaosmesh-pod-kill-patroni-primary.json")
                            .read_text())
    experiment["controls"] = [c for c in experiment["controls"] if c["name"] in ("verdict", "chaosdb-kubernetes")]
    experiment["steady-state-hypothesis"]["probes"] = [p for p in experiment["steady-state-hypothesis"]["probes"]
                                                       if p["name"] == "statefulset-is-ready"]
    experiment["method"] = [{k: v for k, v in m.items() if k != "pauses"} for m in experiment["method"]
                            if m["name"] in ("kill-the-primary-pod", "wait-for-statefulset-ready")]
    path = tmp_path / "pod-kill-fault.json"
    path.write_text(json.dumps(experiment))
    log = tmp_path / "chaos.log"
    done = subprocess.run([CHAOS, "--no-version-check", "--log-file", str(log), "run", "--journal-path",
                           str(tmp_path / "journal.json"), str(path)],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert done.returncode == 0 and journal["status"] == "completed", log.read_text()[-4000:]
    assert journal["steady_states"]["before"]["steady_state_met"]
    assert journal["steady_states"]["after"]["steady_state_met"]
    runs = {r["activity"]["name"]: r for r in journal["run"]}
    kill = runs["kill-the-primary-pod"]["output"]
    assert kill["selected_pods"] == [f"postgres/{pod}"], kill
    assert kill["target"]["detail"]["member"] == member.name, kill["target"]
    assert _poll(lambda: _pod(cfg, "postgres", pod)["uid"] != uid), "the killed pod was not replaced"
    assert journal["rollbacks"][0]["output"]["deleted"], journal["rollbacks"]
    assert cmp.chaos_objects(CHAOS_NS, configuration=cfg) == []
    report = build_report(tmp_path / "journal.json", tmp_path / "report")
    assert "kill-the-primary-pod" in report and "completed" in report


def test_local_kubernetes_processes_are_the_clusters_own(kube):
    assert node_processes(Path(kube["dir"]))


# --- the pack from its wheel, and the game-day CronJob's own permissions ----------------------------------------


def test_a_chaos_mesh_template_applied_from_the_installed_wheel(cfg, kube, tmp_path_factory):
    """create_chaos(template=...) in a fresh virtualenv holding only the wheel (k8s extra), run outside the
    checkout: the shipped template reaches the real apiserver, webhooks and controller."""
    from tests.wheel import build_wheel, make_venv, user_env

    base = tmp_path_factory.mktemp("wheel-k8s")
    bin_dir = make_venv(base / "venv", build_wheel(base / "build"), "k8s")
    script = ("import json, sys, chaosdb\n"
              "from chaosdb.chaosmesh import actions as cm\n"
              "cfg = json.loads(sys.argv[1])\n"
              "made = cm.create_chaos(template='cockroachdb/pod-kill', name='t-wheel-pod-kill',\n"
              "                       target={'pod': 'cockroachdb-2', 'namespace': 'cockroachdb'}, configuration=cfg)\n"
              "print(json.dumps({'file': chaosdb.__file__, 'injected': made['injected'],\n"
              "                  'pods': made['selected_pods']}))\n")
    done = subprocess.run([str(bin_dir / "python"), "-c", script, json.dumps(cfg)], cwd=base, env=user_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(base)) and out["injected"] and out["pods"] == [f"{CRDB_NS}/cockroachdb-2"]
    assert cm.delete_chaos("PodChaos", "t-wheel-pod-kill", CHAOS_NS, configuration=cfg)["existed"]


def _service_account_kubeconfig(cfg, kube, namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig that authenticates as ServiceAccount *namespace*/*name* (a token from the TokenRequest API)."""
    import yaml
    from kubernetes import client

    core = client.CoreV1Api(api.api_client(cfg))
    token = core.create_namespaced_service_account_token(
        name, namespace, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(
            audiences=[], expiration_seconds=3600))).status.token
    admin = yaml.safe_load(Path(kube["kubeconfig"]).read_text())
    admin["users"] = [{"name": "gameday", "user": {"token": token}}]
    for c in admin["contexts"]:
        c["context"]["user"] = "gameday"
    path.write_text(yaml.safe_dump(admin))
    path.chmod(0o600)
    return path


def test_the_cronjobs_service_account_may_run_a_shipped_experiment_and_nothing_else(cfg, kube, tmp_path):
    """The CronJob manifest's own ServiceAccount, Roles and RoleBindings on the real apiserver: a shipped
    Kubernetes experiment runs with that account's token only; an action outside them is refused naming the
    permission that is missing."""
    objects = [o for o in render("kubernetes/gameday-cronjob", {
        "IMAGE": "registry.local/chaosdb:1", "NAMESPACE": CHAOS_NS, "DB_NAMESPACE": CRDB_NS,
        "NAME": "gd-rbac"}).objects if o["kind"] in ("ServiceAccount", "Role", "RoleBinding")]
    made = []
    try:
        for obj in objects:
            resource = _dynamic(cfg).resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
            resource.create(body=obj, namespace=obj["metadata"]["namespace"])
            made.append((resource, obj))
        kubeconfig = _service_account_kubeconfig(cfg, kube, CHAOS_NS, "gd-rbac", tmp_path / "sa.kubeconfig")
        assert k8s.wait_for_statefulset_ready("cockroachdb", CRDB_NS, timeout_s=120, configuration=cfg)
        env = {**os.environ, "CHAOSDB_KUBECONFIG": str(kubeconfig), "CHAOSDB_CHAOS_DURATION": "8s",
               "CHAOSDB_TARGET_POD": "cockroachdb-0", "CHAOSDB_K8S_NAMESPACE": CRDB_NS,
               "CHAOSDB_CHAOS_NAMESPACE": CHAOS_NS, "CHAOSDB_REPORT_DIR": str(tmp_path / "report")}
        env.pop("CHAOSDB_LOAD_DSN", None)
        done = subprocess.run([CHAOS, "--no-version-check", "--log-file", str(tmp_path / "chaos.log"), "run",
                               "--journal-path", str(tmp_path / "journal.json"),
                               str(ROOT / "experiments" / "kubernetes" / "chaosmesh-pod-failure-statefulset.json")],
                              env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
        journal = json.loads((tmp_path / "journal.json").read_text())
        log = (tmp_path / "chaos.log").read_text()
        assert done.returncode == 0 and journal["status"] == "completed", log[-4000:]
        assert "forbidden" not in log.lower()
        # no DSN given: no load, and the report of the journal says there are no figures
        assert (tmp_path / "report" / "report.html").is_file() and "no DSN given" in log
        sa_cfg = {"k8s_kubeconfig": str(kubeconfig), "k8s_namespace": CRDB_NS}
        api.reset_clients()
        with pytest.raises(api.K8sApiError) as refused:
            k8s.scale_statefulset("basic-tikv", 3, namespace=TIKV_NS, configuration=sa_cfg)
        message = str(refused.value)
        assert refused.value.status == 403 and "system:serviceaccount:chaos-testing:gd-rbac" in message
        assert "statefulsets" in message and TIKV_NS in message, message
    finally:
        api.reset_clients()
        for resource, obj in reversed(made):
            resource.delete(name=obj["metadata"]["name"], namespace=obj["metadata"]["namespace"])
