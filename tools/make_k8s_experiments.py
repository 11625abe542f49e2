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
from tools.make_experiments import VERDICT_CONTROL, load_probes, outage_bounds, to_json, write_all
from tools.make_manifests import FAULTS as TEMPLATE_FAULTS

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


# ---- Patroni + PostgreSQL in pods (the local cluster's real node: 'chaosdb cluster up --kind kubernetes
# ---- --real-nodes 1 --nodes 0 --workloads postgres', or the Zalando operator's Spilo pods): one Chaos Mesh fault
# ---- from the postgres/ templates on the pod of a Patroni role resolved when the run starts, under TPC-C.

PATRONI_CONFIG = {
    "k8s_namespace": _env("CHAOSDB_K8S_NAMESPACE", "postgres"),
    "statefulset": _env("CHAOSDB_STATEFULSET", "postgres"),
    "patroni_urls": _env("CHAOSDB_PATRONI_URLS", "http://postgres:8008"),
    "patroni_pods": _env("CHAOSDB_PATRONI_PODS", ""),
    **env_entries(*tls_keys("patroni"), *tls_keys("postgres"), "postgres_sslmode"),
}
PATRONI_HEALTHY = _act("probe", "patroni-is-healthy", "chaosdb.postgres.probes", "cluster_is_healthy", tolerance=True)
#: converged: the hypothesis after the method finds every replica caught up with the leader
WAIT_FOR_PATRONI = _act("action", "wait-for-patroni", "chaosdb.postgres.actions", "wait_until_healthy",
                        {"timeout_s": 300, "converged": True, "stable_s": 5})
WAIT_FOR_STS = _act("action", "wait-for-statefulset-ready", "chaosdb.k8s.actions", "wait_for_statefulset_ready",
                    {"name": "${statefulset}", "timeout_s": 600})
_PATRONI_ROLES = {"primary": ("patroni-primary", "the primary"), "replica": ("patroni-replica", "a replica")}
_PATRONI_HYPOTHESIS = (
    " Hypothesis, before the fault and once Patroni is healthy again: one leader and every replica streaming "
    "(Patroni's REST API, CHAOSDB_PATRONI_URLS), the StatefulSet Ready, and under 8 TPC-C terminals (the load's "
    "DSN: CHAOSDB_LOAD_DSN, which 'chaosdb cluster up' prints; the run is refused without one) a p99 of the last "
    "10 s within 3 times this run's baseline and under 1 % failed transactions.")


def _patroni(title: str, expected: str, fault: str, role: str, chaos_name: str, action_name: str,
             variables: dict[str, str] | None = None, duration: str = "", observe_s: int = 30,
             outage: str = "") -> dict[str, Any]:
    """One Patroni experiment: the ``postgres/<fault>`` template on the pod of *role* (``primary`` or ``replica``),
    *observe_s* of observation, then (a timed fault: *duration*) its recovery, Patroni healthy and converged, the
    StatefulSet Ready. *outage*: ``leader`` (the fault moves the primary: new leader and commit-gap bounds in the
    hypothesis), ``gap`` (only the commit-gap bound), empty (none)."""
    kind = TEMPLATE_FAULTS[fault]["kind"]
    target_role, who = _PATRONI_ROLES[role]
    config = dict(PATRONI_CONFIG)
    values = dict(variables or {})
    if duration:
        config["chaos_duration"] = _env("CHAOSDB_CHAOS_DURATION", duration)
        values["DURATION"] = "${chaos_duration}"
    method = [_act("action", action_name, "chaosdb.chaosmesh.actions", "create_chaos",
                   {"template": f"postgres/{fault}", "name": chaos_name, "variables": _chaos_vars(**values),
                    "target": {"role": target_role, "namespace": "${k8s_namespace}"}, "wait": True},
                   after=observe_s)]
    if duration:  # timed faults revert themselves; wait until Chaos Mesh says so before checking the cluster
        method.append(_act("action", "wait-until-recovered", "chaosdb.chaosmesh.actions", "wait_until_recovered",
                           {"kind": kind, "name": chaos_name, "namespace": "${chaos_namespace}", "timeout_s": 300}))
    method += [WAIT_FOR_PATRONI, WAIT_FOR_STS]
    bounds = outage_bounds(new_leader=outage == "leader") if outage else []
    how = (f"The Patroni member that is {who} is looked up in Patroni's REST API when the run starts; its pod "
           "(member name = pod name, as with Spilo and the local cluster's postgres workload; else "
           f"CHAOSDB_PATRONI_PODS=member=pod,...) gets a {kind} from the postgres/{fault} template. ")
    bound_text = {"leader": " The hypothesis after the method also bounds the outage: a new leader within 35 s "
                            "and no commit gap over 40 s.",
                  "gap": " The hypothesis after the method also bounds the outage: no commit gap over 40 s."}
    return _experiment(title, how + expected + _PATRONI_HYPOTHESIS + bound_text.get(outage, ""),
                       ["chaos-mesh", fault, "patroni", role], config,
                       [PATRONI_HEALTHY, STS_READY, *load_probes(), *bounds], method,
                       [_delete(kind, chaos_name, f"delete-the-{fault}")])


