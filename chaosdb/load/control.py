"""Chaos Toolkit control that runs the load for the whole experiment.

Declare it in the experiment::

    "controls": [{
      "name": "tpcc-load",
      "provider": {"type": "python", "module": "chaosdb.load.control",
                   "arguments": {"users": 8, "warmup_s": 20, "samples_dir": "reports/run1/samples"}}
    }]

* before the experiment (so before the steady-state hypothesis): starts Locust
  as a separate process (``python -m locust -f <locustfile> --headless``), waits
  until transactions commit, then ``warmup_s`` seconds (excluded from every
  statistic), then ``baseline_s`` seconds of steady load, the baseline that the
  report compares the fault's impact with (the hypothesis' windows fall in it). If the load does not start, the run is interrupted
  before anything is injected, with the load's log in the message.
* the load keeps running through the method, the after-hypothesis and the
  rollbacks;
* after the experiment, also when it failed, deviated or was interrupted
  (Ctrl-C): stops the load (SIGTERM, then SIGKILL after ``stop_timeout_s``) and
  adds ``chaosdb_load`` to the journal: settings, start / warm-up end / stop times,
  samples and Locust CSV locations, counts by outcome, pause windows.
* if ``chaos run`` itself dies, the load gets SIGTERM from the kernel
  (parent-death signal) and ``max_run_s`` bounds it anyway.

The DSN comes from ``dsn`` (argument), else secret ``load_dsn`` (declare the
secret scope in the experiment), else ``CHAOSDB_LOAD_DSN``, else the embedded
cluster named by configuration ``chaosdb_cluster``/``chaosdb_cluster_dir``. It is
handed to Locust in its environment, never on its command line, and never
written to the journal. With ``"only_with_dsn": true`` a run where none of the first three is given has no
load (the Kubernetes experiments: a load and its figures where the user gives a DSN), instead of an error.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from chaosdb.core.arguments import MAX_SECONDS, checked_signature, choice, number
from chaosdb.core.claims import OutputFolder, claim, release
from chaosdb.core.commands import die_with_parent
from chaosdb.core.detach import source_env
from chaosdb.core.embedded import embedded_endpoints, names_embedded_cluster
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import control_validator
from chaosdb.core.libpq import with_libpq_tls
from chaosdb.core.redact import redact_dsn
from chaosdb.core.timeutil import iso_from_epoch
from chaosdb.core.tls import ClientTls, client_tls, credentials
from chaosdb.experiment.checks import refuse_bad_arguments
from chaosdb.experiment.refusals import refused
from chaosdb.load import distributed_control as dist_control
from chaosdb.load import state as load_state
from chaosdb.load import window as w
from chaosdb.load.distributed import lost_workers, read_workers
from chaosdb.load.observer import Observer, chosen_sources
from chaosdb.workloads.kv import tls_environment
from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import read_recent, read_samples, sample_files

__all__ = ["validate_control", "before_experiment_control", "after_experiment_control", "cleanup_control", "start_load", "stop_load", "finish_load",
           "before_hypothesis_control", "before_method_control", "before_activity_control",
           "after_method_control", "before_rollback_control"]

#: ``chaos validate`` refuses this control when its extra is not installed
validate_control = control_validator("chaosdb.load.control", ("load",))

LOCUSTFILES = {"tpcc": str(Path(__file__).with_name("locust_tpcc.py")),
               "ycsb": str(Path(__file__).with_name("locust_ycsb.py")),
               "ycsb-etcd": str(Path(__file__).with_name("locust_ycsb.py"))}
_die_with_parent = die_with_parent(signal.SIGTERM)
#: the watcher of the database while the load runs (None when nothing is watched)
_observer: Observer | None = None


def _resolve_dsn(dsn: str, configuration: dict[str, Any] | None, secrets: dict[str, Any] | None,
                 workload: str = "tpcc") -> str:
    found = _given_dsn(dsn, configuration, secrets, workload)
    # the PostgreSQL TLS keys and password (chaosdb.core.libpq) fill what the DSN does not say
    return found if workload == "ycsb-etcd" else with_libpq_tls(found, configuration, secrets)


def _given_dsn(dsn: str, configuration: dict[str, Any] | None, secrets: dict[str, Any] | None,
               workload: str = "tpcc") -> str:
    if dsn:
        return dsn
    if workload == "ycsb-etcd":  # the etcd client URLs: configuration etcd_urls, else the embedded cluster's
        return etcd_endpoints(configuration)
    for scope in (secrets or {}).values():
        if isinstance(scope, dict) and scope.get("load_dsn"):
            return str(scope["load_dsn"])
    if secrets and isinstance(secrets.get("load_dsn"), str):
        return str(secrets["load_dsn"])
    if os.environ.get("CHAOSDB_LOAD_DSN"):
        return os.environ["CHAOSDB_LOAD_DSN"]
    if names_embedded_cluster(configuration, environment=False):
        return str(embedded_endpoints(configuration)["dsn"])
    raise ChaosDBError("no DSN for the load: pass 'dsn', a secret 'load_dsn', CHAOSDB_LOAD_DSN, "
                       "or configuration 'chaosdb_cluster'")


def etcd_endpoints(configuration: dict[str, Any] | None) -> str:
    """etcd client URLs for the KV load: configuration ``etcd_urls`` (list or comma-separated), else
    the embedded cluster's members."""
    configuration = configuration or {}
    urls = configuration.get("etcd_urls")
    if urls:
        return urls if isinstance(urls, str) else ",".join(map(str, urls))
    if names_embedded_cluster(configuration, environment=False):
        return ",".join(embedded_endpoints(configuration)["etcd_urls"])
    raise ChaosDBError("no etcd endpoints for the KV load: pass 'dsn' (http://host:2379,...), configuration "
                       "'etcd_urls', or 'chaosdb_cluster'")


