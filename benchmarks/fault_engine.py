"""Benchmark: what the local fault engine costs and how punctual it is.

In one run, on an embedded cluster at 127.0.0.81-83:

* **inject + revert time** per fault kind (median of ``--cycles``), through the Chaos Toolkit actions;
* **overhead of an installed, harmless fault** on the traffic it classifies: pgbench select-only
  (the PostgreSQL wheel's pgbench, 8 clients, against the leader) without a fault and with each of
  - ``lose_packets`` at 0.0001 % (every packet of the node walks the labelling and drop rules),
  - ``limit_bandwidth`` at 10 Gbit/s (every packet of the node goes through an htb class on lo),
  - ``limit_cpu`` at 2 CPU-seconds per second (the node in a cgroup, never throttled on 2 cores),
  runs interleaved (plain, fault, plain, fault, ...) and reported as the median ratio fault / plain;
* **punctuality** of timed faults: ``duration_s=1``; time from the deadline until no residue is left.

Prints JSON (and writes it to ``--out``). Usage: ``python benchmarks/fault_engine.py [--seconds 8]``.
Needs root and iptables; removes everything it created.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fault_bench_cluster import benchmark_cluster, write_result  # noqa: E402
from chaosdb.clusters.postgres_ha import cluster  # noqa: E402
from chaosdb.faults import actions, probes  # noqa: E402

ADDRESS_BASE = "127.0.0.81"


def pgbench_tps(layout, seconds: int, workdir: Path) -> float:
    pgbench = Path(layout.binaries["postgres_bin"]) / "pgbench"
    node = layout.node(cluster.status(layout)["leader"])
    env = dict(os.environ, PGPASSFILE=str(layout.path / "pgpass"))
    if layout.binaries.get("ld_path"):
        env["LD_LIBRARY_PATH"] = layout.binaries["ld_path"]
    base = ["-h", node.host, "-p", str(node.pg_port), "-U", "postgres"]
    proc = subprocess.run([str(pgbench), "-S", "-c", "8", "-j", "2", "-T", str(seconds), *base, "pgbench"],
                          env=env, capture_output=True, text=True, cwd=workdir)
    return next((float(ln.split("=")[1].split()[0]) for ln in proc.stdout.splitlines() if ln.startswith("tps =")),
                0.0)


def pgbench_init(layout, workdir: Path) -> None:
    import psycopg

    leader = cluster.status(layout)["leader"]
    with psycopg.connect(layout.node_dsn(leader), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'pgbench'").fetchone():
            conn.execute("CREATE DATABASE pgbench")
    node = layout.node(leader)
    env = dict(os.environ, PGPASSFILE=str(layout.path / "pgpass"))
    if layout.binaries.get("ld_path"):
        env["LD_LIBRARY_PATH"] = layout.binaries["ld_path"]
    subprocess.run([str(Path(layout.binaries["postgres_bin"]) / "pgbench"), "-i", "-q", "-s", "2", "-h", node.host,
                    "-p", str(node.pg_port), "-U", "postgres", "pgbench"], env=env, check=True, capture_output=True,
                   cwd=workdir)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8, help="length of each pgbench run")
    ap.add_argument("--pairs", type=int, default=3, help="plain/fault pairs per fault kind")
    ap.add_argument("--cycles", type=int, default=20, help="inject+revert cycles per kind")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results-fault-engine.json"))
    args = ap.parse_args()
    if os.geteuid() != 0 or not (shutil.which("iptables") or os.path.exists("/usr/sbin/iptables")):
        print("needs root and iptables", file=sys.stderr)
        return 2
    result: dict = {"host": {"cpus": os.cpu_count()}, "seconds": args.seconds}
    with benchmark_cluster("chaosdb-bench-faults-", "benchfaults", ADDRESS_BASE) as (layout, root):
        cfg = {"chaosdb_cluster_dir": layout.dir}
        leader = cluster.status(layout)["leader"]
        replica = next(n.name for n in layout.nodes if n.name != leader)
        kinds = {
            "cpu": lambda: actions.limit_cpu(target=leader, quota_s=0.5, period_s=1.0, configuration=cfg),
            "memory": lambda: actions.limit_memory(target=replica, limit_mb=1024, configuration=cfg),
            "partition": lambda: actions.partition_node(target=replica, scope="clients", direction="inbound",
                                                        configuration=cfg),
            "loss": lambda: actions.lose_packets(target=leader, loss_percent=1, configuration=cfg),
            "bursty-loss": lambda: actions.lose_packets_in_bursts(target=leader, loss_percent=1, configuration=cfg),
            "bandwidth": lambda: actions.limit_bandwidth(target=leader, rate_kbit=10_000_000, configuration=cfg),
            "delay (proxy)": lambda: actions.delay_traffic(target=replica, delay_ms=1, ports=["patroni"],
                                                           existing_connections="keep", configuration=cfg),
        }
        timings = {}
        for name, inject in kinds.items():
            inj, rev = [], []
            for _ in range(args.cycles):
                t0 = time.perf_counter()
                inject()
                t1 = time.perf_counter()
                actions.revert_faults(configuration=cfg)
                rev.append(time.perf_counter() - t1)
                inj.append(t1 - t0)
            timings[name] = {"inject_ms": round(statistics.median(inj) * 1000, 1),
                             "revert_ms": round(statistics.median(rev) * 1000, 1)}
        result["inject_revert_median"] = timings
        assert probes.no_fault_residue()

        pgbench_init(layout, root)
        overhead = {}
        installed = {
            "loss 0.0001 % (rules in the path)": lambda: actions.lose_packets(
                target=leader, loss_percent=0.0001, configuration=cfg),
            "bandwidth 10 Gbit/s (htb in the path)": lambda: actions.limit_bandwidth(
                target=leader, rate_kbit=10_000_000, configuration=cfg),
            "cpu 2 s per 1 s (cgroup, unthrottled)": lambda: actions.limit_cpu(
                target=leader, quota_s=2.0, period_s=1.0, configuration=cfg),
        }
        for name, inject in installed.items():
            plain, faulted = [], []
            for _ in range(args.pairs):
                plain.append(pgbench_tps(layout, args.seconds, root))
                inject()
                try:
                    faulted.append(pgbench_tps(layout, args.seconds, root))
                finally:
                    actions.revert_faults(configuration=cfg)
            ratios = [f / p for f, p in zip(faulted, plain, strict=False) if p]
            overhead[name] = {"plain_tps": round(statistics.median(plain), 1),
                              "with_fault_tps": round(statistics.median(faulted), 1),
                              "ratio": round(statistics.median(ratios), 3)}
        result["pgbench_select_only_8_clients"] = overhead

        late = []
        for _ in range(5):
            rec = actions.lose_packets(target=leader, loss_percent=1, duration_s=1, configuration=cfg)
            deadline = rec["reverts_at"]
            while not probes.no_fault_residue():
                time.sleep(0.01)
            late.append(time.time() - deadline)
        result["timed_revert_lateness_s"] = {"median": round(statistics.median(late), 3), "max": round(max(late), 3)}
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