def _patroni_experiments() -> dict[str, dict[str, Any]]:
    """The Patroni-on-Kubernetes set: the leader-versus-follower matrix (kill, CPU, memory, partition) on pods,
    and the faults only Kubernetes has (container kill, pod failure, a partition from the API, clock skew)."""
    stress_cpu = {"WORKERS": "2", "LOAD": "100"}
    stress_memory = {"WORKERS": "2", "SIZE": "256MB"}
    shared_cpu = ("stress-ng runs in the pod's cgroup; the pods have no CPU limit, so it competes for the "
                  "machine's cores with every pod and with the load generator: on one shared machine a primary and "
                  "a replica differ less than on separate nodes. ")
    shared_memory = ("The pods have no memory limit: the 512 MB come from the machine's free memory, so nothing "
                     "should happen unless the machine runs short (a pod memory limit turns this into the cgroup "
                     "pressure of the embedded cluster's memory-limit experiments). ")
    return {
        "chaosmesh-pod-kill-patroni-primary": _patroni(
            "PostgreSQL/Patroni on Kubernetes: kill the primary's pod (Chaos Mesh); writes come back within 40 s",
            "The pod is deleted with grace period 0 (the StatefulSet recreates it, with the same name, IP range "
            "and volume). Expected: either a replica is promoted once the leader lock expires (ttl, 20 s on the "
            "local cluster) and the recreated pod rejoins as a replica (pg_rewind if needed), or, measured in 2 of "
            "5 runs on the local cluster, the recreated pod (the same member name) finds the lock still its own and "
            "takes it back before it expires ('starting as readonly because i had the session lock'): no new "
            "leader at all. A StatefulSet's stable identity makes both right, so the hypothesis bounds what users "
            "see, the longest time without a commit, and not which member leads.",
            "pod-kill", "primary", "chaosdb-kill-primary", "kill-the-primary-pod", outage="gap"),
        "chaosmesh-pod-kill-patroni-replica": _patroni(
            "PostgreSQL/Patroni on Kubernetes: kill a replica's pod (Chaos Mesh); no failover",
            "The pod is deleted with grace period 0 (the StatefulSet recreates it). Expected: no failover; if it "
            "was the synchronous standby, commits wait until Patroni makes another replica synchronous (a few "
            "seconds); the recreated pod streams again from its persistent volume.",
            "pod-kill", "replica", "chaosdb-kill-replica", "kill-a-replica-pod"),
        "chaosmesh-container-kill-patroni-primary": _patroni(
            "PostgreSQL/Patroni on Kubernetes: kill the primary's postgres container (Chaos Mesh); the kubelet "
            "restarts it",
            "The postgres container (Patroni and PostgreSQL) is killed and restarted in the same pod, with the same "
            "IP and volume: the process-level failure. Expected: a few seconds without commits; the restarted "
            "Patroni finds its leader lock still valid (ttl 20 s) and starts PostgreSQL again as the primary "
            "(crash recovery), or, if the restart takes longer than the ttl, a replica is promoted; either way the "
            "outage stays under the commit-gap bound.",
            "container-kill", "primary", "chaosdb-container-kill-primary", "kill-the-primary-container",
            outage="gap"),
        "chaosmesh-pod-failure-patroni-primary": _patroni(
            "PostgreSQL/Patroni on Kubernetes: the primary's pod fails for 30 s (Chaos Mesh pod-failure); a "
            "replica is promoted",
            "Chaos Mesh replaces the pod's containers by a pause image for 30 s, then restores them; the pod keeps "
            "its name, IP and volume. Expected: Patroni stops with its container, a replica is promoted (within the "
            "ttl, 20 s) and the load follows it; after the failure the old primary's Patroni starts again and "
            "rejoins as a replica.",
            "pod-failure", "primary", "chaosdb-pod-failure-primary", "fail-the-primary-pod", duration="30s",
            observe_s=40, outage="leader"),
        "chaosmesh-stress-cpu-patroni-primary": _patroni(
            "PostgreSQL/Patroni on Kubernetes: CPU stress in the primary's pod for 30 s (Chaos Mesh StressChaos)",
            "2 stress-ng CPU workers at 100 % run in the postgres container for 30 s. " + shared_cpu
            + "Expected: p99 rises and throughput falls while it lasts; Patroni keeps its lock (its loop needs "
              "little CPU), no failover; back to the baseline after the stress.",
            "stress-cpu", "primary", "chaosdb-stress-cpu-primary", "stress-the-primary-cpu", stress_cpu,
            duration="30s", observe_s=40),
        "chaosmesh-stress-cpu-patroni-replica": _patroni(
            "PostgreSQL/Patroni on Kubernetes: CPU stress in a replica's pod for 30 s (Chaos Mesh StressChaos)",
            "2 stress-ng CPU workers at 100 % run in the postgres container for 30 s. " + shared_cpu
            + "Expected: with synchronous replication a slowed synchronous standby slows commits too; no failover; "
              "back to the baseline after the stress.",
            "stress-cpu", "replica", "chaosdb-stress-cpu-replica", "stress-a-replica-cpu", stress_cpu,
            duration="30s", observe_s=40),
        "chaosmesh-stress-memory-patroni-primary": _patroni(
            "PostgreSQL/Patroni on Kubernetes: memory stress in the primary's pod for 30 s (Chaos Mesh StressChaos)",
            "2 memory workers hold 256 MB each in the postgres container for 30 s. " + shared_memory
            + "Expected: no failover, little or no effect on the clients.",
            "stress-memory", "primary", "chaosdb-stress-memory-primary", "stress-the-primary-memory",
            stress_memory, duration="30s", observe_s=40),
        "chaosmesh-stress-memory-patroni-replica": _patroni(
            "PostgreSQL/Patroni on Kubernetes: memory stress in a replica's pod for 30 s (Chaos Mesh StressChaos)",
            "2 memory workers hold 256 MB each in the postgres container for 30 s. " + shared_memory
            + "Expected: no effect on the clients.",
            "stress-memory", "replica", "chaosdb-stress-memory-replica", "stress-a-replica-memory", stress_memory,
            duration="30s", observe_s=40),
        "chaosmesh-partition-patroni-primary": _patroni(
            "PostgreSQL/Patroni on Kubernetes: the primary's pod cut from the other database pods for 40 s "
            "(Chaos Mesh NetworkChaos partition)",
            "Traffic between the primary's pod and every other pod of the cluster is dropped both ways for 40 s; "
            "the API server and the clients (from outside the pods) still reach it. Expected: no failover "
            "(Patroni renews its lock in the API); with synchronous replication commits stall until PostgreSQL "
            "drops the unreachable standby's connection (wal_sender_timeout, 60 s by default, longer than the "
            "partition) and Patroni stops waiting for it, or until the partition ends; the replicas catch up "
            "afterwards.",
            "network-partition", "primary", "chaosdb-partition-primary", "partition-the-primary-pod",
            {"DIRECTION": "both"}, duration="40s", observe_s=40),
        "chaosmesh-partition-patroni-replica": _patroni(
            "PostgreSQL/Patroni on Kubernetes: a replica's pod cut from the other database pods for 40 s "
            "(Chaos Mesh NetworkChaos partition)",
            "Traffic between the replica's pod and every other pod of the cluster is dropped both ways for 40 s; "
            "the API server still reaches it. Expected: no failover; if it is the synchronous standby, commits "
            "stall as for the primary's partition (until wal_sender_timeout or the partition's end); it catches up "
            "afterwards.",
            "network-partition", "replica", "chaosdb-partition-replica", "partition-a-replica-pod",
            {"DIRECTION": "both"}, duration="40s", observe_s=40),
        "chaosmesh-partition-patroni-primary-from-api": _patroni(
            "PostgreSQL/Patroni on Kubernetes: the primary's pod cut from the Kubernetes API for 40 s (Chaos Mesh); "
            "Patroni fails over after its ttl",
            "Packets from the primary's pod to the API server (its in-cluster address, 10.96.0.1 on the local "
            "cluster: the template's API_ADDRESS) are dropped for 40 s, longer than Patroni's ttl (20 s). Patroni "
            "keeps its leader lock in the API (Kubernetes DCS): it cannot renew it and demotes its PostgreSQL, and "
            "the replicas, which still reach the API, elect a new leader once the lock has expired. Expected: no "
            "commit from the demotion until the new primary serves (about the ttl), then the load follows it; when "
            "the partition ends the old primary rejoins as a replica (pg_rewind).",
            "network-partition-from-api", "primary", "chaosdb-partition-primary-from-api",
            "cut-the-primary-from-the-api", duration="40s", observe_s=40, outage="leader"),
        "chaosmesh-time-skew-patroni-replica": _patroni(
            "PostgreSQL/Patroni on Kubernetes: a replica's wall clock 5 minutes ahead for 30 s (Chaos Mesh "
            "TimeChaos)",
            "CLOCK_REALTIME of the processes in the replica's postgres container runs 5 minutes ahead for 30 s "
            "(CLOCK_MONOTONIC untouched); the other pods keep the true time. What we want to see is whether "
            "PostgreSQL or Patroni notice: PostgreSQL times its replication messages and wal_receiver_timeout "
            "with the wall clock (a walreceiver that sees 5 minutes pass at once may time out and reconnect, "
            "which a synchronous standby turns into a short commit stall), and Patroni's loop reads the wall clock "
            "too (the jump back at the recovery may delay that member's next cycle); the report's database "
            "events and replication lag show which. Expected: no failover, no error on the primary; the "
            "hypothesis holds.",
            "time-skew", "replica", "chaosdb-time-skew-replica", "skew-a-replica-clock",
            {"TIME_OFFSET": "5m"}, duration="30s", observe_s=40),
    }


