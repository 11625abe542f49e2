"""Write the CockroachDB experiments in ``experiments/cockroachdb/`` from one template
(``python -m tools.make_cockroach_experiments``); a unit test checks the committed files.

Two families, configured through environment variables only (the README lists them):

* ``k8s-*``: a CockroachDB StatefulSet on Kubernetes (the thesis's three failure levels -- process kill,
  drain with drain-wait 1 s vs 60 s, pod delete with a 1 s grace period vs forced -- the evaluation's
  node disruption with write verification, and its rolling restart / version hot swap);
* ``local-*``: the same faults on ``chaosdb cluster up --kind cockroach`` (kill, SIGTERM, drain).

Every run targets the leaseholder of TPC-C warehouse 1 (the hottest row of the workload), records where
the leases and ranges were, checks the cluster is healthy *before* injecting (the hypothesis runs first:
a degraded cluster stops the experiment) and after, and verifies that no acknowledged New-Order is lost.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from chaosdb.core.settings import env_entries
from chaosdb.core.tls import tls_keys
from tools.make_experiments import MAX_P99_RATIO, VERDICT_CONTROL, load_probes, to_json, write_all

__all__ = ["EXPERIMENTS", "build", "render", "main"]

SECRETS_SCOPE = "cockroach"
_MOD_P, _MOD_A = "chaosdb.cockroach.probes", "chaosdb.cockroach.actions"
LEASEHOLDER = {"target": "leaseholder", "table": "warehouse", "row": [1]}


def _activity(kind: str, name: str, module: str, func: str, arguments: dict[str, Any] | None = None,
              after: float = 0, tolerance: Any = None) -> dict[str, Any]:
    a: dict[str, Any] = {"type": kind, "name": name,
                         "provider": {"type": "python", "module": module, "func": func,
                                      "arguments": arguments or {}},
                         "secrets": [SECRETS_SCOPE]}
    if tolerance is not None:
        a["tolerance"] = tolerance
    if after:
        a["pauses"] = {"after": after}
    return a


HYPOTHESIS = {
    "title": "cluster healthy, clients served fast and without errors, nothing acknowledged lost",
    "probes": [
        _activity("probe", "cluster-is-healthy", _MOD_P, "cluster_is_healthy", tolerance=True),
        *load_probes(),
        _activity("probe", "tpcc-consistency-conditions", "chaosdb.load.integrity", "tpcc_is_consistent",
                  tolerance=True),
        _activity("probe", "acknowledged-new-orders-lost", "chaosdb.load.integrity", "lost_acknowledged_writes",
                  tolerance=0),
    ],
}

BEFORE = [
    _activity("probe", "leaseholder-of-warehouse-1", _MOD_P, "leaseholder_of_row",
              {"table": "warehouse", "row": [1]}),
    _activity("probe", "ranges-per-node-before", _MOD_P, "ranges_per_node"),
]
AFTER = [
    _activity("action", "wait-until-the-cluster-is-healthy", _MOD_A, "wait_until_healthy", {"timeout_s": 600}),
    _activity("probe", "ranges-per-node-after", _MOD_P, "ranges_per_node"),
]
LOCAL_RESTART = _activity("action", "restart-the-stopped-node", _MOD_A, "restart_killed_nodes", {"timeout_s": 300})

K8S_CONFIG = {
    "cockroach_host": {"type": "env", "key": "CHAOSDB_COCKROACH_HOST", "default": "cockroachdb-public:26257"},
    "cockroach_certs_dir": {"type": "env", "key": "CHAOSDB_COCKROACH_CERTS_DIR", "default": "/cockroach/cockroach-certs"},
    "cockroach_insecure": {"type": "env", "key": "CHAOSDB_COCKROACH_INSECURE", "default": "false"},
    # the CLI runs in a database pod through the official client's exec (the image has no kubectl)
    "cockroach_bin": {"type": "env", "key": "CHAOSDB_COCKROACH_BIN", "default": "/cockroach/cockroach"},
    "cockroach_cli_pod": {"type": "env", "key": "CHAOSDB_COCKROACH_CLI_POD", "default": "cockroachdb-0"},
    "k8s_namespace": {"type": "env", "key": "CHAOSDB_K8S_NAMESPACE", "default": "default"},
    "k8s_container": {"type": "env", "key": "CHAOSDB_K8S_CONTAINER", "default": "db"},  # Helm chart, operator
    # the DB Console over HTTPS: its CA defaults to <certs dir>/ca.crt (chaosdb.cockroach.channels.http_tls)
    **env_entries(*tls_keys("cockroach")),
}
LOCAL_CONFIG = {
    "cockroach_url": {"type": "env", "key": "CHAOSDB_COCKROACH_URL",
                      "default": "postgresql://root@127.0.30.1:26257/defaultdb?sslmode=disable"},
    "cockroach_host": {"type": "env", "key": "CHAOSDB_COCKROACH_HOST", "default": "127.0.30.1:26257"},
    "cockroach_insecure": {"type": "env", "key": "CHAOSDB_COCKROACH_INSECURE", "default": "true"},
    "cockroach_bin": {"type": "env", "key": "CHAOSDB_COCKROACH_BIN", "default": "cockroach"},
}

EXPERIMENTS: dict[str, dict[str, Any]] = {
    "k8s-process-kill": {
        "title": "Thesis level 1 on Kubernetes: the leaseholder's cockroach process is killed (SIGKILL in the pod)",
        "story": "kill -s KILL 1 inside the pod of warehouse 1's leaseholder; the kubelet restarts the container. "
                 "Expected: the leases it held are unavailable until their expiration/epoch moves them (several "
                 "seconds), then full recovery without losing acknowledged writes.",
        "fault": _activity("action", "kill-the-leaseholder-process", _MOD_A, "kill_node",
                           {**LEASEHOLDER, "signal": "KILL"}, after=60),
    },
    "k8s-drain-wait-1s": {
        "title": "Thesis level 2a on Kubernetes: the leaseholder drains with --drain-wait=1s and shuts down",
        "story": "cockroach node drain <leaseholder> --drain-wait=1s --shutdown: too short to move every lease, "
                 "so the shutdown cuts the drain. Expected: errors close to a process kill.",
        "fault": _activity("action", "drain-the-leaseholder-1s", _MOD_A, "drain_node",
                           {**LEASEHOLDER, "drain_wait_s": 1, "shutdown": True}, after=60),
    },
    "k8s-drain-wait-60s": {
        "title": "Thesis level 2b on Kubernetes: the leaseholder drains with --drain-wait=60s and shuts down",
        "story": "cockroach node drain <leaseholder> --drain-wait=60s --shutdown: leases and SQL clients move "
                 "away before the process exits. Expected: little or no client-visible disruption.",
        "fault": _activity("action", "drain-the-leaseholder-60s", _MOD_A, "drain_node",
                           {**LEASEHOLDER, "drain_wait_s": 60, "shutdown": True}, after=60),
    },
    "k8s-pod-delete-grace-1s": {
        "title": "Thesis level 3a on Kubernetes: the leaseholder's pod is deleted with a 1 s grace period",
        "story": "kubectl delete pod --grace-period=1: SIGTERM, 1 s to drain, SIGKILL; the StatefulSet recreates "
                 "the pod with the same volume.",
        "fault": _activity("action", "delete-the-leaseholder-pod-grace-1s", _MOD_A, "delete_node_pod",
                           {**LEASEHOLDER, "grace_period_s": 1}, after=60),
    },
    "k8s-pod-delete-force": {
        "title": "Thesis level 3b on Kubernetes: the leaseholder's pod is force-deleted",
        "story": "kubectl delete pod --grace-period=0 --force: removed from the API at once, the container killed.",
        "fault": _activity("action", "force-delete-the-leaseholder-pod", _MOD_A, "delete_node_pod",
                           {**LEASEHOLDER, "force": True}, after=60),
    },
    "k8s-node-disruption-write-verify": {
        "title": "Kubernetes evaluation: node disruption under writes, every acknowledged write verified",
        "story": "The node holding warehouse 1's lease is killed, and once the cluster is healthy again a node "
                 "that is not the leaseholder is force-deleted. After each, ranges per node are sampled until "
                 "balanced and the acknowledged New-Orders are checked against the database.",
        "fault": [
            _activity("action", "kill-the-leaseholder-process", _MOD_A, "kill_node", {**LEASEHOLDER, "signal": "KILL"},
                      after=30),
            _activity("action", "wait-for-health-after-the-first-disruption", _MOD_A, "wait_until_healthy",
                      {"timeout_s": 600}),
            _activity("probe", "acknowledged-writes-after-the-first-disruption", "chaosdb.load.integrity",
                      "lost_acknowledged_writes"),
            _activity("action", "force-delete-a-non-leaseholder-pod", _MOD_A, "delete_node_pod",
                      {"target": "not-leaseholder", "table": "warehouse", "row": [1], "force": True}, after=30),
            _activity("probe", "ranges-rebalance", _MOD_P, "ranges_per_node_over_time",
                      {"duration_s": 300, "interval_s": 10, "stop_when_balanced": True}),
        ],
    },
    "k8s-rolling-restart": {
        "title": "Kubernetes evaluation: rolling restart (or version hot swap) of the StatefulSet under load",
        "story": "kubectl rollout restart (or, with CRDB_UPGRADE_IMAGE set, kubectl set image) restarts one pod at "
                 "a time; each pod's down time is measured. Expected: short per-pod down times, one pod down at a "
                 "time, no lost writes.",
        "fault": _activity("action", "rolling-restart", _MOD_A, "rolling_restart",
                           {"statefulset": "${statefulset}", "selector": "${pod_selector}", "poll_s": 1},
                           after=30),
        "config": {"statefulset": {"type": "env", "key": "CHAOSDB_STATEFULSET", "default": "cockroachdb"},
                   "pod_selector": {"type": "env", "key": "CHAOSDB_POD_SELECTOR", "default": "app=cockroachdb"}},
    },
    "local-process-kill": {
        "title": "Thesis level 1 on a local cluster: the leaseholder's cockroach process is killed",
        "story": "SIGKILL of the local cockroach start process serving warehouse 1's leaseholder; restarted 60 s "
                 "later from its saved command line.",
        "fault": _activity("action", "kill-the-leaseholder-process", _MOD_A, "kill_node",
                           {**LEASEHOLDER, "signal": "KILL"}, after=60),
    },
    "local-process-term": {
        "title": "Graceful stop on a local cluster: the leaseholder receives SIGTERM (drain, then exit)",
        "story": "SIGTERM makes cockroach drain with its server.shutdown.* settings and exit, the local "
                 "equivalent of a pod delete with a grace period.",
        "fault": _activity("action", "terminate-the-leaseholder-process", _MOD_A, "kill_node",
                           {**LEASEHOLDER, "signal": "TERM"}, after=60),
    },
    "local-drain-wait-1s": {
        "title": "Thesis level 2a on a local cluster: drain with --drain-wait=1s and shut down",
        "story": "cockroach node drain <leaseholder> --drain-wait=1s --shutdown, restarted 60 s later.",
        "fault": _activity("action", "drain-the-leaseholder-1s", _MOD_A, "drain_node",
                           {**LEASEHOLDER, "drain_wait_s": 1, "shutdown": True}, after=60),
    },
    "local-drain-wait-60s": {
        "title": "Thesis level 2b on a local cluster: drain with --drain-wait=60s and shut down",
        "story": "cockroach node drain <leaseholder> --drain-wait=60s --shutdown, restarted 60 s later.",
        "fault": _activity("action", "drain-the-leaseholder-60s", _MOD_A, "drain_node",
                           {**LEASEHOLDER, "drain_wait_s": 60, "shutdown": True}, after=60),
    },
}


def build(name: str) -> dict[str, Any]:
    """The experiment as a fresh object (callers may change it without touching the shared parts)."""
    return copy.deepcopy(_build(name))


def _build(name: str) -> dict[str, Any]:
    spec = EXPERIMENTS[name]
    local = name.startswith("local-")
    faults = spec["fault"] if isinstance(spec["fault"], list) else [spec["fault"]]
    method = [*BEFORE, *faults, *([LOCAL_RESTART] if local else []), *AFTER]
    where = ("a local CockroachDB cluster ('chaosdb cluster up --kind cockroach')" if local
             else "a CockroachDB StatefulSet on Kubernetes")
    config = {**(LOCAL_CONFIG if local else K8S_CONFIG), **spec.get("config", {}),
              "report_dir": {"type": "env", "key": "CHAOSDB_REPORT_DIR", "default": f"runs/cockroachdb-{name}"},
              "baseline_s": {"type": "env", "key": "CHAOSDB_BASELINE_S", "default": "60"}}
    return {
        "version": "1.0.0",
        "title": spec["title"],
        "description": (f"Hypothesis: on {where}, with 8 TPC-C terminals (data loaded beforehand with 'chaosdb load "
                        "tpcc-load --dsn $CHAOSDB_COCKROACH_URL'), every active node is live with no unavailable or "
                        "under-replicated range, p99 latency stays within " f"{MAX_P99_RATIO} times the baseline's, fewer than 1 % of attempts fail, "
                        "the TPC-C consistency conditions hold and no acknowledged New-Order is lost. "
                        + spec["story"]),
        "tags": ["cockroachdb", "kubernetes" if not local else "local", "thesis"],
        "configuration": config,
        # a production URL carries a password: a secret there; the local cluster is insecure, with a default URL
        **({} if local else {"secrets": {SECRETS_SCOPE: {
            "cockroach_url": {"type": "env", "key": "CHAOSDB_COCKROACH_URL"},
            "load_dsn": {"type": "env", "key": "CHAOSDB_COCKROACH_URL"},
        }}}),
        "controls": [
            VERDICT_CONTROL,
            {"name": "tpcc-load", "provider": {
                "type": "python", "module": "chaosdb.load.control",
                "arguments": {"users": 8, "warmup_s": 15, "baseline_s": "${baseline_s}", "isolation": "serializable",
                              "samples_dir": "${report_dir}/samples", "replace_samples": True,
                              **({"dsn": "${cockroach_url}"} if local else {})}}},
            {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                            "arguments": {"out_dir": "${report_dir}"}}},
        ],
        "steady-state-hypothesis": HYPOTHESIS,
        "method": method,
        "rollbacks": ([LOCAL_RESTART] if local else []) + [
            _activity("action", "wait-until-the-cluster-is-healthy", _MOD_A, "wait_until_healthy",
                      {"timeout_s": 600})],
    }


def render(name: str) -> str:
    return to_json(build(name), "python -m tools.make_cockroach_experiments")


def main(argv: list[str] | None = None) -> int:
    return write_all(EXPERIMENTS, render, Path(argv[0] if argv else "experiments/cockroachdb"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
