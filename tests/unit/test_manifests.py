"""Manifest templates and the offline validator: upstream examples pass, every template and generated object
passes (also under an independent check built here from the raw CRDs), planted errors are refused with a
message that names the field."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from chaosdb.core.errors import ChaosDBError
from chaosdb.manifests.schema import CRD_DIR
from chaosdb.manifests.templates import list_templates, render, templates_dir
from chaosdb.manifests.validate import validate_object, validate_text
from tools import make_manifests

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXAMPLES = sorted((DATA / "chaos-mesh" / "examples").rglob("*.yaml"))
LITMUS = sorted((DATA / "litmus").rglob("*.yaml"))


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# ---- an independent check: plain jsonschema on the raw CRD files, strictness added here -------------

def _independent_schemas() -> dict[tuple[str, str], dict]:
    out = {}
    for path in CRD_DIR.rglob("*.yaml"):
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            for v in doc["spec"]["versions"]:
                out[(f"{doc['spec']['group']}/{v['name']}", doc["spec"]["names"]["kind"])] = \
                    v["schema"]["openAPIV3Schema"]
    return out


def _close(node):
    if isinstance(node, dict):
        node = {k: _close(v) for k, v in node.items()}
        if node.get("type") == "object" and "properties" in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node.setdefault("additionalProperties", False)
        return node
    if isinstance(node, list):
        return [_close(v) for v in node]
    return node


@pytest.fixture(scope="module")
def independent():
    schemas = {k: _close(v) for k, v in _independent_schemas().items()}

    def check(obj: dict) -> list[str]:
        key = (obj["apiVersion"], obj["kind"])
        if key not in schemas:
            try:
                kubernetes_validate.validate(obj, kubernetes_validate.utils.latest_version(), strict=True)
            except kubernetes_validate.utils.ValidationError as e:
                return [e.message]
            return []
        schema = copy.deepcopy(schemas[key])
        schema["properties"]["metadata"] = {"type": "object"}
        return [e.message for e in jsonschema.Draft4Validator(schema).iter_errors(obj)]
    return check


# ---- upstream examples ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_upstream_chaos_mesh_examples_are_accepted(path):
    for doc in _docs(path):
        report = validate_object(doc, path.name)
        assert report.ok, report.errors
        assert report.checked_with == "CRD schema + admission rules"


def test_upstream_litmus_files_are_accepted_except_the_pruned_description():
    seen = set()
    for path in LITMUS:
        for doc in _docs(path):
            report = validate_object(doc, path.name)
            seen.add(doc["kind"])
            if doc["kind"] == "ChaosExperiment":
                assert len(report.errors) == 1 and "unknown field(s) 'description'" in report.errors[0]
            else:
                assert report.ok, (path, report.errors)
    assert seen == {"ChaosEngine", "ChaosExperiment", "ServiceAccount", "Role", "RoleBinding"}


# ---- our templates -------------------------------------------------------------------------------

#: the templates written by hand (the game day's own objects, not faults of one database)
HAND_WRITTEN = {"kubernetes/gameday-cronjob.yaml", "kubernetes/gameday-workflow.yaml", "kubernetes/checks-server.yaml"}


def test_committed_templates_are_what_the_generator_writes():
    generated = make_manifests.render_all()
    root = templates_dir()
    for rel, text in generated.items():
        assert (root / rel).read_text() == text, f"{rel} differs: run python -m tools.make_manifests"
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*.yaml")} - HAND_WRITTEN
    assert on_disk == set(generated)


def test_every_template_renders_valid_objects_for_both_validators(independent):
    templates = list_templates()
    names = {t.name for t in templates}
    for db in ("cockroachdb", "tikv"):
        for fault in ("pod-kill", "pod-failure", "container-kill", "stress-cpu", "stress-memory", "network-delay",
                      "network-loss", "network-partition", "network-bandwidth", "time-skew", "io-latency",
                      "io-errors", "schedule-pod-kill", "workflow-cascading"):
            assert f"{db}/{fault}" in names
    # Patroni/Spilo pods: what a kernel without netem and a chaos-daemon without toda carry out, and the API cut
    assert {n for n in names if n.startswith("postgres/")} == {
        f"postgres/{fault}" for fault in ("pod-kill", "container-kill", "pod-failure", "stress-cpu", "stress-memory",
                                          "network-partition", "network-partition-from-api", "time-skew")}
    kinds = set()
    for t in templates:
        values = {"IMAGE": "ghcr.io/example/chaosdb:0.1.0"} if "IMAGE" in t.variables else {}
        result = render(t.name, values)
        assert "${" not in result.text
        for obj in result.objects:
            kinds.add(obj["kind"])
            assert validate_object(obj).ok
            assert independent(obj) == [], (t.name, obj["kind"])
    assert kinds >= {"PodChaos", "StressChaos", "NetworkChaos", "TimeChaos", "IOChaos", "Schedule", "Workflow",
                     "ChaosEngine", "ChaosExperiment", "ServiceAccount", "Role", "RoleBinding", "CronJob"}


def test_every_template_file_is_valid_as_it_is_and_holds_its_defaults(independent):
    root = templates_dir()
    for t in list_templates():
        raw = _docs(t.path)
        assert raw, t.name
        for obj in raw:
            assert validate_object(obj, t.name).ok, t.name
            assert independent(obj) == [], t.name
        values = {"IMAGE": "registry.example.com/chaosdb:0.1.0"} if "IMAGE" in t.variables else {}
        assert render(t.name, values).objects == raw, f"{t.name}: inline values differ from the header defaults"
    assert len(list(root.rglob("*.yaml"))) == len(list_templates())


def test_render_fills_values_with_the_types_the_api_wants():
    obj = render("cockroachdb/pod-kill", {"GRACE_PERIOD": 7, "VALUE": 2, "LABEL_KEY": "app.kubernetes.io/instance",
                                          "LABEL_VALUE": "prod", "DB_NAMESPACE": "crdb"}).objects[0]
    assert obj["spec"]["gracePeriod"] == 7 and obj["spec"]["value"] == "2"
    assert obj["spec"]["selector"] == {"namespaces": ["crdb"], "expressionSelectors": [
        {"key": "app.kubernetes.io/instance", "operator": "In", "values": ["prod"]}]}
    docs = render("cockroachdb/container-kill", {"LABEL_KEY": "app", "CONTAINER": "cockroachdb"}).objects[0]
    assert docs["spec"]["selector"]["expressionSelectors"][0]["key"] == "app"
    loss = render("tikv/network-loss", {"LOSS": "25", "CORRELATION": "75"}).objects[0]["spec"]
    assert loss["loss"] == {"loss": "25", "correlation": "75"} and loss["selector"]["labelSelectors"][
        "app.kubernetes.io/component"] == "tikv"
    engine = render("litmus/tikv-pod-delete-engine", {"FORCE": True}).objects[0]
    env = {e["name"]: e["value"] for e in engine["spec"]["experiments"][0]["spec"]["components"]["env"]}
    assert env["FORCE"] == "true" and env["TOTAL_CHAOS_DURATION"] == "30" and all(isinstance(v, str)
                                                                                   for v in env.values())
    flow = render("cockroachdb/workflow-cascading", {"FIRST_POD": "cockroachdb-2"}).objects[0]["spec"]
    first = next(t for t in flow["templates"] if t["name"] == "first-pod-failure")
    assert first["podChaos"]["selector"]["pods"] == {"cockroachdb": ["cockroachdb-2"]}


@pytest.mark.parametrize("values, message", [
    ({"NOPE": "1"}, "has no variable"),
    ({"GRACE_PERIOD": "5\nextra: 1"}, "expected an integer"),
    ({"DB_NAMESPACE": 'x"; y'}, "DNS-1123 label"),
    ({"LABEL_VALUE": "${NAME}"}, "not valid"),
    ({"LABEL_KEY": "app/x/y"}, "a label key"),
    ({"MODE": "some"}, "one of one, all, fixed"),
    ({"MODE": "fixed", "VALUE": "0"}, "above 0"),
])
def test_render_refuses_bad_values_before_anything_is_written(values, message):
    with pytest.raises(ChaosDBError, match=message):
        render("cockroachdb/pod-kill", values)


def test_required_variables_are_enforced():
    with pytest.raises(ChaosDBError, match="needs IMAGE"):
        render("kubernetes/gameday-cronjob")
    with pytest.raises(ChaosDBError, match="no template 'cockroachdb/nope'"):
        render("cockroachdb/nope")
    with pytest.raises(ChaosDBError, match="no template"):
        render("../../etc/passwd")


# ---- planted errors ------------------------------------------------------------------------------

def _pod_kill() -> dict:
    return {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "PodChaos",
            "metadata": {"name": "kill", "namespace": "chaos-testing"},
            "spec": {"action": "pod-kill", "mode": "fixed", "value": "1",
                     "selector": {"labelSelectors": {"app": "db"}}}}


def _edit(base, fn):
    obj = copy.deepcopy(base)
    fn(obj)
    return obj


NETWORK = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos", "metadata": {"name": "n"},
           "spec": {"action": "loss", "mode": "one", "selector": {}, "loss": {"loss": "10"}}}
STRESS = {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "StressChaos", "metadata": {"name": "s"},
          "spec": {"mode": "one", "selector": {}, "stressors": {"memory": {"workers": 1, "size": "256MB"}}}}

PLANTED = [
    ("metadata.ns (chaostoolkit-kubernetes)", _edit(_pod_kill(), lambda o: o["metadata"].update(ns="x")),
     "metadata.ns: not an ObjectMeta field"),
    ("fixed without value", _edit(_pod_kill(), lambda o: o["spec"].pop("value")), "needs a value"),
    ("value as an integer", _edit(_pod_kill(), lambda o: o["spec"].update(value=1)), "the CRD wants string"),
    ("misspelt action", _edit(_pod_kill(), lambda o: o["spec"].update(action="pod-kil")), "is not one of"),
    ("unknown spec field", _edit(_pod_kill(), lambda o: o["spec"].update(scheduler={"cron": "@every 1m"})),
     "unknown field(s) 'scheduler'"),
    ("pods as a list", _edit(_pod_kill(), lambda o: o["spec"]["selector"].update(pods=["a"])), "wants object"),
    ("negative grace period", _edit(_pod_kill(), lambda o: o["spec"].update(gracePeriod=-1)), "minimum"),
    ("bad name", _edit(_pod_kill(), lambda o: o["metadata"].update(name="Kill_Me")), "DNS-1123 subdomain"),
    ("bad duration", _edit(_pod_kill(), lambda o: o["spec"].update(duration="10 seconds")), "not a Go duration"),
    ("percent out of range", _edit(_pod_kill(), lambda o: o["spec"].update(mode="fixed-percent", value="150")),
     "(0, 100]"),
    ("container-kill without containers", _edit(_pod_kill(), lambda o: o["spec"].update(action="container-kill")),
     "containerNames"),
    ("memory.time (chaostoolkit-kubernetes)", _edit(STRESS, lambda o: o["spec"]["stressors"]["memory"].update(
        time="30s")), "unknown field(s) 'time'"),
    ("workers 0", _edit(STRESS, lambda o: o["spec"]["stressors"]["memory"].update(workers=0)), "above 0"),
    ("bad memory size", _edit(STRESS, lambda o: o["spec"]["stressors"]["memory"].update(size="lots")),
     "neither N% nor a size"),
    ("no stressor", _edit(STRESS, lambda o: o["spec"].pop("stressors")), "give a cpu or memory stressor"),
    ("loss as an integer", _edit(NETWORK, lambda o: o["spec"]["loss"].update(loss=10)), "the CRD wants string"),
    ("loss not a number", _edit(NETWORK, lambda o: o["spec"]["loss"].update(loss="ten")), "a number in a string"),
    ("both without target", _edit(NETWORK, lambda o: o["spec"].update(direction="both")), "needs a target"),
    ("delay without latency", _edit(NETWORK, lambda o: o["spec"].update(action="delay", delay={"jitter": "1ms"})),
     "'latency' is a required property"),
    ("bad latency unit", _edit(NETWORK, lambda o: o["spec"].update(action="delay", delay={"latency": "10 ms"})),
     "does not match"),
    ("bad bandwidth rate", _edit(NETWORK, lambda o: o["spec"].update(
        action="bandwidth", bandwidth={"rate": "fast", "limit": 1, "buffer": 1})), "is not a rate"),
]


@pytest.mark.parametrize("obj, message", [(p[1], p[2]) for p in PLANTED], ids=[p[0] for p in PLANTED])
def test_planted_errors_are_refused_naming_the_field(obj, message):
    report = validate_object(obj)
    assert not report.ok
    assert any(message in e for e in report.errors), report.errors


def test_schedule_workflow_and_litmus_rules():
    schedule = render("cockroachdb/schedule-pod-kill").objects[0]
    assert validate_object(_edit(schedule, lambda o: o["spec"].update(schedule="every monday"))).errors == [
        "spec.schedule: 'every monday' is not a 5-field cron spec (minute hour day month weekday), a descriptor "
        "like @hourly, or @every <duration>"]
    assert any("podChaos.value" in e for e in validate_object(_edit(
        schedule, lambda o: o["spec"]["podChaos"].update(value="0"))).errors)
    flow = render("tikv/workflow-cascading").objects[0]
    bad = _edit(flow, lambda o: o["spec"]["templates"][0]["children"].append("missing"))
    assert any("'missing' is not the name of a template" in e for e in validate_object(bad).errors)
    engine = render("litmus/cockroachdb-pod-delete-engine").objects[0]
    bad = _edit(engine, lambda o: o["spec"]["experiments"][0]["spec"]["components"]["env"].append(
        {"name": "CHAOS_INTERVAL", "value": 5}))
    errors = validate_object(bad).errors
    assert any("the CRD wants string" in e for e in errors) and any("CHAOS_INTERVAL is set twice" in e
                                                                     for e in errors)
    bad = _edit(engine, lambda o: o["spec"]["appinfo"].update(appkind="pod"))
    assert any("does not match" in e for e in validate_object(bad).errors)


def test_warnings_flag_what_is_accepted_but_rarely_meant():
    failure = _edit(_pod_kill(), lambda o: o["spec"].update(action="pod-failure", mode="all"))
    failure["spec"].pop("value")
    report = validate_object(failure)
    assert report.ok
    assert any("without a duration" in w for w in report.warnings)
    assert any("quorum" in w for w in report.warnings)


def test_builtin_kinds_are_checked_with_the_kubernetes_schemas():
    text = render("kubernetes/gameday-cronjob", {"IMAGE": "ghcr.io/example/chaosdb:1"}).text
    docs = list(yaml.safe_load_all(text))
    cron = next(d for d in docs if d and d["kind"] == "CronJob")
    cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["imagePolicy"] = "Always"
    report = validate_object(cron)
    assert not report.ok and "imagePolicy" in report.errors[0]
    unknown = validate_object({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert not unknown.ok and "unknown kind Widget" in unknown.errors[0]


def test_cli_render_validate_and_list(tmp_path):
    env_cmd = [sys.executable, "-m", "chaosdb.cli"]
    out = subprocess.run(env_cmd + ["manifests", "render", "tikv/network-delay", "--set", "LATENCY=250ms"],
                         capture_output=True, text=True, check=True).stdout
    good = tmp_path / "delay.yaml"
    good.write_text(out)
    assert yaml.safe_load(out.split("\n", 1)[1])["spec"]["delay"]["latency"] == "250ms"
    ok = subprocess.run(env_cmd + ["manifests", "validate", str(good)], capture_output=True, text=True)
    assert ok.returncode == 0 and "1 object(s), 0 refused" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(out.replace('latency: "250ms"', "latency: 250ms\n    foo: 1"))
    refused = subprocess.run(env_cmd + ["manifests", "validate", "--json", str(good), str(bad)],
                             capture_output=True, text=True)
    assert refused.returncode == 1
    verdicts = json.loads(refused.stdout)
    assert [o["ok"] for o in verdicts["objects"]] == [True, False]
    assert "unknown field(s) 'foo'" in " ".join(verdicts["objects"][1]["errors"])
    broken = subprocess.run(env_cmd + ["manifests", "render", "tikv/network-delay", "--set", "LATENCY=soon"],
                            capture_output=True, text=True)
    assert broken.returncode == 2 and "LATENCY='soon' is not valid" in broken.stderr and not broken.stdout
    listing = json.loads(subprocess.run(env_cmd + ["manifests", "list", "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    pod_kill = next(t for t in listing if t["name"] == "cockroachdb/pod-kill")
    assert {v["name"]: v["default"] for v in pod_kill["variables"]}["GRACE_PERIOD"] == "0"


def test_validate_reads_multi_document_text_and_reports_broken_yaml():
    reports = validate_text((DATA / "litmus" / "pod-delete" / "rbac.yaml").read_text(), "rbac")
    assert [r.kind for r in reports] == ["ServiceAccount", "Role", "RoleBinding"] and all(r.ok for r in reports)
    with pytest.raises(ValueError, match="not valid YAML"):
        validate_text("a: [b", "broken")


def test_template_format_errors_are_caught(tmp_path):
    head = ("# t\n# chaosdb-variables:\n#   NAME  name  x  the name\n#   GRACE  integer  0  seconds\n"
            "# end-variables\n")
    body = ('apiVersion: chaos-mesh.org/v1alpha1\nkind: PodChaos\nmetadata:\n  name: "x"  # ${NAME}\nspec:\n'
            '  action: "pod-kill"\n  mode: "one"\n  gracePeriod: 0  # ${GRACE}\n  selector: {}\n')
    (tmp_path / "ok.yaml").write_text(head + body)
    assert render("ok", {"GRACE": 3, "NAME": "y"}, tmp_path).objects[0]["spec"]["gracePeriod"] == 3
    (tmp_path / "loose.yaml").write_text(head + body.replace('"pod-kill"', '"${NAME}"'))
    with pytest.raises(ChaosDBError, match="outside a marker comment"):
        render("loose", {}, tmp_path)
    (tmp_path / "unused.yaml").write_text(head + body.replace("  # ${GRACE}", ""))
    with pytest.raises(ChaosDBError, match="no line uses: \\['GRACE'\\]"):
        render("unused", {}, tmp_path)


def test_the_gameday_workflow_checks_then_injects_under_a_status_check_then_checks_recovery():
    docs = [d for d in yaml.safe_load_all(render("kubernetes/gameday-workflow", {
        "IMAGE": "chaosdb.local/chaosdb:1", "TARGET_POD": "postgres-1", "ACTION": "pod-failure", "BUDGET_S": "5",
        "SERVE_URL": "http://10.245.0.9:8099/checks/primary", "RECOVERY_S": "90"}).text) if d]
    (workflow,) = docs
    templates = {t["name"]: t for t in workflow["spec"]["templates"]}
    assert templates["game-day"]["children"] == ["steady-state", "recovered"]
    steady = templates["steady-state"]
    assert steady["task"]["container"]["command"] == ["chaosdb", "check", "/checks/checks.yaml"]
    assert steady["conditionalBranches"] == [{"target": "fault-under-watch", "expression": "exitCode == 0"}]
    assert templates["fault-under-watch"]["children"] == ["fault", "database-within-budget"]
    assert templates["fault"]["podChaos"]["action"] == "pod-failure"
    assert templates["fault"]["podChaos"]["selector"] == {"pods": {"postgres": ["postgres-1"]}}
    watch = templates["database-within-budget"]
    assert watch["abortWithStatusCheck"] is True and watch["statusCheck"]["failureThreshold"] == 5
    assert watch["statusCheck"]["http"]["url"] == "http://10.245.0.9:8099/checks/primary"
    recovered = templates["recovered"]["task"]["container"]
    assert recovered["command"] + recovered["args"] == ["chaosdb", "check", "/checks/checks.yaml", "--within", "90"]
    assert validate_object(workflow).ok


def test_the_checks_server_serves_on_its_service_port():
    docs = [d for d in yaml.safe_load_all(render("kubernetes/checks-server", {"IMAGE": "chaosdb.local/chaosdb:1"}).text)
            if d]
    deployment, service = docs
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["chaosdb", "serve", "/checks/checks.yaml"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert service["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"] == 8099
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    with pytest.raises(ChaosDBError, match="IMAGE"):
        render("kubernetes/checks-server")
