"""Benchmark: load workers on separate hosts (issue 31, item 5).

Hosts are network namespaces joined by veth pairs on a bridge (``tests/netns_hosts.py``), each with its own
address:

* ``db`` (10.213.0.2): the embedded 3-node cluster on that host's loopback, and HAProxy on the host's address
  sending connections to whichever node Patroni's REST API calls the primary (``GET /primary``), the usual way a
  Patroni cluster is offered to clients;
* ``m`` (10.213.0.10): the load control's master (``chaosdb.load.control.start_load`` with ``remote_workers``),
  which is given no DSN;
* ``w1``..``w3`` (10.213.0.11-13): workers, each ``chaosdb load worker --master 10.213.0.10:PORT`` with its own
  ``CHAOSDB_LOAD_DSN`` pointing at the db host.

Measured: TPC-C (W=2, ``--users`` terminals in all, no think time) with 1, 2 and 3 worker processes: committed
tx/s over the baseline window, each worker's CPU and the master's, the cluster's CPU (every PostgreSQL process)
and HAProxy's, per transaction. Then a cut: 3 workers, and mid-run the link of ``w3`` goes down (``ip link set
... down`` on its switch port): the master must report it lost, the other two go on, every sample merged once.

Prints JSON. Usage: ``python benchmarks/load_hosts.py [--seconds 30] [--users 16]``.
Needs root (network namespaces), ``ip`` and ``haproxy``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.netns_hosts import MASTER, WORKERS, Hosts, database_host, run_load  # noqa: E402


def measured(result: dict[str, Any], seconds: int) -> dict[str, Any]:
    """Committed tx/s in the baseline window, CPU per transaction, what the master recorded of its workers."""
    from chaosdb.workloads.samples import read_samples  # noqa: PLC0415

    rec = result["record"]
    lo, hi = rec["warmup_end_ts"], rec["baseline_end_ts"]
    rows = [s for s in read_samples(result["samples"])]
    committed = [s for s in rows if lo <= s.start_ts < hi and s.outcome == "committed"]
    tx = max(1, len(rows))  # CPU is the processes' whole run: per transaction of the whole run
    client_cpu = sum(c for c in result["worker_cpu_s"] if c is not None)
    return {"tx_s": round(len(committed) / (hi - lo), 1), "transactions": len(rows),
            "worker_cpu_s": result["worker_cpu_s"], "client_cpu_ms_per_tx": round(client_cpu / tx * 1000, 3),
            "cluster_cpu_ms_per_tx": round(result["cluster_cpu_s"] / tx * 1000, 3),
            "haproxy_cpu_ms_per_tx": round(result["haproxy_cpu_s"] / tx * 1000, 3),
            "workers_connected": len(rec.get("workers") or []), "workers_lost": rec.get("workers_lost") or [],
            "samples_files": sorted(p.name for p in Path(result["samples"]).glob("samples-*.csv")),
            "counted_once": len(rows) == rec.get("transactions") == sum(w["samples"] for w in rec["workers"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--warehouses", type=int, default=2)
    args = ap.parse_args()
    if not shutil.which("haproxy"):
        raise SystemExit("haproxy is needed (apt-get install haproxy)")
    root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-hosts-"))
    os.chmod(root, 0o755)
    result: dict[str, Any] = {"benchmark": "load_hosts", "cpu_cores": os.cpu_count(), "users": args.users,
                              "seconds": args.seconds, "warehouses": args.warehouses, "runs": {}}
    try:
        with Hosts() as hosts:
            hosts.add(MASTER, 10)
            for i, name in enumerate(WORKERS):
                hosts.add(name, 11 + i)
            with database_host(hosts, root, args.warehouses) as db:
                result["addresses"] = dict(hosts.hosts)
                for n in (1, 2, 3):
                    result["runs"][str(n)] = measured(run_load(hosts, db, root, n, args.users, args.seconds,
                                                          args.warmup), args.seconds)
                    result["runs"][str(n)]["load_avg_1m"] = os.getloadavg()[0]
                cut = run_load(hosts, db, root, 3, args.users, args.seconds, args.warmup, cut_at_s=args.seconds / 3,
                               after_s=15)
                m = measured(cut, args.seconds)
                lost = m["workers_lost"]
                from chaosdb.workloads.samples import read_samples  # noqa: PLC0415

                rows = list(read_samples(cut["samples"]))
                gone = lost[0]["gone_ts"] if lost else None
                at = cut["cut_ts"]
                before = [s for s in rows if at - 10 <= s.start_ts < at and s.outcome == "committed"]
                # the others stall while the cut worker's open transactions hold their locks (until the database
                # ends them: the load's sessions ask for it after 10 s idle in a transaction), then resume
                done = sorted(s.start_ts + s.latency_ms / 1000 for s in rows if s.outcome == "committed"
                              and s.start_ts >= at - 1)
                gaps = [(b - a, b) for a, b in zip(done, done[1:], strict=False)]
                stall, resumed = max(gaps) if gaps else (0.0, at)
                after = [s for s in rows if resumed <= s.start_ts < resumed + 10 and s.outcome == "committed"]
                m.update({"cut_ts": at, "lost_reported": [
                    {k: w.get(k) for k in ("index", "gone", "gone_ts", "mid_run", "last_batch_ts", "samples")}
                    for w in lost], "reported_after_s": round(gone - at, 2) if gone else None,
                    "longest_commit_gap_after_cut_s": round(stall, 2),
                    "resumed_after_cut_s": round(resumed - at, 2),
                    "tx_s_10s_before_cut": round(len(before) / 10, 1),
                    "tx_s_10s_after_resuming": round(len(after) / 10, 1),
                    "terminals_before_cut": len({s.terminal for s in before}),
                    "terminals_after_resuming": len({s.terminal for s in after})})
                result["cut"] = m
    finally:
        shutil.rmtree(root, ignore_errors=True)
    r1 = result["runs"]["1"]["tx_s"]
    result["scaling"] = {n: round(r["tx_s"] / r1, 2) if r1 else None for n, r in result["runs"].items()}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
