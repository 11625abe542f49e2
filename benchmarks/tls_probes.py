"""Benchmark: what TLS with client certificates costs a probe, as a ratio to plain HTTP on the same servers.

Two single-member PD clusters from the same ``pd-server`` binary on this machine, one plain and one started with
``--secure`` (``--cacert/--cert/--key``: TLS with client certificates), each asked the same probe (``pd_health``,
two HTTP requests: ``/health`` and ``/members``) in alternating rounds:

* ``warm``: the probe as experiments call it, connections kept open between calls (the pack keeps one session per
  thread and TLS setting), so TLS costs its record layer only;
* ``cold``: a new connection for every request (a fresh thread, no session), so each TLS request pays a full
  handshake with a client certificate.

Reports the median round-trip of each and the ratios TLS / plain. Prints one JSON object and writes
``benchmarks/results-tls_probes-<date>.json``. Runs on 127.0.40.61 and .71, removes everything it created.
Binaries from ``--bin-dir`` / ``CHAOSDB_BIN_DIR`` / the cache folder / PATH.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chaosdb.clusters.pd import simulated_cluster  # noqa: E402
from chaosdb.core.binaries import find_binary  # noqa: E402
from chaosdb.embedded.processes import node_processes  # noqa: E402
from chaosdb.tikv import probes


def _timed(cfg: dict, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        probes.pd_health(configuration=cfg)
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def _cold(cfg: dict, n: int) -> list[float]:
    """Each call in a new thread: a new session, so new connections and handshakes."""
    out: list[float] = []
    for _ in range(n):
        th = threading.Thread(target=lambda: out.extend(_timed(cfg, 1)))
        th.start()
        th.join()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=None)
    ap.add_argument("--calls", type=int, default=200, help="probe calls per round and mode")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    find_binary("pd-server", args.bin_dir)
    root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-tls-"))
    clusters = {}
    try:
        # the secure kind has no simulator (it cannot speak TLS): the plain member is started the same way
        clusters["plain"] = _plain_members_only(root / "plain", "127.0.40.61", args.bin_dir)["configuration"]
        clusters["tls"] = simulated_cluster.up(root / "tls", "bench-tls", members=1, address_base="127.0.40.71",
                                     bin_dir=args.bin_dir, secure=True)["configuration"]
        results: dict[str, dict[str, list[float]]] = {m: {"plain": [], "tls": []} for m in ("warm", "cold")}
        for r in range(args.rounds):
            order = ["plain", "tls"] if r % 2 == 0 else ["tls", "plain"]
            for name in order:
                _timed(clusters[name], 5)  # connect once, as a run's first probe does
                results["warm"][name] += _timed(clusters[name], args.calls)
                results["cold"][name] += _cold(clusters[name], max(20, args.calls // 4))
        summary = {}
        for mode, by in results.items():
            med = {k: statistics.median(v) for k, v in by.items()}
            summary[mode] = {"plain_ms": round(med["plain"], 3), "tls_ms": round(med["tls"], 3),
                             "ratio": round(med["tls"] / med["plain"], 2), "calls": len(by["tls"])}
        report = {"benchmark": "tls_probes", "date": time.strftime("%Y-%m-%d"), "probe": "tikv.probes.pd_health",
                  "rounds": args.rounds, **summary}
        print(json.dumps(report, indent=1))
        out = Path(args.out) if args.out else Path(__file__).with_name(
            f"results-tls_probes-{report['date']}.json")
        out.write_text(json.dumps(report, indent=1) + "\n")
    finally:
        for name in ("plain", "tls"):
            if (root / name / simulated_cluster.STATE_FILE).exists():
                simulated_cluster.down(root / name, purge=True)
        left = node_processes(root)
        shutil.rmtree(root, ignore_errors=True)
    if left:
        print(f"processes left: {left}", file=sys.stderr)
        return 1
    return 0


def _plain_members_only(directory: Path, address: str, bin_dir: str | None) -> dict:
    """A plain PD member without the simulator (the secure kind has none either): the same server, TLS off."""
    from chaosdb.core.servers import spawn_server, wait_ready  # noqa: PLC0415

    layout = simulated_cluster.plan(directory, "bench-plain", 1, 1, 1, address)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / simulated_cluster.STATE_FILE).write_text(json.dumps(layout) + "\n")
    m = layout["members"][0]
    spawn_server([find_binary("pd-server", bin_dir), "--name", m["name"], "--data-dir", str(Path(m["dir"]) / "data"),
                  "--client-urls", m["client_url"], "--peer-urls", m["peer_url"],
                  "--log-file", str(Path(m["dir"]) / "pd.log")], m["dir"], Path(m["dir"]) / "stdout.log")
    cfg = simulated_cluster.configuration_of(layout)

    def ready() -> tuple[bool, str]:
        try:
            return bool(probes.pd_members(configuration=cfg).get("leader")), "no leader"
        except Exception as exc:  # noqa: BLE001 - not up yet
            return False, str(exc)

    wait_ready(ready, time.monotonic() + 60, "the plain PD member had no leader", lambda: None, every_s=0.2)
    return {"configuration": cfg}


if __name__ == "__main__":
    raise SystemExit(main())
