"""Benchmark: the list-append history checker (chaosdb.history) on a 200,000-transaction history.

Target: a 200,000-transaction list-append history (about 400,000 events) read from JSONL and checked in <= 30 s
wall and <= 2 GB peak RSS on 2 cores, under serializable and strict-serializable.

The history is simulated (seeded): 10 clients run transactions of 1-4 micro-ops (reads and appends) against an
in-memory store that applies each transaction atomically at a commit point between its invocation and completion
(so the history is strictly serializable), over 120 live keys, each retired after a random 8-64 appends and
replaced by a fresh one. About 1% of transactions fail (nothing applied) and 0.5% end info (applied or not, the
process is then replaced, as Jepsen does). The planted variant is the same history with one read changed: a
transaction that read two keys after another appended to both keeps seeing that append on one key but no longer
on the other (a fractured read: G-single-item). Each check is the user's command, ``chaosdb history check FILE --json``, in a fresh
subprocess (start-up and reading the file are part of the measured time); its peak RSS and CPU come from ``wait4``.
The peer in the same run is the floor of any checker of that file: parsing its lines with orjson and nothing else. Writes
``benchmarks/results-history_check-<date>.json`` and prints JSON.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: the user's command, in a fresh interpreter (start-up and reading the file included)
_CHECK = "from chaosdb.cli import main; raise SystemExit(main())"
#: the floor any checker of this file pays: parsing its lines (orjson), nothing else
_READ_ONLY = "import sys, orjson; print(sum(1 for line in open(sys.argv[1], 'rb') if orjson.loads(line)))"


def _child(argv: list[str]) -> tuple[bytes, int, float, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, env=env)
    out = child.stdout.read() if child.stdout else b""
    _pid, status, usage = os.wait4(child.pid, 0)
    return out, os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage


def read_only(path: Path) -> dict[str, Any]:
    """Parsing the file alone, in a fresh subprocess: wall, CPU, peak RSS."""
    _out, code, wall, usage = _child(["-c", _READ_ONLY, str(path)])
    if code != 0:
        raise RuntimeError(f"reading {path} failed (exit {code})")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def simulate(n: int, seed: int = 7, clients: int = 10, live_keys: int = 120) -> tuple[list[dict[str, Any]], int]:
    """A strictly serializable history of *n* transactions; returns it and the position of the read to plant on."""
    rng = random.Random(seed)
    store: dict[int, list[int]] = {}
    next_value: dict[int, int] = {}
    budget: dict[int, int] = {}
    keys = list(range(live_keys))
    for k in keys:
        budget[k] = rng.randint(8, 64)
    fresh = live_keys
    history: list[dict[str, Any]] = []
    process = list(range(clients))
    pending: dict[int, dict[str, Any]] = {}  # client -> its transaction in flight
    queue: list[tuple[float, int, int, str]] = []  # (time, sequence, client, what)
    sequence = 0
    issued = 0
    plant_at = n // 2
    plant_writer: dict[str, Any] = {}
    plant_read: dict[str, Any] = {}

    def pick_key() -> int:
        return keys[min(int(rng.expovariate(1 / 25)), live_keys - 1)]

    def new_txn() -> list[list[Any]]:
        mops: list[list[Any]] = []
        for _ in range(rng.randint(1, 4)):
            k = pick_key()
            if rng.random() < 0.5:
                mops.append(["r", k, None])
            else:
                v = next_value.get(k, 0) + 1
                next_value[k] = v
                mops.append(["append", k, v])
        return mops

    def schedule(at: float, client: int, what: str) -> None:
        nonlocal sequence
        sequence += 1
        heapq.heappush(queue, (at, sequence, client, what))

    for c in range(clients):
        schedule(rng.random(), c, "invoke")
    now = 0.0
    while queue:
        now, _s, c, what = heapq.heappop(queue)
        if what == "invoke":
            if issued >= n:
                continue
            if issued == plant_at:  # two fresh keys, both appended by this transaction
                x, y = pick_key(), pick_key()
                while y == x:
                    y = pick_key()
                mops = []
                for k in (x, y):
                    next_value[k] = next_value.get(k, 0) + 1
                    mops.append(["append", k, next_value[k]])
                plant_writer.update(client=c, x=x, y=y, vx=mops[0][2])
            elif plant_writer.get("done") and not plant_read:
                mops = [["r", plant_writer["x"], None], ["r", plant_writer["y"], None]]
                plant_read["client"] = c
            else:
                mops = new_txn()
            issued += 1
            txn = {"mops": mops, "outcome": "ok"}
            roll = rng.random()
            if roll < 0.01 and not (plant_writer.get("client") == c and "done" not in plant_writer) \
                    and plant_read.get("client") != c:
                txn["outcome"] = "fail"
            elif roll < 0.015 and plant_writer.get("client") != c and plant_read.get("client") != c:
                txn["outcome"] = "info"
            pending[c] = txn
            history.append({"type": "invoke", "f": "txn", "process": process[c], "time": int(now * 1e9),
                            "value": [[f, k, None if f == "r" else v] for f, k, v in mops]})
            schedule(now + rng.expovariate(1 / 0.002), c, "commit")
        elif what == "commit":
            txn = pending[c]
            applies = txn["outcome"] == "ok" or (txn["outcome"] == "info" and rng.random() < 0.5)
            if applies:
                done = []
                for f, k, v in txn["mops"]:
                    if f == "r":
                        done.append(["r", k, list(store.get(k, ()))])
                    else:
                        store.setdefault(k, []).append(v)
                        done.append(["append", k, v])
                        budget[k] -= 1
                txn["done"] = done
                for k in {m[1] for m in txn["mops"]}:
                    if budget.get(k, 1) <= 0 and k in keys:  # retire the key, bring a fresh one
                        keys[keys.index(k)] = fresh
                        budget[fresh] = rng.randint(8, 64)
                        fresh += 1
            schedule(now + rng.expovariate(1 / 0.001), c, "complete")
        else:
            txn = pending.pop(c)
            outcome = txn["outcome"]
            value = txn.get("done") if outcome == "ok" else [
                [f, k, None if f == "r" else v] for f, k, v in txn["mops"]]
            history.append({"type": outcome, "f": "txn", "process": process[c], "time": int(now * 1e9),
                            "value": value})
            if plant_writer.get("client") == c and "done" not in plant_writer:
                plant_writer["done"] = True
            if plant_read.get("client") == c and "position" not in plant_read:
                plant_read["position"] = len(history) - 1
            if outcome == "info":
                process[c] += clients
            schedule(now + rng.expovariate(1 / 0.0005), c, "invoke")
    for i, op in enumerate(history):
        op["index"] = i
    plant_read.update(vx=plant_writer["vx"])
    return history, plant_read["position"], plant_read["vx"]  # type: ignore[return-value]


def plant(history: list[dict[str, Any]], position: int, element: int) -> list[dict[str, Any]]:
    """The history with the read at *position* no longer showing *element* (nor anything after it) on its first key."""
    planted = list(history)
    op = dict(history[position])
    read = list(op["value"][0])
    read[2] = read[2][:read[2].index(element)]
    op["value"] = [read] + op["value"][1:]
    planted[position] = op
    return planted


def run_check(path: Path, model: str) -> dict[str, Any]:
    """``chaosdb history check PATH --model list-append --consistency-model MODEL --json`` in a fresh subprocess:
    its verdict, wall time, CPU and peak RSS."""
    load = os.getloadavg()[0]
    out, code, wall, usage = _child(["-c", _CHECK, "history", "check", str(path), "--model", "list-append",
                                     "--consistency-model", model, "--json"])
    if code not in (0, 1):
        raise RuntimeError(f"the check of {path} under {model} failed (exit {code})")
    result = json.loads(out)
    return {"valid": result["valid"], "anomaly_types": result["anomaly_types"],
            "transactions": result.get("transactions"), "info": result.get("info"), "fail": result.get("fail"),
            "events": result.get("operations"),
            "example": {k: v[0].get("explanation") for k, v in result["anomalies"].items()},
            "wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "consistency_model": model,
            "load_average_1m_before": round(load, 2)}


def write_jsonl(history: list[dict[str, Any]], path: Path) -> None:
    """One JSON object per line."""
    with open(path, "w") as f:
        for op in history:
            f.write(json.dumps(op, separators=(",", ":")))
            f.write("\n")


def main() -> int:
    """Simulates, writes, checks (valid and planted, serializable and strict-serializable) and records."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=200_000, help="transactions to simulate (200000)")
    parser.add_argument("--models", default="serializable,strict-serializable", help="comma-separated models")
    parser.add_argument("--no-save", action="store_true", help="print only; write no results file")
    args = parser.parse_args()
    t0 = time.perf_counter()
    history, position, element = simulate(args.transactions)
    generated = time.perf_counter() - t0
    runs = []
    with tempfile.TemporaryDirectory() as d:
        valid_path, planted_path = Path(d) / "valid.jsonl", Path(d) / "planted.jsonl"
        write_jsonl(history, valid_path)
        write_jsonl(plant(history, position, element), planted_path)
        sizes = {"valid_mb": round(valid_path.stat().st_size / 1e6, 1)}
        del history
        floor = read_only(valid_path)
        for model in args.models.split(","):
            valid = run_check(valid_path, model)
            valid["history"] = "valid"
            assert valid["valid"] is True, valid
            runs.append(valid)
            planted = run_check(planted_path, model)
            planted["history"] = "planted fractured read"
            assert planted["valid"] is False and "G-single-item" in planted["anomaly_types"], planted
            runs.append(planted)
    out = {"benchmark": "history_check", "date": time.strftime("%Y-%m-%d"), "transactions": args.transactions,
           "generate_s": round(generated, 2), "file": sizes, "cpus": os.cpu_count(),
           "peer_parse_only": floor,
           "ratio_to_parse_only": [round(r["wall_s"] / floor["wall_s"], 2) for r in runs],
           "targets": {"wall_s": 30, "peak_rss_mb": 2048},
           "meets_targets": all(r["wall_s"] <= 30 and r["peak_rss_mb"] <= 2048 for r in runs), "runs": runs}
    print(json.dumps(out, indent=2))
    if not args.no_save:
        path = ROOT / "benchmarks" / f"results-history_check-{out['date']}.json"
        path.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if out["meets_targets"] else 1


if __name__ == "__main__":
    sys.exit(main())
