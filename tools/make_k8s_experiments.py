"""Write the Kubernetes experiments in ``experiments/kubernetes/`` (``python -m
tools.make_k8s_experiments``); a unit test checks the committed files.

Every experiment is configured through environment variables with defaults (the README lists them):
``CHAOSDB_KUBECONFIG`` (empty: ``$KUBECONFIG``, ``~/.kube/config`` or the pod's service account),
``CHAOSDB_K8S_NAMESPACE`` (the database's namespace), ``CHAOSDB_CHAOS_NAMESPACE`` (where chaos objects are
created), plus per-experiment keys. Chaos objects are deleted by the rollbacks, also when the run fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from chaosdb.core.settings import env_entries
from chaosdb.core.tls import tls_keys
from tools.make_experiments import VERDICT_CONTROL, to_json, write_all

__all__ = ["EXPERIMENTS", "main"]


def _env(key: str, default: Any) -> dict[str, Any]:
    return {"type": "env", "key": key, "default": default}


#: deletes what an interrupted run left behind (Chaos Toolkit skips rollbacks on Ctrl-C / SIGTERM)
CONTROL = {"name": "chaosdb-kubernetes", "provider": {"type": "python", "module": "chaosdb.k8s.control"}}

BASE_CONFIG = {
    "k8s_kubeconfig": _env("CHAOSDB_KUBECONFIG", ""),
    "k8s_namespace": _env("CHAOSDB_K8S_NAMESPACE", "cockroachdb"),
    "chaos_namespace": _env("CHAOSDB_CHAOS_NAMESPACE", "chaos-testing"),
    "statefulset": _env("CHAOSDB_STATEFULSET", "cockroachdb"),
}


def _act(kind: str, name: str, module: str, func: str, arguments: dict[str, Any] | None = None,
         tolerance: Any = None, after: float = 0) -> dict[str, Any]:
    a: dict[str, Any] = {"type": kind, "name": name, "provider": {"type": "python", "module": module,
                                                                  "func": func, "arguments": arguments or {}}}
    if tolerance is not None:
        a["tolerance"] = tolerance
    if after:
        a["pauses"] = {"after": after}
    return a


STS_READY = _act("probe", "statefulset-is-ready", "chaosdb.k8s.probes", "statefulset_is_ready",
                 {"name": "${statefulset}"}, tolerance=True)
CRDB_HEALTHY = _act("probe", "cockroachdb-is-healthy", "chaosdb.cockroach.probes", "cluster_is_healthy",
                    tolerance=True)
LEASEHOLDER = {"role": "cockroach-leaseholder", "table": "warehouse", "row": [1], "namespace": "${k8s_namespace}"}


def _chaos_vars(**extra: str) -> dict[str, str]:
    return {"NAMESPACE": "${chaos_namespace}", "DB_NAMESPACE": "${k8s_namespace}", **extra}


def _delete(kind: str, name: str, rollback_name: str) -> dict[str, Any]:
    return _act("action", rollback_name, "chaosdb.chaosmesh.actions", "delete_chaos",
                {"kind": kind, "name": name, "namespace": "${chaos_namespace}"})


#: a TPC-C load and the report where the user gives a DSN (CHAOSDB_LOAD_DSN, a secret): the same figures as an
#: embedded run; without one the run has no load and its report says so
LOAD_CONTROLS = [
    {"name": "tpcc-load", "provider": {"type": "python", "module": "chaosdb.load.control", "arguments": {
        "users": 8, "warmup_s": 15, "baseline_s": "${baseline_s}", "samples_dir": "${report_dir}/samples",
        "replace_samples": True, "only_with_dsn": True}}},
    {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                    "arguments": {"out_dir": "${report_dir}"}}},
]


def _experiment(title: str, description: str, tags: list[str], configuration: dict[str, Any],
                hypothesis: list[dict[str, Any]], method: list[dict[str, Any]],
                rollbacks: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"steady-state-hypothesis": {"title": "the database is whole", "probes": hypothesis},
            "method": method, "rollbacks": rollbacks}
    controls = [VERDICT_CONTROL, CONTROL]
    # the activities read k8s_kubeconfig and k8s_namespace themselves; the other keys only where substituted
    used = json.dumps([body, controls])
    config = {k: v for k, v in {**BASE_CONFIG, **configuration}.items()
              if k in ("k8s_kubeconfig", "k8s_namespace") or k in configuration or "${" + k + "}" in used}
    return {"version": "1.0.0", "title": title, "description": description, "tags": ["kubernetes", *tags],
            "controls": controls, "configuration": config, **body}


_NO_LOAD = {"chaosmesh-stress-cpu-tikv-leader"}  # TiKV speaks no SQL: its load is go-ycsb, run alongside

EXPERIMENTS: dict[str, dict[str, Any]] = {
    "chaosmesh-pod-failure-statefulset": _experiment(
        "Chaos Mesh pod-failure of one pod of a StatefulSet: it is back and Ready after the failure",
        "Any database StatefulSet (default labels of the CockroachDB Helm chart). One named pod fails for "
        "CHAOSDB_CHAOS_DURATION through a PodChaos rendered from cockroachdb/pod-failure; the experiment waits "
        "until Chaos Mesh reports the pod recovered and the StatefulSet is Ready again.",
        ["chaos-mesh", "pod-failure"],
        {"chaos_duration": _env("CHAOSDB_CHAOS_DURATION", "60s"),
         "target_pod": _env("CHAOSDB_TARGET_POD", "cockroachdb-0")},
        [STS_READY],
        [_act("action", "pod-failure-on-one-pod", "chaosdb.chaosmesh.actions", "create_chaos",
              {"template": "cockroachdb/pod-failure", "name": "chaosdb-pod-failure",
               "variables": _chaos_vars(DURATION="${chaos_duration}"),
               "target": {"pod": "${target_pod}", "namespace": "${k8s_namespace}"}}),
         _act("probe", "pod-failure-status", "chaosdb.chaosmesh.probes", "chaos_status",
              {"kind": "PodChaos", "name": "chaosdb-pod-failure", "namespace": "${chaos_namespace}"}),
         _act("action", "wait-until-recovered", "chaosdb.chaosmesh.actions", "wait_until_recovered",
              {"kind": "PodChaos", "name": "chaosdb-pod-failure", "namespace": "${chaos_namespace}",
               "timeout_s": 600}),
         _act("action", "wait-for-statefulset-ready", "chaosdb.k8s.actions", "wait_for_statefulset_ready",
              {"name": "${statefulset}", "timeout_s": 600})],
        [_delete("PodChaos", "chaosdb-pod-failure", "delete-the-pod-failure")]),
    "chaosmesh-network-delay-leaseholder": _experiment(
        "CockroachDB: 100 ms network delay on the leaseholder of warehouse 1 (Chaos Mesh)",
        "The pod holding the lease of TPC-C warehouse 1 is found when the run starts (SHOW RANGE ... FOR ROW), "
        "and only that pod's egress is delayed. Run it with the TPC-C load to measure the latency it costs (the "
        "'tpcc-load' and 'report' controls of the shipped cockroachdb/k8s-process-kill.json give it); the "
        "cluster must stay healthy.",
        ["chaos-mesh", "network-delay", "cockroachdb", "leaseholder"],
        {"cockroach_url": _env("CHAOSDB_COCKROACH_URL", "postgresql://root@cockroachdb-public:26257/tpcc?sslmode=disable"),
         "latency": _env("CHAOSDB_LATENCY", "100ms"), "chaos_duration": _env("CHAOSDB_CHAOS_DURATION", "120s")},
        [CRDB_HEALTHY, STS_READY],
        [_act("probe", "leaseholder-before", "chaosdb.cockroach.probes", "leaseholder_of_row",
              {"table": "warehouse", "row": [1]}),
         _act("action", "delay-the-leaseholder", "chaosdb.chaosmesh.actions", "create_chaos",
              {"template": "cockroachdb/network-delay", "name": "chaosdb-delay-leaseholder",
               "variables": _chaos_vars(LATENCY="${latency}", DURATION="${chaos_duration}"),
               "target": LEASEHOLDER}),
         _act("action", "wait-until-recovered", "chaosdb.chaosmesh.actions", "wait_until_recovered",
              {"kind": "NetworkChaos", "name": "chaosdb-delay-leaseholder", "namespace": "${chaos_namespace}",
               "timeout_s": 900}),
         _act("probe", "leaseholder-after", "chaosdb.cockroach.probes", "leaseholder_of_row",
              {"table": "warehouse", "row": [1]})],
        [_delete("NetworkChaos", "chaosdb-delay-leaseholder", "delete-the-delay")]),
    "chaosmesh-stress-cpu-tikv-leader": _experiment(
        "TiKV: CPU stress on the store holding the leader of a key's region (Chaos Mesh)",
        "The leader store of the region of CHAOSDB_TIKV_KEY is looked up in PD when the run starts; its pod gets a "
        "StressChaos from tikv/stress-cpu. Compare with CHAOSDB_TIKV_ROLE=tikv-follower (the TiKV study's "
        "leader vs follower comparison).",
        ["chaos-mesh", "stress-cpu", "tikv", "leader"],
        {"k8s_namespace": _env("CHAOSDB_K8S_NAMESPACE", "tidb-cluster"), "statefulset": _env(
            "CHAOSDB_STATEFULSET", "basic-tikv"), "pd_url": _env("CHAOSDB_PD_URL", "http://basic-pd.tidb-cluster.svc:2379"),
         **env_entries(*tls_keys("pd")),
         "tikv_key": _env("CHAOSDB_TIKV_KEY", "usertable:user1"), "tikv_role": _env("CHAOSDB_TIKV_ROLE", "tikv-leader"),
         "chaos_duration": _env("CHAOSDB_CHAOS_DURATION", "120s")},
        [_act("probe", "tikv-is-healthy", "chaosdb.tikv.probes", "cluster_is_healthy", tolerance=True), STS_READY],
        [_act("action", "stress-the-leader-store", "chaosdb.chaosmesh.actions", "create_chaos",
              {"template": "tikv/stress-cpu", "name": "chaosdb-stress-tikv",
               "variables": _chaos_vars(DURATION="${chaos_duration}"),
               "target": {"role": "${tikv_role}", "key": "${tikv_key}", "namespace": "${k8s_namespace}"}}),
         _act("action", "wait-until-recovered", "chaosdb.chaosmesh.actions", "wait_until_recovered",
              {"kind": "StressChaos", "name": "chaosdb-stress-tikv", "namespace": "${chaos_namespace}",
               "timeout_s": 900})],
        [_delete("StressChaos", "chaosdb-stress-tikv", "delete-the-stress")]),
    "chaosmesh-pod-kill-patroni-primary": _experiment(
        "PostgreSQL/Patroni on Kubernetes: kill the primary's pod (Chaos Mesh); a replica is promoted",
        "The Patroni leader is read from its REST API when the run starts; its pod (member name = pod name, as "
        "with Spilo, unless patroni_pods maps members to pods: CHAOSDB_PATRONI_PODS=member=pod,...) is killed by "
        "a PodChaos; the cluster must have a leader again within the hypothesis.",
        ["chaos-mesh", "pod-kill", "patroni", "primary"],
        {"k8s_namespace": _env("CHAOSDB_K8S_NAMESPACE", "postgres"), "statefulset": _env(
            "CHAOSDB_STATEFULSET", "postgres"), "patroni_urls": _env("CHAOSDB_PATRONI_URLS", "http://postgres:8008"),
         "patroni_pods": _env("CHAOSDB_PATRONI_PODS", ""),
         **env_entries(*tls_keys("patroni"), *tls_keys("postgres"), "postgres_sslmode")},
        [_act("probe", "patroni-is-healthy", "chaosdb.postgres.probes", "cluster_is_healthy", tolerance=True),
         STS_READY],
        [_act("action", "kill-the-primary-pod", "chaosdb.chaosmesh.actions", "create_chaos",
              {"template": "cockroachdb/pod-kill", "name": "chaosdb-kill-primary", "variables": _chaos_vars(),
               "target": {"role": "patroni-primary", "namespace": "${k8s_namespace}"}}),
         _act("action", "wait-for-patroni", "chaosdb.postgres.actions", "wait_until_healthy", {"timeout_s": 300}),
         _act("action", "wait-for-statefulset-ready", "chaosdb.k8s.actions", "wait_for_statefulset_ready",
              {"name": "${statefulset}", "timeout_s": 600})],
        [_delete("PodChaos", "chaosdb-kill-primary", "delete-the-pod-kill")]),
    "litmus-pod-delete-cockroachdb": _experiment(
        "CockroachDB: LitmusChaos pod-delete with a readiness probe; pass when probeSuccessPercentage is 100",
        "Needs `chaosdb manifests render litmus/pod-delete-setup --set NAMESPACE=...` applied once. The "
        "ChaosEngine from litmus/cockroachdb-pod-delete-engine runs; its ChaosResult verdict and probe success "
        "percentage are the experiment's result.",
        ["litmus", "pod-delete", "cockroachdb"],
        {"health_url": _env("CHAOSDB_HEALTH_URL", "http://cockroachdb-public.cockroachdb.svc:8080/health?ready=1")},
        [STS_READY],
        [_act("action", "litmus-pod-delete", "chaosdb.litmus.actions", "run_chaos_engine",
              {"template": "litmus/cockroachdb-pod-delete-engine",
               "variables": {"NAME": "chaosdb-pod-delete", "NAMESPACE": "${k8s_namespace}",
                             "APP_NAMESPACE": "${k8s_namespace}", "HEALTH_URL": "${health_url}"},
               "timeout_s": 900}),
         _act("probe", "probe-success-percentage", "chaosdb.litmus.probes", "probe_success_percentage",
              {"engine": "chaosdb-pod-delete", "experiment": "pod-delete", "namespace": "${k8s_namespace}"},
              tolerance={"type": "range", "range": [100, 100]})],
        [_act("action", "delete-the-engine", "chaosdb.litmus.actions", "delete_chaos_engine",
              {"engine": "chaosdb-pod-delete", "namespace": "${k8s_namespace}"})]),
    "k8s-scale-out-cockroachdb": _experiment(
        "CockroachDB: scale the StatefulSet out by one node under load; time until it serves and rebalances",
        "The Kubernetes evaluation's elasticity test: replicas go from CHAOSDB_REPLICAS_BEFORE to one more; the "
        "time until the new pod is Ready is recorded, then range counts per node are sampled until balanced. "
        "No automatic scale-in: decommission the new node first (chaosdb.cockroach.actions.decommission_nodes), "
        "then scale back.",
        ["kubernetes", "scale-out", "cockroachdb", "operator-fault"],
        {"cockroach_url": _env("CHAOSDB_COCKROACH_URL", "postgresql://root@cockroachdb-public:26257/tpcc?sslmode=disable"),
         "replicas_after": dict(_env("CHAOSDB_REPLICAS_AFTER", 4), env_var_type="int")},
        [CRDB_HEALTHY, STS_READY],
        [_act("action", "scale-out", "chaosdb.k8s.actions", "scale_statefulset",
              {"name": "${statefulset}", "replicas": "${replicas_after}", "timeout_s": 900}),
         _act("probe", "ranges-per-node-over-time", "chaosdb.cockroach.probes", "ranges_per_node_over_time",
              {"duration_s": 300, "interval_s": 10, "stop_when_balanced": True})],
        []),
}


def _with_load(name: str, exp: dict[str, Any]) -> dict[str, Any]:
    """The experiment with the load and report controls (and their two settings)."""
    if name in _NO_LOAD:
        return exp
    config = {**exp["configuration"], "report_dir": _env("CHAOSDB_REPORT_DIR", f"runs/kubernetes-{name}"),
              "baseline_s": _env("CHAOSDB_BASELINE_S", "30")}
    return {**exp, "configuration": config, "controls": [*exp["controls"], *LOAD_CONTROLS]}


EXPERIMENTS = {name: _with_load(name, exp) for name, exp in EXPERIMENTS.items()}


def render(name: str) -> str:
    return to_json(EXPERIMENTS[name], "python -m tools.make_k8s_experiments")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "experiments" / "kubernetes"
    write_all(EXPERIMENTS, render, out)


if __name__ == "__main__":
    main()
