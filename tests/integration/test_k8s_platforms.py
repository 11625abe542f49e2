"""Game days inside the platforms, on a real node: the pack's own image (``chaosdb images build chaosdb``) in pods
— ``chaosdb serve`` behind a Chaos Mesh StatusCheck, ``chaosdb check`` as a Workflow Task, the scheduled game day
of the CronJob writing to a local PersistentVolume — against Patroni + PostgreSQL in pods.

Real here: the local Kubernetes with one real node (kubelet, containerd, runc, CNI), the Chaos Mesh controller
(its Workflow, StatusCheck and PodChaos controllers) and chaos-daemon, kube-controller-manager's CronJob, Job and
PersistentVolume binder controllers, Patroni 3 / PostgreSQL 15 in images this pack built. Pods reach the Patroni
cluster's Services at the node's bridge address (there is no kube-proxy or cluster DNS here: that address stands
where a Service's name would be).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from chaosdb.chaosmesh import actions as cm
from chaosdb.clusters.kubernetes import node_images
from chaosdb.k8s import api
from chaosdb.manifests.templates import render
from tests.polling import poll
from tests.realnode import jobs, pods, real_node_cluster, require_runtime
from tests.realservers import real_binaries

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = "127.0.62.1"
NS, CHAOS_NS = "postgres", "chaos-testing"
SERVERS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "chaos-controller-manager",
           "kubelet", "chaos-daemon", "cdh", "cm-pause", "nsexec", "libnsenter.so", "memStress"]
CHAOSDB_BIN = Path(sys.executable).parent / "chaosdb"

#: the checks the pods serve: every one fails at once (for_s 0), the Workflow's StatusCheck holds the budget
CHECKS = {
    "title": "the Patroni cluster in pods",
    "configuration": {"patroni_urls": {"type": "env", "key": "CHAOSDB_PATRONI_URLS"}},
    "checks": [
        {"name": "primary", "probe": {"type": "probe", "name": "the-primary", "tolerance": {
            "type": "regex", "pattern": "^postgres-[0-9]+$"}, "provider": {
                "type": "python", "module": "chaosdb.postgres.probes", "func": "current_primary"}}},
        {"name": "cluster-healthy", "probe": {"type": "probe", "name": "two-members-streaming", "tolerance": True,
                                              "provider": {"type": "python", "module": "chaosdb.postgres.probes",
                                                           "func": "cluster_is_healthy",
                                                           "arguments": {"expected_members": 2}}}},
    ],
}


@pytest.fixture(scope="module")
def platform(tmp_path_factory, cluster_root):
    """A local Kubernetes with one real node: Patroni (2 members), chaos-daemon, and the pack's image imported."""
    require_runtime()
    bin_dir = real_binaries(tmp_path_factory, SERVERS)
    with real_node_cluster(cluster_root / "platforms", "platforms", ADDRESS, bin_dir) as res:
        image = node_images.import_pack_image(res["node"].containerd).reference
        checks_file = cluster_root / "platforms-checks.json"  # gone with the cluster root
        checks_file.write_text(json.dumps(CHECKS))
        yield {**res, "image": image, "checks_file": checks_file}


@pytest.fixture(scope="module")
def cfg(platform):
    """The activities' configuration."""
    return dict(platform["configuration"])


def _apply(objects: list[dict[str, Any]], cfg: dict) -> None:
    """Create the objects as ``kubectl create`` would (the official client's own helper), keeping those that exist."""
    from kubernetes import utils  # noqa: PLC0415 - the k8s extra

    for obj in objects:
        if not obj:
            continue
        try:
            utils.create_from_dict(api.api_client(cfg), obj)
        except utils.FailToCreateError as e:
            if any(getattr(x, "status", 0) != 409 for x in e.api_exceptions):
                raise


def _ready_pod_ip(cfg: dict, namespace: str, selector: str) -> str:
    for pod in pods(cfg, namespace, selector):
        conditions = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
        if conditions.get("Ready") == "True" and pod["status"].get("podIP"):
            return str(pod["status"]["podIP"])
    return ""


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
    except OSError as e:
        return 0, {"error": str(e)}


def _checks_objects(platform: dict) -> list[dict]:
    """The ConfigMap with the checks file and the Secret with where Patroni is (as a pod reaches it)."""
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chaosdb-checks", "namespace": CHAOS_NS},
         "data": {"checks.yaml": yaml.safe_dump(CHECKS)}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "chaosdb-checks", "namespace": CHAOS_NS},
         "stringData": {"CHAOSDB_PATRONI_URLS": f"http://{platform['pods_address']}:8008"}},
    ]


