"""Benchmark: reporter speed and memory on 250,000 and 1,000,000 samples.

Target (issue: reporter): 1,000,000 samples (a 10-minute run at ~1,700 tx/s) to metrics + plots +
HTML in <= 3 s wall and <= 300 MB peak memory on 2 cores, growing linearly with the samples.

Each size is built in a fresh subprocess (so its peak RSS is its own, read from ``RUSAGE_CHILDREN``)
from a synthetic samples file in the pack's format with a 10 s outage after a fault at half time,
and a minimal journal. The peer figure is reading the same CSV with Python's csv module alone
(the floor for any pure-Python reader). Prints JSON.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_inputs(d: Path, n: int, rate: float = 1700.0) -> Path:
    import numpy as np

    rng = np.random.default_rng(1)
    start = 1_800_000_000.0
    ts = start + np.arange(n) / rate
    lat = rng.lognormal(np.log(8), 0.4, n)
    fault = start + n / rate / 2
    bad = (ts >= fault) & (ts < fault + 10)
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
               "run": [{"activity": {"name": "kill", "type": "action"}, "start": iso(fault), "end": iso(fault + 0.1),
                        "status": "succeeded"}], "rollbacks": [],
               "chaosdb_load": {"samples_dir": str(samples), "warmup_end_ts": start, "stop_ts": float(ts[-1])}}
    (d / "journal.json").write_text(json.dumps(journal))
    return d / "journal.json"


def timed_child(code: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak_kb, before) / 1024.0


def main() -> int:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (250_000, 1_000_000):
            d = Path(tmp) / str(n)
            d.mkdir()
            journal = make_inputs(d, n)
            build = (f"from chaosdb.report.build import build_report; "
                     f"build_report({str(journal)!r}, out_dir={str(d / 'out')!r})")
            csv_only = (f"import csv; rows = sum(1 for _ in csv.reader(open("
                        f"{str(d / 'samples' / 'samples-w0-1.csv')!r})))")
            wall, peak = timed_child(build)
            csv_wall, _ = timed_child(csv_only)
            import_wall, _ = timed_child("import chaosdb.report.build, matplotlib.pyplot")
            m = json.loads((d / "out" / "metrics.json").read_text())
            results[str(n)] = {"wall_s": round(wall, 2), "peak_rss_mb_max_so_far": round(peak, 1),
                               "python_csv_read_only_s": round(csv_wall, 2), "imports_s": round(import_wall, 2),
                               "recovery_s": m["recovery"]["duration_s"], "samples": m["samples"]}
    small, big = results["250000"], results["1000000"]
    out = {"benchmark": "report_speed", "cpu_cores": os.cpu_count(), "sizes": results,
           "target_wall_s": 3.0, "target_peak_mb": 300,
           "within_targets": big["wall_s"] <= 3.0 and big["peak_rss_mb_max_so_far"] <= 300,
           "growth_wall_1M_over_250k": round(big["wall_s"] / small["wall_s"], 2),
           "vs_csv_read_only_1M": round(big["wall_s"] / big["python_csv_read_only_s"], 2)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
