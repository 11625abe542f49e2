"""Run a game-day suite into a results directory, resumably.

Results directory::

    RESULTS/
      manifest.json        the suite, every planned run and its state (written after every change)
      suite.json           the suite as read (for the record)
      runs/<run-id>/       experiment.json (exactly what ran), journal.json, chaostoolkit.log,
                           metrics.json + report.md/html + plots, samples/ (the load's samples)
      summary.json, report.html, *.png   the aggregated report (``chaosdb gameday report``)

Run states: ``pending``; ``running`` (in progress, or the runner died); ``completed`` (the
hypothesis held); ``deviated`` (the journal says the hypothesis failed, or the run failed or was
aborted: a result, not an error); ``interrupted`` (stopped by Ctrl-C / SIGTERM); ``error`` (no
journal: Chaos Toolkit could not run it); ``unsteady`` (the hypothesis did not hold *before* the
fault, so the run says nothing about the fault; its metrics are kept but not aggregated). Running the
same suite into the same directory again resumes: ``completed``/``deviated`` runs are kept,
``pending``/``running``/``interrupted``/``error``/``unsteady`` ones run (again; an earlier attempt's
directory is kept as ``runs/<id>.attempt<N>``). A different suite into the same directory is refused.

Interruption: the first Ctrl-C / SIGTERM is passed to the running ``chaos run`` as SIGINT (its
controls stop the load and revert local faults), the run is marked ``interrupted`` and the runner
exits 130. If the runner itself is killed, ``chaos run`` gets SIGINT from the kernel
(``PR_SET_PDEATHSIG``). Before every run the between-run steps restore the cluster anyway.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from chaosdb.core.commands import die_with_parent
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import cmdline, pid_alive
from chaosdb.gameday import cluster_steps as steps
from chaosdb.gameday.manifest import DONE_STATES, MANIFEST, RERUN_STATES, manifested, read_manifest
from chaosdb.gameday.suite import PlannedRun, Suite, load_suite, plan_runs

__all__ = ["run_suite", "read_manifest", "rebuild_runs", "RERUN_STATES", "DONE_STATES", "default_results_dir"]



def default_results_dir(suite: Suite) -> Path:
    """Where a suite's results go when none is given: ``reports/gamedays/<suite name>``."""
    return Path("reports") / "gamedays" / suite.name


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def _chaos_binary() -> str:
    here = Path(sys.executable).parent / "chaos"
    if here.is_file():
        return str(here)
    found = shutil.which("chaos")
    if not found:
        raise ChaosDBError("the 'chaos' command is not installed: pip install chaostoolkit")
    return found


def _metrics_summary(m: dict[str, Any]) -> dict[str, Any]:
    impact = m.get("impact") or {}
    rec = m.get("recovery") or {}
    base = m.get("baseline") or {}
    return {"baseline_p99_ms": base.get("p99_ms"), "baseline_tps": base.get("throughput_tps"),
            "impact_p99_ms": impact.get("p99_ms"), "impact_tps": impact.get("throughput_tps"),
            "error_rate": impact.get("error_rate"), "recovery_s": rec.get("duration_s"),
            "unavailability_s": rec.get("unavailability_s"),
            "manifested": manifested(m)}


