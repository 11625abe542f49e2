"""The shipped experiments: generated from one template, valid, and honest about their hypothesis."""

import json
from pathlib import Path

import pytest

from tools.make_experiments import EXPERIMENTS, render

EXP_DIR = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_committed_file_is_what_the_generator_writes(name):
    assert (EXP_DIR / f"{name}.json").read_text() == render(name), \
        "run: python -m tools.make_experiments experiments"


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_each_experiment_states_its_hypothesis_and_restores_the_cluster(name):
    exp = json.loads((EXP_DIR / f"{name}.json").read_text())
    assert exp["description"].startswith("Hypothesis:")
    funcs = {a["provider"]["func"] for a in exp["method"]}
    modules = {a["provider"]["module"] for a in exp["method"]}
    rollbacks = [r["provider"]["func"] for r in exp["rollbacks"]]
    controls = {c["name"] for c in exp["controls"]}
    if "chaosdb.chaosd.actions" in modules:
        # chaosd faults: timed, recovered by their rollback, by the faults control and by the generic rollback
        assert controls == {"verdict", "embedded-cluster", "local-faults", "tpcc-load", "report"}
        assert rollbacks == ["revert_attacks", "revert_faults", "resume_nodes", "restart_nodes"]
        assert all(a["provider"]["arguments"]["duration_s"] > 0 for a in exp["method"]
                   if a["provider"]["module"] == "chaosdb.chaosd.actions"
                   and a["provider"]["func"] != "kill_processes")  # a kill is one-shot: nothing to revert
        assert "chaosd_url" in exp["configuration"]
        # the run starts chaosd beside the cluster when CHAOSDB_CHAOSD_BINARY names one
        cluster_control = next(c for c in exp["controls"] if c["name"] == "embedded-cluster")
        assert cluster_control["provider"]["arguments"]["chaosd"] == "${chaosd_binary}"
    elif "chaosdb.faults.actions" in modules:
        # local faults: timed, reverted by rollback and by the control whatever happens
        assert controls == {"verdict", "embedded-cluster", "local-faults", "tpcc-load", "report"}
        assert rollbacks == ["revert_faults", "resume_nodes", "restart_nodes"]
        assert all(a["provider"]["arguments"]["duration_s"] > 0 for a in exp["method"]
                   if a["provider"]["module"] == "chaosdb.faults.actions")
        assert funcs & {"limit_cpu", "limit_memory", "partition_node", "lose_packets", "lose_packets_in_bursts"}
    else:
        assert controls == {"verdict", "embedded-cluster", "tpcc-load", "report"}
        # scale-out's own rollback comes first: the added node goes before the cluster is checked whole
        assert rollbacks == (["scale_in"] if "scale_out" in funcs else []) + ["resume_nodes", "restart_nodes"]
        if name == "upb-no-failure":  # UPB's T[K][0]: nothing injected, the whole run is the baseline
            assert not [a for a in exp["method"] if a["type"] == "action"]
        else:
            assert funcs & {"kill_node", "kill_postgres_process", "stop_database", "suspend_node",
                            "rolling_restart", "scale_out"}
    # secrets never inline: every configuration value is read from the environment
    assert all(v.get("type") == "env" for v in exp["configuration"].values())


def test_every_shipped_experiment_declares_the_verdict_control_first():
    """Bad input is refused before any other control starts something, and the run ends with the truth."""
    for path in sorted(EXP_DIR.rglob("*.json")):
        exp = json.loads(path.read_text())
        assert exp["controls"][0]["provider"]["module"] == "chaosdb.experiment.control", path


def test_no_absolute_latency_limit_in_a_shipped_hypothesis():
    """A p99 limit in milliseconds holds on one machine and not on a busier one: compare with the baseline."""
    for path in sorted(EXP_DIR.rglob("*.json")):
        probes = (json.loads(path.read_text()).get("steady-state-hypothesis") or {}).get("probes") or []
        assert not [p for p in probes if p["provider"].get("func") == "latency_percentile"], path


def test_no_stray_experiment_files():
    assert {p.stem for p in EXP_DIR.glob("*.json")} == set(EXPERIMENTS)


# ---------------------------------------------------------------------------
# CockroachDB experiments (Kubernetes and local cluster)

from tools import make_cockroach_experiments as crdb_exps  # noqa: E402

CRDB_DIR = EXP_DIR / "cockroachdb"


