"""Benchmark: our YCSB workload A on SQL against pgbench running the same shape, on the embedded cluster.

In one run, same cluster, same number of clients, ``--rounds`` rounds whose order alternates:

* ``chaosdb``: ``locust -f load/ycsb.py`` (each read and update one statement in autocommit), on ``usertable``
  loaded by ``chaosdb.workloads.ycsb.load``;
* ``pgbench``: the PostgreSQL wheel's pgbench with a YCSB-A-shaped script on its own table: half reads and
  half updates of one row, keys drawn Zipfian (pgbench's exponent 1.001, the nearest it takes to YCSB's 0.99),
  prepared statements, no explicit
  transaction (the nearest standard peer; YCSB's own client is not available here);
* ``--before DIR``: optionally the YCSB driver of another checkout (for example ``git worktree add /tmp/before
  <commit>``), for a before/after in the same run.

Each run starts from both databases vacuumed and analysed, a CHECKPOINT and no autovacuum worker running. Reported per driver: operations per second,
p99, client CPU per 1000 operations (the child processes' user+system time) and the cluster's CPU (every
PostgreSQL process of the cluster) per operation; ratios against pgbench per round and over the rounds' means.
Prints JSON. Usage: ``python benchmarks/ycsb_driver.py [--seconds 30] [--clients 8] [--records 10000]``.
"""

from __future__ import annotations

import argparse
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
from chaosdb.core.stats import percentile  # noqa: E402
from chaosdb.embedded import cluster  # noqa: E402
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


def run_ycsb(code_root: Path, dsn: str, records: int, clients: int, seconds: int, workdir: Path, layout) -> dict:
    samples = workdir / f"ycsb-{time.time_ns()}"
    env = dict(os.environ, CHAOSDB_LOAD_DSN=dsn, PYTHONPATH=str(code_root))
    cpu0, db0 = child_cpu(), cluster_cpu(layout)
    proc = subprocess.run([sys.executable, "-m", "locust", "-f", str(code_root / "load" / "ycsb.py"), "--headless",
                           "-u", str(clients), "-r", str(clients), "-t", f"{seconds}s", "--only-summary",
                           "--ycsb-records", str(records), "--chaosdb-samples-dir", str(samples)],
                          env=env, cwd=workdir, capture_output=True, text=True, timeout=seconds + 120)
    cpu, db = child_cpu() - cpu0, cluster_cpu(layout) - db0
    rows = list(read_samples(samples)) if samples.exists() else []
    ok = sorted(s.latency_ms for s in rows if is_success(s.outcome))
    return {"operations": len(rows), "failures": len(rows) - len(ok), "ops": round(len(ok) / seconds, 1),
            "p99_ms": round(percentile(ok, 99), 2) if ok else None,
            "client_cpu_s_per_1000_ops": round(cpu / max(1, len(rows)) * 1000, 3),
            "cluster_cpu_ms_per_op": round(db / max(1, len(rows)) * 1000, 3), "exit_code": proc.returncode}


def run_pgbench(layout, clients: int, seconds: int, workdir: Path) -> dict:
    pgbench, env = pgbench_command(layout)
    script = workdir / "ycsb-a.sql"
    script.write_text(PGBENCH_SCRIPT)
    logdir = workdir / f"pgbench-{time.time_ns()}"
    logdir.mkdir()
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
            "cluster_cpu_ms_per_op": round(db / max(1, len(lat)) * 1000, 3), "exit_code": proc.returncode,
            "script": "YCSB-A shape: 50 % one-row read, 50 % one-row update, Zipfian 1.001, -M prepared"}


def ratios(ours: dict, peer: dict) -> dict:
    return {"ops_ratio": round(ours["ops"] / peer["ops"], 3) if peer["ops"] else None,
            "client_cpu_per_1000_ops_ratio": round(ours["client_cpu_s_per_1000_ops"]
                                                   / peer["client_cpu_s_per_1000_ops"], 2),
            "cluster_cpu_per_op_ratio": round(ours["cluster_cpu_ms_per_op"] / peer["cluster_cpu_ms_per_op"], 2),
            "p99_ratio": round(ours["p99_ms"] / peer["p99_ms"], 2) if ours["p99_ms"] and peer["p99_ms"] else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--before", default=None, help="another checkout's root whose YCSB driver also runs")
    args = ap.parse_args()
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
        drivers = ["chaosdb_ycsb", "pgbench"] + (["chaosdb_ycsb_before"] if before else [])
        rounds = []
        for n in range(1, max(1, args.rounds) + 1):
            order = drivers if n % 2 else list(reversed(drivers))
            one: dict = {"round": n, "order": order}
            for driver in order:
                quiesce(layout, databases)
                if driver == "pgbench":
                    one[driver] = run_pgbench(layout, args.clients, args.seconds, root)
                else:
                    code = before if driver == "chaosdb_ycsb_before" else ROOT
                    one[driver] = run_ycsb(code, dsn, args.records, args.clients, args.seconds, root, layout)
            one["chaosdb_over_pgbench"] = ratios(one["chaosdb_ycsb"], one["pgbench"])
            if before:
                one["chaosdb_over_before"] = ratios(one["chaosdb_ycsb"], one["chaosdb_ycsb_before"])
            rounds.append(one)

        def mean(driver: str) -> dict:
            keys = ("ops", "client_cpu_s_per_1000_ops", "cluster_cpu_ms_per_op", "p99_ms")
            return {k: statistics.fmean(r[driver][k] for r in rounds) for k in keys}

        result = {"benchmark": "ycsb_driver", "clients": args.clients, "seconds": args.seconds,
                  "records": args.records, "cpu_cores": os.cpu_count(), "rounds": rounds,
                  "means_over_rounds": {"chaosdb_over_pgbench": ratios(mean("chaosdb_ycsb"), mean("pgbench")),
                                        **({"chaosdb_over_before": ratios(mean("chaosdb_ycsb"),
                                                                          mean("chaosdb_ycsb_before"))}
                                           if before else {})}}
        print(json.dumps(result, indent=2))
        return 0


if __name__ == "__main__":
    sys.exit(main())
