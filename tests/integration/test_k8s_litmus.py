"""LitmusChaos for real on the local cluster's real node: the operator (``cluster up --litmus``), its runner and
litmus-go's pod-delete in images this pack built, against Patroni + PostgreSQL in pods, with a cmdProbe that runs
``chaosdb check shipped:patroni`` in a pod of the pack's own image.

Real here: the local Kubernetes with one real node (kubelet, containerd, runc, CNI) and no fake nodes (Litmus gives
its runner, experiment and probe pods no node selector), kube-controller-manager (the Job controller and the garbage
collector the runner's foreground deletion needs), chaos-operator, chaos-runner and litmus-go 3.18.0 (the
``litmus-chaos-operator``, ``litmus-chaos-runner`` and ``litmus-experiments`` of ``shared/testenv``), Patroni 3 /
PostgreSQL 15. Pods reach Patroni's REST API at the node's bridge address (no kube-proxy, no cluster DNS here).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from chaosdb.clusters.kubernetes import apply, node_images
from chaosdb.clusters.kubernetes import litmus as litmus_objects
from chaosdb.k8s import api
from chaosdb.litmus import actions as litmus
from chaosdb.litmus.results import GROUP, VERSION
from chaosdb.manifests.templates import render
from tests.polling import poll
from tests.realnode import jobs, pods, real_node_cluster, require_runtime
from tests.realservers import real_binaries

pytestmark = pytest.mark.integration

ADDRESS = "127.0.63.1"
NS = "postgres"
ENGINE = "postgres-pod-delete"
SERVERS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubelet",
           "litmus-chaos-operator", "litmus-chaos-runner", "litmus-experiments"]


@pytest.fixture(scope="module")
def real(tmp_path_factory, cluster_root):
    """A local Kubernetes with one real node and no fake nodes: Patroni (2 members), the Litmus operator, and the
    pack's image imported (the cmdProbe's pod runs it)."""
    require_runtime()
    bin_dir = real_binaries(tmp_path_factory, SERVERS)
    with real_node_cluster(cluster_root / "litmus-kube", "litmus-kube", ADDRESS, bin_dir, chaos_mesh=False,
                           timeout=900, litmus_operator=True) as res:
        yield {**res, "pack_image": node_images.import_pack_image(res["node"].containerd).reference}


@pytest.fixture(scope="module")
def cfg(real):
    """The activities' configuration (Patroni's REST API through this machine's forwarder, namespace postgres)."""
    return dict(real["configuration"])


def _cluster() -> list[dict]:
    with urllib.request.urlopen(f"http://{ADDRESS}:8008/cluster", timeout=3) as r:
        return json.loads(r.read())["members"]


def _leader() -> str:
    return next((m["name"] for m in _cluster() if m["role"] == "leader"), "")


def _converged() -> bool:
    members = _cluster()
    return (len([m for m in members if m["state"] in ("running", "streaming")]) == 2
            and any(m["role"] == "leader" for m in members))


def _litmus_leftovers(cfg: dict) -> list[str]:
    """What the engine's run may leave in the namespace: its runner pod, the experiment's Job and pod, the probe
    pods (every pod Litmus makes carries ``chaosUID``; the runner is ``<engine>-runner``)."""
    left = [p["metadata"]["name"] for p in pods(cfg, NS)
            if "chaosUID" in (p["metadata"].get("labels") or {}) or p["metadata"]["name"] == f"{ENGINE}-runner"]
    return left + [f"job/{j['metadata']['name']}" for j in jobs(cfg, NS)]


def _engine_exists(cfg: dict) -> bool:
    try:
        api.call_json("reading the ChaosEngine", api.custom_objects(cfg).get_namespaced_custom_object, GROUP,
                      VERSION, NS, "chaosengines", ENGINE)
    except api.K8sApiError as e:
        if e.status == 404:
            return False
        raise
    return True