EXPERIMENTS.update(_patroni_experiments())


def _chaosk8s_experiment() -> dict[str, Any]:
    """Chaos Toolkit's own Kubernetes extension (chaosk8s) beside the pack: its pod action and probe by label,
    this pack's Patroni probes, waits, load, verdict and report."""
    selector = "application=spilo,cluster-name=postgres"
    pods_running = {"type": "probe", "name": "database-pods-running", "tolerance": True,
                    "provider": {"type": "python", "module": "chaosk8s.pod.probes", "func": "pods_in_phase",
                                 "arguments": {"label_selector": selector, "phase": "Running",
                                               "ns": "${k8s_namespace}"}}}
    terminate = {"type": "action", "name": "terminate-a-replica-pod-by-label", "pauses": {"after": 30},
                 "provider": {"type": "python", "module": "chaosk8s.pod.actions", "func": "terminate_pods",
                              "arguments": {"label_selector": f"{selector},role=replica", "qty": 1,
                                            "grace_period": 0, "ns": "${k8s_namespace}"}}}
    return _experiment(
        "PostgreSQL/Patroni on Kubernetes with chaostoolkit-kubernetes: terminate a replica's pod by label",
        "Chaos Toolkit's Kubernetes extension (chaosk8s, installed with this pack's k8s extra) terminates a pod "
        "that carries Patroni's role=replica label, and checks the database's pods are Running; this pack adds "
        "what it does not have: Patroni healthy and converged (its REST API, CHAOSDB_PATRONI_URLS), the TPC-C load "
        "with its probes, the verdict and the report. chaosk8s reads its credentials from KUBECONFIG (or "
        "~/.kube/config, or CHAOSTOOLKIT_IN_POD=true in a pod); this pack from CHAOSDB_KUBECONFIG: give both. A "
        "label is what Patroni last wrote to the API: where the role must be the database's own answer at the "
        "moment of the fault (a primary cut from the API keeps its role=master label after a new leader was "
        "elected), use this pack's target {\"role\": \"patroni-primary\"} instead." + _PATRONI_HYPOTHESIS,
        ["chaostoolkit-kubernetes", "pod-kill", "patroni", "replica"], dict(PATRONI_CONFIG),
        [PATRONI_HEALTHY, pods_running, STS_READY, *load_probes()], [terminate, WAIT_FOR_PATRONI, WAIT_FOR_STS], [])


