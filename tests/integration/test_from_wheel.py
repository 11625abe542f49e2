"""The pack as a user gets it: the wheel built from this checkout, installed into fresh virtualenvs in a
temporary folder outside the checkout, run from a folder outside it (no repository file on ``sys.path``).

* with every extra: ``chaosdb experiments copy`` puts the shipped experiments in the user's folder; ``chaos
  validate`` accepts every one of them with its documented environment; ``chaosdb manifests`` lists and renders
  the shipped templates; one shipped embedded-cluster experiment runs end to end with its report;
* base install (no extra): ``chaos`` loads the plug-in without a warning, ``chaos validate`` refuses the
  quickstart with one install line naming every extra it needs, and a command without its extra exits 2 with
  that line.

(A Chaos Mesh template applied from the wheel through the local Kubernetes: tests/integration/test_k8s_local.py.)
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chaosdb import shipped
from tests.conftest import world_readable_tmpdir
from tests.wheel import IMAGE_CONSTRAINTS, ROOT, build_wheel, make_venv, user_env

pytestmark = pytest.mark.integration

#: the environment the docs give for validating every shipped experiment (the CockroachDB Kubernetes ones take
#: their URL from a secret: docs/running-experiments.md)
DOCUMENTED_ENV = {"CHAOSDB_COCKROACH_URL": "postgresql://root@cockroachdb-public:26257/tpcc?sslmode=verify-full"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = world_readable_tmpdir("chaosdb-wheel-")
    wheel = build_wheel(base / "build")
    full = make_venv(base / "venv-all", wheel, "all", IMAGE_CONSTRAINTS)  # the container image's versions
    bare = make_venv(base / "venv-base", wheel)
    work = base / "work"
    work.mkdir()
    yield {"all": full, "base": bare, "work": work, "wheel": wheel}
    subprocess.run(["rm", "-rf", str(base)], check=False)


def _run(bin_dir: Path, *argv: str, cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], cwd=cwd, env=user_env(**env), capture_output=True,
                          text=True, timeout=timeout)


def test_the_wheel_holds_the_package_not_the_checkout(installed):
    out = _run(installed["all"], "python", "-c", "import chaosdb, sys; print(chaosdb.__file__); print(sys.path)",
               cwd=installed["work"])
    where, path = out.stdout.splitlines()
    assert "site-packages" in where and str(ROOT) not in where and str(ROOT) not in path, out.stdout


def test_experiments_are_copied_and_every_one_validates(installed):
    work = installed["work"]
    copied = _run(installed["all"], "chaosdb", "experiments", "copy", "game-days", "--template",
                  "kubernetes/gameday-cronjob", "--json", cwd=work)
    assert copied.returncode == 0, copied.stderr
    written = json.loads(copied.stdout)
    names = sorted(p for p in written["experiments"] if p.endswith(".json"))
    assert names == sorted(str(p.relative_to(shipped.experiments_dir()))
                           for p in shipped.experiments_dir().rglob("*.json"))
    assert (work / "game-days" / "load" / "tpcc.py").is_file()
    assert (work / "game-days" / "templates" / "kubernetes" / "gameday-cronjob.yaml").is_file()

    def validate(name: str) -> tuple[str, int, str]:
        done = _run(installed["all"], "chaos", "--no-log-file", "validate", name, cwd=work / "game-days",
                    **DOCUMENTED_ENV)
        return name, done.returncode, (done.stdout + done.stderr)[-600:]

    with ThreadPoolExecutor(max_workers=3) as pool:
        failed = [r for r in pool.map(validate, names) if r[1] != 0]
    assert not failed, failed


def test_templates_list_and_render_from_the_wheel(installed):
    listed = _run(installed["all"], "chaosdb", "manifests", "list", "--json", cwd=installed["work"])
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)} >= {"cockroachdb/pod-kill", "kubernetes/gameday-cronjob"}
    rendered = _run(installed["all"], "chaosdb", "manifests", "render", "tikv/network-delay", "--set",
                    "LATENCY=250ms", cwd=installed["work"])
    assert rendered.returncode == 0 and 'latency: "250ms"' in rendered.stdout, rendered.stderr


def test_a_base_install_says_which_extra_to_install_in_one_line(installed):
    work, bare = installed["work"], installed["base"]
    shipped.copy_shipped(work / "base-copy")
    helped = _run(bare, "chaos", "--help", cwd=work)
    assert helped.returncode == 0 and "could not load plugin" not in helped.stdout + helped.stderr
    refused = _run(bare, "chaos", "--no-log-file", "validate", "quickstart.json", cwd=work / "base-copy")
    assert refused.returncode == 1
    # every extra the quickstart needs, in one line (not the first activity's extra, then the next one's ...)
    assert "this experiment needs the load, local, postgres and report extras" in refused.stdout + refused.stderr \
        and "pip install 'chaostoolkit-db[load,local,postgres,report]'" in refused.stdout + refused.stderr, \
        refused.stdout + refused.stderr
    for argv, extra in ((["report", "journal.json"], "report"), (["manifests", "render", "tikv/pod-kill"], "k8s"),
                        (["load", "tpcc-load", "--dsn", "postgresql://u@h/db"], "postgres"),
                        (["cluster", "up", "--dir", str(work / "never")], "local")):
        done = _run(bare, "chaosdb", *argv, cwd=work)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and f"chaostoolkit-db[{extra}]" in done.stderr
    assert not (work / "never").exists()


def test_a_shipped_embedded_cluster_experiment_runs_end_to_end_from_the_wheel(installed):
    work = installed["work"]
    home = world_readable_tmpdir("chaosdb-wheel-run-")
    try:
        shipped.copy_shipped(work / "run-copy")
        run = _run(installed["all"], "chaos", "--no-log-file", "run", "thesis-1-process-kill.json",
                   "--journal-path", str(home / "journal.json"), cwd=work / "run-copy", timeout=900,
                   CHAOSDB_HOME=str(home), CHAOSDB_CLUSTER="wheel", CHAOSDB_REPORT_DIR=str(home / "report"),
                   CHAOSDB_BASELINE_S="10", CHAOSDB_ADDRESS_BASE="127.0.0.91")
        out = run.stdout + run.stderr
        journal = json.loads((home / "journal.json").read_text())
        faults = [a for a in journal["run"] if a["activity"]["type"] == "action"]
        assert faults and faults[0]["status"] == "succeeded", out[-3000:]
        assert journal["chaosdb_load"]["by_outcome"].get("committed", 0) > 50, out[-3000:]
        metrics = json.loads((home / "report" / "metrics.json").read_text())
        assert metrics["samples"] > 50 and (home / "report" / "report.html").is_file()
        assert run.returncode in (0, 1) and journal["chaosdb_verdict"]["sentence"], out[-3000:]
        # the embedded-cluster control took its cluster down: nothing of it runs
        left = subprocess.run(["pgrep", "-f", str(home)], capture_output=True, text=True)
        assert not left.stdout.strip(), left.stdout
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=False)
