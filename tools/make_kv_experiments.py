"""Write the key-value experiments in ``experiments/etcd/`` and ``experiments/tikv/``
(``python -m tools.make_kv_experiments``).

The TiKV study's design on a Raft key-value store that runs here, the embedded cluster's etcd: YCSB
workload A (50/50 read/update, zipfian) from 8 clients, then the same fault on the etcd **leader** and on a
**follower**: SIGKILL of the member, a CPU quota sweep (0.05, 0.1, 0.2 s per 1 s) and a memory limit.
Comparing the pairs shows what the study measured: a fault on the leader stalls writes for everybody,
the same fault on a follower barely shows. ``build(name, short=True)`` gives the short versions CI runs.
A unit test checks that the committed files are what this module writes.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from chaosdb.core.settings import env_entries, env_entry
from chaosdb.core.tls import tls_keys
from tools.make_experiments import MAX_P99_RATIO, VERDICT_CONTROL, action, load_probes, to_json, write_all

__all__ = ["EXPERIMENTS", "TIKV_EXPERIMENTS", "build", "build_tikv", "render", "render_tikv", "main"]

FAULTS = "chaosdb.faults.actions"
HYPOTHESIS = {
    "title": "etcd answers fast and without errors, every member healthy, no acknowledged put lost",
    "probes": [
        {"type": "probe", "name": "etcd-is-healthy", "tolerance": True,
         "provider": {"type": "python", "module": "chaosdb.etcd.probes", "func": "etcd_is_healthy"}},
        *load_probes(),
        {"type": "probe", "name": "acknowledged-puts-lost", "tolerance": 0,
         "provider": {"type": "python", "module": "chaosdb.load.integrity", "func": "kv_lost_acknowledged_writes"}},
    ],
}
RESTART = action("restart-the-killed-member", "restart_nodes", {"nodes": "all", "wait_healthy_s": 90})
REVERT = action("revert-every-local-fault", "revert_faults", {}, module=FAULTS)
ROLE = {"leader": "etcd-leader", "follower": "etcd-follower"}


def _spec(kind: str, role: str, quota: float | None = None) -> dict[str, Any]:
    target = ROLE[role]
    if kind == "kill":
        return {"title": f"etcd {role} member killed under YCSB-A",
                "story": f"SIGKILL of the etcd {role}'s process (Patroni and PostgreSQL keep running); restarted "
                         "20 s later.",
                "method": lambda f, a: [action(f"kill-the-etcd-{role}", "kill_etcd_member", {"target": target},
                                               after=f), {**RESTART, "pauses": {"after": a}}]}
    if kind == "cpu":
        pct = round(quota * 100)
        return {"title": f"etcd {role} limited to {pct} % of one core under YCSB-A",
                "story": f"The etcd {role}'s process may run {quota:g} s of CPU per 1 s (cgroup CPU quota), for the "
                         "fault window; reverted on time by a detached reverter.",
                "faults": True,
                "method": lambda f, a: [action(f"limit-the-etcd-{role}-cpu-{pct}pct", "limit_cpu",
                                               {"target": target, "components": ["etcd"], "quota_s": quota,
                                                "period_s": 1.0, "duration_s": f}, after=f + a, module=FAULTS)]}
    return {"title": f"etcd {role} limited to 32 MiB of memory under YCSB-A",
            "story": f"The etcd {role}'s process may use 32 MiB more than it had (cgroup memory limit, no swap) "
                     "for the fault window; the kernel reclaims, then OOM-kills; reverted on time.",
            "faults": True,
            "method": lambda f, a: [action(f"limit-the-etcd-{role}-memory-32mib", "limit_memory",
                                           {"target": target, "components": ["etcd"], "limit_mb": 32,
                                            "duration_s": f}, after=f + a, module=FAULTS),
                                    {**RESTART, "name": "restart-a-member-the-oom-killer-stopped"}]}


EXPERIMENTS: dict[str, dict[str, Any]] = {}
for _role in ("leader", "follower"):
    EXPERIMENTS[f"kill-{_role}"] = _spec("kill", _role)
    for _q in (0.05, 0.1, 0.2):
        EXPERIMENTS[f"cpu-{_role}-{round(_q * 100)}pct"] = _spec("cpu", _role, _q)
    EXPERIMENTS[f"memory-{_role}"] = _spec("memory", _role)


def build(name: str, short: bool = False) -> dict[str, Any]:
    """The experiment; ``short`` for CI: 8 s baseline, 10 s fault, 10 s after."""
    spec = EXPERIMENTS[name]
    fault_s, after_s, baseline = (10, 10, "8") if short else (20, 30, "30")
    controls: list[dict[str, Any]] = [
        VERDICT_CONTROL,
        {"name": "embedded-cluster", "provider": {
            "type": "python", "module": "chaosdb.clusters.postgres_ha.control",
            "arguments": {"nodes": 3, "etcd_ycsb_records": 2000, "down_after": True, "purge": False,
                          "address_base": "${address_base}"}}},
        {"name": "ycsb-etcd-load", "provider": {
            "type": "python", "module": "chaosdb.load.control",
            "arguments": {"workload": "ycsb-etcd", "records": 2000, "users": 8, "warmup_s": 10,
                          "baseline_s": "${baseline_s}", "samples_dir": "${report_dir}/samples",
                          "replace_samples": True}}},
        {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                        "arguments": {"out_dir": "${report_dir}"}}},
    ]
    rollbacks = [RESTART]
    if spec.get("faults"):
        controls.insert(2, {"name": "local-faults", "provider": {"type": "python", "module": "chaosdb.faults.control"}})
        rollbacks = [REVERT, RESTART]
    return copy.deepcopy({
        "version": "1.0.0",
        "title": spec["title"],
        "description": ("Hypothesis: with YCSB workload A from 8 clients on the embedded cluster's 3-member etcd, "
                        f"p99 latency stays within {MAX_P99_RATIO} times the baseline's, fewer than 1 % of operations fail, every member is "
                        "healthy and no acknowledged put is lost. " + spec["story"]),
        "tags": ["etcd", "key-value", "ycsb", "tikv-study", name.split("-")[0], name.split("-")[1]],
        "configuration": {
            "chaosdb_cluster": {"type": "env", "key": "CHAOSDB_CLUSTER", "default": "kv-experiments"},
            "report_dir": {"type": "env", "key": "CHAOSDB_REPORT_DIR", "default": f"runs/etcd-{name}"},
            "baseline_s": {"type": "env", "key": "CHAOSDB_BASELINE_S", "default": baseline},
            "address_base": {"type": "env", "key": "CHAOSDB_ADDRESS_BASE", "default": "127.0.0.41"},
            "secure": env_entry("secure", "false"),
            **env_entries(*tls_keys("etcd")),
        },
        "controls": controls,
        "steady-state-hypothesis": HYPOTHESIS,
        "method": spec["method"](fault_s, after_s),
        "rollbacks": rollbacks,
    })


def render(name: str) -> str:
    return to_json(build(name), "python -m tools.make_kv_experiments")


# ---------------------------------------------------------------------------
# the same design for a real TiKV cluster (CHAOSDB_PD_URL); the load is go-ycsb, run alongside

TIKV = "chaosdb.tikv.actions"
TIKV_HYPOTHESIS = {
    "title": "every store Up, every PD member healthy, no region missing a peer (or all that again within 30 s)",
    "probes": [{"type": "probe", "name": "tikv-cluster-is-healthy", "tolerance": True,
                "provider": {"type": "python", "module": "chaosdb.tikv.probes", "func": "cluster_is_healthy",
                             # PD finishing an operator, a heartbeat late: "Up, or back within 30 s"
                             "arguments": {"within_s": 30}}}],
}
KEY = {"key": "${tikv_key}", "mode": "${tikv_mode}"}


def _tikv_method(kind: str, role: str, value: float | None) -> list[dict[str, Any]]:
    before = {"type": "probe", "name": "leader-of-the-key-before",
              "provider": {"type": "python", "module": "chaosdb.tikv.probes", "func": "leader_store_of_key",
                           "arguments": KEY}}
    after = {"type": "probe", "name": "leader-distribution-after",
             "provider": {"type": "python", "module": "chaosdb.tikv.probes", "func": "leader_distribution"}}
    if kind == "kill":
        fault = action(f"kill-the-{role}-store", "kill_store", {"target": role, **KEY}, after=60, module=TIKV)
    elif kind == "cpu":
        fault = action(f"limit-the-{role}-store-cpu-{round(value * 100)}pct", "limit_cpu",
                       {"target": {"role": f"tikv-{role}", **KEY}, "quota_s": value, "period_s": 1.0,
                        "duration_s": 60}, after=90, module=FAULTS)
    elif kind == "memory":
        fault = action(f"limit-the-{role}-store-memory-{int(value)}mib", "limit_memory",
                       {"target": {"role": f"tikv-{role}", **KEY}, "limit_mb": value, "duration_s": 60}, after=90,
                       module=FAULTS)
    else:
        fault = action(f"evict-leaders-from-the-{role}-store", "evict_leaders", {"target": role, **KEY}, after=60,
                       module=TIKV)
    return [before, fault, after]


TIKV_EXPERIMENTS: dict[str, tuple[str, str, float | None]] = {}
for _role in ("leader", "follower"):
    TIKV_EXPERIMENTS[f"kill-{_role}"] = ("kill", _role, None)
    for _q in (0.05, 0.1, 0.2):
        TIKV_EXPERIMENTS[f"cpu-{_role}-{round(_q * 100)}pct"] = ("cpu", _role, _q)
    for _mb in (128.0, 256.0, 512.0):
        TIKV_EXPERIMENTS[f"memory-{_role}-{int(_mb)}mib"] = ("memory", _role, _mb)
TIKV_EXPERIMENTS["evict-leader"] = ("evict", "leader", None)


def build_tikv(name: str) -> dict[str, Any]:
    kind, role, value = TIKV_EXPERIMENTS[name]
    rollbacks = [action("revert-every-local-fault", "revert_faults", {}, module=FAULTS)] if kind in (
        "cpu", "memory") else []
    if kind == "evict":
        rollbacks.append(action("remove-every-leader-eviction", "remove_leader_eviction", {}, module=TIKV))
    return copy.deepcopy({
        "version": "1.0.0",
        "title": f"TiKV: {kind} fault on the {role} store of the key under load",
        "description": ("Hypothesis: every TiKV store stays Up (or comes back), PD stays healthy and no region "
                        "misses a peer. The fault hits the store that leads (or follows for) the region of "
                        "CHAOSDB_TIKV_KEY, found through PD when the action runs, as in the TiKV study; run the load "
                        "alongside (go-ycsb: go-ycsb run tikv -P workloads/workloada -p tikv.pd=$PD_ADDR "
                        "-p tikv.type=raw) and compare the leader and follower runs. Local stores are faulted "
                        "through the local engine (root); on Kubernetes set CHAOSDB_K8S_NAMESPACE (kills run in the pod; "
                        "for CPU/memory use the Chaos Mesh templates on the store's pod)."),
        "tags": ["tikv", "pd", "tikv-study", kind, role],
        "configuration": {
            "pd_url": {"type": "env", "key": "CHAOSDB_PD_URL", "default": "http://127.0.0.1:2379"},
            "tikv_key": {"type": "env", "key": "CHAOSDB_TIKV_KEY", "default": "usertable:user1000"},
            "tikv_mode": {"type": "env", "key": "CHAOSDB_TIKV_MODE", "default": "raw"},
            "k8s_namespace": {"type": "env", "key": "CHAOSDB_K8S_NAMESPACE", "default": ""},
            **env_entries(*tls_keys("pd")),
        },
        "controls": [VERDICT_CONTROL],
        "steady-state-hypothesis": TIKV_HYPOTHESIS,
        "method": _tikv_method(kind, role, value),
        "rollbacks": rollbacks,
    })


def render_tikv(name: str) -> str:
    return to_json(build_tikv(name), "python -m tools.make_kv_experiments")


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0] if argv else "experiments")
    write_all(EXPERIMENTS, render, root / "etcd")
    return write_all(TIKV_EXPERIMENTS, render_tikv, root / "tikv")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