EXPERIMENTS["chaosk8s-terminate-patroni-replica"] = _chaosk8s_experiment()
#: experiments whose hypothesis measures the load: refused without a DSN instead of failing their hypothesis
_LOAD_REQUIRED = {name for name, exp in EXPERIMENTS.items() if "patroni" in exp["tags"]}


def _with_load(name: str, exp: dict[str, Any]) -> dict[str, Any]:
    """The experiment with the load and report controls (and their two settings)."""
    if name in _NO_LOAD:
        return exp
    config = {**exp["configuration"], "report_dir": _env("CHAOSDB_REPORT_DIR", f"runs/kubernetes-{name}"),
              "baseline_s": _env("CHAOSDB_BASELINE_S", "30")}
    controls = LOAD_CONTROLS
    if name in _LOAD_REQUIRED:
        load = json.loads(json.dumps(LOAD_CONTROLS[0]))
        load["provider"]["arguments"]["only_with_dsn"] = False
        controls = [load, *LOAD_CONTROLS[1:]]
    return {**exp, "configuration": config, "controls": [*exp["controls"], *controls]}


EXPERIMENTS = {name: _with_load(name, exp) for name, exp in EXPERIMENTS.items()}


def render(name: str) -> str:
    return to_json(EXPERIMENTS[name], "python -m tools.make_k8s_experiments")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "experiments" / "kubernetes"
    write_all(EXPERIMENTS, render, out)


if __name__ == "__main__":
    main()
