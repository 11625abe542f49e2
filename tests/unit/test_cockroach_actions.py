"""CockroachDB leaseholders, ranges and actions against stand-ins that behave like the real CLI and the Kubernetes
API (tests/data/cockroach/standin/cockroach, tests/unit/k8s_api_standin.py: no CockroachDB or kubelet can run
here). Output shapes, messages and version quirks follow ../shared/reference/cockroachdb (see PROVENANCE.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chaoslib.exceptions import InvalidActivity

from chaosdb.cockroach import actions, channels, node_processes, probes, ranges
from chaosdb.cockroach.version import parse_version
from chaosdb.core.errors import ChaosDBError, UnsafeFault
from chaosdb.core.results import record_problems
from chaosdb.k8s import api, pods
from tests.polling import poll
from tests.unit.k8s_api_standin import KubeStandin

DATA = Path(__file__).resolve().parents[1] / "data"
POD = "cockroachdb-{}.cockroachdb.crdb.svc.cluster.local:26257"


def _cluster(version: str, nodes: int = 5, **node_extra) -> dict:
    return {
        "version": version,
        "nodes": [{"id": i + 1, "address": POD.format(i), "sql_address": POD.format(i), "is_live": True,
                   "membership": "active", "draining": False, "replicas": 60, "leaseholders": 20,
                   "locality": f"region=r1,az={'abc'[i % 3]}", "started_at": "2026-11-22 08:00:00.000000",
                   **node_extra} for i in range(nodes)],
        "ranges": [{"range_id": 57, "table": "vehicles", "span": [None, "m"], "lease_holder": 2, "replicas": [2, 1, 3]},
                   {"range_id": 58, "table": "vehicles", "span": ["m", None], "lease_holder": 3, "replicas": [3, 4, 5]}],
    }


@pytest.fixture
def crdb(tmp_path, monkeypatch):
    """A simulated cluster behind the stand-in CLI; returns (configuration, state path, argv log)."""
    monkeypatch.setenv("PATH", f"{DATA / 'cockroach' / 'standin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(channels, "_VERSIONS", {})
    monkeypatch.setenv("CHAOSDB_HOME", str(tmp_path / "home"))
    state = tmp_path / "cluster.json"
    log = tmp_path / "argv.log"
    monkeypatch.setenv("STANDIN_CLUSTER", str(state))
    monkeypatch.setenv("STANDIN_ARGV_LOG", str(log))

    def write(obj):  # atomically, as the stand-in does: it may be reading at the same time
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps(obj))
        os.replace(tmp, state)

    def make(version="v23.2.4", nodes=5, **extra):
        write(_cluster(version, nodes, **extra))
        return {"cockroach_channel": "cli", "cockroach_host": POD.format(0), "cockroach_insecure": True}
    make.state = state
    make.log = log
    make.read = lambda: json.loads(state.read_text())
    make.write = write
    return make


def _argvs(log: Path) -> list[list[str]]:
    return [ln.split("\0")[1:] for ln in log.read_text().splitlines()] if log.exists() else []


def test_versions_are_read_from_build_tags_and_sql():
    assert parse_version("Build Tag:        v22.1.22-29-g865aff1595") == (22, 1, 22)
    assert parse_version("CockroachDB CCL v23.2.4 (x86_64-pc-linux-gnu, built 2024/01/01)") == (23, 2, 4)
    with pytest.raises(ChaosDBError, match="cockroach_version"):
        parse_version("unknown")


def test_leaseholder_of_row_maps_node_address_and_pod(crdb):
    cfg = crdb()
    lh = probes.leaseholder_of_row("movr.public.vehicles", ["boston", "22222222-2222-4200-8000-000000000002"],
                                   configuration=cfg)
    assert lh["range_id"] == 57 and lh["lease_holder"] == 2 and lh["replicas"] == [2, 1, 3]
    assert lh["node"] == {"id": 2, "address": POD.format(1), "sql_address": POD.format(1), "pod": "cockroachdb-1",
                          "is_live": True}
    assert [f["pod"] for f in lh["followers"]] == ["cockroachdb-0", "cockroachdb-2"]
    assert lh["statement"] == ("SHOW RANGE FROM TABLE movr.public.vehicles FOR ROW "
                               "('boston', '22222222-2222-4200-8000-000000000002')")
    other = probes.leaseholder_of_row("vehicles", ["seattle"], configuration=cfg)
    assert other["lease_holder"] == 3 and other["node"]["pod"] == "cockroachdb-2"


def test_user_values_are_quoted_never_interpolated(crdb):
    cfg = crdb()
    st = ranges.leaseholder_statement(["movr", "Vehicles"], ["o'brien); DROP TABLE x; --", 3, None, True])
    assert st == ("SHOW RANGE FROM TABLE movr.\"Vehicles\" FOR ROW "
                  "('o''brien); DROP TABLE x; --', 3, NULL, true)")
    with pytest.raises(ChaosDBError, match="strings, numbers"):
        ranges.leaseholder_statement("t", [{"a": 1}])
    with pytest.raises(ChaosDBError, match="does not exist"):
        probes.leaseholder_of_row("rides", [1], configuration=cfg)  # the CLI's error reaches the user
    # the statement travels as one argv element: no shell in between
    assert any(a[:2] == ["sql", "-e"] and a[2].startswith("SHOW RANGE FROM TABLE rides") for a in _argvs(crdb.log))


@pytest.mark.parametrize("version,expect", [("v22.2.8", "SHOW RANGES FROM TABLE vehicles"),
                                            ("v23.1.11", "SHOW RANGES FROM TABLE vehicles WITH DETAILS"),
                                            ("v23.2.4", "SHOW RANGES FROM TABLE vehicles WITH DETAILS")])
def test_table_leaseholders_are_version_aware(crdb, version, expect):
    cfg = crdb(version)
    res = probes.table_leaseholders("vehicles", configuration=cfg)
    assert res["leases_by_node"] == {"2": 1, "3": 1}
    assert [r["lease_holder"] for r in res["ranges"]] == [2, 3]
    shows = [a[2] for a in _argvs(crdb.log) if a[:2] == ["sql", "-e"] and a[2].startswith("SHOW RANGES")]
    assert shows[-1] == expect


def test_drain_by_id_then_restart_brings_it_back_locally(crdb):
    cfg = crdb("v23.2.4", nodes=3)
    res = actions.drain_node(2, drain_wait_s=1, configuration=cfg)
    assert res["ok"] and res["node"] == 2 and res["remaining"][-1] == 0 and res["drain_wait_s"] == 1
    assert res["targets"][0]["name"] == "2" and not record_problems(res), res
    drain_argv = [a for a in _argvs(crdb.log) if a[:2] == ["node", "drain"]][-1]
    assert drain_argv[:4] == ["node", "drain", "2", "--drain-wait=1s"] and "--insecure" in drain_argv
    n2 = {n["id"]: n for n in probes.node_status(cfg)}[2]
    assert n2["draining"] and n2["leaseholders"] == 0
    health = probes.cluster_health(configuration=cfg)
    assert not health["healthy"] and "n2 is draining" in health["problems"]


def test_drain_timeout_and_selector_errors_are_actionable(crdb):
    cfg = crdb("v23.2.4", nodes=3, drain_s=2.0)
    with pytest.raises(ChaosDBError, match="did not finish draining within 0.5s: raise drain_wait_s"):
        actions.drain_node(1, drain_wait_s=0.5, configuration=cfg)
    with pytest.raises(ChaosDBError, match="drain_wait_s must be a number of seconds"):
        actions.drain_node(1, drain_wait_s="soon", configuration=cfg)
    with pytest.raises(ChaosDBError, match="drain_wait_s must be a number of seconds, got '1m30s'"):
        actions.drain_node(1, drain_wait_s="1m30s", configuration=cfg)
    with pytest.raises(ChaosDBError, match="needs table and row"):
        actions.drain_node("leaseholder", configuration=cfg)
    with pytest.raises(InvalidActivity, match="needs table and row"):  # as chaos validate checks it
        actions.kill_node.__signature__.bind(target="leaseholder")
    with pytest.raises(ChaosDBError, match="not in the cluster"):
        actions.drain_node(9, configuration=cfg)
    drains = [a for a in _argvs(crdb.log) if a[:2] == ["node", "drain"]]
    assert len(drains) == 1  # bad input never reached the cluster


def test_old_cli_drains_through_the_node_itself_and_quits(crdb):
    cfg = crdb("v21.2.17", nodes=3)
    res = actions.drain_node(3, drain_wait_s=5, configuration=cfg)
    argv = [a for a in _argvs(crdb.log) if a[:2] == ["node", "drain"]][-1]
    assert "3" not in argv and f"--host={POD.format(2)}" in argv and res["ok"]
    assert res["warnings"] and "deprecated" in res["warnings"][0]
    quit_res = actions.quit_node(2, drain_wait_s=2, configuration=cfg)
    assert quit_res["ok"]
    quit_argv = [a for a in _argvs(crdb.log) if a[:1] == ["quit"]][-1]
    assert quit_argv[:2] == ["quit", "--drain-wait=2s"] and f"--host={POD.format(1)}" in quit_argv
    assert {n["id"]: n["is_live"] for n in probes.node_status(cfg)} == {1: True, 2: False, 3: True}


def test_quit_is_refused_on_v22_2_and_later(crdb):
    cfg = crdb("v22.2.19", nodes=3)
    with pytest.raises(ChaosDBError, match="removed in v22.2 .* drain_node with shutdown=true"):
        actions.quit_node(1, configuration=cfg)
    assert not any(a[:1] == ["quit"] for a in _argvs(crdb.log))


def test_drain_leaseholder_of_a_row(crdb):
    cfg = crdb()
    res = actions.drain_node("leaseholder", table="vehicles", row=["boston"], drain_wait_s=10, configuration=cfg)
    assert res["node"] == 2 and res["pod"] == "cockroachdb-1" and res["range"]["range_id"] == 57
    res = actions.drain_node("not-leaseholder", table="vehicles", row=["boston"], configuration=cfg)
    assert res["node"] == 1  # first live replica of r57 besides the leaseholder


def test_decommission_wait_all_then_recommission(crdb):
    cfg = crdb(nodes=5)
    res = actions.decommission_nodes([4, 5], configuration=cfg)
    assert res["completed"] and res["updates"] == 2
    assert [(n["id"], n["replicas"], n["membership"]) for n in res["nodes"]] == [(4, 0, "decommissioning"),
                                                                               (5, 0, "decommissioning")]
    status = {n["id"]: n for n in probes.node_status(cfg)}
    assert status[4]["membership"] == "decommissioned"
    assert sum(status[i]["replicas"] for i in (1, 2, 3)) == 300  # the replicas moved to the others
    assert probes.cluster_is_healthy(configuration=cfg)  # decommissioned nodes do not count
    with pytest.raises(ChaosDBError, match="cannot be recommissioned"):
        actions.recommission_nodes([4], configuration=cfg)


def test_decommission_wait_none_is_recommissionable(crdb):
    cfg = crdb(nodes=4)
    res = actions.decommission_nodes(4, wait="none", configuration=cfg)
    assert not res["completed"] and res["nodes"][0]["membership"] == "decommissioning"
    assert res["nodes"][0]["replicas"] == 60
    back = actions.recommission_nodes(4, configuration=cfg)
    assert back["nodes"][0]["membership"] == "active"


def test_decommission_refuses_to_go_below_the_replication_factor(crdb):
    cfg = crdb(nodes=3)
    with pytest.raises(UnsafeFault, match="leave 2 active node"):
        actions.decommission_nodes(3, configuration=cfg)
    assert not any(a[:2] == ["node", "decommission"] for a in _argvs(crdb.log))


def test_gateway_down_is_reported(crdb):
    cfg = crdb(nodes=3)
    st = crdb.read()
    st["nodes"][0]["is_live"] = False
    crdb.write(st)
    with pytest.raises(ChaosDBError, match="cannot dial server"):
        probes.node_status(cfg)


def test_json_format_only_from_v23_2(crdb):
    crdb("v23.1.11")
    out = subprocess.run(["cockroach", "node", "status", "--format=json", "--insecure", f"--host={POD.format(0)}"],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "invalid argument" in out.stderr
    crdb("v23.2.4")
    out = subprocess.run(["cockroach", "node", "status", "--all", "--format=json", "--insecure",
                          f"--host={POD.format(0)}"], capture_output=True, text=True, check=True)
    from chaosdb.cockroach.records import parse_cli_output
    assert [n["id"] for n in parse_cli_output(out.stdout, "json")] == [1, 2, 3, 4, 5]


# ---------------------------------------------------------------------------
# local processes: a real `cockroach start` (the stand-in's) killed and restarted


def test_kill_local_node_and_restart_it(crdb, tmp_path):
    cfg = crdb(nodes=3)
    st = crdb.read()
    for n in st["nodes"]:
        n["address"] = n["sql_address"] = f"127.0.0.1:{26257 + n['id']}"
    crdb.write(st)
    cfg["cockroach_host"] = "127.0.0.1:26258"
    procs = [subprocess.Popen(["cockroach", "start", "--insecure", f"--listen-addr=127.0.0.1:{26257 + i}",
                               f"--store={tmp_path}/s{i}"], start_new_session=True) for i in (1, 2, 3)]
    try:
        deadline = time.time() + 10
        while time.time() < deadline and not all("pid" in n for n in crdb.read()["nodes"]):
            time.sleep(0.05)
        assert node_processes.find_node_process("localhost:26259") == procs[1].pid
        res = actions.kill_node(2, signal="KILL", configuration=cfg)
        assert res["where"] == "local" and res["pid"] == procs[1].pid and res["exited"]
        procs[1].wait(5)
        assert {n["id"]: n["is_live"] for n in probes.node_status(cfg)} == {1: True, 2: False, 3: True}
        back = actions.restart_node(2, timeout_s=120, configuration=cfg)
        assert back["started"] and back["back"]["status"]["is_live"]
        assert node_processes.find_node_process("127.0.0.1:26259") == back["pid"]
        assert not node_processes.saved_path(2).exists()
        with pytest.raises(ChaosDBError, match="no local 'cockroach start' process"):
            node_processes.signal_node(7, "127.0.0.1:1", "KILL")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for pid in node_processes.find_node_process("127.0.0.1:26258"), node_processes.find_node_process("127.0.0.1:26259"), \
                node_processes.find_node_process("127.0.0.1:26260"):  # e.g. the restarted one
            if pid:
                os.kill(pid, 9)
        # SIGKILL is delivered at once but the process lingers in /proc for a moment while the kernel tears it down
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(node_processes.find_node_process(f"127.0.0.1:{p}")
                                                  for p in (26258, 26259, 26260)):
            time.sleep(0.05)
        assert all(node_processes.find_node_process(f"127.0.0.1:{p}") is None for p in (26258, 26259, 26260))


# ---------------------------------------------------------------------------
# Kubernetes through the official client, against the API stand-in (exec needs a kubelet, which no real server
# here has; deletion and rollouts also run against the real controller-manager in tests/integration/test_k8s_local)


@pytest.fixture
def kube(crdb, tmp_path):
    api.reset_clients()
    standin = KubeStandin().start()
    standin.add_statefulset("cockroachdb", "crdb", 3, {"app": "cockroachdb"}, containers=("db",))
    cfg = {**crdb(nodes=3), "k8s_namespace": "crdb", "k8s_container": "db",
           "k8s_kubeconfig": standin.write_kubeconfig(tmp_path / "kubeconfig")}
    t0 = time.monotonic()
    pods.read_pod(cfg, None, "crdb", "cockroachdb-0")
    cost = time.monotonic() - t0  # one poll on this machine, now: every simulated state lasts several polls
    standin.restart_s = max(0.6, 8 * cost)
    standin.cfg = cfg
    yield standin
    standin.stop()
    api.reset_clients()


def test_the_cli_runs_inside_a_pod_through_the_official_client(kube):
    """cockroach_cli_pod: drain (and the version check before it) run as an exec in the pod, with the binary's
    path inside the container; nothing runs on this machine and no kubectl is needed."""
    cfg = {**kube.cfg, "cockroach_cli_pod": "cockroachdb-0", "cockroach_bin": "/cockroach/cockroach"}
    assert not Path("/cockroach/cockroach").exists()
    res = actions.drain_node(2, drain_wait_s=1, configuration=cfg)
    assert res["ok"] and res["node"] == 2 and not record_problems(res), res
    execs = [e for e in kube.execs if e["command"][:1] == ["/cockroach/cockroach"]]
    assert {e["command"][1] for e in execs} >= {"node", "version"}, execs  # status, version, drain: all in the pod
    assert execs[-1]["command"][1:5] == ["node", "drain", "2", "--drain-wait=1s"]
    assert all(e["pod"] == "cockroachdb-0" and e["namespace"] == "crdb" and e["container"] == "db" for e in execs)
    with pytest.raises(ChaosDBError, match="cockroach_cli_pod or cockroach_cli_prefix, not both"):
        actions.drain_node(2, configuration={**cfg, "cockroach_cli_prefix": ["kubectl", "exec", "x", "--"]})


def test_kill_in_pod_and_delete_pod_levels(kube):
    cfg = kube.cfg
    res = actions.kill_node("leaseholder", table="vehicles", row=["boston"], configuration=cfg)
    assert res["where"] == "kubernetes" and res["pod"] == "cockroachdb-1" and res["container"] == "db"
    assert kube.execs[-1] == {"pod": "cockroachdb-1", "namespace": "crdb", "container": "db",
                              "command": ["kill", "-s", "KILL", "1"]}
    pod = pods.read_pod(cfg, None, "crdb", "cockroachdb-1")
    assert pod["restarts"] == 1 and not pod["ready"]
    with pytest.raises(ChaosDBError, match="has no container 'sidecar'"):
        actions.kill_node(1, container="sidecar", configuration=cfg)
    uid2 = pods.read_pod(cfg, None, "crdb", "cockroachdb-2")["uid"]
    forced = actions.delete_node_pod(3, force=True, configuration=cfg)
    assert forced["pod"] == "cockroachdb-2" and forced["uid"] == uid2 and forced["grace_period_s"] == 0
    assert poll(lambda: pods.read_pod(cfg, None, "crdb", "cockroachdb-2")["uid"] != uid2, 60, 0.05)
    uid0 = pods.read_pod(cfg, None, "crdb", "cockroachdb-0")["uid"]
    graceful = actions.delete_node_pod(1, grace_period_s=1, configuration=cfg)
    assert graceful["uid"] == uid0 and graceful["grace_period_s"] == 1
    own = actions.delete_node_pod(2, configuration=cfg)  # no grace period given: the pod's own
    assert own["grace_period_s"] is None
    assert kube.deletions == [{"pod": "cockroachdb-2", "namespace": "crdb", "grace_period_s": 0},
                              {"pod": "cockroachdb-0", "namespace": "crdb", "grace_period_s": 1},
                              {"pod": "cockroachdb-1", "namespace": "crdb", "grace_period_s": None}]
    with pytest.raises(ChaosDBError, match="no grace period"):
        actions.delete_node_pod(1, grace_period_s=5, force=True, configuration=cfg)
    with pytest.raises(ChaosDBError, match="needs Kubernetes"):
        actions.delete_node_pod(1, configuration={k: v for k, v in cfg.items() if k != "k8s_namespace"})


def test_restart_node_on_kubernetes_deletes_its_pod_gracefully(kube):
    out = actions.restart_node(2, grace_period_s=5, wait=False, configuration=kube.cfg)
    assert {k: out[k] for k in ("action", "targets", "node", "deleted_pod", "grace_period_s")} == \
        {"action": "restart_node", "targets": [{"name": "2"}], "node": 2, "deleted_pod": "cockroachdb-1",
         "grace_period_s": 5}
    assert kube.deletions == [{"pod": "cockroachdb-1", "namespace": "crdb", "grace_period_s": 5}]


def test_rolling_restart_reports_each_pods_down_time(kube):
    cfg = kube.cfg
    res = actions.rolling_restart("cockroachdb", "app=cockroachdb", poll_s=0.1, timeout_s=300, configuration=cfg)
    assert res["completed"] and res["max_down_together"] == 1
    assert set(res["pods"]) == {"cockroachdb-0", "cockroachdb-1", "cockroachdb-2"}
    assert {n: p["node"] for n, p in res["pods"].items()} == {"cockroachdb-0": 1, "cockroachdb-1": 2,
                                                               "cockroachdb-2": 3}
    # the stand-in's pod is gone 0.05 s after its deletion and Ready restart_s after that
    down_s = kube.restart_s + 0.05
    for name, p in res["pods"].items():
        assert p["restarted"] and not p["down_at_end"], name
        # each end of the span is seen within one gap between polls, which a busy machine stretches far beyond
        # poll_s: the tracker reports the longest gap it had
        assert abs(p["down_s"] - down_s) <= 2 * res["resolution_s"], (name, p, down_s, res["resolution_s"])
    # highest ordinal first, as the StatefulSet controller does
    firsts = {n: p["down"][0][0] for n, p in res["pods"].items()}
    assert firsts["cockroachdb-2"] < firsts["cockroachdb-1"] < firsts["cockroachdb-0"]
    up = actions.rolling_restart("cockroachdb", "app=cockroachdb", image="cockroachdb/cockroach:v24.1.0",
                                 poll_s=0.1, timeout_s=300, configuration=cfg)
    assert all(p["image_after"] == {"db": "cockroachdb/cockroach:v24.1.0"} for p in up["pods"].values())
    assert up["previous_image"] == "cockroachdb/cockroach:v23.2.4"


def test_rolling_restart_refuses_when_a_pod_is_not_ready(kube):
    # the killed container stays down long enough for any machine to ask (the refusal is under test, not timing)
    kube.restart_s = 120
    actions.kill_node(1, configuration=kube.cfg)
    with pytest.raises(ChaosDBError, match="not Ready before the rollout: cockroachdb-0"):
        actions.rolling_restart(configuration=kube.cfg)


def test_cli_through_a_client_pod_gateway(crdb):
    # what a prefix such as ["kubectl", "exec", "-n", "crdb", "cockroachdb-0", "-c", "db", "--"] does: run the CLI
    # through another program; env stands in for it here
    cfg = {**crdb(nodes=3), "cockroach_cli_prefix": ["env", "CHAOSDB_THROUGH=gateway"]}
    assert channels.cli_argv(cfg, "node", "status")[:2] == ["env", "CHAOSDB_THROUGH=gateway"]
    assert [n["id"] for n in probes.node_status(cfg)] == [1, 2, 3]


# ---------------------------------------------------------------------------
# ranges per node over time


def test_ranges_per_node_over_time_sees_rebalancing(crdb):
    cfg = crdb(nodes=4)
    st = crdb.read()
    st["nodes"][3]["replicas"] = 0  # a node just added
    crdb.write(st)

    def rebalance():
        # after the probe's first sample, however long a busy machine takes to answer it
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(a[:2] == ["node", "status"] for a in _argvs(crdb.log)):
            time.sleep(0.05)
        time.sleep(0.2)
        s = crdb.read()
        for n in s["nodes"][:3]:
            n["replicas"] = 45
        s["nodes"][3]["replicas"] = 45
        crdb.write(s)
    import threading
    t = threading.Thread(target=rebalance)
    t.start()
    res = probes.ranges_per_node_over_time(duration_s=3.0, interval_s=0.2, configuration=cfg)
    t.join()
    assert res["spread"][0] == 1.0 and res["spread"][-1] == 0.0
    # balanced from a sample after the first one on (how long the samples take is the machine's business)
    assert res["balanced"] and res["balanced_after_s"] > 0, res
    assert res["final"]["4"]["replicas"] == 45
    with pytest.raises(ChaosDBError, match="between 0 and 1"):
        probes.ranges_per_node_over_time(1, 1, tolerance=5, configuration=cfg)


# ---------------------------------------------------------------------------
# chaosdb cluster up --kind cockroach


def test_local_cockroach_cluster_needs_a_binary(tmp_path, monkeypatch, capsys):
    from chaosdb.cli import main
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["cluster", "up", "--kind", "cockroach", "--dir", str(tmp_path / "c")]) != 0
    assert "no cockroach binary on PATH" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_local_cockroach_cluster_up_kill_restart_down(crdb, tmp_path, capsys):
    from chaosdb.cli import main
    from chaosdb.clusters.cockroach import localcluster
    crdb.write({"version": "v23.2.4", "nodes": [], "ranges": []})
    d = tmp_path / "crdb"
    try:
        assert main(["cluster", "up", "--kind", "cockroach", "--nodes", "3", "--dir", str(d),
                     "--address-base", "127.0.31.1", "--timeout", "20"]) == 0
        assert "3 live nodes" in capsys.readouterr().out
        starts = [a for a in _argvs(crdb.log) if a[:1] == ["start"]]
        assert len(starts) == 3 and any(f"--store={d}/node2/store" in a for a in starts)
        assert "--join=127.0.31.1:26257,127.0.31.2:26257,127.0.31.3:26257" in starts[0]
        # init is retried until node1 listens (it may not yet on the first try); always node1, by --host
        inits = [a for a in _argvs(crdb.log) if a[:1] == ["init"]]
        assert inits and all(a == ["init", "--host=127.0.31.1:26257", "--insecure"] for a in inits)
        assert crdb.read()["initialized"]
        cfg = localcluster.status(d)["configuration"]
        n3 = next(n["id"] for n in probes.node_status(cfg) if n["address"] == "127.0.31.3:26257")
        killed = actions.kill_node(n3, configuration=cfg)
        assert killed["exited"] and localcluster.status(d)["pids"]["node3"] is None
        assert main(["cluster", "status", "--dir", str(d), "--check"]) == 1  # n3 down
        assert main(["cluster", "up", "--dir", str(d), "--timeout", "20"]) == 0  # brings node3 back, no re-init
        assert "started node3" in capsys.readouterr().out
        assert len([a for a in _argvs(crdb.log) if a[:1] == ["init"]]) == len(inits)  # no init the second time
        assert main(["cluster", "status", "--dir", str(d), "--check"]) == 0
        # a drain with shutdown stops the process; the rollback starts it again as it ran
        n2 = next(n["id"] for n in probes.node_status(cfg) if n["address"] == "127.0.31.2:26257")
        assert actions.drain_node(n2, drain_wait_s=5, shutdown=True, configuration=cfg)["ok"]
        deadline = time.time() + 5
        while localcluster.status(d)["pids"]["node2"] is not None and time.time() < deadline:
            time.sleep(0.05)
        assert localcluster.status(d)["pids"]["node2"] is None
        back = actions.restart_killed_nodes(timeout_s=120, configuration=cfg)
        started = [r for r in back["restarted"] if r["started"]]  # n3's record: already running (cluster up)
        assert [r["node"] for r in started] == [n2] and started[0]["back"]["status"]["is_live"]
        assert actions.wait_until_healthy(timeout_s=120, interval_s=0.2, configuration=cfg)["nodes"] == 3
        assert back["targets"] == [{"name": str(n2)}]
        again = actions.restart_killed_nodes(configuration=cfg)
        assert again["restarted"] == [] and again["targets"] == []
    finally:
        assert main(["cluster", "down", "--dir", str(d), "--purge"]) == 0
    assert not d.exists()
    assert all(node_processes.find_node_process(f"127.0.31.{i}:26257") is None for i in (1, 2, 3))


def test_the_url_can_live_in_the_secrets():
    secrets = {"cockroach": {"cockroach_url": "postgresql://app:pw@db:26257/defaultdb"}}
    cfg = channels.settings({"cockroach_channel": "sql"}, secrets)
    assert cfg["cockroach_url"] == "postgresql://app:pw@db:26257/defaultdb"
    assert channels.settings({"cockroach_url": "postgresql://x@h/d"}, secrets)["cockroach_url"] == "postgresql://x@h/d"
    from chaosdb.core.commands import describe_argv
    assert "pw" not in describe_argv(["cockroach", "sql", f"--url={cfg['cockroach_url']}"])


def test_chaos_run_of_the_local_kill_experiment(crdb, tmp_path):
    """The shipped local experiment's method and rollbacks through a real `chaos run` (load parts removed:
    TPC-C cannot run against the stand-in), with a password in CHAOSDB_COCKROACH_URL that must not reach the journal."""
    from chaosdb.clusters.cockroach import localcluster
    from tools import make_cockroach_experiments as gen
    crdb.write({"version": "v23.2.4", "nodes": [], "ranges": [
        {"range_id": 70, "table": "warehouse", "lease_holder": 2, "replicas": [1, 2, 3]}]})
    d = tmp_path / "crdb"
    exp = gen.build("local-process-kill")
    exp.pop("controls")
    exp["steady-state-hypothesis"]["probes"] = exp["steady-state-hypothesis"]["probes"][:1]
    for a in exp["method"]:
        a.pop("pauses", None)
    exp["configuration"] = {"cockroach_channel": "cli", "cockroach_insecure": "true",
                            "cockroach_host": "127.0.32.1:26257"}
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(exp))
    env = {**os.environ, "CHAOSDB_COCKROACH_URL": "postgresql://root:topsecret@127.0.32.1:26257/defaultdb"}
    try:
        localcluster.up(d, "crdb", nodes=3, address_base="127.0.32.1", timeout=20)
        run = subprocess.run([str(Path(sys.executable).parent / "chaos"), "--log-file", str(tmp_path / "chaos.log"),
                              "run", "--journal-path", str(tmp_path / "journal.json"), str(path)],
                             capture_output=True, text=True, env=env, timeout=180)
        journal_text = (tmp_path / "journal.json").read_text()
        journal = json.loads(journal_text)
        assert journal["status"] == "completed" and not journal["deviated"], run.stdout[-3000:]
        runs = {r["activity"]["name"]: r for r in journal["run"]}
        killed = runs["kill-the-leaseholder-process"]["output"]
        assert killed["node"] == 2 and killed["where"] == "local" and killed["exited"]
        assert runs["leaseholder-of-warehouse-1"]["output"]["lease_holder"] == 2
        restarted = runs["restart-the-stopped-node"]["output"]["restarted"]
        assert [r["node"] for r in restarted] == [2] and restarted[0]["started"]
        assert runs["wait-until-the-cluster-is-healthy"]["status"] == "succeeded"
        assert "topsecret" not in journal_text and "topsecret" not in (tmp_path / "chaos.log").read_text()
    finally:
        localcluster.down(d, purge=True)
    assert all(node_processes.find_node_process(f"127.0.32.{i}:26257") is None for i in (1, 2, 3))