@pytest.mark.parametrize("name", sorted(crdb_exps.EXPERIMENTS))
def test_cockroach_experiment_is_generated_gated_and_restores(name):
    text = (CRDB_DIR / f"{name}.json").read_text()
    assert text == crdb_exps.render(name), "run: python -m tools.make_cockroach_experiments"
    exp = json.loads(text)
    # the health gate runs first (before any fault) and every fault targets by role, never a fixed pod
    assert exp["steady-state-hypothesis"]["probes"][0]["provider"]["func"] == "cluster_is_healthy"
    faults = [a for a in exp["method"] if a["provider"]["func"] in
              {"kill_node", "drain_node", "delete_node_pod", "rolling_restart"}]
    assert faults and all(a["provider"]["arguments"].get("node", "leaseholder") in ("leaseholder", "not-leaseholder")
                          for a in faults)
    assert exp["rollbacks"][-1]["provider"]["func"] == "wait_until_healthy"
    if name.startswith("local-"):
        assert exp["rollbacks"][0]["provider"]["func"] == "restart_killed_nodes"
        assert all(a["provider"]["func"] != "delete_node_pod" for a in exp["method"])
    # the URL (which may hold a password) is a secret; the rest comes from the environment
    if name.startswith("local-"):  # the local cluster is insecure: its URL has no password and a default
        assert "secrets" not in exp and exp["configuration"]["cockroach_url"]["default"].startswith("postgresql://")
    else:
        assert exp["secrets"]["cockroach"]["cockroach_url"] == {"type": "env", "key": "CHAOSDB_COCKROACH_URL"}
    assert all(v.get("type") == "env" for v in exp["configuration"].values())
    assert all("cockroach" in a.get("secrets", []) for a in exp["method"])


def test_the_thesis_levels_are_all_there():
    args = {n: [a["provider"]["arguments"] for a in crdb_exps.build(n)["method"]] for n in crdb_exps.EXPERIMENTS}
    assert any(a.get("drain_wait_s") == 1 for a in args["k8s-drain-wait-1s"])
    assert any(a.get("drain_wait_s") == 60 for a in args["k8s-drain-wait-60s"])
    assert any(a.get("grace_period_s") == 1 for a in args["k8s-pod-delete-grace-1s"])
    assert any(a.get("force") is True for a in args["k8s-pod-delete-force"])
    assert any(a.get("signal") == "KILL" for a in args["k8s-process-kill"])