def _scheduledpods(cfg: dict, prefix: str) -> set[str]:
    """The pods of *prefix* the scheduler placed (its ``Scheduled`` events: they stay after the pods are gone)."""
    events = api.call_json("listing events", api.core_v1(cfg).list_namespaced_event, NS)
    return {e["involvedObject"]["name"] for e in events.get("items") or []
            if e.get("reason") == "Scheduled" and str(e["involvedObject"].get("name", "")).startswith(prefix)}


def test_the_operator_runs_on_the_real_node_with_the_local_images(real, cfg):
    deployment = api.call_json("reading the operator", api.apps_v1(cfg).read_namespaced_deployment,
                               litmus_objects.NAME, litmus_objects.NAMESPACE)
    assert (deployment.get("status") or {}).get("readyReplicas") == 1, deployment.get("status")
    [pod] = pods(cfg, litmus_objects.NAMESPACE, "name=chaos-operator")
    [container] = pod["spec"]["containers"]
    assert container["image"] == real["litmus"]["litmus-operator"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["CHAOS_RUNNER_IMAGE"] == real["litmus"]["litmus-runner"] and env["ANALYTICS"] == "FALSE"
    assert pod["spec"]["nodeName"] == real["node"].name


def test_pod_delete_of_the_patroni_primary_passes_its_chaosdb_check_probe_and_leaves_nothing(real, cfg):
    assert poll(_converged, 240), _cluster()
    old_leader = _leader()
    setup = render("litmus/pod-delete-setup", {"NAMESPACE": NS,
                                               "EXPERIMENT_IMAGE": real["litmus"]["litmus-go-runner"]}).objects
    apply.create_or_keep(setup, cfg)
    variables: dict[str, Any] = {
        "NAMESPACE": NS, "IMAGE": real["pack_image"], "PATRONI_URLS": f"http://{real['pods_address']}:8008",
        # graceful: Patroni hands its leader lock over on SIGTERM (a killed leader's pod may come back and take its
        # own lock again); once: the one deletion of the pod that was primary
        "FORCE": "false", "TOTAL_CHAOS_DURATION": 10, "CHAOS_INTERVAL": 10, "RECOVERY_S": 120}
    try:
        result = litmus.run_chaos_engine(template="litmus/postgres-pod-delete-engine", variables=variables,
                                         target={"role": "patroni-primary"}, timeout_s=900, configuration=cfg)
        assert result["target"]["pods"] == [old_leader] and result["target"]["role"] == "patroni-primary"
        why = json.dumps({k: result[k] for k in ("verdict", "phase", "error", "probes")})
        assert result["verdict"] == "Pass", why
        assert result["probe_success_percentage"] == 100.0, why
        assert [{k: v for k, v in p.items() if k != "description"} for p in result["probes"]] == [
            {"name": "patroni-checks", "type": "cmdProbe", "mode": "Edge", "verdict": "Passed"}], why
        engine = api.call_json("reading the ChaosEngine", api.custom_objects(cfg).get_namespaced_custom_object,
                               GROUP, VERSION, NS, "chaosengines", ENGINE)
        env = {e["name"]: e["value"] for e in engine["spec"]["experiments"][0]["spec"]["components"]["env"]}
        assert env["TARGET_PODS"] == old_leader
        # the primary moved: Patroni names another member leader, and the deleted pod is back as a replica
        assert poll(lambda: _leader() not in ("", old_leader), 120), _cluster()
        assert poll(_converged, 240), _cluster()
        # the cmdProbe ran in pods of its own (source mode): one before the fault, one after it
        assert len(_scheduledpods(cfg, "pod-delete-probe-")) == 2, _scheduledpods(cfg, "pod-delete-probe-")
        assert _scheduledpods(cfg, f"{ENGINE}-runner") and _scheduledpods(cfg, "pod-delete-")
    finally:
        litmus.delete_chaos_engine(ENGINE, NS, configuration=cfg)
    assert poll(lambda: not _engine_exists(cfg), 120), "the operator did not let the ChaosEngine go (finalizer)"
    assert poll(lambda: not _litmus_leftovers(cfg), 180), _litmus_leftovers(cfg)
    assert {p["metadata"]["name"] for p in pods(cfg, NS)} == {"postgres-0", "postgres-1"}
