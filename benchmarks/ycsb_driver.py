"""Benchmark: our YCSB workload A on SQL against pgbench running the same shape, on the embedded cluster.

In one run, same cluster, same number of clients, ``--rounds`` rounds whose order alternates:

* ``chaosdb``: ``locust -f load/ycsb.py`` (each read and update one statement in autocommit), on ``usertable``
  loaded by ``chaosdb.workloads.ycsb.load``;
* ``pgbench``: the PostgreSQL wheel's pgbench with a YCSB-A-shaped script on its own table: half reads and
  half updates of one row, keys drawn Zipfian (pgbench's exponent 1.001, the nearest it takes to YCSB's 0.99),
  prepared statements, no explicit
  transaction (the nearest standard peer; YCSB's own client is not available here);
* ``go-ycsb`` (upstream pingcap/go-ycsb, the client the TiKV study used) when the binary is found (``--bin-dir``,
  ``CHAOSDB_BIN_DIR``, ``~/.cache/chaosdb/bin`` or PATH): ``go-ycsb run pg`` on the *same* ``usertable`` (its schema
  and ``user{n}`` keys are YCSB's: ``insertorder=ordered``), workload A (read/update 50/50, ``requestdistribution=
  zipfian``), the same threads and records, bounded by ``timeout -s INT`` (its ``maxexecutiontime`` is ignored; SIGINT
  usually still prints its summary): ops/s (its own OPS: the rate over the time it ran, which leaves its start out),
  READ/UPDATE p99 and client CPU per operation from its summary;
* ``--before DIR``: optionally the YCSB driver of another checkout (for example ``git worktree add /tmp/before
  <commit>``), for a before/after in the same run.

Each run starts from both databases vacuumed and analysed, a CHECKPOINT and no autovacuum worker running. Reported
per driver: operations per second, p99, client CPU per 1000 operations (the child processes' user+system time, whole
process: start-up included) and the cluster's CPU (every PostgreSQL process of the cluster) per operation; beside
them the **steady state** (``steady_*``): the same between two snapshots taken while the driver ran (ours: a quarter
into the run and a second before its end, operations counted from the samples; go-ycsb: at its first and last
10-second status line, operations from its counts), start-up and shutdown left out. Each run also records the
machine's load while it ran (``machine``: load average at start and end, mean runnable threads, busy cores, the
cores the burners got; :mod:`benchmarks.machine_load`). Ratios against the peers per round and over the rounds'
means.

``--burners 2``: a busy machine (two CPU-bound processes at normal priority beside the drivers, as ``tox -e
tests-busy`` runs the tests). ``--processes N``: our driver as Locust ``--processes N`` (the load's ``processes``
option). ``--rate R``: both drivers capped at R operations per second (ours ``--chaosdb-rate``, go-ycsb's
``target``), to compare what the cluster spends per operation at the same pace.
Prints JSON. Usage: ``python benchmarks/ycsb_driver.py [--seconds 30] [--clients 8] [--records 10000]
[--burners 2]``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load_driver import bench_cluster, child_cpu, cluster_cpu, pgbench_command, quiesce  # noqa: E402
from benchmarks.machine_load import Burners, MachineWatch, ProcessCpu  # noqa: E402
from chaosdb.clusters.postgres_ha import cluster  # noqa: E402
from chaosdb.core.binaries import find_binary  # noqa: E402
from chaosdb.core.errors import ChaosDBError  # noqa: E402
from chaosdb.core.stats import percentile  # noqa: E402
from chaosdb.workloads import ycsb  # noqa: E402
from chaosdb.workloads.outcomes import is_success  # noqa: E402
from chaosdb.workloads.samples import read_samples  # noqa: E402

#: YCSB-A's shape in pgbench: one row read or one field updated, Zipfian keys, each statement its own transaction
#: (pgbench's random_zipfian takes an exponent from 1.001 up)
PGBENCH_SCRIPT = """\\set aid random_zipfian(1, 100000 * :scale, 1.001)
\\set op random(0, 1)
\\if :op = 0
SELECT * FROM pgbench_accounts WHERE aid = :aid;
\\else
UPDATE pgbench_accounts SET filler = md5(:aid::text || random()::text) WHERE aid = :aid;
\\endif
"""


def steady(snapshots: list[tuple[float, float, tuple]], operations_between) -> dict:
    """Client and cluster CPU per operation between the first and the last snapshot taken while the driver ran
    (its start-up and shutdown left out); *operations_between(first, last)* counts the operations in between."""
    if len(snapshots) < 2:
        return {}
    (t1, cpu1, (db1,)), (t2, cpu2, (db2,)) = snapshots[0], snapshots[-1]
    ops = operations_between(snapshots[0], snapshots[-1])
    if ops <= 0:
        return {}
    return {"steady_seconds": round(t2 - t1, 1), "steady_ops": round(ops / (t2 - t1), 1),
            "steady_client_cpu_s_per_1000_ops": round((cpu2 - cpu1) / ops * 1000, 4),
            "steady_cluster_cpu_ms_per_op": round((db2 - db1) / ops * 1000, 4)}


def run_ycsb(code_root: Path, dsn: str, records: int, clients: int, seconds: int, workdir: Path, layout,
             burners: Burners | None = None, processes: int = 0, rate: float = 0.0) -> dict:
    samples = workdir / f"ycsb-{time.time_ns()}"
    env = dict(os.environ, CHAOSDB_LOAD_DSN=dsn, PYTHONPATH=str(code_root))
    argv = [sys.executable, "-m", "locust", "-f", str(code_root / "load" / "ycsb.py"), "--headless",
            "-u", str(clients), "-r", str(clients), "-t", f"{seconds}s", "--only-summary",
            "--ycsb-records", str(records), "--chaosdb-samples-dir", str(samples)]
    if processes:
        argv += ["--processes", str(processes)]
    if rate:
        argv += ["--chaosdb-rate", str(rate)]
    with MachineWatch(burners) as machine:
        cpu0, db0 = child_cpu(), cluster_cpu(layout)
        launched = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        watch = ProcessCpu(proc.pid, lambda: cluster_cpu(layout))
        # steady state: from a quarter into the run (Locust started, every user connected) to a second before its end
        for at in (max(5.0, seconds / 4), seconds - 1.0):
            time.sleep(max(0.0, launched + at - time.monotonic()))
            watch.snapshot()
        _, err = proc.communicate(timeout=seconds + 120)
        cpu, db = child_cpu() - cpu0, cluster_cpu(layout) - db0
    rows = list(read_samples(samples)) if samples.exists() else []
    ok = sorted(s.latency_ms for s in rows if is_success(s.outcome))
    by_kind = {kind: sorted(s.latency_ms for s in rows if s.name == kind and is_success(s.outcome))
               for kind in ("read", "update")}
    starts = sorted(s.start_ts for s in rows)
    span = (starts[-1] - starts[0]) if len(starts) > 1 else seconds
    return {"operations": len(rows), "failures": len(rows) - len(ok), "ops": round(len(ok) / seconds, 1),
            "p99_ms": round(percentile(ok, 99), 2) if ok else None,
            "update_p99_ms": round(percentile(by_kind["update"], 99), 2) if by_kind["update"] else None,
            "read_p99_ms": round(percentile(by_kind["read"], 99), 2) if by_kind["read"] else None,
            "outcomes": {o: sum(1 for s in rows if s.outcome == o) for o in sorted({s.outcome for s in rows})},
            "updates_in_ledger": sum(1 for s in rows if s.name == "update" and s.key),
            "seconds_covered": round(span, 1),
            "client_cpu_s_per_1000_ops": round(cpu / max(1, len(rows)) * 1000, 4),
            "cluster_cpu_ms_per_op": round(db / max(1, len(rows)) * 1000, 4),
            **steady(watch.snapshots, lambda a, b: bisect.bisect_left(starts, b[0]) - bisect.bisect_left(starts, a[0])),
            "processes": processes or 1, "machine": machine.result(), "exit_code": proc.returncode,
            **({"stderr_tail": err[-2000:]} if proc.returncode else {})}


def run_go_ycsb(go_ycsb: str, layout, dsn: str, records: int, clients: int, seconds: int,
                burners: Burners | None = None, rate: float = 0.0) -> dict:
    """go-ycsb's workload A on the same usertable for *seconds*; its summary lines parsed, its CPU snapshot at each
    of its 10-second status lines (the steady state between the first and the last of them)."""
    import psycopg

    node = layout.node(cluster.status(layout)["leader"])
    password = next(line.split(":")[-1] for line in (layout.path / "pgpass").read_text().splitlines()
                    if line.split(":")[3] == "postgres")
    props = {"pg.host": node.host, "pg.port": node.pg_port, "pg.user": "postgres", "pg.password": password,
             "pg.db": psycopg.conninfo.conninfo_to_dict(dsn)["dbname"], "pg.sslmode": "disable",
             "workload": "core", "readproportion": 0.5, "updateproportion": 0.5, "scanproportion": 0,
             "insertproportion": 0, "requestdistribution": "zipfian", "insertorder": "ordered",
             "recordcount": records, "operationcount": 1_000_000_000, "fieldcount": 10, "fieldlength": 100,
             "threadcount": clients, **({"target": int(rate)} if rate else {})}
    argv = ["timeout", "-s", "INT", str(seconds), go_ycsb, "run", "pg"]
    for k, v in props.items():
        argv += ["-p", f"{k}={v}"]
    lines: list[str] = []
    with MachineWatch(burners) as machine:
        cpu0, db0 = child_cpu(), cluster_cpu(layout)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        assert proc.stdout is not None
        watch = ProcessCpu(proc.pid, lambda: cluster_cpu(layout))
        counts: dict[float, int] = {}
        finished_seen = False
        for line in proc.stdout:  # go-ycsb writes unbuffered: each status line arrives as it is printed
            lines.append(line.rstrip("\n"))
            finished_seen = finished_seen or line.startswith("Run finished")
            if line.startswith("TOTAL") and not finished_seen:
                mark = time.time()
                counts[mark] = int(line.split("Count:")[1].split(",")[0])
                watch.snapshot(mark)
        proc.wait(timeout=60)
        cpu, db = child_cpu() - cpu0, cluster_cpu(layout) - db0
    # go-ycsb prints the same lines every 10 s and, after "Run finished", for the whole run; on SIGINT the last
    # block is sometimes not printed: then the last status block stands for the run (its OPS is the rate over the
    # time it covers, and the operations of the whole run are estimated from it for the CPU per operation)
    finished = next((i for i, ln in enumerate(lines) if ln.startswith("Run finished")), None)
    summary = {}
    for line in lines[finished:] if finished is not None else lines:
        if " - Takes(s):" in line:
            name, _, rest = line.partition(" - ")
            summary[name.strip()] = {k.strip(): float(v) for k, v in (kv.split(":") for kv in rest.split(","))}
    total = summary.get("TOTAL", {})
    rate = total.get("OPS", 0.0)
    ops = int(total.get("Count", 0)) if finished is not None else int(rate * seconds)
    return {"operations": ops, "failures": int(sum(v.get("Count", 0) for k, v in summary.items() if "ERROR" in k)),
            "ops": round(rate, 1), "ops_reported": rate, "final_summary": finished is not None,
            "seconds_covered": total.get("Takes(s)"),
            "p99_ms": round(total.get("99th(us)", 0) / 1000.0, 2) if total else None,
            "update_p99_ms": round(summary.get("UPDATE", {}).get("99th(us)", 0) / 1000.0, 2) if summary else None,
            "read_p99_ms": round(summary.get("READ", {}).get("99th(us)", 0) / 1000.0, 2) if summary else None,
            "client_cpu_s_per_1000_ops": round(cpu / max(1, ops) * 1000, 4),
            "cluster_cpu_ms_per_op": round(db / max(1, ops) * 1000, 4),
            **steady(watch.snapshots, lambda a, b: counts[b[0]] - counts[a[0]]),
            "machine": machine.result(), "exit_code": proc.returncode,
            "summary_lines": [ln for ln in lines if " - Takes(s):" in ln]}


def run_pgbench(layout, clients: int, seconds: int, workdir: Path, burners: Burners | None = None) -> dict:
    pgbench, env = pgbench_command(layout)
    script = workdir / "ycsb-a.sql"
    script.write_text(PGBENCH_SCRIPT)
    logdir = workdir / f"pgbench-{time.time_ns()}"
    logdir.mkdir()
    with MachineWatch(burners) as machine:
        cpu0, db0 = child_cpu(), cluster_cpu(layout)
        proc = subprocess.run([*pgbench, "-c", str(clients), "-j", "2", "-T", str(seconds), "-M", "prepared",
                               "-f", str(script), "-l", "--log-prefix", str(logdir / "pgb"), "pgbench"],
                              env=env, capture_output=True, text=True, cwd=workdir)
        cpu, db = child_cpu() - cpu0, cluster_cpu(layout) - db0
    lat = sorted(int(parts[2]) / 1000.0 for f in logdir.glob("pgb*") for line in f.read_text().splitlines()
                 if len(parts := line.split()) >= 3)
    return {"operations": len(lat), "ops": round(len(lat) / seconds, 1),
            "p99_ms": round(percentile(lat, 99), 2) if lat else None,
            "client_cpu_s_per_1000_ops": round(cpu / max(1, len(lat)) * 1000, 3),
            "cluster_cpu_ms_per_op": round(db / max(1, len(lat)) * 1000, 3), "machine": machine.result(),
            "exit_code": proc.returncode,
            "script": "YCSB-A shape: 50 % one-row read, 50 % one-row update, Zipfian 1.001, -M prepared"}


def ratios(ours: dict, peer: dict) -> dict:
    update = ({"update_p99_ratio": round(ours["update_p99_ms"] / peer["update_p99_ms"], 2)}
              if ours.get("update_p99_ms") and peer.get("update_p99_ms") else {})
    return {**update, "ops_ratio": round(ours["ops"] / peer["ops"], 3) if peer["ops"] else None,
            "client_cpu_per_1000_ops_ratio": round(ours["client_cpu_s_per_1000_ops"]
                                                   / peer["client_cpu_s_per_1000_ops"], 2),
            "cluster_cpu_per_op_ratio": round(ours["cluster_cpu_ms_per_op"] / peer["cluster_cpu_ms_per_op"], 2),
            "p99_ratio": round(ours["p99_ms"] / peer["p99_ms"], 2) if ours["p99_ms"] and peer["p99_ms"] else None,
            **{f"{key}_ratio": round(ours[key] / peer[key], 2) for key in STEADY if ours.get(key) and peer.get(key)}}


#: the steady-state figures (between snapshots taken while the driver ran: start-up and shutdown left out)
STEADY = ("steady_ops", "steady_client_cpu_s_per_1000_ops", "steady_cluster_cpu_ms_per_op")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--before", default=None, help="another checkout's root whose YCSB driver also runs")
    ap.add_argument("--bin-dir", default=None, help="where go-ycsb is (else CHAOSDB_BIN_DIR, the cache, PATH)")
    ap.add_argument("--no-pgbench", action="store_true", help="leave pgbench out (go-ycsb is the peer)")
    ap.add_argument("--burners", type=int, default=0, help="CPU-bound processes beside the drivers during the "
                    "rounds (2: a busy machine, as tox -e tests-busy runs the tests)")
    ap.add_argument("--processes", type=int, default=0, help="Locust --processes for our driver (0: one process)")
    ap.add_argument("--rate", type=float, default=0.0, help="both drivers capped at this many operations per second "
                    "(ours --chaosdb-rate, go-ycsb's target): the cluster's CPU per operation at the same pace")
    args = ap.parse_args()
    go_ycsb: str | None = None
    try:
        go_ycsb = find_binary("go-ycsb", args.bin_dir)
    except ChaosDBError as e:
        print(f"go-ycsb not found, measured against pgbench only: {e}", file=sys.stderr)
    before = Path(args.before).resolve() if args.before else None
    with bench_cluster("chaosdb-bench-ycsb-", "benchycsb", "127.0.0.86") as (root, layout):
        dsn = layout.dsn()
        ycsb.load(dsn, args.records)
        leader_dsn = layout.node_dsn(cluster.status(layout)["leader"])
        import psycopg

        with psycopg.connect(leader_dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE pgbench")
        pgbench, env = pgbench_command(layout)
        subprocess.run([*pgbench, "-i", "-q", "-s", "1", "pgbench"], env=env, check=True, capture_output=True,
                       cwd=root)
        databases: list[tuple[str, dict]] = [(dsn, {}), (leader_dsn, {"dbname": "pgbench"})]
        drivers = (["chaosdb_ycsb"] + (["go_ycsb"] if go_ycsb else []) + ([] if args.no_pgbench else ["pgbench"])
                   + (["chaosdb_ycsb_before"] if before else []))
        rounds = []
        with Burners(args.burners) as burners:
            run_rounds(args, rounds, drivers, databases, layout, root, dsn, go_ycsb, before, burners)

        def mean(driver: str) -> dict:
            keys = ("ops", "client_cpu_s_per_1000_ops", "cluster_cpu_ms_per_op", "p99_ms", "update_p99_ms", *STEADY)
            return {k: statistics.fmean(r[driver][k] for r in rounds) for k in keys
                    if all(r[driver].get(k) is not None for r in rounds)}

        result = {"benchmark": "ycsb_driver", "clients": args.clients, "seconds": args.seconds,
                  "records": args.records, "cpu_cores": os.cpu_count(), "burners": args.burners,
                  "locust_processes": args.processes or 1, "rate_cap": args.rate or None, "rounds": rounds,
                  "load_avg_1m": os.getloadavg()[0],
                  "means_over_rounds": {**({"chaosdb_over_pgbench": ratios(mean("chaosdb_ycsb"), mean("pgbench"))}
                                           if not args.no_pgbench else {}),
                                        **({"chaosdb_over_go_ycsb": ratios(mean("chaosdb_ycsb"), mean("go_ycsb"))}
                                           if go_ycsb else {}),
                                        **({"chaosdb_over_before": ratios(mean("chaosdb_ycsb"),
                                                                          mean("chaosdb_ycsb_before"))}
                                           if before else {})}}
        print(json.dumps(result, indent=2))
        return 0


def run_rounds(args, rounds: list, drivers: list[str], databases, layout, root: Path, dsn: str,
               go_ycsb: str | None, before: Path | None, burners: Burners) -> None:
    """The measured rounds, the drivers' order alternating, each run from a quiesced cluster."""
    for n in range(1, max(1, args.rounds) + 1):
        order = drivers if n % 2 else list(reversed(drivers))
        one: dict = {"round": n, "order": order}
        for driver in order:
            quiesce(layout, databases)
            if driver == "pgbench":
                one[driver] = run_pgbench(layout, args.clients, args.seconds, root, burners)
            elif driver == "go_ycsb":
                assert go_ycsb is not None
                one[driver] = run_go_ycsb(go_ycsb, layout, dsn, args.records, args.clients, args.seconds,
                                          burners, args.rate)
            else:
                code = before if driver == "chaosdb_ycsb_before" else ROOT
                one[driver] = run_ycsb(code, dsn, args.records, args.clients, args.seconds, root, layout,
                                       burners, args.processes, args.rate)
        if "pgbench" in one:
            one["chaosdb_over_pgbench"] = ratios(one["chaosdb_ycsb"], one["pgbench"])
        if go_ycsb:
            one["chaosdb_over_go_ycsb"] = ratios(one["chaosdb_ycsb"], one["go_ycsb"])
        if before:
            one["chaosdb_over_before"] = ratios(one["chaosdb_ycsb"], one["chaosdb_ycsb_before"])
        rounds.append(one)


if __name__ == "__main__":
    sys.exit(main())
