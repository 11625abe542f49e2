"""Opt-in end-to-end: Chaos Mesh and Kubernetes activities against a real cluster.

Set ``CHAOSDB_E2E_KUBECONFIG`` (a kubeconfig whose context may create chaos objects) and
``CHAOSDB_E2E_NAMESPACE`` (a scratch namespace with a StatefulSet named by ``CHAOSDB_E2E_STATEFULSET``,
default ``web``, whose pods run a container named by ``CHAOSDB_E2E_CONTAINER``, default ``nginx``). Chaos Mesh
must be installed. Never run here (no Kubernetes on these machines)."""

from __future__ import annotations

import os

import pytest

from chaosdb.chaosmesh import actions as cm
from chaosdb.k8s import actions as k8s
from chaosdb.k8s import api

KUBECONFIG = os.environ.get("CHAOSDB_E2E_KUBECONFIG")
NS = os.environ.get("CHAOSDB_E2E_NAMESPACE", "chaosdb-e2e")
STS = os.environ.get("CHAOSDB_E2E_STATEFULSET", "web")
CONTAINER = os.environ.get("CHAOSDB_E2E_CONTAINER", "nginx")
pytestmark = pytest.mark.skipif(not KUBECONFIG, reason="set CHAOSDB_E2E_KUBECONFIG to run against a real cluster")


@pytest.fixture
def cfg():
    api.reset_clients()
    yield {"k8s_kubeconfig": KUBECONFIG, "k8s_namespace": NS}
    cm.delete_all_chaos(NS, configuration={"k8s_kubeconfig": KUBECONFIG})
    api.reset_clients()


def test_real_pod_failure_injects_pauses_and_recovers(cfg):
    made = cm.create_chaos(kind="PodChaos", name="chaosdb-e2e-failure", namespace=NS,
                           spec={"action": "pod-failure", "mode": "one", "duration": "30s",
                                 "selector": {"namespaces": [NS]}},
                           target={"pod": f"{STS}-0", "namespace": NS}, timeout_s=120, configuration=cfg)
    assert made["injected"] and made["selected_pods"]
    assert cm.pause_chaos("PodChaos", made["name"], NS, timeout_s=120, configuration=cfg)["paused"]
    assert cm.resume_chaos("PodChaos", made["name"], NS, timeout_s=120, configuration=cfg)["injected"]
    assert cm.wait_until_recovered("PodChaos", made["name"], NS, timeout_s=180, configuration=cfg)["recovered"]
    assert cm.delete_chaos("PodChaos", made["name"], NS, configuration=cfg)["deleted"]


def test_real_pod_delete_and_exec_kill(cfg):
    deleted = k8s.delete_pods({"pod": f"{STS}-0", "namespace": NS}, grace_period_s=5, timeout_s=300,
                              configuration=cfg)
    assert deleted["ready_after_s"][f"{STS}-0"] > 0
    killed = k8s.kill_container_process({"pod": f"{STS}-0", "namespace": NS}, CONTAINER, timeout_s=300,
                                        configuration=cfg)
    assert killed["ready_after_s"][f"{STS}-0"] > 0
