"""Benchmark: what recording one operation in the history costs the load's client at run time.

Target (issue 42): <= 2 us per operation, like a sample. An operation is two events (its invocation, its
completion with what it read); each is queued as a tuple and formatted as a JSON line at the next flush, which is
counted too (the writer's whole work: queue, format, write). The operation is a list-append transaction of the
workload's usual size (two appends and a read that saw 12 elements). The peer in the same run is a sample handed to
the samples writer (the pack's own recording, already held to 2 us). Prints JSON; ``--out`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def history_cost_us(n: int) -> float:
    """Microseconds per operation (invoke + ok) handed to the history writer, its flushes included."""
    from chaosdb.history.recording import HistoryWriter  # noqa: PLC0415 - the repository's own

    invoked = [["append", 28_732_289_808, 3_470_007], ["r", 28_732_289_811, None],
               ["append", 28_732_289_803, 3_480_002]]
    done = [invoked[0], ["r", 28_732_289_811, list(range(3_400_001, 3_400_013))], invoked[2]]
    with tempfile.TemporaryDirectory() as tmp:
        writer = HistoryWriter(Path(tmp) / "history-w0-1.jsonl")
        t0 = time.perf_counter()
        for i in range(n):
            writer.invoke(i % 64, "txn", invoked)
            writer.complete("ok", i % 64, "txn", done, "127.0.0.21:5432")
        writer.close()
        return (time.perf_counter() - t0) / n * 1e6


def sample_cost_us(n: int) -> float:
    """Microseconds per sample handed to the samples writer (the peer)."""
    from chaosdb.workloads.samples import Sample, SampleWriter  # noqa: PLC0415 - the repository's own

    with tempfile.TemporaryDirectory() as tmp:
        writer = SampleWriter(Path(tmp) / "samples-w0-1.csv")
        sample = Sample(1_800_000_000.123456, 12.345, "txn", "committed", "", 0, 3, "")
        t0 = time.perf_counter()
        for _ in range(n):
            writer.add(sample)
        writer.close()
        return (time.perf_counter() - t0) / n * 1e6


def main() -> int:
    """Alternate rounds of the two writers; the median of each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    history, samples, loads = [], [], []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        history.append(history_cost_us(args.operations))
        samples.append(sample_cost_us(args.operations))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    result = {"benchmark": "history_recording", "date": time.strftime("%Y-%m-%d"),
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "load_average_1m_per_round": [round(x, 2) for x in loads]},
              "operations_per_round": args.operations, "rounds": args.rounds,
              "history_us_per_operation": [round(x, 3) for x in history],
              "sample_us_per_sample": [round(x, 3) for x in samples],
              "median_history_us": round(med(history), 3), "median_sample_us": round(med(samples), 3),
              "ratio_history_to_sample": round(med(history) / med(samples), 2),
              "target_us": 2.0, "met": med(history) <= 2.0}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
