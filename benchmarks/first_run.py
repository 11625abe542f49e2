"""Benchmark: the README's first run as a new user makes it, timed: a fresh clone, a fresh virtualenv, the
quickstart's install, then the quickstart experiment (the cluster started, loaded, the fault, the hypothesis before
and after, the report). Target: 3 minutes in all.

The install of the tests' extra is timed too, in another fresh virtualenv, for comparison (the quickstart used to
install it). Package downloads go wherever pip is configured to fetch them; say which when quoting the figure.
Prints JSON and writes it to ``--out``. Usage: ``python benchmarks/first_run.py``.
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
QUICKSTART_EXTRA = "quickstart"


def timed(argv: list[str], cwd: Path) -> float:
    t = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return round(time.monotonic() - t, 1)


def install(clone: Path, extra: str) -> float:
    return timed(["bash", "-c", f"python3 -m venv .venv && .venv/bin/pip install -q -e '.[{extra}]'"], clone)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / f"results-first_run-{time.strftime('%Y-%m-%d')}.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chaosdb-bench-first-run-"))
    os.chmod(work, 0o755)
    result: dict = {"host": {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}, "target_s": 180,
                    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                             text=True).stdout.strip()}
    try:
        clone = work / "clone"
        result["clone_s"] = timed(["git", "clone", "-q", str(ROOT), str(clone)], work)
        result["install_s"] = install(clone, QUICKSTART_EXTRA)
        result["quickstart_run_s"] = timed([".venv/bin/chaos", "run", "experiments/quickstart.json"], clone)
        result["first_run_total_s"] = round(result["install_s"] + result["quickstart_run_s"], 1)
        metrics = json.loads((clone / "runs" / "quickstart" / "metrics.json").read_text())
        result["report_written"] = (clone / "runs" / "quickstart" / "report.html").exists()
        result["recovery_s"] = (metrics.get("recovery") or {}).get("duration_s")
        other = work / "clone-test-extra"
        timed(["git", "clone", "-q", str(ROOT), str(other)], work)
        result["install_test_extra_s"] = install(other, "test")
        result["host"]["load_after"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
