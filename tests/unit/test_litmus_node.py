"""LitmusChaos on the real node, without one: the images' recipes (what each holds and runs as), the operator's
objects (upstream's RBAC rules and environment, the local images), ``cluster up --litmus``, the Patroni engine
template (a cmdProbe running ``chaosdb check`` in a pod of the pack's image) and ``run_chaos_engine(target=...)``
against the Kubernetes API stand-in. The facts are from chaos-operator, chaos-runner and litmus-go 3.18.0 (the
docstrings of :mod:`chaosdb.clusters.kubernetes.litmus` and ``tools/make_manifests.py`` say where)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from chaosdb.clusters.kubernetes import apply, cluster, cluster_command, litmus
from chaosdb.core.errors import ChaosDBError
from chaosdb.images import prereqs, recipes
from chaosdb.images.recipes import BinDirFiles, DebianRootfs
from chaosdb.k8s import api
from chaosdb.litmus import actions as litmus_actions
from chaosdb.manifests.templates import load_template, render
from chaosdb.manifests.validate import validate_object
from tests.unit.k8s_api_standin import KubeStandin

ROOT = Path(__file__).resolve().parents[2]
LITMUS_IMAGES = ("litmus-operator", "litmus-runner", "litmus-go-runner")


# ---- the images ----------------------------------------------------------------------------------

def test_the_operator_and_runner_images_are_their_binary_alone_at_the_root_run_as_nobody():
    for name, binary in (("litmus-operator", "/chaos-operator"), ("litmus-runner", "/chaos-runner")):
        image = recipes.recipe(name)
        assert [type(layer) for layer in image.layers] == [BinDirFiles], name
        [wanted] = image.bin_dir_files()
        # containerd makes a folder a layer does not hold with mode 0700: a binary for uid 65534 sits at the root
        assert wanted.target == binary and Path(wanted.target).parent == Path("/")
        assert wanted.names[0] == f"litmus-chaos-{binary.strip('/').split('-')[1]}"
        assert image.config.entrypoint == (binary,) and image.config.user == "65534:65534"


def test_the_go_runner_image_runs_the_experiments_binary_where_the_chaos_experiment_looks_for_it():
    image = recipes.recipe("litmus-go-runner")
    debian, files = image.layers
    assert isinstance(debian, DebianRootfs) and debian.variant == "essential" and debian.packages == ()
    assert any(f"install -d -o {recipes.LITMUS_UID}" in hook and recipes.LITMUS_GO_DIR in hook
               for hook in debian.essential_hooks), "the working folder is made (and owned) in the Debian layer"
    assert isinstance(files, BinDirFiles)
    [wanted] = files.files
    assert wanted.names[0] == "litmus-experiments"
    setup = render("litmus/pod-delete-setup").objects
    definition = next(o for o in setup if o["kind"] == "ChaosExperiment")["spec"]["definition"]
    # upstream's command: bash runs ./experiments, relative to the image's working folder (the Job sets none)
    assert definition["command"] == ["/bin/bash"] and definition["args"] == ["-c", "./experiments -name pod-delete"]
    assert Path(image.config.working_dir) / "experiments" == Path(wanted.target)
    assert image.config.user == f"{recipes.LITMUS_UID}:{recipes.LITMUS_UID}"
    assert definition["imagePullPolicy"] == "IfNotPresent"   # never Always: the image was built on the node


def test_the_litmus_binaries_are_named_when_bin_dir_lacks_them(tmp_path):
    (tmp_path / "litmus-chaos-operator").write_bytes(b"\x7fELF")
    missing = prereqs.missing_for_build([recipes.recipe(n) for n in LITMUS_IMAGES], tmp_path)
    text = " ".join(missing)
    assert "litmus-chaos-runner" in text and "litmus-experiments" in text
    assert "lacks litmus-chaos-operator" not in text


# ---- the operator's objects ----------------------------------------------------------------------

def _objects() -> list[dict]:
    return litmus.litmus_objects("chaosdb.local/litmus-operator:9", "chaosdb.local/litmus-runner:9")


def test_the_operator_gets_upstreams_cluster_role_and_its_binding():
    objects = {(o["kind"], o["metadata"]["name"]): o for o in _objects()}
    role = objects[("ClusterRole", "litmus")]
    rules = {(tuple(r["apiGroups"]), resource): set(r["verbs"]) for r in role["rules"] for resource in r["resources"]}
    pod_verbs = {"get", "create", "update", "patch", "delete", "list", "watch", "deletecollection"}
    assert rules[(("",), "pods")] == pod_verbs and rules[(("",), "events")] == pod_verbs
    assert rules[(("litmuschaos.io",), "chaosengines")] == pod_verbs
    assert rules[(("litmuschaos.io",), "chaosengines/finalizers")] == {"update"}
    assert rules[(("batch",), "jobs")] == {"get", "list", "deletecollection"}
    assert rules[(("apps",), "statefulsets")] == {"get", "list"}
    assert rules[(("apiextensions.k8s.io",), "customresourcedefinitions")] == {"list", "get"}
    assert rules[(("coordination.k8s.io",), "leases")] == {"get", "create", "list", "update", "delete"}
    assert len(role["rules"]) == 10
    binding = objects[("ClusterRoleBinding", "litmus")]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "litmus"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "litmus", "namespace": "litmus"}]
    assert objects[("ServiceAccount", "litmus")]["metadata"]["namespace"] == "litmus"
    assert ("Namespace", "litmus") in objects
    crds = {name for kind, name in objects if kind == "CustomResourceDefinition"}
    assert crds == {"chaosengines.litmuschaos.io", "chaosexperiments.litmuschaos.io", "chaosresults.litmuschaos.io"}


def test_the_operator_deployment_runs_the_local_images_with_the_environment_it_reads():
    deployment = next(o for o in _objects() if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "chaosdb.local/litmus-operator:9" and container["imagePullPolicy"] == "Never"
    env = {e["name"]: e for e in container["env"]}
    assert env["CHAOS_RUNNER_IMAGE"]["value"] == "chaosdb.local/litmus-runner:9"
    assert env["WATCH_NAMESPACE"]["value"] == ""          # set and empty: every namespace (unset: it exits)
    assert env["ANALYTICS"]["value"] == "FALSE"
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert "-leader-elect=false" in container["args"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": litmus.HEALTH_PORT}
    assert f"-health-probe-bind-address=:{litmus.HEALTH_PORT}" in container["args"]
    assert pod["serviceAccountName"] == "litmus" and pod["nodeSelector"] == {"chaosdb.io/node": "real"}
    assert deployment["spec"]["selector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"][
        "labels"].items()


def test_every_operator_object_is_valid_and_the_local_cluster_creates_each_kind(monkeypatch):
    from kubernetes import client

    monkeypatch.setattr(api, "api_client", lambda configuration=None, secrets=None: client.ApiClient())
    for obj in _objects():
        assert validate_object(obj).ok, (obj["kind"], validate_object(obj).errors)
        assert callable(apply._create(obj["kind"], obj, {}))
    experiment = next(o for o in render("litmus/pod-delete-setup").objects if o["kind"] == "ChaosExperiment")
    assert callable(apply._create("ChaosExperiment", experiment, {}))


# ---- cluster up --litmus -------------------------------------------------------------------------

def test_litmus_needs_a_real_node_and_is_kept_in_the_layout(tmp_path, no_host_network):
    with pytest.raises(ChaosDBError, match="give --real-nodes 1"):
        cluster.plan(tmp_path, nodes=1, litmus_operator=True)
    layout = cluster.plan(tmp_path, nodes=0, workload_names=["postgres"], real_nodes=1, litmus_operator=True)
    assert layout["litmus"] is True
    assert cluster.plan(tmp_path, nodes=1)["litmus"] is False
    assert set(cluster.litmus_images()) == set(litmus.IMAGES) == set(LITMUS_IMAGES)
    assert cluster.litmus_images()["litmus-go-runner"] == recipes.recipe("litmus-go-runner").reference()


def test_the_litmus_option_reaches_up(monkeypatch, tmp_path):
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group("kubernetes")
    cluster_command.add_arguments(group)
    for name, default in (("--address-base", None), ("--nodes", 3), ("--bin-dir", None), ("--timeout", 60.0)):
        parser.add_argument(name, default=default, type=type(default) if default is not None else str)
    seen = {}
    monkeypatch.setattr(cluster_command.kube_cluster, "up", lambda *a, **kw: seen.update(kw) or {})
    cluster_command.up(parser.parse_args(["--real-nodes", "1", "--nodes", "0", "--litmus"]), tmp_path, "k")
    assert seen["litmus_operator"] is True and seen["real_nodes"] == 1
    cluster_command.up(parser.parse_args([]), tmp_path, "k")
    assert seen["litmus_operator"] is False
    assert "--litmus" in parser.format_help()


def test_a_real_node_with_litmus_gets_the_litmus_images(monkeypatch, tmp_path, no_host_network):
    asked = []

    def images_for_nodes(names, bin_dir):
        asked.extend(names)
        raise ChaosDBError("stop here: nothing is built or started")

    monkeypatch.setattr(cluster, "images_for_nodes", images_for_nodes)
    layout = cluster.plan(tmp_path, nodes=0, workload_names=["postgres"], real_nodes=1, chaos_mesh=False,
                          litmus_operator=True)
    with pytest.raises(ChaosDBError, match="stop here"):
        cluster._start_real_nodes(tmp_path, layout, None, None, 0.0)  # type: ignore[arg-type]
    assert asked == ["pause", "patroni", *LITMUS_IMAGES]


# ---- the Patroni engine template -----------------------------------------------------------------

def _postgres_engine(**values) -> dict:
    return render("litmus/postgres-pod-delete-engine", {"IMAGE": "chaosdb.local/chaosdb:9", **values}).objects[0]


def test_the_patroni_engine_probes_with_chaosdb_check_in_a_pod_of_the_packs_image():
    engine = _postgres_engine(PATRONI_URLS="http://10.245.0.1:8008", RECOVERY_S=45)
    assert validate_object(engine).ok, validate_object(engine).errors
    assert engine["spec"]["appinfo"] == {"appns": "postgres", "applabel": "cluster-name=postgres",
                                         "appkind": "statefulset"}
    assert engine["spec"]["chaosServiceAccount"] == "pod-delete-sa" and engine["spec"]["jobCleanUpPolicy"] == "delete"
    [experiment] = engine["spec"]["experiments"]
    env = {e["name"]: e["value"] for e in experiment["spec"]["components"]["env"]}
    assert env["TARGET_PODS"] == "" and env["TOTAL_CHAOS_DURATION"] == env["CHAOS_INTERVAL"] == "10"
    [probe] = experiment["spec"]["probe"]
    assert probe["type"] == "cmdProbe" and probe["mode"] == "Edge"
    inputs = probe["cmdProbe/inputs"]
    assert inputs["command"] == "chaosdb check shipped:patroni --within 45 || true"
    assert inputs["source"] == {"image": "chaosdb.local/chaosdb:9", "imagePullPolicy": "IfNotPresent",
                                "env": [{"name": "CHAOSDB_PATRONI_URLS", "value": "http://10.245.0.1:8008"}]}
    assert inputs["comparator"] == {"type": "string", "criteria": "contains", "value": '{"ok": true'}
    # litmus-go: a success slower than probeTimeout is a failure; the command may wait RECOVERY_S
    assert probe["runProperties"]["probeTimeout"] == "300s" and probe["runProperties"]["attempt"] == 1
    with pytest.raises(ChaosDBError, match="needs IMAGE"):
        render("litmus/postgres-pod-delete-engine")
    assert load_template("litmus/postgres-pod-delete-engine").variables["IMAGE"].required


def test_the_setup_lets_the_experiment_run_a_source_probe_and_find_a_statefulsets_pods():
    role = next(o for o in render("litmus/pod-delete-setup", {"NAMESPACE": "postgres"}).objects if o["kind"] == "Role")
    rules = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"]
             for r in rule["resources"]}
    assert {"create", "delete", "get", "list"} <= rules[("", "pods")]       # the probe pod, the deleted pods
    assert "create" in rules[("", "pods/exec")]                              # the probe's command
    assert {"get", "list"} <= rules[("apps", "statefulsets")] & rules[("apps", "replicasets")]
    assert {"create", "get", "update"} <= rules[("litmuschaos.io", "chaosresults")]
    assert {"create", "delete"} <= rules[("batch", "jobs")]


def _litmus_contains(output: str, value: str) -> bool:
    """litmus-go 3.18.0's string comparator, ``contains``: the trimmed output holds the value; a value with a comma
    is split into a list for ``oneOf`` and compared as the empty string (so it always holds)."""
    parts = value.strip().split(",")
    return (value if len(parts) == 1 else "") in output.strip()


def test_the_comparator_tells_a_failed_check_from_a_passing_one(tmp_path):
    checks = tmp_path / "checks.yaml"
    checks.write_text(yaml.safe_dump({"checks": [
        {"name": "passes", "probe": {"type": "probe", "tolerance": True, "provider": {
            "type": "python", "module": "tests.unit.checks_probes", "func": "constant", "arguments": {"value": True}}}},
        {"name": "fails", "probe": {"type": "probe", "tolerance": True, "provider": {
            "type": "python", "module": "tests.unit.checks_probes", "func": "constant",
            "arguments": {"value": False}}}}]}))
    value = _postgres_engine()["spec"]["experiments"][0]["spec"]["probe"][0]["cmdProbe/inputs"]["comparator"]["value"]
    assert "," not in value

    def line(*names: str) -> str:
        # as the probe runs it: a shell, `|| true` so that a failed check is output to compare, not an exec error
        command = f"{sys.executable} -m chaosdb.cli check {checks} {' '.join(names)} || true"
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    failed, passed = line(), line("passes")
    assert json.loads(failed)["ok"] is False and json.loads(passed)["ok"] is True
    assert _litmus_contains(passed, value) and not _litmus_contains(failed, value)
    # the value docs used to give, '"ok": true', also matches the passing check inside a failed line
    assert _litmus_contains(failed, '"ok": true')


# ---- run_chaos_engine(target=...) ----------------------------------------------------------------

@pytest.fixture
def kube(tmp_path):
    api.reset_clients()
    standin = KubeStandin().start()
    standin.add_statefulset("cockroachdb", "crdb", 3, {"app.kubernetes.io/name": "cockroachdb"}, containers=("db",))
    standin.cfg = {"k8s_kubeconfig": standin.write_kubeconfig(tmp_path / "kubeconfig"), "k8s_namespace": "crdb"}
    custom = api.custom_objects(standin.cfg)
    for obj in render("litmus/pod-delete-setup", {"NAMESPACE": "crdb"}).objects:
        if obj["kind"] == "ChaosExperiment":
            custom.create_namespaced_custom_object("litmuschaos.io", "v1alpha1", "crdb", "chaosexperiments", obj)
    yield standin
    standin.stop()
    api.reset_clients()


def _posted_engine(kube) -> dict:
    return next(o for o in kube.posted if o.get("kind") == "ChaosEngine")


def test_a_target_becomes_the_target_pods_of_the_engine(kube):
    result = litmus_actions.run_chaos_engine(
        template="litmus/cockroachdb-pod-delete-engine", variables={"NAMESPACE": "crdb", "APP_NAMESPACE": "crdb"},
        target={"pod": "cockroachdb-1"}, timeout_s=60, configuration=kube.cfg)
    assert result["verdict"] == "Pass"
    assert result["target"] == {"namespace": "crdb", "pods": ["cockroachdb-1"], "role": "named", "detail": {}}
    env = _posted_engine(kube)["spec"]["experiments"][0]["spec"]["components"]["env"]
    assert [e for e in env if e["name"] == "TARGET_PODS"] == [{"name": "TARGET_PODS", "value": "cockroachdb-1"}]
    untargeted = litmus_actions.run_chaos_engine(template="litmus/cockroachdb-pod-delete-engine", wait=False,
                                                 variables={"NAMESPACE": "crdb", "NAME": "plain"},
                                                 configuration=kube.cfg)
    assert untargeted["target"] is None


def test_a_target_in_another_namespace_than_appns_is_refused_before_the_engine_is_made(kube):
    with pytest.raises(ChaosDBError, match="looks up TARGET_PODS in crdb"):
        litmus_actions.run_chaos_engine(template="litmus/cockroachdb-pod-delete-engine",
                                        variables={"NAMESPACE": "crdb", "APP_NAMESPACE": "crdb"},
                                        target={"pod": "x-0", "namespace": "elsewhere"}, configuration=kube.cfg)
    assert not [o for o in kube.posted if o.get("kind") == "ChaosEngine"]


def test_aim_engine_at_replaces_the_templates_empty_target_pods_in_every_experiment():
    engine = _postgres_engine()
    aimed = litmus_actions.aim_engine_at(engine, "postgres", ["postgres-1"])
    env = aimed["spec"]["experiments"][0]["spec"]["components"]["env"]
    assert [e["value"] for e in env if e["name"] == "TARGET_PODS"] == ["postgres-1"]
    assert [e["value"] for e in engine["spec"]["experiments"][0]["spec"]["components"]["env"]
            if e["name"] == "TARGET_PODS"] == [""], "the engine given is left as it was"
    assert validate_object(aimed).ok
    with pytest.raises(ChaosDBError, match="names no pod"):
        litmus_actions.aim_engine_at(engine, "postgres", [])


def test_a_bad_target_is_refused_when_the_experiment_is_validated():
    from chaosdb.core.arguments import problems_in_call

    problems = problems_in_call(litmus_actions.run_chaos_engine,
                                {"template": "litmus/postgres-pod-delete-engine", "target": {"role": "nope"}})
    assert problems and any("nope" in p for p in problems), problems