class _Interrupt:
    def __init__(self) -> None:
        self.signum: int | None = None
        self.child: subprocess.Popen | None = None
        self.previous: dict[int, Any] = {}

    def handler(self, signum: int, _frame: Any) -> None:
        first = self.signum is None
        self.signum = self.signum or signum
        if self.child is not None and self.child.poll() is None:
            if first:
                try:
                    os.killpg(self.child.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        elif first:
            raise KeyboardInterrupt  # between runs: stop the step at once (steps are idempotent)

    def __enter__(self) -> "_Interrupt":
        for s in (signal.SIGINT, signal.SIGTERM):
            self.previous[s] = signal.signal(s, self.handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for s, h in self.previous.items():
            signal.signal(s, h)


class Runner:
    def __init__(self, suite: Suite, results: Path, say: Callable[[str], None] = print,
                 fail_on_deviation: bool = False, only: list[str] | None = None) -> None:
        self.suite = suite
        self.results = results.absolute()
        self.say = say
        self.fail_on_deviation = fail_on_deviation
        self.runs = plan_runs(suite, validate=False)
        if only:
            unknown = [s for s in only if s not in {sc.name for sc in suite.scenarios}]
            if unknown:
                raise ChaosDBError(f"--only {', '.join(unknown)}: no such scenario in {suite.name} "
                                   f"({', '.join(sc.name for sc in suite.scenarios)})")
        self.only = set(only or [])
        self.manifest: dict[str, Any] = {}
        self.interrupt = _Interrupt()
        self.original_replication: dict[Path, str] = {}

    # manifest ------------------------------------------------------------------------------------
    def _open_manifest(self) -> None:
        path = self.results / MANIFEST
        planned = {r.id: r for r in self.runs}
        if path.exists():
            old = json.loads(path.read_text())
            if old.get("suite", {}).get("name") != self.suite.name:
                raise ChaosDBError(f"{self.results} holds results of suite {old.get('suite', {}).get('name')!r}, "
                                   f"not {self.suite.name!r}: choose another --results directory")
            old_specs = {r["id"]: r.get("spec") for r in old.get("runs", [])}
            changed = [rid for rid, r in planned.items() if rid in old_specs and old_specs[rid] != r.spec_hash]
            if changed or set(old_specs) != set(planned):
                raise ChaosDBError(
                    f"{self.results} holds results of a different version of suite {self.suite.name!r} "
                    f"({len(changed)} run(s) changed, {len(set(planned) ^ set(old_specs))} added or removed): "
                    "resume with the suite as it was, or use another --results directory")
            self.manifest = old
            self.manifest["resumed"] = self.manifest.get("resumed", 0) + 1
        else:
            self.manifest = {
                "format": "chaosdb-gameday/1",
                "suite": {"name": self.suite.name, "path": str(self.suite.path), "description": self.suite.description,
                          "order": self.suite.order, "cluster": self.suite.cluster,
                          "scenarios": [{"name": sc.name, "experiment": str(sc.experiment),
                                         "repetitions": sc.repetitions, "sweep": sc.sweep, "cycle": sc.cycle,
                                         "upb": sc.upb, "prepare": sc.prepare, "between": sc.between,
                                         "description": sc.description} for sc in self.suite.scenarios]},
                "created_ts": time.time(), "resumed": 0,
                "runs": [{**r.summary(), "status": "pending", "attempts": 0} for r in self.runs],
            }
        self._save()

    def _save(self) -> None:
        self.manifest["updated_ts"] = time.time()
        _write_json(self.results / MANIFEST, self.manifest)

    def _entry(self, rid: str) -> dict[str, Any]:
        return next(e for e in self.manifest["runs"] if e["id"] == rid)

    # steps ---------------------------------------------------------------------------------------
    def _between(self, run: PlannedRun, first: bool) -> dict[str, Any]:
        done: dict[str, Any] = {}
        directory = steps.cluster_dir_of(run.experiment)
        control = steps.embedded_control(run.experiment)
        b = run.between
        if control is None:
            return {"skipped": "the experiment has no embedded-cluster control"}
        address = str(control.get("address_base") or "")
        if address.startswith("${"):
            address = str(steps._config_value((run.experiment.get("configuration") or {}).get(address[2:-1]))
                          or "127.0.0.11")
        if b["restore"]:
            done["restore"] = steps.restore(directory, control, address or "127.0.0.11",
                                            timeout=max(120.0, b["wait_healthy_s"]))
        if b["wait_healthy_s"]:
            done["wait_healthy"] = steps.wait_healthy(directory, b["wait_healthy_s"])
        if "synchronous_standbys" in run.prepare:
            self.original_replication.setdefault(directory, steps.replication_of(directory) or "sync")
            done["synchronous_standbys"] = steps.set_synchronous_standbys(directory,
                                                                          run.prepare["synchronous_standbys"])
        if "leader" in run.prepare:
            done["leader"] = steps.move_leader(directory, run.prepare["leader"])
        if b["reset_tpcc"]:
            done["reset_tpcc"] = steps.reset_tpcc(directory, int(control.get("tpcc_warehouses", 0)),
                                                  int(control.get("tpcc_scale_down", 10)))
        if b["cooldown_s"] and not first:
            time.sleep(b["cooldown_s"])
            done["cooldown_s"] = b["cooldown_s"]
        return done

    def _execute(self, run: PlannedRun) -> dict[str, Any]:
        run_dir = self.results / "runs" / run.id
        entry = self._entry(run.id)
        if run_dir.exists():
            n = 1
            while (run_dir.parent / f"{run.id}.attempt{n}").exists():
                n += 1
            run_dir.rename(run_dir.parent / f"{run.id}.attempt{n}")
        run_dir.mkdir(parents=True)
        experiment = json.loads(json.dumps(run.experiment))
        cfg = experiment.setdefault("configuration", {})
        cfg["report_dir"] = str(run_dir)
        (run_dir / "experiment.json").write_text(json.dumps(experiment, indent=2) + "\n")
        journal = run_dir / "journal.json"
        argv = [_chaos_binary(), "--log-file", str(run_dir / "chaostoolkit.log"), "run", "--journal-path",
                str(journal), str(run_dir / "experiment.json")]
        t0 = time.time()
        entry.update(status="running", started_ts=t0, attempts=entry.get("attempts", 0) + 1, dir=f"runs/{run.id}")
        self._save()
        with open(run_dir / "chaos.out", "wb") as out:
            child = subprocess.Popen(argv, cwd=str(run_dir), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=die_with_parent(signal.SIGINT))
        self.interrupt.child = child
        entry["pid"] = child.pid
        self._save()
        try:
            child.wait(timeout=run.timeout_s)
        except subprocess.TimeoutExpired:
            self.say(f"  {run.id}: still running after {run.timeout_s:.0f}s: interrupting it")
            os.killpg(child.pid, signal.SIGINT)
            try:
                child.wait(timeout=300)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            entry["timed_out"] = True
        finally:
            # a Ctrl-C arrives while we wait: the child got SIGINT; give its controls time to clean up
            if child.poll() is None:
                try:
                    child.wait(timeout=300)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
            self.interrupt.child = None
        entry.update(ended_ts=time.time(), seconds=round(time.time() - t0, 1), exit_code=child.returncode)
        status = "error"
        if journal.is_file():
            j = json.loads(journal.read_text())
            entry["journal_status"] = j.get("status")
            entry["deviated"] = bool(j.get("deviated"))
            before = ((j.get("steady_states") or {}).get("before") or {})
            if j.get("status") == "interrupted" or self.interrupt.signum is not None or entry.get("timed_out"):
                status = "interrupted"
            elif j.get("status") == "refused":  # refused before its method: nothing to measure, a run to fix
                status = "error"
                entry["error"] = str((j.get("chaosdb_verdict") or {}).get("sentence") or j.get("chaosdb_refused"))
            elif before and before.get("steady_state_met") is False:
                status = "unsteady"  # the hypothesis failed before any fault: the run says nothing about it
            elif j.get("status") == "completed" and not j.get("deviated"):
                status = "completed"
            else:
                status = "deviated"
            if status not in ("interrupted", "error"):
                entry["metrics"] = self._metrics(run_dir, journal, entry)
        elif self.interrupt.signum is not None:
            status = "interrupted"
        else:
            entry["error"] = (run_dir / "chaos.out").read_text()[-2000:]
        entry["status"] = status
        self._save()
        return entry

    def _metrics(self, run_dir: Path, journal: Path, entry: dict[str, Any]) -> dict[str, Any] | None:
        path = run_dir / "metrics.json"
        if not path.is_file():
            try:
                from chaosdb.report.build import build_report  # noqa: PLC0415 - needs the report extra

                build_report(journal, out_dir=run_dir)
            except Exception as exc:  # no samples, no load: the run stays a result without metrics
                entry["report_error"] = str(exc)[:500]
                return None
        return _metrics_summary(json.loads(path.read_text()))

    # the suite -----------------------------------------------------------------------------------
    def run(self) -> int:
        """Run every planned run not done yet, one at a time under the results folder's lock, with the between-run
        steps; then the report. The exit status."""
        self.results.mkdir(parents=True, exist_ok=True)
        lock = open(self.results / ".lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ChaosDBError(f"another game day is running into {self.results}") from None
        try:
            self._open_manifest()
            _write_json(self.results / "suite.json", self.suite.raw)
            with self.interrupt:
                return self._run_all()
        finally:
            lock.close()

    def _selected(self) -> list[dict[str, Any]]:
        """The manifest entries this invocation is about (``--only`` scenarios, else all)."""
        return [e for e in self.manifest["runs"] if not self.only or e["scenario"] in self.only]

    def _wait_for_orphans(self) -> None:
        """A runner that was killed leaves its ``chaos run`` finishing (it got SIGINT from the kernel and its
        controls clean up): wait for it before touching the cluster again."""
        for e in self.manifest["runs"]:
            pid = e.get("pid")
            if e.get("status") != "running" or not pid:
                continue
            if str(self.results / "runs" / e["id"]) not in cmdline(int(pid)):
                continue
            self.say(f"{e['id']}: the interrupted chaos run (pid {pid}) is still cleaning up; waiting for it")
            deadline = time.monotonic() + 300
            while pid_alive(int(pid)) and time.monotonic() < deadline:
                time.sleep(0.5)
            if pid_alive(int(pid)):
                os.kill(pid, signal.SIGKILL)

    def _run_all(self) -> int:
        self._wait_for_orphans()
        todo = [r for r in self.runs if self._entry(r.id)["status"] in RERUN_STATES
                and (not self.only or r.scenario in self.only)]
        done_before = sum(1 for e in self.manifest["runs"] if e["status"] in DONE_STATES)
        self.say(f"game day {self.suite.name}: {len(self.runs)} runs, {done_before} already done, "
                 f"{len(todo)} to run -> {self.results}")
        first = done_before == 0
        touched: set[Path] = set()
        changed_replication: set[Path] = set()
        try:
            self._loop(todo, first, touched, changed_replication)
        except KeyboardInterrupt:
            self.interrupt.signum = self.interrupt.signum or signal.SIGINT
        finally:
            self._finish(touched, changed_replication)
        if self.interrupt.signum is not None:
            self.say(f"interrupted: {self.results} keeps what ran; run the same command again to resume")
            return 130
        return self._conclude()

    def _loop(self, todo: list[PlannedRun], first: bool, touched: set[Path], changed_replication: set[Path]) -> None:
        for i, run in enumerate(todo, 1):
            if self.interrupt.signum is not None:
                break
            entry = self._entry(run.id)
            directory = steps.cluster_dir_of(run.experiment)
            if steps.embedded_control(run.experiment) is not None:  # only the clusters its runs start
                touched.add(directory)
            if "synchronous_standbys" in run.prepare:
                changed_replication.add(directory)
            self.say(f"[{i}/{len(todo)}] {run.id}: between-run steps")
            try:
                entry["between"] = self._between(run, first)
            except ChaosDBError as exc:
                entry.update(status="error", error=f"between-run steps failed: {exc}"[:2000])
                self._save()
                self.say(f"  {run.id}: between-run steps failed, not run: {str(exc).splitlines()[0]}")
                continue
            if self.interrupt.signum is not None:
                break
            first = False
            self.say(f"[{i}/{len(todo)}] {run.id}: chaos run ({run.source})")
            entry = self._execute(run)
            m = entry.get("metrics") or {}
            self.say(f"  {run.id}: {entry['status']} in {entry.get('seconds')}s"
                     + (f"; recovery {m.get('recovery_s')} s, p99 {m.get('impact_p99_ms')} ms" if m else ""))

    def _conclude(self) -> int:
        from chaosdb.gameday.render import write_report  # noqa: PLC0415 - needs the report extra

        write_report(self.results)
        counts: dict[str, int] = {}
        for e in self._selected():
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        self.say("done: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
                 + f"; report: {self.results / 'report.html'}")
        if counts.get("error") or counts.get("pending") or counts.get("interrupted") or counts.get("unsteady"):
            return 1
        if self.fail_on_deviation and counts.get("deviated"):
            return 1
        return 0

    def _finish(self, touched: set[Path], changed_replication: set[Path]) -> None:
        for d in changed_replication:
            try:
                steps.restore_replication(d, self.original_replication.get(d, "sync"))
            except ChaosDBError as exc:
                self.say(f"could not restore the replication setting of {d}: {exc}")
        remaining = any(e["status"] in RERUN_STATES for e in self._selected())
        if self.suite.cluster["keep_between_runs"] and self.suite.cluster["down_after"] and not remaining:
            for d in touched:
                done = steps.take_down(d, purge=self.suite.cluster["purge"])
                if done.get("skipped"):
                    self.say(f"cluster at {d}: {done['skipped']}")


def rebuild_runs(results: str | Path, say: Callable[[str], None] = print) -> int:
    """Recompute every finished run's metrics and report from its journal and samples (after a reporter
    change) and refresh the manifest's summaries; returns how many runs were rebuilt."""
    from chaosdb.report.build import build_report  # noqa: PLC0415 - needs the report extra

    results = Path(results)
    manifest = read_manifest(results)
    n = 0
    for e in manifest["runs"]:
        journal = results / e.get("dir", f"runs/{e['id']}") / "journal.json"
        if e.get("status") not in (*DONE_STATES, "unsteady") or not journal.is_file():
            continue
        try:
            build_report(journal, out_dir=journal.parent)
        except ChaosDBError as exc:
            say(f"{e['id']}: not rebuilt: {exc}")
            continue
        e["metrics"] = _metrics_summary(json.loads((journal.parent / "metrics.json").read_text()))
        n += 1
    _write_json(results / MANIFEST, manifest)
    return n


def run_suite(suite_path: str | Path, results: str | Path | None = None, say: Callable[[str], None] = print,
              fail_on_deviation: bool = False, only: list[str] | None = None) -> int:
    """Run the suite at *suite_path* into *results* (resuming what is there); the exit status."""
    suite = load_suite(suite_path)
    target = Path(results) if results else default_results_dir(suite)
    return Runner(suite, target, say=say, fail_on_deviation=fail_on_deviation, only=only).run()