def test_cockroach_experiments_pass_chaos_validate(tmp_path):
    import os
    import subprocess
    import sys
    chaos = Path(sys.executable).parent / "chaos"
    env = {**os.environ, "CHAOSDB_COCKROACH_URL": "postgresql://root@127.0.0.1:1/defaultdb?sslmode=disable"}
    for name in sorted(crdb_exps.EXPERIMENTS):
        out = subprocess.run([str(chaos), "--log-file", str(tmp_path / "chaos.log"), "validate",
                              str(CRDB_DIR / f"{name}.json")], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, (name, out.stdout[-2000:], out.stderr[-2000:])


# ---------------------------------------------------------------------------
# key-value experiments on the embedded etcd (the TiKV study's leader-versus-follower design)

from tools import make_kv_experiments as kv_exps  # noqa: E402

KV_DIR = EXP_DIR / "etcd"


@pytest.mark.parametrize("name", sorted(kv_exps.EXPERIMENTS))
def test_kv_experiment_is_generated_and_paired(name):
    text = (KV_DIR / f"{name}.json").read_text()
    assert text == kv_exps.render(name), "run: python -m tools.make_kv_experiments"
    exp = json.loads(text)
    kind, role = name.split("-")[:2]
    faults = [a for a in exp["method"] if a["provider"]["func"] in ("kill_etcd_member", "limit_cpu", "limit_memory")]
    assert len(faults) == 1 and faults[0]["provider"]["arguments"]["target"] == f"etcd-{role}"
    # its pair differs only in the role
    other = name.replace(role, "follower" if role == "leader" else "leader")
    twin = json.loads((KV_DIR / f"{other}.json").read_text())
    assert json.dumps(twin["method"]).replace("follower", "leader") == json.dumps(exp["method"]).replace(
        "follower", "leader")
    load = next(c for c in exp["controls"] if c["name"] == "ycsb-etcd-load")
    assert load["provider"]["arguments"]["workload"] == "ycsb-etcd"
    if kind in ("cpu", "memory"):
        assert faults[0]["provider"]["arguments"]["components"] == ["etcd"]
        assert faults[0]["provider"]["arguments"]["duration_s"] > 0
        assert exp["rollbacks"][0]["provider"]["func"] == "revert_faults"
    assert exp["rollbacks"][-1]["provider"]["func"] == "restart_nodes"


def test_cpu_sweep_covers_the_studys_quotas():
    quotas = sorted({kv_exps.build(n)["method"][0]["provider"]["arguments"]["quota_s"]
                     for n in kv_exps.EXPERIMENTS if n.startswith("cpu-")})
    assert quotas == [0.05, 0.1, 0.2]
    short = kv_exps.build("cpu-leader-5pct", short=True)
    assert short["method"][0]["provider"]["arguments"]["duration_s"] == 10


def test_kv_experiments_pass_chaos_validate(tmp_path):
    import subprocess
    import sys
    chaos = Path(sys.executable).parent / "chaos"
    for name in ("kill-leader", "cpu-follower-10pct", "memory-leader"):
        out = subprocess.run([str(chaos), "--log-file", str(tmp_path / "chaos.log"), "validate",
                              str(KV_DIR / f"{name}.json")], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (name, out.stdout[-2000:], out.stderr[-2000:])


@pytest.mark.parametrize("name", sorted(kv_exps.TIKV_EXPERIMENTS))
def test_tikv_experiment_is_generated_and_targets_by_key(name):
    text = (EXP_DIR / "tikv" / f"{name}.json").read_text()
    assert text == kv_exps.render_tikv(name), "run: python -m tools.make_kv_experiments"
    exp = json.loads(text)
    fault = exp["method"][1]["provider"]
    if fault["func"] in ("limit_cpu", "limit_memory"):  # the local engine, given the TiKV adapter's role target
        assert fault["module"] == "chaosdb.faults.actions"
        assert fault["arguments"]["target"]["role"] in ("tikv-leader", "tikv-follower")
        assert fault["arguments"]["target"]["key"] == "${tikv_key}"
        assert fault["arguments"]["duration_s"] > 0 and exp["rollbacks"][0]["provider"]["func"] == "revert_faults"
        return
    assert fault["module"] == "chaosdb.tikv.actions" and fault["arguments"]["key"] == "${tikv_key}"
    assert fault["arguments"]["target"] in ("leader", "follower")
    if fault["func"] == "evict_leaders":
        assert exp["rollbacks"][-1]["provider"]["func"] == "remove_leader_eviction"


def test_every_experiment_file_passes_chaos_toolkits_validation(monkeypatch):
    """Every shipped experiment, subfolders included, through chaoslib's own validation (what ``chaos validate``
    runs; argument values included), in this process: one ``chaos validate`` per file cost a minute."""
    from chaoslib.experiment import ensure_experiment_is_valid
    from chaoslib.loader import load_experiment

    from tools.validate_experiments import _secret_env_placeholders

    files = sorted(EXP_DIR.rglob("*.json"))
    assert len(files) >= 50
    for path in files:
        for key, value in _secret_env_placeholders(path).items():
            monkeypatch.setenv(key, value)
        ensure_experiment_is_valid(load_experiment(str(path)))


def test_every_generated_experiment_names_the_command_that_regenerates_it():
    import importlib

    for path in sorted(EXP_DIR.rglob("*.json")):
        stamps = [e for e in json.loads(path.read_text()).get("extensions", []) if e.get("name") == "chaosdb-generated"]
        assert len(stamps) == 1, f"{path} does not say which generator wrote it"
        module = stamps[0]["regenerate"].removeprefix("python -m ")
        assert importlib.import_module(module).main, (path, module)


def test_every_configuration_key_of_a_shipped_experiment_is_read_by_something():
    """A key no activity reads and no ``${key}`` substitutes is a misspelling that fails only against a real
    cluster (the Patroni pod-kill experiment set ``patroni_url``; the Patroni client reads ``patroni_urls``)."""
    package = Path(__file__).resolve().parents[2] / "chaosdb"
    from chaosdb.core.tls import SERVICES, tls_keys

    source = "\n".join(p.read_text() for p in package.rglob("*.py"))
    tls = {key for service in SERVICES for key in tls_keys(service)}  # read by chaosdb.core.tls.client_tls
    unread = []
    for path in sorted(EXP_DIR.rglob("*.json")):
        text = path.read_text()
        for key in json.loads(text).get("configuration") or {}:
            if key in tls:
                continue
            if "${" + key + "}" not in text and f'"{key}"' not in source and f"'{key}'" not in source:
                unread.append(f"{path.relative_to(EXP_DIR)}: {key}")
    assert not unread, unread