@pytest.fixture(scope="module")
def checks_server(platform, cfg):
    """``chaosdb serve`` in a pod of the pack's image (the shipped checks-server template); its base URL."""
    _apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CHAOS_NS}}], cfg)
    _apply(_checks_objects(platform), cfg)
    _apply(render("kubernetes/checks-server", {"IMAGE": platform["image"], "INTERVAL_S": "0.5"}).objects, cfg)
    ip = poll(lambda: _ready_pod_ip(cfg, CHAOS_NS, "app.kubernetes.io/name=chaosdb-checks"), 240)
    assert ip, pods(cfg, CHAOS_NS)
    base = f"http://{ip}:8099"
    assert poll(lambda: _get(f"{base}/checks")[0] == 200, 120), _get(f"{base}/checks")
    return base


def _host_check(platform: dict, *names: str) -> tuple[int, dict]:
    """``chaosdb check`` on this machine (the cluster's own address for Patroni): exit status and its JSON line."""
    proc = subprocess.run([str(CHAOSDB_BIN), "check", str(platform["checks_file"]), *names], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "CHAOSDB_PATRONI_URLS": f"http://{ADDRESS}:8008"})
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(lines[0])


def _primary(platform: dict) -> str:
    status, body = _host_check(platform, "primary")
    assert status == 0, body
    return str(body["checks"][0]["value"])


def test_check_and_serve_follow_a_primary_kill(platform, cfg, checks_server, tmp_path):
    """Healthy: serve answers 200 and check exits 0. The primary's pod killed: the cluster has one member until the
    pod is back and streaming, which serve answers 503 with the reason and check exits 1 for; then both go back to
    200 / 0, and the primary check names the primary Patroni names now (the killed pod, back in seconds, may take
    its lock back). Every answer carries its latency; no password shows."""
    assert poll(lambda: _host_check(platform)[0] == 0, 240), _host_check(platform)
    old = _primary(platform)
    cm.create_chaos(kind="PodChaos", name="kill-the-primary", namespace=CHAOS_NS,
                    spec={"action": "pod-kill", "mode": "one", "selector": {"namespaces": [NS]}},
                    target={"role": "patroni-primary"}, configuration=cfg)
    seen_503: dict = {}
    seen_exit_1: dict = {}
    stop = threading.Event()

    def watch_serve() -> None:
        """serve asked back to back, apart from the host check (a process, seconds on a busy machine), so that a
        short disturbance is not missed between two of its runs"""
        while not stop.is_set() and not seen_503:
            status, body = _get(f"{checks_server}/checks/cluster-healthy")
            if status == 503:
                seen_503.update(body)
            stop.wait(0.1)

    def disturbed() -> bool:
        code, line = _host_check(platform, "cluster-healthy")
        if code == 1:
            seen_exit_1.update(line)
        return bool(seen_503 and seen_exit_1)

    watcher = threading.Thread(target=watch_serve, daemon=True)
    watcher.start()
    try:
        assert poll(disturbed, 120, every=0.2), (seen_503, seen_exit_1)
        stop.set()
        watcher.join(30)
        assert seen_503["ok"] is False and seen_503["reason"] and seen_503["latency_ms"] >= 0, seen_503
        assert seen_exit_1["ok"] is False and seen_exit_1["checks"][0]["reason"], seen_exit_1
        assert poll(lambda: _get(f"{checks_server}/checks")[0] == 200 and _host_check(platform)[0] == 0, 300), (
            _get(f"{checks_server}/checks"), _host_check(platform))
        status, body = _get(f"{checks_server}/checks/primary")
        assert status == 200 and body["value"] == _primary(platform)
    finally:
        stop.set()
        watcher.join(30)
        cm.delete_all_chaos(CHAOS_NS, configuration=cfg, timeout_s=120)  # a failure leaves no fault to the next test
    served = json.dumps(_get(f"{checks_server}/checks")[1])
    passwords = json.loads((platform["dir"] / "postgres-passwords.json").read_text())
    assert not any(p in served for p in passwords.values())
    print(f"primary {old} -> {_primary(platform)}")


def _workflow(cfg: dict, name: str) -> dict:
    return api.call_json("reading workflow", api.custom_objects(cfg).get_namespaced_custom_object,
                         "chaos-mesh.org", "v1alpha1", CHAOS_NS, "workflows", name)


def _workflow_nodes(cfg: dict, name: str) -> dict[str, dict]:
    """The Workflow's nodes by template name."""
    items = api.call_json("listing workflow nodes", api.custom_objects(cfg).list_namespaced_custom_object,
                          "chaos-mesh.org", "v1alpha1", CHAOS_NS, "workflownodes",
                          label_selector=f"chaos-mesh.org/workflow={name}")["items"]
    return {n["spec"]["templateName"]: n for n in items}