def etcd_tls(configuration: dict[str, Any] | None) -> ClientTls | None:
    """TLS of the KV load's etcd client: the etcd keys of the configuration, over the embedded cluster's own CA and
    client certificate."""
    tls = client_tls("etcd", configuration)
    if names_embedded_cluster(configuration, environment=False) and not (configuration or {}).get("etcd_urls"):
        return tls.over(embedded_endpoints(configuration).get("etcd_tls"))
    return tls if tls.given else None


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _has_commit(samples_dir: Path) -> bool:
    return any(is_success(s.outcome) for s in read_samples(samples_dir))


def start_load(workload: str = "tpcc", records: int = 10000, users: int = 10, spawn_rate: float = 0.0,
               warmup_s: float = 10.0, baseline_s: float = 30.0, samples_dir: str = "",
               locustfile: str = "", processes: int = 0, isolation: str = "default", wait: float = 0.0,
               rate: float = 0.0, max_run_s: float = 3600.0, start_timeout_s: float = 60.0,
               extra_args: list[str] | None = None, dsn: str = "", progress_s: float = 5.0,
               replace_samples: bool = False, workers: int = 0, remote_workers: int = 0,
               master_bind_host: str = "127.0.0.1", master_port: int = 0, observe: str = "auto",
               observe_s: float = 0.5, configuration: dict[str, Any] | None = None,
               secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start Locust and return once the warm-up is over; the record is kept in :mod:`chaosdb.load.state`.

    ``workers`` / ``remote_workers``: Locust's master/worker mode (:mod:`chaosdb.load.distributed`). The master
    runs here and binds ``master_bind_host``:``master_port`` (0: a free port); ``workers`` worker processes are
    started here, ``remote_workers`` more are expected to connect from elsewhere
    (``chaosdb load worker --master HOST:PORT``). The load starts once all have connected.

    ``observe``: what of the database to watch while the load runs (:mod:`chaosdb.load.observer`: leader, members,
    timeline, replicas, written to ``events.jsonl`` beside the samples every ``observe_s`` seconds): ``auto``
    (whatever the configuration names: the embedded cluster's Patroni and etcd, ``patroni_urls``, ``etcd_urls``,
    ``pd_url``), ``none``, or a comma-separated list such as ``patroni,etcd``."""
    if load_state.current() and load_state.current().get("running"):
        raise ChaosDBError("a load is already running in this process")
    try:  # values substituted from configuration (e.g. environment variables) arrive as strings
        users, records, processes = int(users), int(records), int(processes)
        workers, remote_workers, master_port = int(workers), int(remote_workers), int(master_port)
        spawn_rate, warmup_s, baseline_s, wait, rate = (float(spawn_rate), float(warmup_s), float(baseline_s),
                                                        float(wait), float(rate))
        max_run_s, start_timeout_s = float(max_run_s), float(start_timeout_s)
    except (TypeError, ValueError) as exc:
        raise ChaosDBError(f"load settings must be numbers: {exc}") from None
    if users < 1:
        raise ChaosDBError("users must be >= 1")
    if workers < 0 or remote_workers < 0 or not 0 <= master_port <= 65535:
        raise ChaosDBError("workers and remote_workers must be >= 0, master_port a TCP port (0: any free one)")
    distributed = workers + remote_workers > 0
    if distributed and processes:
        raise ChaosDBError("give processes (Locust forks workers on this machine) or workers / remote_workers "
                           "(master and workers, possibly on other machines), not both")
    if workload not in LOCUSTFILES and not locustfile:
        raise ChaosDBError(f"workload must be one of {', '.join(LOCUSTFILES)} (or give a locustfile)")
    the_dsn = _resolve_dsn(dsn, configuration, secrets, workload)
    watched = chosen_sources(observe, configuration)
    out = claim(samples_dir or f"chaosdb-load/{time.strftime('%Y%m%d-%H%M%S')}",
                *OUTPUT_FOLDER[1:])  # two runs never write the same samples
    if sample_files(out):
        if not replace_samples:
            raise ChaosDBError(f"{out} already holds samples from another run: choose an empty samples_dir "
                               "(or set replace_samples to true)")
        for old in list(out.glob("samples-*.csv")) + list(out.glob("locust*")) + list(out.glob("load.json")):
            old.unlink()
    argv = [sys.executable, "-m", "locust", "-f", locustfile or LOCUSTFILES[workload], "--headless",
            "-u", str(users), "-r", str(spawn_rate or users), "--run-time", f"{int(max_run_s)}s",
            "--stop-timeout", "5", "--csv", str(out / "locust"), "--csv-full-history", "--only-summary",
            "--chaosdb-samples-dir", str(out), "--chaosdb-isolation", isolation, "--chaosdb-rate", str(rate)]
    if workload == "tpcc":
        argv += ["--tpcc-wait", str(wait)]
    elif workload in ("ycsb", "ycsb-etcd"):
        argv += ["--ycsb-records", str(records), "--ycsb-backend", "etcd" if workload == "ycsb-etcd" else "sql"]
    if processes:
        argv += ["--processes", str(processes)]
    master = None
    if distributed:
        master = dist_control.master_address(master_bind_host, master_port)
        argv += dist_control.master_args(master, workers + remote_workers, start_timeout_s)
    argv += list(extra_args or [])
    # a master runs no user: it gets no DSN (Locust would send it to every worker with the options)
    tls_env = tls_environment(etcd_tls(configuration), credentials("etcd", secrets)) if workload == "ycsb-etcd" \
        else {}
    env = source_env(PYTHONUNBUFFERED="1") if distributed else source_env(CHAOSDB_LOAD_DSN=the_dsn,
                                                                            PYTHONUNBUFFERED="1", **tls_env)
    log_path = out / "locust.log"
    log = open(log_path, "ab")
    started = time.time()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                            cwd=str(out), start_new_session=True, preexec_fn=_die_with_parent)
    log.close()
    local_workers = [dist_control.start_worker(locustfile or LOCUSTFILES[workload], master, i, out, the_dsn, tls_env)
                     for i in range(workers)] if master else []
    record: dict[str, Any] = {
        "running": True,
        "pid": proc.pid,
        "settings": {"users": users, "spawn_rate": spawn_rate or users, "warmup_s": warmup_s,
                     "baseline_s": baseline_s, "processes": processes,
                     "isolation": isolation, "wait": wait, "rate": rate, "max_run_s": max_run_s,
                     "locustfile": locustfile or LOCUSTFILES[workload], "dsn": redact_dsn(the_dsn),
                     "workload": workload, "records": records if workload.startswith("ycsb") else None,
                     "workers": workers, "remote_workers": remote_workers},
        "samples_dir": str(out),
        "samples_format": "chaosdb",
        "locust_csv_prefix": str(out / "locust"),
        "log": str(log_path),
        "started_at": iso_from_epoch(started),
        "start_ts": round(started, 6),
        "pauses": [],
    }
    if master:
        record["master"] = {"bind": f"{master.bind_host}:{master.port}", "connect": f"{master.host}:{master.port}"}
        record["worker_pids"] = [w.pid for w in local_workers]
        record["worker_logs"] = [str(out / f"worker-{i}.log") for i in range(workers)]
    load_state.set_current(record, proc, local_workers)
    global _observer
    _observer = Observer(out, watched, configuration, secrets, float(observe_s)) if watched else None
    if _observer is not None:
        _observer.start()
    _progress.start(out, float(progress_s))
    _progress.phase = "starting the load"
    deadline = time.monotonic() + start_timeout_s
    while not _has_commit(out):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_load()
            why = "exited" if proc.returncode is not None else f"committed nothing within {start_timeout_s:.0f}s"
            if master:
                why += (f" ({dist_control.connected(out)} of {workers + remote_workers} workers connected to "
                        f"{master.host}:{master.port})")
            logs = "".join(f"\nlast lines of {p}:\n{_tail(Path(p))}" for p in record.get("worker_logs", [])[:2])
            raise ChaosDBError(f"the load {why}; last lines of {log_path}:\n{_tail(log_path)}{logs}")
        time.sleep(0.25)
    record["first_commit_ts"] = round(time.time(), 6)
    _progress.phase = f"warm-up ({warmup_s:g} s, not measured)"
    time.sleep(max(0.0, warmup_s))
    record["warmup_end_ts"] = round(time.time(), 6)
    record["warmup_ended_at"] = iso_from_epoch(record["warmup_end_ts"])
    # the baseline: steady load before the hypothesis and the first fault
    _progress.phase = f"baseline ({baseline_s:g} s)"
    time.sleep(max(0.0, baseline_s))
    record["baseline_end_ts"] = round(time.time(), 6)
    return record


def _summarise(samples_dir: str) -> dict[str, Any]:
    counts: dict[str, int] = {}
    total = 0
    for s in read_samples(samples_dir):
        counts[s.outcome] = counts.get(s.outcome, 0) + 1
        total += 1
    return {"transactions": total, "by_outcome": counts}


def stop_load(stop_timeout_s: float = 20.0) -> dict[str, Any]:
    """Stop the running load (idempotent) and return its record with stop time and counts."""
    global _observer
    record, proc = load_state.current(), load_state.process()
    _progress.stop()
    if _observer is not None:
        watched = _observer.stop()
        _observer = None
        if record:
            record["events"] = watched
    if not record:
        return {}
    stop_requested = time.time()
    if record.get("master") and proc is not None and proc.poll() is None:
        # the master stops the test and waits for every worker's last samples before it is ended
        dist_control.drain(Path(record["samples_dir"]), proc, timeout_s=min(15.0, stop_timeout_s))
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGCONT)  # a paused load must be able to exit
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=stop_timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
    dist_control.stop_workers(load_state.workers(), stop_timeout_s)
    if record.get("running"):
        record["running"] = False
        stopped = stop_requested if record.get("master") else time.time()
        record["stop_ts"] = round(stopped, 6)
        record["stopped_at"] = iso_from_epoch(stopped)
        record["exit_code"] = proc.returncode if proc is not None else None
        record.update(_summarise(record["samples_dir"]))
        if record.get("master"):
            record["workers"] = read_workers(record["samples_dir"])
            record["workers_lost"] = lost_workers(record["workers"])
        Path(record["samples_dir"], "load.json").write_text(json.dumps(record, indent=2) + "\n")
        release(record["samples_dir"])
    return record


class _Progress:
    """A line every few seconds: phase, elapsed time, and the last seconds' tx/s, p99 and errors."""

    def __init__(self) -> None:
        self.phase = ""
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, samples_dir: Path, every_s: float) -> None:
        if every_s <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._t0 = time.time()
        self._thread = threading.Thread(target=self._run, args=(samples_dir, every_s), name="chaosdb-progress",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._thread = None

    def _run(self, samples_dir: Path, every_s: float) -> None:
        log = logging.getLogger("chaostoolkit")
        told: set[str] = set()
        while not self._stop.wait(every_s):
            now = time.time()
            for gone in lost_workers(read_workers(samples_dir)):  # master/worker mode only
                if gone["id"] not in told:
                    told.add(gone["id"])
                    log.warning("[load] worker %s (index %s) %s %.0f s ago: its users stopped; transactions it ran "
                                "after its last batch of samples are missing", gone["id"], gone.get("index"),
                                "was lost (no heartbeat)" if gone["gone"] == "lost" else "quit",
                                now - float(gone.get("gone_ts") or now))
            bounds = w.window_bounds(now, every_s, lag_s=1.5)
            rows = w.select(read_recent(samples_dir, bounds.start), bounds)
            if rows:
                ok = [s for s in rows if is_success(s.outcome)]
                p99 = f"{w.latency_percentile(rows, 99):.0f} ms" if ok else "-"
                line = (f"{len(ok) / bounds.seconds:7.1f} tx/s  p99 {p99:>8}  errors "
                        f"{w.error_rate(rows) * 100:5.1f} %")
            else:
                line = "no transactions in the last seconds"
            log.info("[load] %5.0fs  %-40s %s", now - self._t0, self.phase[:40], line)


_progress = _Progress()


# --- Chaos Toolkit control hooks (every hook receives the provider's arguments) -----------------


def before_hypothesis_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the hypothesis is being checked."""
    _progress.phase = "steady-state hypothesis"


def before_method_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the method runs."""
    _progress.phase = "method"


def before_activity_control(context: dict[str, Any], **kwargs: Any) -> None:
    """Say the activity in the progress lines; note when each action starts (the outage probes of
    :mod:`chaosdb.report.probes` measure from the first one while the run goes on)."""
    if isinstance(context, dict) and context.get("name"):
        _progress.phase = f"{context.get('type', 'activity')}: {context['name']}"
        record = load_state.current()
        if context.get("type") == "action" and record.get("running"):
            record.setdefault("actions", []).append(
                {"name": str(context["name"]), "func": str((context.get("provider") or {}).get("func", "")),
                 "start_ts": round(time.time(), 6)})


def after_method_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the method is over."""
    _progress.phase = "after the method"


def before_rollback_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the rollbacks run."""
    _progress.phase = "rollbacks"



def before_experiment_control(context: dict[str, Any], configuration: dict[str, Any] | None = None,
                              secrets: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """Before the run: refuse bad arguments, then start the load (warm-up and baseline included) so the hypothesis and
    the method run under it."""
    refuse_bad_arguments(context, configuration, secrets)  # nothing starts on bad input
    args = {k: v for k, v in kwargs.items() if k in start_load.__code__.co_varnames}
    if kwargs.get("only_with_dsn"):  # e.g. the Kubernetes experiments: a load (and figures) where a DSN is given
        try:
            _resolve_dsn(str(args.get("dsn") or ""), configuration, secrets, str(args.get("workload") or "tpcc"))
        except ChaosDBError:
            logging.getLogger("chaostoolkit").info("chaosdb load control: no DSN given (dsn, a secret load_dsn or CHAOSDB_LOAD_DSN): this run "
                        "has no load, and its report no degradation or recovery figures")
            return
    try:
        start_load(configuration=configuration, secrets=secrets, **args)
    except ChaosDBError as exc:
        raise refused(f"chaosdb load control: {exc}") from None


def finish_load(state: dict[str, Any] | None, stop_timeout_s: float = 20.0) -> None:
    """Stop this run's load if it still runs and put its record in the journal's *state* (``chaosdb_load``) once.
    Every control that needs the load over before it acts (the cluster going down, the report) calls this, so the
    load is stopped and recorded in one place, whichever control Chaos Toolkit runs first."""
    record = stop_load(stop_timeout_s)
    if state is not None and record and "chaosdb_load" not in state:
        state["chaosdb_load"] = {k: v for k, v in record.items() if k != "running"}


def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None,
                             **kwargs: Any) -> None:
    """Stop the load and record it in the journal."""
    finish_load(state, float(kwargs.get("stop_timeout_s", 20.0)))


def cleanup_control() -> None:
    """The run is over, however it ended: the load is stopped."""
    stop_load()


#: the control's arguments (those of :func:`start_load`), checked with the configuration substituted before any
#: control starts anything (:func:`chaosdb.experiment.checks.experiment_problems`)
#: the folder this control writes, claimed by one run (:mod:`chaosdb.core.claims`)
OUTPUT_FOLDER = OutputFolder("samples_dir", "the samples folder", "samples_dir, e.g. CHAOSDB_REPORT_DIR")
CONTROL_ARGUMENTS = checked_signature(
    start_load, "the load control",
    users=number("users", 1, maximum=10_000, integer=True),
    records=number("records", 1, maximum=100_000_000, integer=True),
    spawn_rate=number("spawn_rate", 0, maximum=10_000),
    baseline_s=number("baseline_s", 0, maximum=MAX_SECONDS, hint=" (seconds of load measured before the fault)"),
    processes=number("processes", 0, maximum=256, integer=True),
    workers=number("workers", 0, maximum=256, integer=True),
    remote_workers=number("remote_workers", 0, maximum=1024, integer=True),
    rate=number("rate", 0, maximum=1_000_000),
    wait=number("wait", 0, maximum=3600),
    master_port=number("master_port", 0, maximum=65535, integer=True),
    workload=choice("workload", *LOCUSTFILES),
    observe_s=number("observe_s", 0.1, maximum=60, hint=" (seconds between two questions to the database)"),
)

