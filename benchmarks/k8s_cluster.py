"""Benchmark: the local Kubernetes cluster (``chaosdb cluster up --kind kubernetes``) and Chaos Mesh's reaction
times through this pack's actions.

Measures, in one run on this machine, with the real servers:

* ``up_s``: ``up`` with Chaos Mesh and both database workloads until every StatefulSet is Ready; the peer
  ``apiserver_alone_s`` is etcd + kube-apiserver alone until ``/readyz`` answers, the floor any Kubernetes start
  pays; reported as a ratio.
* ``down_s``: ``down --purge`` until every process is gone.
* ``pod_kill_injected_s``: ``create_chaos`` of the pod-kill template on a named pod until Chaos Mesh reports it
  injected (the action's own ``waited_s`` plus the create), and ``pod_back_ready_s`` until the StatefulSet's
  replacement pod is Ready.
* ``pod_failure_5s_recovered_after_s``: a 5 s pod-failure until Chaos Mesh reports it recovered, counted from
  when ``create_chaos`` returned (the 5 s run from the object's creation, before injection was confirmed).
* ``rss_mb``: resident memory of all the cluster's processes once it is up.

Binaries from ``--bin-dir`` / ``CHAOSDB_BIN_DIR`` / the cache folder / PATH (see chaosdb.core.binaries).
Prints one JSON object and writes ``benchmarks/results-k8s_cluster-<date>.json``. Runs on 127.0.55.1 and
removes everything it created.
"""

from __future__ import annotations

import argparse
import json
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chaosdb.chaosmesh import actions as cm  # noqa: E402
from chaosdb.clusters.kubernetes import cluster  # noqa: E402
from chaosdb.clusters.kubernetes.pki import make_pki  # noqa: E402
from chaosdb.core.binaries import find_binary  # noqa: E402
from chaosdb.embedded.processes import node_processes  # noqa: E402
from chaosdb.k8s import api  # noqa: E402

ADDRESS = "127.0.55.1"


def apiserver_alone(bin_dir: str | None, root: Path, address: str = ADDRESS) -> float:
    """etcd + kube-apiserver with the same flags as ``up`` on *address*, until /readyz answers 200 (then stopped,
    its folder under *root* removed); the seconds it took."""
    d = Path(tempfile.mkdtemp(prefix="alone-", dir=root))
    pki = make_pki(d / "pki", [address])
    (d / "tokens.csv").write_text("benchtoken,bench,bench,system:masters\n")
    layout = cluster.plan(d, "alone", address, workload_names=[])
    bins = {"etcd": cluster.etcd_binary(bin_dir), "kube-apiserver": find_binary("kube-apiserver", bin_dir),
            "kwok": "", "kube-scheduler": "", "kube-controller-manager": ""}
    lines = cluster.command_lines(layout, bins, pki)
    t0 = time.monotonic()
    procs = [subprocess.Popen(lines[s][0], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for s in ("etcd", "kube-apiserver")]
    ctx = ssl.create_default_context(cafile=str(pki.ca_crt))
    try:
        while time.monotonic() - t0 < 120:
            try:
                req = urllib.request.Request(f"{layout['server']}/readyz",
                                             headers={"Authorization": "Bearer benchtoken"})
                with urllib.request.urlopen(req, timeout=2, context=ctx) as resp:
                    if resp.status == 200:
                        return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("etcd + kube-apiserver alone did not become ready within 120 s")
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(d, ignore_errors=True)


def _rss_mb(directory: Path) -> float:
    total = 0
    for p in node_processes(directory):
        try:
            fields = Path(f"/proc/{p.pid}/status").read_text().split("VmRSS:")[1].split()
            total += int(fields[0])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1024


def _ready_again(cfg: dict, pod: str, old_uid: str, timeout: float = 120.0) -> float:
    core = api.core_v1(cfg)
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            p = api.call_json("pod", core.read_namespaced_pod, pod, "cockroachdb")
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (p.get("status") or {}).get("conditions") or [])
            if p["metadata"]["uid"] != old_uid and ready:
                return time.monotonic() - t0
        except api.K8sApiError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{pod} not back within {timeout} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    ups, downs, alones, injected, back, recovered, rss = [], [], [], [], [], [], []
    for _ in range(args.repeat):
        root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-k8s-"))
        try:
            alones.append(apiserver_alone(args.bin_dir, root))
            t0 = time.monotonic()
            res = cluster.up(root / "kube", "bench", address=ADDRESS, bin_dir=args.bin_dir)
            ups.append(time.monotonic() - t0)
            rss.append(_rss_mb(root / "kube"))
            cfg = {**res["configuration"], "k8s_namespace": "chaos-testing"}
            core = api.core_v1(cfg)
            uid = api.call_json("pod", core.read_namespaced_pod, "cockroachdb-1", "cockroachdb")["metadata"]["uid"]
            t1 = time.monotonic()
            cm.create_chaos(template="cockroachdb/pod-kill", name="bench-kill",
                            target={"pod": "cockroachdb-1", "namespace": "cockroachdb"}, configuration=cfg)
            injected.append(time.monotonic() - t1)
            back.append(_ready_again(cfg, "cockroachdb-1", uid) + injected[-1])
            cm.delete_chaos("PodChaos", "bench-kill", "chaos-testing", configuration=cfg)
            cm.create_chaos(template="cockroachdb/pod-failure", name="bench-fail", variables={"DURATION": "5s"},
                            target={"pod": "cockroachdb-2", "namespace": "cockroachdb"}, configuration=cfg)
            t2 = time.monotonic()
            cm.wait_until_recovered("PodChaos", "bench-fail", "chaos-testing", timeout_s=120, configuration=cfg)
            recovered.append(time.monotonic() - t2)
            cm.delete_chaos("PodChaos", "bench-fail", "chaos-testing", configuration=cfg)
            t3 = time.monotonic()
            cluster.down(root / "kube", purge=True)
            downs.append(time.monotonic() - t3)
            assert not node_processes(root), "processes left behind"
        finally:
            if (root / "kube" / cluster.STATE_FILE).exists():
                cluster.down(root / "kube", purge=True)
            shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    out = {"date": time.strftime("%Y-%m-%d"), "runs": args.repeat,
           "up_s": round(med(ups), 2), "up_s_all": [round(x, 2) for x in ups],
           "apiserver_alone_s": round(med(alones), 2), "up_vs_apiserver_alone": round(med(ups) / med(alones), 2),
           "down_s": round(med(downs), 2), "rss_mb": round(med(rss)),
           "pod_kill_injected_s": round(med(injected), 2), "pod_back_ready_s": round(med(back), 2),
           "pod_failure_5s_recovered_after_s": round(med(recovered), 2)}
    print(json.dumps(out, indent=1))
    path = Path(__file__).with_name(f"results-k8s_cluster-{out['date']}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
