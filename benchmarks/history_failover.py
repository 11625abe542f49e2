"""Measurement: how often a primary kill loses acknowledged appends, with asynchronous and with synchronous
replication, on an embedded cluster, and whether the history checker says so.

Each round runs the list-append load (serializable, 8 clients) on the cluster, cuts the primary from its peers for
``--partition-s`` seconds (its WAL stops reaching the replicas, its clients still reach it), kills the primary's node,
waits for a replica to lead, heals the partition, loads 15 s more, then stops the load and brings every node back.
Two judges per round: an oracle apart from the checker (every acknowledged append against the database's final lists,
read from the new primary) and ``chaosdb.history.check`` under strict-serializable (its verdict, the anomaly types, the
lost appends it names). Rounds alternate sync and async. The cluster must be one this user started (``chaosdb
cluster up``) and may be left in sync mode only. Prints JSON; ``--out`` writes it too.

    python benchmarks/history_failover.py --cluster-dir ~/.chaosdb/chaosdb --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one_round(directory: Path, replication: str, partition_s: float, out: Path) -> dict[str, Any]:
    """One failover under load; the oracle's and the checker's findings."""
    import psycopg  # noqa: PLC0415 - the postgres extra

    from chaosdb.clusters.postgres_ha import cluster  # noqa: PLC0415 - the repository's own
    from chaosdb.embedded import actions as node_actions  # noqa: PLC0415
    from chaosdb.embedded.state import load_layout  # noqa: PLC0415
    from chaosdb.experiment.context import end_run  # noqa: PLC0415
    from chaosdb.faults import actions as faults  # noqa: PLC0415
    from chaosdb.gameday import cluster_steps  # noqa: PLC0415
    from chaosdb.history.check import check_history  # noqa: PLC0415
    from chaosdb.history.recording import read_history  # noqa: PLC0415
    from chaosdb.load import runner  # noqa: PLC0415

    config = {"chaosdb_cluster_dir": str(directory)}
    layout = load_layout(directory)
    if replication == "async":
        cluster_steps.set_synchronous_standbys(directory, 0)
    else:
        cluster_steps.restore_replication(directory, "sync")
    load_before = os.getloadavg()[0]
    try:
        runner.start_load(configuration=config, workload="list-append", users=8, warmup_s=0, baseline_s=3,
                          samples_dir=str(out), isolation="serializable", observe="none", keys=8, key_window_s=1)
        try:
            patroni = cluster.patroni_client(layout)
            timeline = patroni.leader().timeline
            faults.partition_node(target="leader", scope="peers", configuration=config)
            try:
                time.sleep(partition_s)
                record = node_actions.kill_node(target="leader", allow_quorum_loss=True, configuration=config)
                killed = record["targets"][0]["name"]
                # healed once the new primary's promotion has finished (its walreceiver stopped)
                leader = patroni.wait_for_leader(120, not_named=killed, newer_than_timeline=timeline).name
            finally:
                faults.revert_faults(configuration=config)
            time.sleep(15)
        finally:
            runner.stop_load()
            end_run()
        ops = read_history(out)
        acknowledged: dict[int, set[int]] = {}
        for op in ops:
            if op["type"] == "ok":
                for f, k, v in op["value"]:
                    if f == "append":
                        acknowledged.setdefault(k, set()).add(v)
        with psycopg.connect(layout.dsn(), connect_timeout=10, target_session_attrs="read-write") as conn:
            rows = conn.execute("SELECT k, v FROM chaosdb_list_append WHERE k = ANY(%s)",
                                (sorted(acknowledged),)).fetchall()
        final = {k: {int(x) for x in v.split(",")} for k, v in rows}
        lost = sum(len(vals - final.get(k, set())) for k, vals in acknowledged.items())
        t0 = time.perf_counter()
        result = check_history(out, "list-append", "strict-serializable")
        return {"replication": replication, "killed": killed, "new_leader": leader,
                "acknowledged_appends": sum(len(v) for v in acknowledged.values()), "lost_by_oracle": lost,
                "checker_valid": result["valid"], "anomaly_types": result["anomaly_types"],
                "lost_appends_named": result.get("lost_appends", 0), "info": result.get("info"),
                "check_s": round(time.perf_counter() - t0, 2), "load_average_1m_before": round(load_before, 2)}
    finally:
        for n in layout.nodes:
            cluster.start_node(layout, n.name)
        if replication == "async":
            cluster_steps.restore_replication(directory, "sync")
        cluster.wait_healthy(load_layout(directory), timeout=180)


def main() -> int:
    """Alternate sync and async rounds; the counts and the agreement of oracle and checker."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-dir", required=True, help="an embedded cluster this user started")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each replication mode")
    parser.add_argument("--partition-s", type=float, default=4.0)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    rounds = []
    with tempfile.TemporaryDirectory(prefix="chaosdb-failover-") as tmp:
        for i in range(args.rounds):
            for mode in ("sync", "async"):
                rounds.append(one_round(Path(args.cluster_dir), mode, args.partition_s, Path(tmp) / f"{mode}-{i}"))
                print(json.dumps(rounds[-1]), file=sys.stderr, flush=True)
    summary = {mode: {"rounds": sum(1 for r in rounds if r["replication"] == mode),
                      "rounds_with_loss": sum(1 for r in rounds if r["replication"] == mode and r["lost_by_oracle"]),
                      "checker_invalid": sum(1 for r in rounds if r["replication"] == mode
                                             and r["checker_valid"] is False)}
               for mode in ("sync", "async")}
    agree = all((r["lost_by_oracle"] > 0) == (r["checker_valid"] is False) for r in rounds)
    result = {"benchmark": "history_failover", "date": time.strftime("%Y-%m-%d"), "partition_s": args.partition_s,
              "summary": summary, "oracle_and_checker_agree": agree, "rounds": rounds}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
