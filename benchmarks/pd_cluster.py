"""Benchmark: the local PD cluster (``chaosdb cluster up --kind pd``) and PD's own reaction times.

Measures, in one run on this machine, with real ``pd-server`` and ``pd-simulator`` binaries:

* ``up_s``: ``up`` of 1 PD member + 5 simulated stores + 300 regions until every store is Up and every region
  leader is known (what the activities need); the peer ``pd_alone_s`` is one PD member alone until it
  has a leader, the floor any PD start pays; reported as a ratio.
* ``transfer_leader_s``: ``transfer_region_leader`` until PD reports the new leader.
* ``evict_s``: ``evict_leaders`` on the key's leader store until it leads nothing.

Binaries from ``--bin-dir`` / ``CHAOSDB_BIN_DIR`` / the cache folder / PATH (see chaosdb.core.binaries).
Prints one JSON object and writes ``benchmarks/results-pd_cluster-<date>.json``. Runs on 127.0.40.51 and
removes everything it created.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chaosdb.clusters.pd import simulated_cluster  # noqa: E402
from chaosdb.core.binaries import find_binary  # noqa: E402
from chaosdb.core.http import HttpError, request_json  # noqa: E402
from chaosdb.embedded.processes import node_processes  # noqa: E402
from chaosdb.tikv import actions

ADDRESS = "127.0.40.51"


def pd_alone(pd_bin: str, root: Path) -> float:
    d = root / "alone"
    d.mkdir()
    url = f"http://{ADDRESS}:2379"
    t0 = time.monotonic()
    proc = subprocess.Popen([pd_bin, "--name", "solo", "--data-dir", str(d / "data"), "--client-urls", url,
                             "--peer-urls", f"http://{ADDRESS}:2380", "--log-file", str(d / "pd.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d)
    try:
        while True:
            try:
                if (request_json("GET", f"{url}/pd/api/v1/members", timeout=2).json() or {}).get("leader"):
                    return time.monotonic() - t0
            except HttpError:
                pass
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    pd_bin = find_binary("pd-server", args.bin_dir)
    find_binary("pd-simulator", args.bin_dir)
    ups, alones, transfers, evicts = [], [], [], []
    for _ in range(args.repeat):
        root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-pd-"))
        try:
            alones.append(pd_alone(pd_bin, root))
            t0 = time.monotonic()
            res = simulated_cluster.up(root / "pd", "bench", members=1, stores=5, regions=300, address_base=ADDRESS,
                             bin_dir=args.bin_dir)
            ups.append(time.monotonic() - t0)
            cfg = res["configuration"]
            tr = actions.transfer_region_leader(key="usertable:user1", to_store="follower", configuration=cfg)
            transfers.append(tr["took_s"])
            ev = actions.evict_leaders(store="leader", key="usertable:user1", wait_s=120, configuration=cfg)
            evicts.append(ev["leaderless_after_s"])
            actions.remove_leader_eviction(configuration=cfg)
            simulated_cluster.down(root / "pd")
            assert not node_processes(root), "processes left behind"
        finally:
            shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    out = {"date": time.strftime("%Y-%m-%d"), "runs": args.repeat, "stores": 5, "regions": 300,
           "up_s": round(med(ups), 2), "up_s_all": [round(x, 2) for x in ups],
           "pd_alone_s": round(med(alones), 2), "up_vs_pd_alone": round(med(ups) / med(alones), 2),
           "transfer_leader_s": round(med(transfers), 2), "evict_s": round(med(evicts), 2)}
    print(json.dumps(out, indent=1))
    path = Path(__file__).with_name(f"results-pd_cluster-{out['date']}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
