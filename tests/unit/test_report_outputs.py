"""The reporter on real Chaos Toolkit journals (tests/data/chaostoolkit, provenance there), secret canaries,
and report.html in a real headless Chromium."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from chaosdb.cli import main as cli
from chaosdb.report.build import build_report
from chaosdb.report.journal import parse_ts, read_journal

DATA = Path(__file__).resolve().parents[1] / "data" / "chaostoolkit"


def write_samples(path: Path, start: float, end: float, outage: tuple[float, float], rate: float = 200.0) -> None:
    rng = np.random.default_rng(3)
    ts = np.arange(start, end, 1 / rate)
    lines = ["start_ts,latency_ms,name,outcome"]
    for t in ts:
        failed = outage[0] <= t < outage[1]
        name = "new_order" if rng.random() < 0.5 else "payment"
        lines.append(f"{t:.6f},{1.0 if failed else rng.normal(10, 1):.3f},{name},{'error' if failed else 'ok'}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(params=["journal-deviated.json", "journal-continuous.json"])
def real_journal(request, tmp_path):
    src = DATA / request.param
    dst = tmp_path / request.param
    shutil.copy(src, dst)
    return dst


def test_real_journals_are_read(real_journal):
    info, raw = read_journal(real_journal)
    assert info.start and info.end and info.end >= info.start
    assert info.status in ("completed", "failed", "interrupted", "aborted")
    assert all(a.start is not None for a in info.activities)
    assert info.faults == [a for a in info.activities if a.kind == "action"]
    assert raw["chaoslib-version"] == info.chaoslib_version


def test_naive_and_offset_timestamps_mean_the_same_instant():
    assert parse_ts("2026-11-22T02:53:02.093416+00:00") == parse_ts("2026-11-22T02:53:02.093416")
    assert parse_ts("2026-11-22T03:53:02.093416+01:00") == parse_ts("2026-11-22T02:53:02.093416Z")
    assert parse_ts("not a time") is None


def _journal_with_samples(journal: Path, tmp_path: Path, naive: bool = False) -> tuple[Path, Path, float]:
    data = json.loads(journal.read_text())
    if naive:
        text = json.dumps(data).replace("+00:00", "")
        data = json.loads(text)
        journal.write_text(text)
    info, _ = read_journal(journal)
    fault = info.first_fault_start
    samples = tmp_path / "plain.csv"
    write_samples(samples, fault - 40, fault + 40, (fault + 0.5, fault + 8.5))
    return journal, samples, fault


@pytest.mark.parametrize("naive", [False, True])
def test_report_from_a_real_journal_and_a_plain_csv(real_journal, tmp_path, naive):
    journal, samples, fault = _journal_with_samples(real_journal, tmp_path, naive)
    out = tmp_path / "out"
    assert cli(["report", str(journal), "--samples", str(samples), "-o", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())
    for key in ("baseline", "impact", "recovery", "degradation", "by_transaction", "windows", "faults"):
        assert key in m
    for key in ("count", "mean_ms", "std_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "throughput_tps", "error_rate"):
        assert key in m["baseline"] and key in m["impact"]
    for key in ("duration_s", "unavailability_s", "time_to_baseline_throughput_s"):
        assert key in m["recovery"]
    assert m["first_fault_ts"] == pytest.approx(fault)
    assert m["recovery"]["duration_s"] == pytest.approx(8.0 + 0.001, abs=0.01)
    assert m["recovery"]["unavailability_s"] == pytest.approx(8.0, abs=0.05)
    assert set(m["by_transaction"]) == {"new_order", "payment"}
    assert {f["name"] for f in m["faults"]} >= {a["activity"]["name"] for a in json.loads(journal.read_text())["run"]
                                                if a["activity"]["type"] == "action"}
    md = (out / "report.md").read_text()
    assert "Recovery from the fault: **8.0 s**" in md and "timeline.png" in md


def test_the_chaos_toolkit_plugin_builds_the_same_report_as_chaosdb_report(real_journal, tmp_path):
    from click.testing import CliRunner

    from chaosdb.report.cli_plugin import db_report

    journal, samples, _ = _journal_with_samples(real_journal, tmp_path)
    run = CliRunner().invoke(db_report, [str(journal), "--samples", str(samples), "-o", str(tmp_path / "plugin")])
    assert run.exit_code == 0, run.output
    assert "report written to" in run.output and "report.html" in run.output
    assert cli(["report", str(journal), "--samples", str(samples), "-o", str(tmp_path / "cli")]) == 0
    by_plugin, by_cli = (json.loads((tmp_path / d / "metrics.json").read_text()) for d in ("plugin", "cli"))
    assert by_plugin["recovery"] == by_cli["recovery"] and by_plugin["impact"] == by_cli["impact"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"run": [')
    refused = CliRunner().invoke(db_report, [str(bad), "--samples", str(samples)])
    assert refused.exit_code == 2 and "chaosdb: error:" in refused.output, refused.output


def test_compare_and_upb_commands(real_journal, tmp_path, capsys):
    journal, samples, _ = _journal_with_samples(real_journal, tmp_path)
    for i in range(3):
        build_report(journal, samples=samples, out_dir=tmp_path / f"run{i}")
    capsys.readouterr()
    assert cli(["report", "compare", f"node-kill={tmp_path / 'run0'}", f"node-kill={tmp_path / 'run1'}",
                f"other={tmp_path / 'run2'}", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["baseline"]["runs"] == 3
    assert [r["scenario"] for r in result["scenarios"]] == ["node-kill", "other"]
    assert result["scenarios"][0]["runs"] == 2 and result["scenarios"][0]["recovery_s"] == pytest.approx(8.0, abs=0.01)
    assert cli(["report", "compare", str(tmp_path / "run0")]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[2].startswith("| baseline |")
    upb = tmp_path / "upb.json"
    upb.write_text(json.dumps({"T": {"0": {"0": 100}, "1": {"0": 80, "1": 60}}}))
    assert cli(["report", "upb", str(upb), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["D_T"] == 20.0 and r["D_F"] == 25.0


def test_secrets_never_reach_any_output(real_journal, tmp_path):
    canaries = ["CANARY-secret-9f8e7d", "CANARY-config-1a2b3c", "CANARY-dsnpw-4d5e6f"]
    data = json.loads(real_journal.read_text())
    data["experiment"]["secrets"] = {"db": {"password": canaries[0], "ref": {"type": "env", "key": "X"}}}
    data["experiment"]["configuration"] = {"api_token": canaries[1]}
    data["experiment"]["title"] = f"title with {canaries[1]}"
    data["run"][0]["activity"]["name"] = f"uses {canaries[0]}"
    data["chaosdb_load"] = {"settings": {"dsn": f"postgresql://app:{canaries[2]}@h1,h2/db"}}
    real_journal.write_text(json.dumps(data))
    journal, samples, _ = _journal_with_samples(real_journal, tmp_path)
    out = tmp_path / "out"
    build_report(journal, samples=samples, out_dir=out)
    for f in out.iterdir():
        blob = f.read_bytes()
        for c in canaries:
            assert c.encode() not in blob, f"{c} leaked into {f.name}"
    assert "***" in (out / "metrics.json").read_text()


def test_a_run_without_load_gets_a_report_of_its_journal_that_says_so(real_journal, tmp_path, capsys):
    """A Kubernetes or PD experiment run without the load control: the verdict, every hypothesis result and the
    faults with their times, no invented figures, and nothing secret."""
    canary = "CANARY-secret-without-load"
    data = json.loads(real_journal.read_text())
    assert "chaosdb_load" not in data
    data["experiment"]["secrets"] = {"db": {"password": canary}}
    data["run"][0]["activity"]["name"] = f"uses {canary}"
    real_journal.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert cli(["report", str(real_journal), "-o", str(out)]) == 0
    assert "This run had no load" in capsys.readouterr().out
    m = json.loads((out / "metrics.json").read_text())
    assert m["samples"] == 0 and "baseline" not in m and "recovery" not in m and m["verdict"]["sentence"]
    names = {a["activity"]["name"].replace(canary, "***") for a in data["run"] if a["activity"]["type"] == "action"}
    assert names <= {f["name"] for f in m["faults"]}
    md = (out / "report.md").read_text()
    assert "This run had no load" in md and "## Faults and rollbacks" in md and m["verdict"]["sentence"] in md
    for f in out.iterdir():
        assert canary.encode() not in f.read_bytes(), f.name


def test_bad_inputs_are_explained(tmp_path):
    bad = tmp_path / "j.json"
    bad.write_text('{"run": [')
    assert cli(["report", str(bad), "--samples", str(tmp_path)]) == 2
    bad.write_text(json.dumps({"run": []}))
    csv = tmp_path / "x.csv"
    csv.write_text("time,lat\n1,2\n")
    assert cli(["report", str(bad), "--samples", str(csv)]) == 2


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


def test_report_html_renders_offline_in_a_real_browser(real_journal, tmp_path, chromium):
    journal, samples, _ = _journal_with_samples(real_journal, tmp_path)
    out = tmp_path / "out"
    build_report(journal, samples=samples, out_dir=out)
    page = chromium.new_page()
    errors, requests = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda req: requests.append(req.url))
    url = (out / "report.html").as_uri()
    page.goto(url)
    page.wait_for_load_state("load")
    sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
    assert len(sizes) == 2 and all(c and w > 400 and h > 200 for c, w, h in sizes), sizes
    assert "Recovery" in page.inner_text("body") and page.title()
    external = [u for u in requests if not u.startswith("data:") and u != url]
    assert external == [], f"the report made network requests: {external}"
    assert errors == []
    page.screenshot(path=str(out / "screenshot.png"), full_page=True)
    assert (out / "screenshot.png").stat().st_size > 10_000


def test_samples_reader_fast_path_and_tolerant_fallback_agree(tmp_path):
    from chaosdb.report.data import load_samples

    good = tmp_path / "a"
    good.mkdir()
    rows = [f"{1000 + i * 0.01:.6f},{5 + i % 7}.0,{'x' if i % 3 else 'y'},{'committed' if i % 10 else 'aborted'}"
            for i in range(3000)]
    (good / "samples-w0-1.csv").write_text("start_ts,latency_ms,name,outcome\n" + "\n".join(rows) + "\n1099.5,3.0,x,comm")
    odd = tmp_path / "b"
    odd.mkdir()
    (odd / "samples-w0-1.csv").write_text("start_ts,latency_ms,name,outcome\n" + "\n".join(rows)
                                          + "\n1099.6,not-a-number,x,committed\n")
    a, b = load_samples(good), load_samples(odd)
    assert len(a) == len(b) == 3000
    assert (a.ts == b.ts).all() and (a.lat == b.lat).all() and (a.ok == b.ok).all()
    assert sorted(a.names) == ["x", "y"] and int((~a.ok).sum()) == 300


def test_a_failed_action_is_listed_never_drawn_and_the_verdict_leads_the_report(real_journal, tmp_path):
    """The issue's report showed a throughput drop and a fault band for a kill that never happened."""
    journal, samples, fault = _journal_with_samples(real_journal, tmp_path)
    data = json.loads(journal.read_text())
    for run in data["run"]:
        if run["activity"]["type"] == "action":
            run["status"] = "failed"
            run["exception"] = ["Traceback ...", "chaoslib.exceptions.ActivityFailed: unknown target priamry\n"]
    data["status"], data["deviated"] = "failed", False
    journal.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert cli(["report", str(journal), "--samples", str(samples), "-o", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["first_fault_ts"] is None and m["impact"] is None  # nothing was injected: nothing to measure
    assert m["verdict"]["ok"] is False and m["run"]["status"] == "failed"
    failed_name = next(r["activity"]["name"] for r in data["run"] if r["activity"]["type"] == "action")
    assert any(f["name"] == failed_name and f["status"] == "failed" for f in m["faults"])  # still listed
    md = (out / "report.md").read_text()
    first = md.splitlines()[2]
    assert first.startswith(f"**Verdict: Action '{failed_name}' failed, so no fault was injected: unknown target")
    if data["steady_states"].get("before"):
        assert "| probe | tolerance | before the method | after the method |" in md


def test_figures_and_tables_are_drawn_from_the_same_transactions(tmp_path):
    """A quickstart-like run: baseline, a pause of the load for the replica check, a kill, a restart in the
    method. The ECDF holds exactly the transactions the tables count, the pause is drawn as a pause (no
    throughput), the restart as a marker, not a fault, and the journal the metrics name exists."""
    from datetime import datetime, timezone

    t0 = 1_800_000_000.0
    iso = lambda t: datetime.fromtimestamp(t, timezone.utc).isoformat()  # noqa: E731
    samples = tmp_path / "samples"
    samples.mkdir()
    rng = np.random.default_rng(11)
    lines = ["start_ts,latency_ms,name,outcome"]
    pause = (t0 + 40.0, t0 + 48.0)
    kill, restart = t0 + 60.0, t0 + 90.0
    for t in np.arange(t0, t0 + 150.0, 0.01):
        if pause[0] <= t < pause[1]:
            continue  # the load is paused: nothing starts
        lat = rng.normal(10, 1)
        if pause[0] - 0.01 <= t < pause[0]:  # in flight when the load was paused
            lat = (pause[1] - t) * 1000 + 10  # held across the pause: its latency includes the wait
        failed = kill <= t < kill + 20.0
        lines.append(f"{t:.6f},{1.0 if failed else lat:.3f},new_order,{'conn_error' if failed else 'committed'}")
    (samples / "samples-1.csv").write_text("\n".join(lines) + "\n")
    journal = {
        "chaoslib-version": "1.44.0", "experiment": {"title": "consistency"}, "status": "completed",
        "deviated": False, "start": iso(t0), "end": iso(t0 + 150),
        "steady_states": {"before": {"steady_state_met": True, "probes": []}, "after": None},
        "run": [{"activity": {"type": "action", "name": "kill", "provider": {"func": "kill_node"}},
                 "start": iso(kill), "end": iso(kill + 0.2), "status": "succeeded"},
                {"activity": {"type": "action", "name": "restart", "provider": {"func": "restart_nodes"}},
                 "start": iso(restart), "end": iso(restart + 10), "status": "succeeded"}],
        "rollbacks": [],
        "chaosdb_load": {"samples_dir": str(samples), "warmup_end_ts": t0 + 10.0, "stop_ts": t0 + 150.0,
                         "pauses": [{"start_ts": pause[0], "end_ts": pause[1]}]},
    }
    path = tmp_path / "journal.json"
    path.write_text(json.dumps(journal))
    result = build_report(path, out_dir=tmp_path / "out")
    m, drawn = result["metrics"], result["drawn"]
    base = m["baseline"]
    assert drawn["ecdf"]["baseline"]["n"] == base["successes"]
    assert drawn["ecdf"]["baseline"]["max_ms"] == pytest.approx(base["max_ms"], abs=1e-3)
    assert base["max_ms"] < 100, "the wait across the pause stayed in a baseline latency"
    assert drawn["ecdf"]["impact"]["n"] == m["impact"]["successes"]
    assert [f["name"] for f in drawn["timeline"]["faults"]] == ["kill"]
    assert [f["name"] for f in drawn["timeline"]["markers"]] == ["restart"]
    assert drawn["timeline"]["pauses"] == [{"start": pause[0] - kill, "end": pause[1] - kill}]
    paused_windows = [w for w in m["windows"] if w["paused_s"] >= w["seconds"] - 1e-6]
    assert paused_windows and all(w["tps"] is None for w in paused_windows)
    assert m["first_fault_ts"] == pytest.approx(kill)
    assert Path(m["run"]["journal"]).exists()
    assert m["recovery"]["duration_s"] == pytest.approx(20.0, abs=0.05)


def test_the_report_control_builds_from_the_journal_and_writes_a_masked_copy_beside_it(tmp_path):
    """Inline configuration values (a report folder, a password) are masked in the journal copy, never in the
    paths the reporter reads (CI once lost every etcd report to that)."""
    from chaosdb.report import control

    out = tmp_path / "report-dir"
    samples = out / "samples"
    samples.mkdir(parents=True)
    t0 = 1_800_000_000.0
    write_samples(samples / "samples-1.csv", t0, t0 + 60, (t0 + 30.5, t0 + 35.5))
    from datetime import datetime, timezone

    iso = lambda t: datetime.fromtimestamp(t, timezone.utc).isoformat()  # noqa: E731
    state = {"experiment": {"title": "masked", "configuration": {"report_dir": str(out), "pw": "hunter2-secret"}},
             "status": "completed", "deviated": False, "start": iso(t0), "end": iso(t0 + 60),
             "steady_states": {"before": None, "after": None},
             "run": [{"activity": {"type": "action", "name": "kill"}, "start": iso(t0 + 30), "end": iso(t0 + 30.2),
                      "status": "succeeded", "output": {"note": "hunter2-secret"}}], "rollbacks": [],
             "chaosdb_load": {"samples_dir": str(samples), "warmup_end_ts": t0 + 5, "stop_ts": t0 + 60, "pauses": []}}
    control.after_experiment_control({}, state=state, out_dir=str(out))
    assert "error" not in state["chaosdb_report"], state["chaosdb_report"]
    m = json.loads((out / "metrics.json").read_text())
    assert m["recovery"]["duration_s"] == pytest.approx(5.0, abs=0.05)
    assert m["run"]["journal"] == "journal.json" and (out / "journal.json").exists()  # beside metrics.json
    copy = (out / "journal.json").read_text()
    assert "hunter2-secret" not in copy and "***" in copy


def test_a_load_worker_lost_mid_run_is_said_next_to_the_recovery():
    from chaosdb.report.build import load_workers_of, recovery_lines

    load = {"workers": [{"id": "a"}, {"id": "b", "gone": "lost"}, {"id": "c", "gone": "quit"}],
            "workers_lost": [{"id": "b", "index": 1, "gone": "lost", "gone_ts": 112.5, "last_batch_ts": 111.0,
                              "samples": 900, "mid_run": True}]}
    lw = load_workers_of(load, 100.0)
    assert lw == {"connected": 3, "lost": [{"id": "b", "index": 1, "how": "lost", "at_s": 12.5,
                                            "last_samples_at_s": 11.0, "samples": 900}]}
    lines = recovery_lines({"recovery": {"duration_s": None, "reason": "no fault"}, "load_workers": lw})
    assert any("Load worker lost" in x and "stopped sending heartbeats at 12.5 s" in x and "after 11.0 s" in x
               for x in lines), lines
    assert load_workers_of({}, 100.0) is None


def test_secrets_read_from_the_environment_stay_out_of_the_report(real_journal, tmp_path, monkeypatch, capsys):
    """A secret the experiment takes from an environment variable, and the passwords the pack reads from
    ``CHAOSDB_<SERVICE>_PASSWORD``, never appear in the journal's copy: the report masks them all the same."""
    monkeypatch.setenv("MY_PATRONI_PASSWORD", "CANARY-env-secret-1")
    monkeypatch.setenv("CHAOSDB_ETCD_PASSWORD", "CANARY-env-secret-2")
    data = json.loads(real_journal.read_text())
    data["experiment"]["secrets"] = {"patroni": {"patroni_password": {"type": "env", "key": "MY_PATRONI_PASSWORD"}}}
    data["run"][0]["activity"]["name"] = "login with CANARY-env-secret-1 and CANARY-env-secret-2"
    real_journal.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert cli(["report", str(real_journal), "-o", str(out)]) == 0
    capsys.readouterr()
    for f in out.iterdir():
        assert b"CANARY-env-secret" not in f.read_bytes(), f.name


def test_a_recorded_history_gets_its_section_checked_from_the_run_folder(real_journal, tmp_path):
    """Beside its samples the load recorded a list-append history with a G1c cycle (two transactions each reading
    the other's append): the report checks it against the load's isolation (here the server's default: read
    committed, which forbids G1c) and says so in metrics.json, report.md and report.html."""
    from chaosdb.history.recording import write_history
    from tests.unit.history_ops import invoked, numbered, txn

    journal, samples, _fault = _journal_with_samples(real_journal, tmp_path)
    folder = tmp_path / "run"
    folder.mkdir()
    samples.rename(folder / "samples-w0-1.csv")
    t1 = dict(txn(("append", 1, 1), ("r", 2, [2]), process=0), node="127.0.0.21:5432")
    t2 = dict(txn(("append", 2, 2), ("r", 1, [1]), process=1), node="127.0.0.22:5432")
    write_history(numbered([invoked(t1)[0], invoked(t2)[0], t1, t2]), folder / "history-w0-1.jsonl")
    out = tmp_path / "out"
    assert cli(["report", str(journal), "--samples", str(folder), "-o", str(out)]) == 0
    history = json.loads((out / "metrics.json").read_text())["history"]
    assert history["valid"] is False and history["consistency_model"] == "read-committed"
    assert history["counts"] == {"G1c": 1} and history["anomaly_count"] == 1 and history["info"] == 0
    md = (out / "report.md").read_text()
    assert "## Operation history" in md and "| G1c | 1 |" in md and "Served by: op 2 127.0.0.21:5432" in md
    assert 'id="history"' in (out / "report.html").read_text()