def _condition(obj: dict, kind: str) -> str:
    return next((c.get("status", "") for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == kind), "")


def _chaos_left(cfg: dict) -> list[str]:
    left = []
    for plural in ("podchaos", "networkchaos", "stresschaos"):
        items = api.call_json("listing chaos", api.custom_objects(cfg).list_namespaced_custom_object,
                              "chaos-mesh.org", "v1alpha1", CHAOS_NS, plural)["items"]
        left += [f"{plural}/{i['metadata']['name']}" for i in items]
    return left


def _run_workflow(platform: dict, cfg: dict, checks_server: str, name: str, action: str, budget_s: int) -> dict:
    """The shipped game-day Workflow created by the pack (its fault aimed at the primary it resolves)."""
    variables = {"NAME": name, "IMAGE": platform["image"], "DB_NAMESPACE": NS, "ACTION": action,
                 "FAULT_DURATION": "40s", "SERVE_URL": f"{checks_server}/checks/cluster-healthy",
                 "BUDGET_S": str(budget_s), "RECOVERY_S": "180"}
    created = cm.create_chaos(template="kubernetes/gameday-workflow", variables=variables,
                              target={"role": "patroni-primary"}, configuration=cfg)
    assert created["target"]["pods"], created
    return created


def test_the_gameday_workflow_succeeds_within_budget_and_is_aborted_beyond_it(platform, cfg, checks_server):
    """Within budget: the steady-state Task exits 0, the primary's pod is killed under the StatusCheck (90 failed
    answers allowed), the recovery Task exits 0: the Workflow is accomplished. Beyond: the primary's pod fails for
    40 s (its member gone) and the StatusCheck, 5 failed answers allowed, aborts the Workflow; the fault is ended
    and no chaos object stays."""
    assert poll(lambda: _get(f"{checks_server}/checks")[0] == 200, 300), _get(f"{checks_server}/checks")
    _run_workflow(platform, cfg, checks_server, "within-budget", "pod-kill", 90)

    def accomplished() -> bool:
        return _condition(_workflow_nodes(cfg, "within-budget").get("game-day", {}), "Accomplished") == "True"

    assert poll(accomplished, 400, every=2), _workflow_nodes(cfg, "within-budget")
    nodes = _workflow_nodes(cfg, "within-budget")
    assert _condition(nodes["game-day"], "Aborted") != "True"
    assert {"steady-state", "fault", "database-within-budget", "recovered"} <= set(nodes), sorted(nodes)
    assert poll(lambda: not _chaos_left(cfg), 120), _chaos_left(cfg)

    assert poll(lambda: _get(f"{checks_server}/checks")[0] == 200, 300), _get(f"{checks_server}/checks")
    _run_workflow(platform, cfg, checks_server, "beyond-budget", "pod-failure", 5)

    def aborted() -> bool:
        return _condition(_workflow_nodes(cfg, "beyond-budget").get("game-day", {}), "Aborted") == "True"

    assert poll(aborted, 300, every=1), _workflow_nodes(cfg, "beyond-budget")
    assert _workflow(cfg, "beyond-budget")["metadata"]["annotations"]["workflow.chaos-mesh.org/abort"] == "true"
    assert _condition(_workflow_nodes(cfg, "beyond-budget")["database-within-budget"], "Aborted") == "True"
    assert poll(lambda: not _chaos_left(cfg), 120), _chaos_left(cfg)
    assert poll(lambda: _get(f"{checks_server}/checks")[0] == 200, 300), _get(f"{checks_server}/checks")
    for name in ("within-budget", "beyond-budget"):
        cm.delete_chaos("Workflow", name, CHAOS_NS, wait=True, timeout_s=120, configuration=cfg)


def _batch(cfg: dict):
    from kubernetes import client  # noqa: PLC0415 - the k8s extra

    return client.BatchV1Api(api.api_client(cfg))


def _job(cfg: dict, name: str) -> dict:
    return api.call_json("reading job", _batch(cfg).read_namespaced_job, name, CHAOS_NS)


def _jobs(cfg: dict) -> list[dict]:
    """The game day's Jobs, oldest first."""
    return sorted((j for j in jobs(cfg, CHAOS_NS) if j["metadata"]["name"].startswith("gameday-")),
                  key=lambda j: j["metadata"]["creationTimestamp"])


def _stress_chaos(cfg: dict) -> list[str]:
    items = api.call_json("listing chaos", api.custom_objects(cfg).list_namespaced_custom_object,
                          "chaos-mesh.org", "v1alpha1", CHAOS_NS, "stresschaos")["items"]
    return [i["metadata"]["name"] for i in items]


