"""Capacity calibration in the spirit of the UPB method (seeds: Under Pressure Benchmark).

1. a short unthrottled probe measures roughly what the cluster sustains with ``users`` clients;
2. the offered rate starts at half of that and rises by ``step_pct`` (10 %) per step of ``step_s``
   seconds (plus ``settle_s`` excluded from the measurement);
3. the first step whose throughput falls below ``min_ratio`` (95 %) of the offered rate, or whose
   p90 latency exceeds ``p90_limit_ms`` (1 s), ends the search: the previous step's rate is the
   sustainable rate.

Experiments can then run at a chosen fraction of it (``rate`` of the load control). The clients
are closed-loop: give enough ``users`` that they are not the bottleneck (the result says when the
probe looked client-bound).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from chaosdb.core.detach import source_env
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.stats import percentile
from chaosdb.load.runner import LOCUSTFILES
from chaosdb.workloads.outcomes import is_success
from chaosdb.workloads.samples import read_samples

__all__ = ["calibrate", "measure_step"]



def measure_step(dsn: str, workload: str, users: int, rate: float, seconds: float, settle_s: float,
                 samples_dir: Path, extra: list[str] | None = None) -> dict[str, Any]:
    """Run the load for ``settle_s + seconds`` at *rate* (0 = unthrottled); measure the last ``seconds``."""
    locustfile = LOCUSTFILES[workload]
    env = source_env(CHAOSDB_LOAD_DSN=dsn)
    argv = [sys.executable, "-m", "locust", "-f", locustfile, "--headless", "-u", str(users), "-r", str(users),
            "-t", f"{int(settle_s + seconds + 1)}s", "--only-summary", "--chaosdb-samples-dir", str(samples_dir),
            "--chaosdb-rate", str(rate), *(extra or [])]
    started = time.time()
    proc = subprocess.run(argv, env=env, cwd=str(samples_dir.parent), capture_output=True, text=True,
                          timeout=settle_s + seconds + 120)
    rows = [s for s in read_samples(samples_dir)]
    if not rows:
        raise ChaosDBError(f"the load produced no samples at rate {rate}: {(proc.stdout + proc.stderr)[-1500:]}")
    first = min(s.start_ts for s in rows)
    lo = max(first, started) + settle_s
    hi = lo + seconds
    window = [s for s in rows if lo <= s.start_ts < hi]
    ok = sorted(s.latency_ms for s in window if is_success(s.outcome))
    return {
        "offered_tps": round(rate, 2) if rate else None,
        "throughput_tps": round(len(ok) / seconds, 2),
        "p90_ms": round(percentile(ok, 90), 2) if ok else None,
        "p99_ms": round(percentile(ok, 99), 2) if ok else None,
        "errors": sum(1 for s in window if not is_success(s.outcome)),
        "transactions": len(window),
    }


def calibrate(dsn: str, out_dir: Path, workload: str = "tpcc", users: int = 16, step_pct: float = 10.0,
              step_s: float = 10.0, settle_s: float = 3.0, max_steps: int = 20, min_ratio: float = 0.95,
              p90_limit_ms: float = 1000.0, start_rate: float = 0.0,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Find the highest rate the database sustains: offer the workload at rising rates (*step_pct* more each *step_s*)
    until throughput falls below *min_ratio* of the offer or p90 exceeds *p90_limit_ms*; the steps' samples go to
    *out_dir*."""
    if workload not in LOCUSTFILES:
        raise ChaosDBError(f"workload must be one of {', '.join(LOCUSTFILES)}")
    if not (0 < min_ratio <= 1 and step_pct > 0 and step_s > 0 and users > 0):
        raise ChaosDBError("min_ratio in (0, 1], step_pct > 0, step_s > 0 and users > 0 are required")
    say = progress or (lambda _m: None)
    out_dir.mkdir(parents=True, exist_ok=True)
    probe = None
    if not start_rate:
        probe = measure_step(dsn, workload, users, 0, step_s, settle_s, out_dir / "probe")
        say(f"unthrottled probe: {probe['throughput_tps']} tps, p90 {probe['p90_ms']} ms")
        start_rate = max(1.0, probe["throughput_tps"] / 2)
    steps, sustainable, rate, reason = [], None, start_rate, "max_steps reached"
    for i in range(max_steps):
        step = measure_step(dsn, workload, users, rate, step_s, settle_s, out_dir / f"step{i:02d}")
        ratio = step["throughput_tps"] / rate
        step["ratio"] = round(ratio, 3)
        steps.append(step)
        say(f"offered {rate:8.1f} tps -> {step['throughput_tps']:8.1f} tps ({ratio:.0%}), p90 {step['p90_ms']} ms")
        if ratio < min_ratio:
            reason = f"throughput fell below {min_ratio:.0%} of the offered rate"
            break
        if step["p90_ms"] is None or step["p90_ms"] > p90_limit_ms:
            reason = f"p90 exceeded {p90_limit_ms:g} ms"
            break
        sustainable = rate
        rate *= 1 + step_pct / 100.0
    client_bound = bool(probe and probe["p90_ms"] is not None and probe["p90_ms"] < p90_limit_ms / 10
                        and sustainable is not None and sustainable >= 0.9 * probe["throughput_tps"])
    return {"workload": workload, "users": users, "sustainable_tps": round(sustainable, 2) if sustainable else None,
            "stopped_because": reason, "probe": probe, "steps": steps, "step_s": step_s, "step_pct": step_pct,
            "client_bound_warning": client_bound and "the probe's latency was low: more users may offer more load"}
