"""Patroni role targets for Kubernetes faults, resolved against the real embedded Patroni cluster (its members
n1..n3 stand for pods named after them, as Spilo names members after pods) and aimed through the Kubernetes
API stand-in: the PodChaos hits the pod of the real primary, then of a real replica."""

from __future__ import annotations

import pytest

from chaosdb.chaosmesh import actions as cm
from chaosdb.k8s import api
from chaosdb.k8s.roles import resolve_target
from chaosdb.postgres import probes as pg
from tests.unit.k8s_api_standin import KubeStandin

pytestmark = pytest.mark.integration


def test_patroni_primary_and_replica_map_to_their_pods(healthy, config, tmp_path):
    primary = pg.current_primary(configuration=config)
    members = sorted(m["name"] for m in pg.cluster_members(configuration=config))
    pods = {name: f"postgres-{i}" for i, name in enumerate(members)}
    cfg = dict(config, patroni_pods=pods, k8s_namespace="postgres")

    target = resolve_target({"role": "patroni-primary"}, cfg)
    assert target["pods"] == [pods[primary]] and target["detail"]["member"] == primary
    replica = resolve_target({"role": "patroni-replica"}, cfg)
    assert replica["pods"] != target["pods"] and replica["detail"]["patroni_role"] != "leader"

    api.reset_clients()
    standin = KubeStandin().start()
    try:
        standin.add_statefulset("postgres", "postgres", 3, {"application": "spilo"}, containers=("postgres",))
        cfg["k8s_kubeconfig"] = standin.write_kubeconfig(tmp_path / "kubeconfig")
        made = cm.create_chaos(template="cockroachdb/pod-failure", name="fail-primary", namespace="postgres",
                               variables={"DURATION": "1s"}, target={"role": "patroni-primary"}, configuration=cfg)
        assert made["selected_pods"] == [f"postgres/{pods[primary]}"]
        cm.delete_chaos("PodChaos", "fail-primary", "postgres", configuration=cfg)
    finally:
        standin.stop()
        api.reset_clients()
