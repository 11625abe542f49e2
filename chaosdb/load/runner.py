"""Starting and stopping the load: Locust as a separate process (or a master with workers), the database watched
beside it, and the load's record (:mod:`chaosdb.load.state`, the load's part of the run context) with its samples, times and counts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chaosdb.core.claims import OutputFolder, claim, release
from chaosdb.core.commands import die_with_parent
from chaosdb.core.detach import source_env
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import end_groups
from chaosdb.core.redact import redact_dsn
from chaosdb.core.timeutil import iso_from_epoch
from chaosdb.core.tls import credentials
from chaosdb.experiment.context import run_context
from chaosdb.load import distributed_control as dist_control
from chaosdb.load import state as load_state
from chaosdb.load.distributed import lost_workers, read_workers
from chaosdb.load.dsn import etcd_tls, resolve_dsn
from chaosdb.load.observer import Observer, chosen_sources
from chaosdb.load.options import ETCD_WORKLOADS, HISTORY_MODELS, LOCUSTFILES, LoadOptions
from chaosdb.workloads.kv import tls_environment
from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import read_samples, sample_files

__all__ = ["LOCUSTFILES", "OUTPUT_FOLDER", "LoadOptions", "start_load", "stop_load", "finish_load"]

#: the folder the load writes, claimed by one run (:mod:`chaosdb.core.claims`)
OUTPUT_FOLDER = OutputFolder("samples_dir", "the samples folder", "samples_dir, e.g. CHAOSDB_REPORT_DIR")
_die_with_parent = die_with_parent(signal.SIGTERM)


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _has_commit(samples_dir: Path) -> bool:
    return any(is_success(s.outcome) for s in read_samples(samples_dir))


def start_load(options: LoadOptions | None = None, /, *, configuration: dict[str, Any] | None = None,
               secrets: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    """Start Locust and return once the warm-up is over; the record is kept in :mod:`chaosdb.load.state`.

    *options*: the load's options (:class:`chaosdb.load.options.LoadOptions`, built once by the load control);
    called without them, they are built from the keyword *arguments* (``start_load(users=8, warmup_s=5, ...)``),
    each checked as the control's arguments are.

    ``workers`` / ``remote_workers``: Locust's master/worker mode (:mod:`chaosdb.load.distributed`). The master
    runs here and binds ``master_bind_host``:``master_port`` (0: a free port); ``workers`` worker processes are
    started here, ``remote_workers`` more are expected to connect from elsewhere
    (``chaosdb load worker --master HOST:PORT``). The load starts once all have connected.

    ``observe``: what of the database to watch while the load runs (:mod:`chaosdb.load.observer`: leader, members,
    timeline, replicas, written to ``events.jsonl`` beside the samples every ``observe_s`` seconds): ``auto``
    (whatever the configuration names: the embedded cluster's Patroni and etcd, ``patroni_urls``, ``etcd_urls``,
    ``pd_url``), ``none``, or a comma-separated list such as ``patroni,etcd``."""
    if options is not None and arguments:
        raise ChaosDBError(f"start_load takes its options or keyword arguments, not both (got {', '.join(arguments)})")
    if load_state.current() and load_state.current().get("running"):
        raise ChaosDBError("a load is already running in this process")
    o = options if options is not None else LoadOptions.from_arguments(arguments)
    the_dsn = resolve_dsn(o.dsn, configuration, secrets, o.workload)
    watched = chosen_sources(o.observe, configuration)
    out = claim(o.samples_dir or f"chaosdb-load/{time.strftime('%Y%m%d-%H%M%S')}",
                *OUTPUT_FOLDER[1:])  # two runs never write the same samples
    if sample_files(out):
        if not o.replace_samples:
            raise ChaosDBError(f"{out} already holds samples from another run: choose an empty samples_dir "
                               "(or set replace_samples to true)")
        for old in list(out.glob("samples-*.csv")) + list(out.glob("locust*")) + list(out.glob("load.json")):
            old.unlink()
    argv = [sys.executable, "-m", "locust", "-f", o.locust_file, "--headless",
            "-u", str(o.users), "-r", str(o.spawn_rate or o.users), "--run-time", f"{int(o.max_run_s)}s",
            "--stop-timeout", "5", "--csv", str(out / "locust"), "--csv-full-history", "--only-summary",
            "--chaosdb-samples-dir", str(out), "--chaosdb-isolation", o.isolation, "--chaosdb-rate", str(o.rate)]
    if o.workload == "tpcc":
        argv += ["--tpcc-wait", str(o.wait)]
    elif o.workload in ("ycsb", "ycsb-etcd"):
        argv += ["--ycsb-records", str(o.records), "--ycsb-backend", "etcd" if o.workload == "ycsb-etcd" else "sql"]
    elif o.workload in HISTORY_MODELS:
        argv += ["--history-model", HISTORY_MODELS[o.workload], "--history-keys", str(o.keys),
                 "--history-window-s", str(o.key_window_s), "--history-run", str(int(time.time()))]
    if o.processes:
        argv += ["--processes", str(o.processes)]
    master = None
    if o.distributed:
        master = dist_control.master_address(o.master_bind_host, o.master_port)
        argv += dist_control.master_args(master, o.workers + o.remote_workers, o.start_timeout_s)
    argv += list(o.extra_args)
    # a master runs no user: it gets no DSN (Locust would send it to every worker with the options)
    tls_env = tls_environment(etcd_tls(configuration), credentials("etcd", secrets)) if o.workload in ETCD_WORKLOADS \
        else {}
    env = source_env(PYTHONUNBUFFERED="1") if o.distributed else source_env(CHAOSDB_LOAD_DSN=the_dsn,
                                                                              PYTHONUNBUFFERED="1", **tls_env)
    log_path = out / "locust.log"
    log = open(log_path, "ab")
    started = time.time()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                            cwd=str(out), start_new_session=True, preexec_fn=_die_with_parent)
    log.close()
    local_workers = [dist_control.start_worker(o.locust_file, master, i, out, the_dsn, tls_env)
                     for i in range(o.workers)] if master else []
    record: dict[str, Any] = {
        "running": True,
        "pid": proc.pid,
        "settings": {"users": o.users, "spawn_rate": o.spawn_rate or o.users, "warmup_s": o.warmup_s,
                     "baseline_s": o.baseline_s, "processes": o.processes,
                     "isolation": o.isolation, "wait": o.wait, "rate": o.rate, "max_run_s": o.max_run_s,
                     "locustfile": o.locust_file, "dsn": redact_dsn(the_dsn),
                     "workload": o.workload, "records": o.records if o.workload.startswith("ycsb") else None,
                     "keys": o.keys if o.workload in HISTORY_MODELS else None,
                     "workers": o.workers, "remote_workers": o.remote_workers},
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
        record["worker_logs"] = [str(out / f"worker-{i}.log") for i in range(o.workers)]
    load_state.set_current(record, proc, local_workers)
    # the load stops first when the run ends (the load control registered it already, with its stop_timeout_s)
    run_context().register_teardown("load", finish_load, replace=False)
    if watched:
        load_state.watch(Observer(out, watched, configuration, secrets, o.observe_s))
    progress = load_state.progress()
    progress.start(out, o.progress_s)
    progress.phase = "starting the load"
    deadline = time.monotonic() + o.start_timeout_s
    while not _has_commit(out):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_load()
            why = "exited" if proc.returncode is not None else f"committed nothing within {o.start_timeout_s:.0f}s"
            if master:
                why += (f" ({dist_control.connected(out)} of {o.workers + o.remote_workers} workers connected to "
                        f"{master.host}:{master.port})")
            logs = "".join(f"\nlast lines of {p}:\n{_tail(Path(p))}" for p in record.get("worker_logs", [])[:2])
            raise ChaosDBError(f"the load {why}; last lines of {log_path}:\n{_tail(log_path)}{logs}")
        time.sleep(0.25)
    record["first_commit_ts"] = round(time.time(), 6)
    progress.phase = f"warm-up ({o.warmup_s:g} s, not measured)"
    time.sleep(max(0.0, o.warmup_s))
    record["warmup_end_ts"] = round(time.time(), 6)
    record["warmup_ended_at"] = iso_from_epoch(record["warmup_end_ts"])
    # the baseline: steady load before the hypothesis and the first fault
    progress.phase = f"baseline ({o.baseline_s:g} s)"
    time.sleep(max(0.0, o.baseline_s))
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
    record, proc = load_state.current(), load_state.process()
    load_state.stop_progress()
    observer = load_state.take_observer()
    if observer is not None:
        watched = observer.stop()
        if record:
            record["events"] = watched
    if not record:
        return {}
    stop_requested = time.time()
    if record.get("master") and proc is not None and proc.poll() is None:
        # the master stops the test and waits for every worker's last samples before it is ended
        dist_control.drain(Path(record["samples_dir"]), proc, timeout_s=min(15.0, stop_timeout_s))
    if proc is not None:
        end_groups([proc], stop_timeout_s)  # a paused load is continued so that it can exit
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


def finish_load(state: dict[str, Any] | None, stop_timeout_s: float = 20.0) -> None:
    """Stop this run's load if it still runs and put its record in the journal's *state* (``chaosdb_load``) once:
    the load's teardown step (:data:`chaosdb.experiment.context.TEARDOWN_ORDER`), run before the report is written
    and before the database goes down, whichever control asks first."""
    record = stop_load(float(stop_timeout_s))
    if state is not None and record and "chaosdb_load" not in state:
        state["chaosdb_load"] = {k: v for k, v in record.items() if k != "running"}
