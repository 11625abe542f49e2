"""What ships with the package (experiments, templates, locustfiles), the extras each part needs, and the one
name per setting. The same behaviour from a built wheel is proven in tests/integration/test_from_wheel.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from chaoslib.exceptions import InvalidActivity, InvalidControl, InvalidExperiment
from chaoslib.experiment import ensure_experiment_is_valid

from chaosdb import cli, shipped
from chaosdb.core import extras, settings
from chaosdb.core.errors import ChaosDBError
from chaosdb.manifests.templates import list_templates, templates_dir

ROOT = Path(__file__).resolve().parents[2]


def _shipped_experiments() -> list[Path]:
    return sorted(shipped.experiments_dir().rglob("*.json"))


def test_the_checkouts_top_level_folders_are_the_shipped_ones():
    for link, target in (("experiments", shipped.experiments_dir()), ("chaos-mesh-manifests", shipped.templates_dir()),
                         ("load", shipped.locustfiles_dir())):
        assert (ROOT / link).resolve() == target.resolve(), link
    assert templates_dir() == shipped.templates_dir()
    assert len(list_templates()) >= 30


def test_copy_puts_every_experiment_the_locustfiles_and_a_chosen_template_in_the_users_folder(tmp_path):
    out = tmp_path / "mine"
    written = shipped.copy_shipped(out, templates=["kubernetes/gameday-cronjob"])
    assert {p for p in written["experiments"] if p.endswith(".json")} == \
        {str(p.relative_to(shipped.experiments_dir())) for p in _shipped_experiments()}
    assert sorted(written["locustfiles"]) == ["load/tpcc.py", "load/ycsb.py"]
    assert sorted(written["checks"]) == ["checks/patroni.yaml", "checks/tikv.yaml"]
    assert written["templates"] == ["templates/kubernetes/gameday-cronjob.yaml"]
    assert (out / "quickstart.json").read_bytes() == (shipped.experiments_dir() / "quickstart.json").read_bytes()
    # game-day suites name their experiments relative to themselves: the copy keeps that working
    suite = (out / "gamedays" / "etcd-leader-follower.yaml").read_text()
    assert "../etcd/kill-leader.json" in suite and (out / "etcd" / "kill-leader.json").is_file()
    # a second copy refuses to overwrite anything (before writing anything), unless forced
    (out / "quickstart.json").write_text("{}")
    with pytest.raises(ChaosDBError, match="already exist.*--force"):
        shipped.copy_shipped(out)
    assert (out / "quickstart.json").read_text() == "{}"
    shipped.copy_shipped(out, force=True)
    assert json.loads((out / "quickstart.json").read_text())["title"].startswith("Quickstart")


def test_an_unknown_template_is_refused_with_the_known_names(tmp_path):
    with pytest.raises(ChaosDBError, match="no shipped template 'cockroachdb/nope'; known: .*cockroachdb/pod-kill"):
        shipped.copy_shipped(tmp_path / "x", templates=["cockroachdb/nope"])
    assert not (tmp_path / "x").exists()
    with pytest.raises(ChaosDBError, match="no shipped template"):
        shipped.template_file("../../cli")


def test_a_template_folder_that_does_not_exist_is_an_error_not_a_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSDB_MANIFESTS", str(tmp_path / "missing"))
    with pytest.raises(ChaosDBError, match="CHAOSDB_MANIFESTS.*does not exist"):
        templates_dir()


# --- one name per setting ---------------------------------------------------------------------------------------


def _env_entries(exp: dict) -> list[tuple[str, str]]:
    found = [(k, v["key"]) for k, v in (exp.get("configuration") or {}).items()
             if isinstance(v, dict) and v.get("type") == "env"]
    for scope in (exp.get("secrets") or {}).values():
        found += [(k, v["key"]) for k, v in scope.items() if isinstance(v, dict) and v.get("type") == "env"]
    return found


def test_every_shipped_experiment_reads_each_setting_from_its_one_variable():
    seen = set()
    for path in _shipped_experiments():
        for key, env in _env_entries(json.loads(path.read_text())):
            if key == "load_dsn":  # the load's DSN is the CockroachDB URL in the CockroachDB experiments
                assert env == settings.SETTINGS["cockroach_url"].env, path
                continue
            assert key in settings.SETTINGS, f"{path}: configuration key {key} is not in chaosdb.core.settings"
            assert env == settings.SETTINGS[key].env, f"{path}: {key} read from {env}"
            seen.add(key)
    assert seen == set(settings.SETTINGS), f"settings no shipped experiment uses: {set(settings.SETTINGS) - seen}"
    envs = [s.env for s in settings.SETTINGS.values()]
    assert len(envs) == len(set(envs)) and all(e.startswith("CHAOSDB_") for e in envs)


def test_the_docs_print_the_settings_table():
    doc = (ROOT / "docs" / "running-experiments.md").read_text()
    assert settings.markdown_table() in doc, "paste chaosdb.core.settings.markdown_table() into the docs"
    for header in settings.markdown_table().splitlines():
        if header.startswith("| ") and "meaning |" in header:  # each of its tables once, not pasted twice
            assert doc.count(header) == 1, header


def test_the_docs_name_every_extra_and_what_the_system_must_bring():
    doc = (ROOT / "docs" / "running-experiments.md").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    declared = re.findall(r"^(\w+) = \[", pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0],
                          re.MULTILINE)
    assert set(declared) >= {"quickstart", "all", "test", *extras.EXTRA_MODULES}
    for extra in declared:
        assert f"| `{extra}` |" in doc, extra
    ci = (ROOT / ".ci" / "run").read_text()
    for package in re.findall(r"missing\+=\((\S+)\)", ci):  # what .ci/run installs with apt-get
        assert f"`{package}`" in doc.split("no extra can bring")[1], package


def test_the_game_day_cronjob_sets_settings_by_their_one_name():
    text = (shipped.templates_dir() / "kubernetes" / "gameday-cronjob.yaml").read_text()
    names = set(re.findall(r'- name: "([A-Z0-9_]+)"', text)) - {"CHAOSDB_JOB_NAME"}  # the pod's own
    assert {"CHAOSDB_K8S_NAMESPACE", "CHAOSDB_CHAOS_NAMESPACE", "CHAOSDB_REPORT_DIR"} <= names, names
    assert all(settings.setting_of_env(n) is not None or n in settings.ENVIRONMENT_ONLY for n in names), names


def test_the_game_day_cronjob_runs_chaos_as_process_1_keeps_its_results_and_may_act_where_the_experiments_do():
    import yaml

    from chaosdb.manifests.templates import render

    docs = render("kubernetes/gameday-cronjob", {"IMAGE": "registry.local/chaosdb:1", "DB_NAMESPACE": "crdb",
                                                 "NAMESPACE": "gd"}).objects
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    pod = by_kind["CronJob"][0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    # no shell in between: the deadline's SIGTERM reaches chaos, whose controls revert what the run injected
    assert container["command"][0] == "chaos" and "args" not in container
    assert container["envFrom"][0]["secretRef"]["optional"] is True
    results = next(v for v in pod["volumes"] if v["name"] == "results")
    assert results["persistentVolumeClaim"]["claimName"] == by_kind["PersistentVolumeClaim"][0]["metadata"]["name"]
    assert by_kind["Namespace"][0]["metadata"]["name"] == "gd"
    rules = {r["metadata"]["namespace"]: {(g, res) for rule in r["rules"] for g in rule["apiGroups"]
                                          for res in rule["resources"]} for r in by_kind["Role"]}
    assert ("chaos-mesh.org", "podchaos") in rules["gd"] and ("", "pods") in rules["crdb"]
    # the Litmus experiment creates its engine in the database's namespace
    assert ("litmuschaos.io", "chaosengines") in rules["crdb"]
    assert yaml.safe_dump(docs)


# --- extras -----------------------------------------------------------------------------------------------------


@pytest.fixture
def without(monkeypatch):
    """Pretend the given modules are not installed (as on a base install)."""
    absent: set[str] = set()
    real = extras._installed
    monkeypatch.setattr(extras, "_installed", lambda m: m not in absent and real(m))
    return absent.update


def test_validate_refuses_an_activity_whose_extra_is_missing_with_one_install_line(without):
    without({"psycopg"})
    exp = json.loads((shipped.experiments_dir() / "quickstart.json").read_text())
    with pytest.raises(InvalidActivity) as err:
        ensure_experiment_is_valid(exp)
    # psycopg comes with three extras: the quickstart's controls need two of them, its activities the third
    assert "this experiment needs the load, local and postgres extras (psycopg not installed): pip install " \
        "'chaostoolkit-db[load,local,postgres]'" in str(err.value), str(err.value)


def test_validate_refuses_a_control_whose_extra_is_missing(without):
    without({"numpy", "matplotlib"})
    exp = json.loads((shipped.experiments_dir() / "thesis-1-process-kill.json").read_text())
    with pytest.raises(InvalidControl, match=r"control 'report' \(chaosdb.report.control\) needs the report extra "
                                             r"\(matplotlib, numpy not installed\): pip install "
                                             r"'chaostoolkit-db\[report\]'"):
        ensure_experiment_is_valid(exp)


def _quickstart_with_a_kubernetes_rollback() -> dict:
    """The quickstart (activities of the postgres and report extras; controls of the local, load and report
    extras) with a rollback of the k8s extra."""
    exp = json.loads((shipped.experiments_dir() / "quickstart.json").read_text())
    exp["rollbacks"].append({"type": "probe", "name": "statefulset-ready", "provider": {
        "type": "python", "module": "chaosdb.k8s.probes", "func": "statefulset_is_ready",
        "arguments": {"name": "cockroachdb"}}})
    return exp


def test_an_experiment_needs_the_extras_of_its_activities_and_controls():
    assert extras.experiment_extras(_quickstart_with_a_kubernetes_rollback()) == [
        "k8s", "load", "local", "postgres", "report"]


def _controls_only() -> dict:
    """An experiment whose controls need the load and report extras and whose activity needs none."""
    return {"title": "t", "description": "d", "method": [
        {"type": "probe", "name": "errors", "provider": {"type": "python", "module": "chaosdb.load.probes",
                                                         "func": "error_rate", "arguments": {"window_s": 10}}}],
        "controls": [{"name": name, "provider": {"type": "python", "module": f"chaosdb.{name}.control"}}
                     for name in ("load", "report")]}


@pytest.mark.parametrize("experiment,absent,refused", [
    # a base install: the first activity with an extra is refused, naming every extra of the experiment
    (_quickstart_with_a_kubernetes_rollback, {m for ms in extras.EXTRA_MODULES.values() for m in ms},
     InvalidActivity),
    # the activities' extras are there: the first control is refused, naming the other control's extra too
    (_controls_only, {m for e in ("load", "report") for m in extras.EXTRA_MODULES[e]} - {"psycopg"}, InvalidControl),
])
def test_validate_names_every_missing_extra_of_the_experiment_in_one_install_line(without, experiment, absent,
                                                                                   refused):
    without(absent)
    # the extras the experiment needs whose modules are absent (a base install lacks others it does not need: serve)
    wanted = sorted(e for e in extras.experiment_extras(experiment()) if set(extras.EXTRA_MODULES[e]) & absent)
    with pytest.raises(refused) as err:
        ensure_experiment_is_valid(experiment())
    message = str(err.value)
    assert f"this experiment needs the {', '.join(wanted[:-1])} and {wanted[-1]} extras" in message, message
    assert message.count("pip install 'chaostoolkit-db[") == 2, message  # the experiment's line and [all]
    assert f"pip install 'chaostoolkit-db[{','.join(wanted)}]'" in message, message


def test_outside_a_validation_a_missing_extra_names_only_its_own(without):
    without({"numpy"})
    refusal = extras.experiment_missing_extra("this activity", extras.missing_modules(["report"]))
    assert str(refusal).startswith("this activity needs the report extra (numpy not installed): "
                                   "pip install 'chaostoolkit-db[report]'")


def test_every_shipped_experiment_validates_with_every_extra(monkeypatch):
    monkeypatch.setenv("CHAOSDB_COCKROACH_URL", "postgresql://root@h:26257/tpcc?sslmode=verify-full")
    for path in _shipped_experiments():
        try:
            ensure_experiment_is_valid(json.loads(path.read_text()))
        except (InvalidActivity, InvalidControl, InvalidExperiment) as exc:
            pytest.fail(f"{path.relative_to(shipped.experiments_dir())}: {exc}")


@pytest.mark.parametrize("argv,extra", [
    (["report", "journal.json"], "report"),
    (["load", "tpcc-load", "--dsn", "postgresql://u@h/db"], "postgres"),
    (["load", "ycsb-load", "--dsn", "postgresql://u@127.0.0.1:1/db"], "postgres"),
    (["load", "calibrate", "--dsn", "postgresql://u@h/db"], "load"),
    (["load", "worker", "--master", "127.0.0.1:5557"], "load"),
    (["manifests", "render", "cockroachdb/pod-kill"], "k8s"),
    (["manifests", "validate", "x.yaml"], "k8s"),
    (["gameday", "gate", "a", "--baseline", "b"], "report"),
    (["gameday", "report", "a"], "report"),
    (["cluster", "up", "--dir", "/nonexistent/chaosdb-never"], "local"),
])
def test_a_command_without_its_extra_exits_2_with_one_line(without, capsys, argv, extra):
    without({m for ms in extras.EXTRA_MODULES.values() for m in ms})
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"pip install 'chaostoolkit-db[{extra}]'" in err, err
    assert not Path("/nonexistent/chaosdb-never").exists()


def test_a_module_of_an_extra_missing_deep_inside_a_command_is_one_line_too(monkeypatch, capsys):
    def boom(args):
        raise ModuleNotFoundError("No module named 'numpy'", name="numpy")

    monkeypatch.setattr(cli, "cmd_report_upb", boom)
    assert cli.main(["report", "upb", "x.json"]) == 2
    assert "'chaosdb report upb' needs the report extra (numpy not installed)" in capsys.readouterr().err


def test_validate_refuses_an_unknown_template_or_a_missing_variable_even_with_values_from_configuration():
    exp = json.loads((shipped.experiments_dir() / "kubernetes" / "chaosmesh-network-delay-leaseholder.json").read_text())
    create = next(a for a in exp["method"] if a["provider"].get("func") == "create_chaos")
    args = create["provider"]["arguments"]
    assert any("${" in str(v) for v in args["variables"].values())  # known only at run time: still checked
    args["template"] = "cockroachdb/network-dealy"
    with pytest.raises(InvalidActivity, match="no template 'cockroachdb/network-dealy'; known: .*network-delay"):
        ensure_experiment_is_valid(exp)
    args["template"], args["variables"] = "kubernetes/gameday-cronjob", {"NAME": "${chaos_namespace}"}
    with pytest.raises(InvalidActivity, match="gameday-cronjob needs IMAGE"):
        ensure_experiment_is_valid(exp)
    args["variables"] = {"IMAGE": "Not An Image", "NAME": "${chaos_namespace}"}
    with pytest.raises(InvalidActivity, match="IMAGE='Not An Image' is not valid"):
        ensure_experiment_is_valid(exp)
    args["variables"] = {"IMAGE": "registry.local/chaosdb:1", "LATENCY": "1s"}
    with pytest.raises(InvalidActivity, match="has no variable.*LATENCY"):
        ensure_experiment_is_valid(exp)


@pytest.mark.parametrize("flag", [["--physical-machines"], ["--chaosd-tls-from", "/nonexistent/kube"]])
def test_chaosd_options_without_chaosd_are_refused_before_anything_starts(capsys, tmp_path, flag):
    directory = tmp_path / "never"
    assert cli.main(["cluster", "up", "--dir", str(directory), *flag]) != 0
    assert "needs --chaosd" in capsys.readouterr().err
    assert not directory.exists()


def test_the_settings_layer_reads_the_environment_as_os_environ_get_did(monkeypatch):
    monkeypatch.setenv("CHAOSDB_LOAD_DSN", "postgresql://app@h/db")
    monkeypatch.setenv("CHAOSDB_CGROUP_ROOT", "")
    monkeypatch.delenv("CHAOSDB_BIN_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/cache")
    assert settings.env_value("CHAOSDB_LOAD_DSN") == "postgresql://app@h/db"
    assert settings.env_value("CHAOSDB_CGROUP_ROOT", "/sys/fs/cgroup") == ""  # set but empty stays empty
    assert settings.env_value("CHAOSDB_BIN_DIR") == "" and settings.env_value("CHAOSDB_BIN_DIR", "x") == "x"
    assert settings.system_value("XDG_CACHE_HOME") == "/tmp/cache"
    assert settings.referenced_value("CHAOSDB_NOT_SET_ANYWHERE", {"d": 1}) == {"d": 1}
    assert settings.process_environment(EXTRA="1")["CHAOSDB_LOAD_DSN"] == "postgresql://app@h/db"
    with pytest.raises(ValueError, match="read it with system_value"):
        settings.env_value("HOME")
    with pytest.raises(ValueError, match="read it with env_value"):
        settings.system_value("CHAOSDB_HOME")
