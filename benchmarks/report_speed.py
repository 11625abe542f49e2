"""Benchmark: reporter speed and memory on 1,000,000 and 10,000,000 samples, and the cost of recording one.

Targets: 1,000,000 samples (a 10-minute run at ~1,700 tx/s) to metrics + plots + HTML in <= 3 s wall and
<= 300 MB peak memory on 2 cores (issue 30); 10,000,000 samples (a 6-hour game day at ~500 tx/s) in <= 15 s and
<= 500 MB peak, while recording a sample at run time stays <= 2 us (issue 31, item 2).

Each size is built in a fresh subprocess (so its peak RSS is its own, read with ``wait4``)
from a synthetic samples file in the pack's format with a 10 s outage after a fault at half time,
and a minimal journal. The peer figure is reading the same CSV with Python's csv module alone
(the floor for any pure-Python reader). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_inputs(d: Path, n: int, rate: float = 1700.0, faults: int = 1, every_s: float = 1200.0,
                pause: bool = False) -> Path:
    """*n* samples at *rate* tx/s; *faults* 10 s outages, the first at half time, then one every *every_s*; with
    *pause*, the load paused for 20 s (a replica convergence check) 5 minutes after the first fault."""
    import numpy as np

    rng = np.random.default_rng(1)
    start = 1_800_000_000.0
    ts = start + np.arange(n) / rate
    lat = rng.lognormal(np.log(8), 0.4, n)
    fault = start + n / rate / 2
    at = [fault + k * every_s for k in range(faults)]
    bad = np.zeros(n, dtype=bool)
    for f0 in at:
        bad |= (ts >= f0) & (ts < f0 + 10)
    if pause:  # nothing starts while the load is paused
        keep = (ts < fault + 300) | (ts >= fault + 320)
        ts, lat, bad = ts[keep], lat[keep], bad[keep]
        n = ts.size
    names = np.array(["new_order", "payment", "order_status", "delivery", "stock_level"])[rng.integers(0, 5, n)]
    samples = d / "samples"
    samples.mkdir()
    with open(samples / "samples-w0-1.csv", "w") as f:
        f.write("start_ts,latency_ms,name,outcome,sqlstate,retries,terminal,key\n")
        for t, la, nm, b in zip(ts.tolist(), lat.tolist(), names.tolist(), bad.tolist(), strict=False):
            f.write(f"{t:.6f},{1.0 if b else la:.3f},{nm},{'conn_error' if b else 'committed'},,0,1,\n")
    iso = lambda x: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(x)) + f".{int((x % 1) * 1e6):06d}+00:00"  # noqa
    journal = {"chaoslib-version": "1.44.0", "experiment": {"title": "bench"}, "status": "completed",
               "deviated": False, "start": iso(start), "end": iso(ts[-1]),
               "run": [{"activity": {"name": f"kill {k}", "type": "action"}, "start": iso(f0), "end": iso(f0 + 0.1),
                        "status": "succeeded"} for k, f0 in enumerate(at)], "rollbacks": [],
               "chaosdb_load": {"samples_dir": str(samples), "warmup_end_ts": start, "stop_ts": float(ts[-1]),
                                "pauses": [{"reason": "replica convergence check", "start_ts": fault + 300,
                                            "end_ts": fault + 320}] if pause else []}}
    (d / "journal.json").write_text(json.dumps(journal))
    return d / "journal.json"


def timed_child(code: str) -> tuple[float, float]:
    """Wall seconds and the peak resident memory (MB) of a fresh interpreter running *code*: its own, from wait4."""
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)))
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"the child failed ({child.returncode}): {code}")
    return wall, usage.ru_maxrss / 1024.0


def record_cost_us(n: int = 1_000_000) -> float:
    """Microseconds per sample handed to the run-time writer (the load's side: format, queue, flush)."""
    sys.path.insert(0, str(ROOT))
    from chaosdb.workloads.samples import Sample, SampleWriter  # noqa: PLC0415 - the repository's own

    with tempfile.TemporaryDirectory() as tmp:
        writer = SampleWriter(Path(tmp) / "samples-w0-1.csv")
        sample = Sample(1_800_000_000.123456, 12.345, "new_order", "committed", "", 0, 3, "1:2:3012")
        t0 = time.perf_counter()
        for _ in range(n):
            writer.add(sample)
        writer.close()
        return (time.perf_counter() - t0) / n * 1e6


#: samples: their rate (tx/s), how many faults (a soak: one every 20 minutes from half time), a pause of the load
SIZES = {1_000_000: (1700.0, 1, False), 10_000_000: (500.0, 8, True)}


def _build(tree: Path, journal: Path, out: Path) -> tuple[float, float]:
    return timed_child(f"import sys; sys.path.insert(0, {str(tree)!r}); from chaosdb.report.build import "
                       f"build_report; build_report({str(journal)!r}, out_dir={str(out)!r})")


def _metrics_of(out: Path) -> dict:
    m = json.loads((out / "metrics.json").read_text())
    m.pop("run", None)  # names the samples files, nothing measured
    return m


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also build each report with the reporter of this git "
                        "revision (a worktree of it), in the same run: its time and memory, and whether its "
                        "metrics are the same")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        before_tree = None
        if args.before:
            before_tree = Path(tmp) / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(before_tree),
                            args.before], check=True)
        try:
            for n, (rate, faults, pause) in SIZES.items():
                d = Path(tmp) / str(n)
                d.mkdir()
                # made in a child: the bench's own process stays small, so the children it starts begin small (a
                # child's peak counts the pages it shares with its parent until it runs Python anew)
                timed_child(f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
                            f"from benchmarks.report_speed import make_inputs; "
                            f"make_inputs(Path({str(d)!r}), {n}, {rate}, {faults}, pause={pause})")
                journal = d / "journal.json"
                wall, peak = _build(ROOT, journal, d / "out")
                csv_only = (f"import csv; rows = sum(1 for _ in csv.reader(open("
                            f"{str(d / 'samples' / 'samples-w0-1.csv')!r})))")
                csv_wall, _ = timed_child(csv_only)
                import_wall, _ = timed_child("import chaosdb.report.build, matplotlib.pyplot")
                m = json.loads((d / "out" / "metrics.json").read_text())
                results[str(n)] = {"wall_s": round(wall, 2), "peak_rss_mb": round(peak, 1),
                                   "python_csv_read_only_s": round(csv_wall, 2), "imports_s": round(import_wall, 2),
                                   "rate_tps": rate, "hours": round(n / rate / 3600, 2),
                                   "recovery_s": m["recovery"]["duration_s"], "samples": m["samples"],
                                   "faults": faults, "disturbances": len(m["recovery"]["disturbances"]),
                                   "pauses": len(m["excluded_pauses"])}
                if before_tree is not None:
                    b_wall, b_peak = _build(before_tree, journal, d / "out-before")
                    results[str(n)]["before"] = {
                        "revision": args.before, "wall_s": round(b_wall, 2), "peak_rss_mb": round(b_peak, 1),
                        "same_metrics": _metrics_of(d / "out") == _metrics_of(d / "out-before")}
                shutil.rmtree(d)
        finally:
            if before_tree is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_tree)],
                               check=False)
    small, big = results["1000000"], results["10000000"]
    record_us = record_cost_us()
    out = {"benchmark": "report_speed", "cpu_cores": os.cpu_count(), "load_avg_1m": os.getloadavg()[0],
           "sizes": results, "record_us_per_sample": round(record_us, 3),
           "targets": {"1M": {"wall_s": 3.0, "peak_mb": 300}, "10M": {"wall_s": 15.0, "peak_mb": 500},
                       "record_us_per_sample": 2.0},
           "within_targets": (small["wall_s"] <= 3.0 and small["peak_rss_mb"] <= 300
                              and big["wall_s"] <= 15.0 and big["peak_rss_mb"] <= 500
                              and record_us <= 2.0),
           "growth_wall_10M_over_1M": round(big["wall_s"] / small["wall_s"], 2),
           "vs_csv_read_only_10M": round(big["wall_s"] / big["python_csv_read_only_s"], 2)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