def _finished(job: dict) -> str:
    """``Complete`` or ``Failed`` once the Job has ended, else ``""``."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def test_the_scheduled_game_day_writes_its_report_to_the_volume_and_rolls_back_at_its_deadline(platform, cfg):
    """The shipped CronJob, every minute, with the pack's image: its first Job's deadline is moved to a few seconds
    ahead once the StressChaos on the primary is injected (``activeDeadlineSeconds`` may change on a running Job),
    so the kubelet's SIGTERM reaches ``chaos`` mid-fault: the StressChaos is deleted by the run's rollback and the
    journal on the volume says interrupted. The next scheduled Job runs the game day to its end and writes its
    journal, samples and report beside the first's, on the same local PersistentVolume."""
    node = platform["node"]
    volume = Path(platform["dir"]) / "gameday-results"
    volume.mkdir(exist_ok=True)
    os.chown(volume, 10001, 10001)
    experiment = (ROOT / "experiments" / "kubernetes" / "chaosmesh-stress-cpu-patroni-primary.json").read_text()
    passwords = json.loads((platform["dir"] / "postgres-passwords.json").read_text())
    address = platform["pods_address"]
    objects = [o for o in render("kubernetes/gameday-cronjob", {
        "NAME": "gameday", "IMAGE": platform["image"], "DB_NAMESPACE": NS, "SCHEDULE": "* * * * *",
        "DEADLINE_S": "900", "GRACE_S": "120"}).objects if o]
    objects += [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "gameday-results"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                  "persistentVolumeReclaimPolicy": "Retain", "local": {"path": str(volume)},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": [node.name]}]}]}}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chaosdb-gameday", "namespace": CHAOS_NS},
         "data": {"experiment.json": experiment}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "chaosdb-gameday", "namespace": CHAOS_NS},
         "stringData": {"CHAOSDB_PATRONI_URLS": f"http://{address}:8008",
                        "CHAOSDB_LOAD_DSN": f"postgresql://chaosdb:{passwords['app']}@{address}:5432/chaosdb",
                        "CHAOSDB_BASELINE_S": "10"}},
    ]
    _apply(objects, cfg)
    try:
        first = poll(lambda: next(iter(_jobs(cfg)), None), 180, every=2)
        assert first, "the CronJob made no Job"
        name = first["metadata"]["name"]
        assert poll(lambda: _stress_chaos(cfg) or _finished(_job(cfg, name)), 400, every=1), _job(cfg, name)
        assert _stress_chaos(cfg), f"the fault was never injected: {_job(cfg, name)['status']}"
        started = _job(cfg, name)
        ran = datetime.now(timezone.utc) - datetime.fromisoformat(started["status"]["startTime"])
        api.call_json("moving the deadline", _batch(cfg).patch_namespaced_job, name, CHAOS_NS,
                      {"spec": {"activeDeadlineSeconds": int(ran.total_seconds()) + 5}})
        assert poll(lambda: _finished(_job(cfg, name)) == "Failed", 300, every=1), _job(cfg, name)["status"]
        assert poll(lambda: not _stress_chaos(cfg), 180), "the rollback left the StressChaos"
        assert poll(lambda: (volume / f"{name}-journal.json").exists(), 180), sorted(os.listdir(volume))
        journal = json.loads((volume / f"{name}-journal.json").read_text())
        assert journal["status"] == "interrupted", journal["status"]
        log = (volume / f"{name}-chaostoolkit.log").read_text()
        assert "SIGTERM" in log, log[-3000:]
        assert passwords["app"] not in log and passwords["app"] not in json.dumps(journal)

        second = poll(lambda: len(_jobs(cfg)) >= 2 and _jobs(cfg)[1], 180, every=2)
        assert second, "the CronJob made no second Job"
        later = second["metadata"]["name"]
        assert poll(lambda: _finished(_job(cfg, later)), 600, every=2) == "Complete", _job(cfg, later)["status"]
        journal = json.loads((volume / f"{later}-journal.json").read_text())
        assert journal["status"] == "completed", journal["status"]
        assert (volume / later / "report.html").is_file() and (volume / later / "metrics.json").is_file()
        assert (volume / f"{name}-journal.json").is_file(), "the second run lost the first's results"
        assert not _stress_chaos(cfg)
    finally:
        api.call_json("suspending the CronJob", _batch(cfg).patch_namespaced_cron_job, "gameday", CHAOS_NS,
                      {"spec": {"suspend": True}})
        api.call_json("deleting the CronJob", _batch(cfg).delete_namespaced_cron_job, "gameday", CHAOS_NS,
                      propagation_policy="Foreground")
        cm.delete_all_chaos(CHAOS_NS, configuration=cfg, timeout_s=120)
