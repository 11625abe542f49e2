"""Benchmark: how fast a PhysicalMachineChaos takes effect and goes, through the real Chaos Mesh controller and a
real chaosd, against the same attack asked of chaosd directly (the peer, measured in the same run).

Target (issue 28): create -> ``AllInjected`` and delete -> fault gone, each within 2 s on 2 cores.

Per cycle (``--cycles``, alternating which way goes first), on a ``sleep`` process started for it:

* ``mesh_injected_s``: create the PhysicalMachineChaos (process stop, signal 19) until the controller reports
  ``AllInjected``; ``mesh_effect_s``: until the process is actually stopped (state ``T`` in /proc);
* ``mesh_gone_s``: delete the object until it is gone (the controller recovered it through chaosd and removed its
  finalizer); ``mesh_resumed_s``: until the process runs again;
* ``direct_effect_s`` / ``direct_resumed_s``: the same stop asked of chaosd's HTTP API by this pack
  (``chaosdb.core.chaosd``), until the process is stopped / runs again. The ratio mesh / direct is the
  controller's cost.

Binaries: the Kubernetes servers and chaos-controller-manager, chaosd (with ``tools/`` beside it) from
``--bin-dir`` / ``CHAOSDB_BIN_DIR`` / the cache / PATH. Needs root. Local Kubernetes on 127.0.56.1, chaosd on
127.0.56.2; everything it started is stopped and removed. Prints JSON and writes
``benchmarks/results-physical_machine_chaos-<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chaosdb.chaosmesh import physical  # noqa: E402
from chaosdb.chaosmesh.objects import GROUP, VERSION, summarise  # noqa: E402
from chaosdb.clusters.kubernetes import cluster  # noqa: E402
from chaosdb.core.binaries import find_binary  # noqa: E402
from chaosdb.core.chaosd import Chaosd  # noqa: E402
from chaosdb.k8s import api  # noqa: E402

KUBE_ADDRESS, CHAOSD_ADDRESS, CHAOSD_PORT = "127.0.56.1", "127.0.56.2", 31790


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _until(check, timeout: float = 30.0) -> float:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("condition not reached")
        time.sleep(0.005)
    return time.monotonic() - t0


def _start_chaosd(binary: str, folder: Path) -> subprocess.Popen:
    shutil.copy2(binary, folder / "chaosd")
    tools = Path(binary).parent / "tools"
    if tools.is_dir():
        os.symlink(tools, folder / "tools")
    proc = subprocess.Popen([str(folder / "chaosd"), "server", "-a", CHAOSD_ADDRESS, "-p", str(CHAOSD_PORT)],
                            cwd=folder, stdout=subprocess.DEVNULL, stderr=open(folder / "chaosd.log", "w"))
    server = Chaosd(f"http://{CHAOSD_ADDRESS}:{CHAOSD_PORT}")

    def healthy() -> bool:
        try:
            server.health()
            return True
        except Exception:
            return False

    _until(healthy, 30)
    return proc


def mesh_cycle(cfg: dict, pid: int, address: str, n: int) -> dict[str, float]:
    obj = physical.new_object("process", {"action": "stop", "process": str(pid), "signal": 19}, f"bench-{n}",
                              "default", {"address": [address]})
    custom = api.custom_objects(cfg)
    read = lambda: custom.get_namespaced_custom_object(GROUP, VERSION, "default", "physicalmachinechaos",  # noqa: E731
                                                       f"bench-{n}")
    t0 = time.monotonic()
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", "physicalmachinechaos", obj)
    injected = _until(lambda: summarise(read())["injected"])
    effect = time.monotonic() - t0 if _state(pid) == "T" else injected + _until(lambda: _state(pid) == "T")
    t1 = time.monotonic()
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", "physicalmachinechaos", f"bench-{n}")
    resumed = _until(lambda: _state(pid) != "T")

    def gone() -> bool:
        try:
            read()
            return False
        except Exception:
            return True

    _until(gone)
    return {"mesh_injected_s": injected, "mesh_effect_s": effect, "mesh_gone_s": time.monotonic() - t1,
            "mesh_resumed_s": resumed}


def direct_cycle(server: Chaosd, pid: int) -> dict[str, float]:
    t0 = time.monotonic()
    uid = server.attack("process", {"action": "stop", "process": str(pid), "signal": 19})
    effect = time.monotonic() - t0 if _state(pid) == "T" else _until(lambda: _state(pid) == "T")
    t1 = time.monotonic()
    server.recover(uid)
    resumed = time.monotonic() - t1 if _state(pid) != "T" else _until(lambda: _state(pid) != "T")
    return {"direct_effect_s": effect, "direct_resumed_s": resumed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--bin-dir", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-pmc-"))
    os.chmod(root, 0o755)
    chaosd_proc = target = None
    try:
        kube = cluster.up(root / "kube", "bench-pmc", address=KUBE_ADDRESS, nodes=1, workload_names=[],
                          bin_dir=args.bin_dir, timeout=300)
        (root / "chaosd").mkdir()
        chaosd_proc = _start_chaosd(find_binary("chaosd", args.bin_dir), root / "chaosd")
        server = Chaosd(f"http://{CHAOSD_ADDRESS}:{CHAOSD_PORT}")
        target = subprocess.Popen(["sleep", "100000"])
        cfg = kube["configuration"]
        rows: list[dict[str, float]] = []
        load = os.getloadavg()
        for n in range(args.cycles):
            if n % 2:
                row = {**direct_cycle(server, target.pid), **mesh_cycle(cfg, target.pid, server.url, n)}
            else:
                row = {**mesh_cycle(cfg, target.pid, server.url, n), **direct_cycle(server, target.pid)}
            rows.append(row)
        keys = list(rows[0])
        medians = {k: round(statistics.median(r[k] for r in rows), 4) for k in keys}
        worst = {k: round(max(r[k] for r in rows), 4) for k in keys}
        result = {
            "benchmark": "physical_machine_chaos", "date": time.strftime("%Y-%m-%d"), "cycles": args.cycles,
            "loadavg_before": [round(x, 2) for x in load], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "median_s": medians, "max_s": worst,
            "ratio_mesh_to_direct": {
                "effect": round(medians["mesh_effect_s"] / max(medians["direct_effect_s"], 1e-6), 1),
                "resumed": round(medians["mesh_resumed_s"] / max(medians["direct_resumed_s"], 1e-6), 1)},
            "target_2s_met": {"injected": medians["mesh_injected_s"] <= 2.0, "gone": medians["mesh_gone_s"] <= 2.0},
        }
    finally:
        if target:
            target.kill()
            target.wait()
        if chaosd_proc:
            chaosd_proc.terminate()
            chaosd_proc.wait(10)
        if (root / "kube" / cluster.STATE_FILE).exists():
            cluster.down(root / "kube", purge=True)
        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(result, indent=1)
    print(text)
    out = Path(args.out or Path(__file__).parent / f"results-physical_machine_chaos-{result['date']}.json")
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
