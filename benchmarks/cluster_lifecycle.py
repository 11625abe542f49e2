"""Benchmark: embedded cluster cold start and leader failover (issue: foundation + embedded cluster).

Measures, in one run on this machine:

* ``cold_start_s``: ``cluster up`` of a fresh 3-node cluster until it is healthy (leader running,
  replicas streaming, sync standby chosen), staging included; target <= 15 s.
* ``bare_postgres_start_s``: the peer, ``initdb`` + ``pg_ctl start -w`` of ONE plain PostgreSQL with
  the same binaries and user, i.e. the floor any cluster start pays once; reported as a ratio.
* ``failover_s``: SIGKILL of every process of the leader node until a write commits through the
  multi-host DSN; bounded below by Patroni's ``ttl`` (the leader lease), reported as a ratio to it.
* ``rejoin_s``: restart of the killed node until the cluster is healthy again.

Prints one JSON object. Usage: ``python benchmarks/cluster_lifecycle.py [--repeat 3] [--failovers 2]``.
Runs on loopback addresses 127.0.0.71-73 and removes everything it created.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from chaosdb.clusters.postgres_ha import cluster  # noqa: E402
from chaosdb.embedded import actions
from chaosdb.embedded.runtime import RunAs  # noqa: E402
from chaosdb.embedded.state import load_layout  # noqa: E402

ADDRESS_BASE = "127.0.0.71"


def bare_postgres_start(layout, workdir: Path) -> float:
    run_as = RunAs(layout.run_as, layout.uid, layout.gid)
    data = workdir / "bare"
    data.mkdir()
    if os.geteuid() == 0:
        os.chown(data, run_as.uid, run_as.gid)
    os.chmod(data, 0o700)
    bindir = Path(layout.binaries["postgres_bin"])
    kw = run_as.popen_kwargs()
    t0 = time.perf_counter()
    subprocess.run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-E", "UTF8", "--locale=C",
                    "--data-checksums"], check=True, capture_output=True, cwd="/", **kw)
    subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(data / "log"), "-o",
                    f"-k {data} -c listen_addresses=127.0.0.74 -p 5432", "start"],
                   check=True, capture_output=True, cwd="/", **kw)
    elapsed = time.perf_counter() - t0
    subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True,
                   cwd="/", **kw)
    return elapsed


def time_to_writable(layout, timeout: float = 120.0) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            with psycopg.connect(layout.dsn(), connect_timeout=1) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS bench_failover (t float8)")
                conn.execute("INSERT INTO bench_failover VALUES (%s)", (time.time(),))
                conn.commit()
            return time.perf_counter() - t0
        except psycopg.OperationalError:
            time.sleep(0.05)
    raise RuntimeError("no writable primary")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="cold starts to measure (median reported)")
    ap.add_argument("--failovers", type=int, default=2, help="leader kills to measure (median reported)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-"))
    os.chmod(root, 0o755)
    cold, bare, failovers, rejoins = [], [], [], []
    layout = None
    try:
        for i in range(args.repeat):
            d = root / f"c{i}"
            t0 = time.perf_counter()
            cluster.up(d, "bench", nodes=3, address_base=ADDRESS_BASE, timeout=180)
            cold.append(time.perf_counter() - t0)
            layout = load_layout(d)
            bw = root / f"bare{i}"
            bw.mkdir()
            os.chmod(bw, 0o755)
            bare.append(bare_postgres_start(layout, bw))
            if i < args.repeat - 1:
                cluster.down(layout, purge=True)
        config = {"chaosdb_cluster_dir": layout.dir}
        for _ in range(args.failovers):
            actions.kill_node(target="leader", configuration=config)
            failovers.append(time_to_writable(layout))
            t0 = time.perf_counter()
            actions.restart_nodes(configuration=config, wait_healthy_s=120)
            rejoins.append(time.perf_counter() - t0)
        ttl = layout.timings["ttl"]
        med = statistics.median
        result = {
            "benchmark": "cluster_lifecycle",
            "nodes": 3,
            "cpu_cores": os.cpu_count(),
            "cold_start_s": round(med(cold), 2),
            "cold_start_runs_s": [round(x, 2) for x in cold],
            "cold_start_target_s": 15,
            "cold_start_within_target": med(cold) <= 15,
            "bare_postgres_start_s": round(med(bare), 2),
            "cold_start_vs_bare_postgres": round(med(cold) / med(bare), 2),
            "failover_s": round(med(failovers), 2),
            "failover_runs_s": [round(x, 2) for x in failovers],
            "patroni_ttl_s": ttl,
            "failover_vs_ttl": round(med(failovers) / ttl, 2),
            "rejoin_s": round(med(rejoins), 2),
        }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        for d in sorted(root.glob("c*")):
            if (d / "cluster.json").exists():
                cluster.down(load_layout(d), purge=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
