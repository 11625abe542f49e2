"""Benchmark: the local Kubernetes with a real node (``chaosdb cluster up --kind kubernetes --real-nodes 1 --nodes 0
--workloads postgres --replicas 2``), and how soon each Chaos Mesh daemon fault this kernel can carry out is in
effect in the pods after ``create_chaos`` is called, and gone after ``delete_chaos`` is called, seen in the pods
themselves (their processes, their network namespaces, PostgreSQL's answers), not in Chaos Mesh's status.

Measured in one run, on 127.0.62.1 (a real node owns 10.96.0.1 on its bridge: one per machine):

Node and pods (one ``up``; the images come from the image cache):

* ``up_s``: the whole ``up`` (control plane, Chaos Mesh, containerd + kubelet, chaos-daemon, Patroni Ready, the
  application database and the TPC-C data ``up`` loads); peer ``apiserver_alone_s``: etcd + kube-apiserver alone
  with the same flags until ``/readyz`` answers (median of ``--repeat`` starts, before ``up``), as
  ``benchmarks/k8s_cluster.py`` measures it; reported as a ratio.
* ``node_ready_s``: kubelet's process start (``/proc/PID/stat``) until the API shows the Node ``Ready``;
  ``statefulset_ready_s``: the StatefulSet first seen in the API until it has every replica Ready (a watcher thread
  polls the API every 50 ms while ``up`` runs); ``after_statefulset_ready_s``: the rest of ``up``.
* ``memory_mb``: resident memory (VmRSS) of kubelet, containerd, each containerd shim, and of each pod (every
  process in the pod's cgroup, summed), once ``up`` returned; ratio: all pods / (kubelet + containerd).
* ``failover_s``: from the pod-kill's ``create_chaos`` call (below) until a pod other than the killed one answers
  SQL as a primary (``pg_is_in_recovery()`` false): the replica promoted, or the StatefulSet's replacement pod,
  which has the killed member's name, taking the leader lock back (each run says which); median and max of
  ``--repeat``.

Faults (``--repeat`` rounds, default 5; each round every kind once, the Patroni cluster back to a leader and a
synchronous standby without lag, both pods Ready and answering SQL, before each; median and max per kind; target
≤ 2 s for each direction):

* PodChaos pod-kill of the primary: in effect = no process of the pod's containers left (the processes in its
  cgroup ``pod<uid>`` other than the sandbox's ``/pause``), with ``pod_deleted_in_api_s`` (the pod no longer
  ``present`` in the API) to tell the controller's share from the kubelet's; "gone" has no meaning for a one-shot
  kill, so ``replacement_ready_s`` is measured instead: from the create call until the StatefulSet's new pod is
  Ready.
* PodChaos container-kill of the primary's ``postgres`` container: in effect = Patroni's process in the pod (the
  container's main process) gone; instead of gone: ``restarted_s`` until a new Patroni process runs in the pod and
  ``ready_again_s`` until the container's ``restartCount`` went up and it is Ready.
* PodChaos pod-failure of a replica: in effect = no PostgreSQL or Patroni process left in the pod; gone = the pod's
  PostgreSQL answers SQL again (``SELECT 1`` on the pod's IP); beside them when the API showed the container's
  image replaced and restored, and the image and state the container had during the fault.
* For both container restarts (container-kill, pod-failure): the container's ``restartCount`` before the fault and
  the restart back-offs kubelet wrote to its log meanwhile (``CrashLoopBackOff: back-off 10s restarting failed
  container=postgres``: kubelet holds a container's restart back for 10 s, doubling with each restart); the figures
  of the runs on a container that had not restarted before are also given on their own.
* StressChaos cpu (primary) and memory (replica): in effect = a ``stress-ng`` / ``memStress`` process in the pod's
  cgroup; gone = none left.
* NetworkChaos partition of the primary from the replica (both directions): a prober in each pod's network namespace
  (``nsenter -n``) connects to the other pod's PostgreSQL port back to back from two threads (100 ms timeout); in
  effect = both directions cut (the first of at least three failed attempts in a row), gone = both directions
  connect again.
* TimeChaos ``-10m`` on a replica: PostgreSQL's ``clock_timestamp()`` through a new connection every 50 ms; in
  effect = skewed by more than 590 s, gone = within 5 s of this machine's clock.

Times are from the start of the call; an observation counts at the end of the first of two checks in a row that
made it (processes every 20 ms, SQL and API every 50 ms: late by at most one check), a connection attempt at its
start (a dropped SYN was dropped when sent). ``create_call_s`` / ``delete_call_s``: how long the actions themselves
took (``create_chaos`` returns once Chaos Mesh reports the object injected, ``delete_chaos`` once it is gone). Peer,
measured in every round through the same client: the API's own round trip, a ConfigMap created and read back,
deleted and read until it is gone; each kind's figures are also given as a ratio to it. The machine's load average
is recorded with every measurement.

Binaries from ``--bin-dir`` / ``CHAOSDB_BIN_DIR`` / the cache folder / PATH (kubelet and chaos-daemon's included).
Needs root, containerd, runc, the CNI plugins, mmdebstrap. Prints one JSON object and writes
``benchmarks/results-k8s_real_node-<date>.json``; brings the cluster down with purge and removes every folder it
made, also on errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.k8s_cluster import apiserver_alone  # noqa: E402
from chaosdb.chaosmesh import actions as cm  # noqa: E402
from chaosdb.chaosmesh.objects import list_objects, summarise  # noqa: E402
from chaosdb.clusters.kubernetes import cluster  # noqa: E402
from chaosdb.clusters.kubernetes.pki import Pki  # noqa: E402
from chaosdb.clusters.kubernetes.realnode import node as realnode  # noqa: E402
from chaosdb.core.errors import ChaosDBError  # noqa: E402
from chaosdb.core.netem import netem_available  # noqa: E402
from chaosdb.core.processes import argv_of, pids_under, start_time  # noqa: E402
from chaosdb.k8s import api  # noqa: E402

ADDRESS = "127.0.62.1"
NS = "postgres"
REPLICAS = 2
TARGET_S = 2.0
PROC_POLL_S = 0.02
SQL_POLL_S = 0.05
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: PostgreSQL's server program in the Patroni image
POSTGRES_BIN = "/usr/lib/postgresql/15/bin/postgres"

#: runs in a pod's network namespace: connects to HOST:PORT back to back from THREADS threads, one line per attempt
#: ("<monotonic start> <1 connected | 0 failed>")
PROBER = r"""
import socket, sys, threading, time
host, port, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lock = threading.Lock()
def run():
    while True:
        t = time.monotonic()
        try:
            socket.create_connection((host, port), timeout=0.1).close()
            ok = 1
        except OSError:
            ok = 0
        with lock:
            sys.stdout.write(f"{t:.6f} {ok}\n")
            sys.stdout.flush()
        time.sleep(0.03 if ok else 0.0)
for _ in range(threads):
    threading.Thread(target=run, daemon=True).start()
    time.sleep(0.05 / threads)
threading.Event().wait()
"""


def boottime() -> float:
    """This machine's boot-time clock (the clock of a process's start time in ``/proc/PID/stat``)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def load1() -> float:
    """The 1-minute load average now."""
    return round(os.getloadavg()[0], 2)


def spread(values: list[float]) -> dict[str, Any]:
    """Median, max and every value, rounded."""
    if not values:
        return {"median": None, "max": None, "all": []}
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3),
            "all": [round(v, 3) for v in values]}


class Watch:
    """Runs *check* every *interval_s* in a thread of its own and keeps (start, end, value) of each check on the
    monotonic clock; an exception is kept as the value."""

    def __init__(self, check: Callable[[], Any], interval_s: float) -> None:
        self.check, self.interval_s = check, interval_s
        self.samples: list[tuple[float, float, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                value = self.check()
            except Exception as exc:  # noqa: BLE001 - a failed check is an observation too
                value = exc
            self.samples.append((t, time.monotonic(), value))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def first(self, after: float, holds: Callable[[Any], bool], deadline_s: float = 60.0,
              confirm: int = 2) -> float | None:
        """Seconds from *after* to the end of the first check started after it whose value *holds*, and the
        ``confirm - 1`` checks after it too; None when none did within *deadline_s*."""
        end = after + deadline_s
        while True:
            samples = [s for s in list(self.samples) if s[0] >= after]
            for i in range(len(samples) - confirm + 1):
                if all(holds(v) for _, _, v in samples[i:i + confirm]):
                    return samples[i][1] - after
            if time.monotonic() > end:
                return None
            time.sleep(0.01)


class ConnectProber:
    """TCP connections from a pod's network namespace (``nsenter -t PID -n``) to *host*:*port*, back to back from
    two threads in a process of its own; (start, connected) of each attempt on the monotonic clock."""

    def __init__(self, netns_pid: int, host: str, port: int) -> None:
        self.log: list[tuple[float, bool]] = []
        self._proc = subprocess.Popen(["nsenter", "-t", str(netns_pid), "-n", sys.executable, "-S", "-c", PROBER,
                                       host, str(port), "2"], stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            t, ok = line.split()
            self.log.append((float(t), ok == "1"))

    def close(self) -> None:
        """Stop the prober."""
        self._proc.kill()
        self._proc.wait(10)

    def first(self, after: float, connected: bool, run: int, deadline_s: float = 60.0) -> float | None:
        """Seconds from *after* to the start of the first attempt started after it with outcome *connected*
        followed by ``run - 1`` more with the same outcome."""
        end = after + deadline_s
        while True:
            log = sorted(e for e in list(self.log) if e[0] >= after)
            for i in range(len(log) - run + 1):
                if all(ok == connected for _, ok in log[i:i + run]):
                    return log[i][0] - after
            if time.monotonic() > end:
                return None
            time.sleep(0.01)


# --- the cluster seen from this machine -------------------------------------------------------------------------

class Bench:
    """The running cluster as the measurements see it: its folder, configuration, real node and passwords."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.layout = json.loads((directory / cluster.STATE_FILE).read_text())
        self.cfg = cluster.configuration_of(self.layout)
        self.node = realnode.RealNode(**self.layout["real_nodes"][0])
        self.passwords = json.loads((directory / "postgres-passwords.json").read_text())

    def pod(self, name: str, namespace: str = NS) -> dict[str, Any]:
        """The pod as the API has it now."""
        return api.call_json("reading pod", api.core_v1(self.cfg).read_namespaced_pod, name, namespace)

    def sql(self, ip: str, query: str) -> Any:
        """The first column of *query*'s first row, as the superuser on PostgreSQL at *ip* (a new connection)."""
        import psycopg

        with psycopg.connect(host=ip, port=5432, user="postgres", password=self.passwords["superuser"],
                             dbname="postgres", connect_timeout=2) as conn:
            row = conn.execute(query).fetchone()
        return row[0] if row else None

    def members(self) -> list[dict[str, Any]]:
        """Patroni's members (its REST API through the cluster's forwarder)."""
        with urllib.request.urlopen(f"http://{ADDRESS}:8008/cluster", timeout=3) as r:
            return json.loads(r.read())["members"]

    def settled(self, timeout_s: float = 600.0) -> tuple[str, str]:
        """(leader pod, replica pod) once Patroni has a leader and a synchronous standby without lag (the only
        member that may take over in synchronous mode), both pods are Ready and both answer SQL."""
        end = time.monotonic() + timeout_s
        why = ""
        while time.monotonic() < end:
            try:
                members = self.members()
                leaders = [m for m in members if m["role"] in ("leader", "master")]
                others = [m for m in members if m["role"] == "sync_standby" and m["state"] in ("streaming", "running")
                          and not m.get("lag")]
                pods = [self.pod(f"postgres-{i}") for i in range(REPLICAS)]
                if len(leaders) == 1 and len(others) == REPLICAS - 1 and all(_ready(p) for p in pods) \
                        and all(self.sql(p["status"]["podIP"], "SELECT 1") == 1 for p in pods) \
                        and leaders[0]["state"] == "running":
                    return leaders[0]["name"], others[0]["name"]
                why = f"members {members}, ready {[_ready(p) for p in pods]}"
            except Exception as exc:  # noqa: BLE001 - anything not settled yet is retried until the deadline
                why = str(exc)
            time.sleep(0.5)
        raise RuntimeError(f"the Patroni cluster did not settle within {timeout_s:g} s: {why}")

    def pod_cgroups(self, uid: str) -> list[Path]:
        """The pod's cgroup folders (``pod<uid>``) in every hierarchy of the node."""
        found: list[Path] = []
        for top in realnode.cgroup_dirs(self.node):
            found += [Path(d) for d, _, _ in os.walk(top) if Path(d).name == f"pod{uid}"]
        return found


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pids_in(folders: list[Path]) -> list[int]:
    """Every process in the cgroup folders and below them (none once they are gone)."""
    pids: set[int] = set()
    for top in folders:
        for d, _, _ in os.walk(top):
            try:
                pids.update(int(p) for p in (Path(d) / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
    return sorted(pids)


def commands(pids: list[int]) -> dict[int, str]:
    """pid -> command line, of the processes still there."""
    out = {}
    for pid in pids:
        argv = argv_of(pid)
        if argv:
            out[pid] = " ".join(argv)
    return out


def rss_mb(pids: list[int]) -> float:
    """The summed VmRSS of *pids*, in MB."""
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return round(total / 1024, 1)


# --- node and pods -----------------------------------------------------------------------------------------------

def _watch_up(directory: Path, stop: threading.Event, seen: dict[str, float]) -> None:
    """While ``up`` runs: kubelet's start, the Node Ready, the StatefulSet first seen and Ready (boot-time clock)."""
    ctx: ssl.SSLContext | None = None
    token = ""

    def get(path: str) -> dict[str, Any] | None:
        req = urllib.request.Request(f"https://{ADDRESS}:6443{path}", headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=2, context=ctx) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError:
            return None

    while not stop.is_set():
        try:
            pki = Pki(directory / "pki")
            if ctx is None and pki.ca_crt.exists() and (directory / "tokens.csv").exists():
                ctx = ssl.create_default_context(cafile=str(pki.ca_crt))
                token = (directory / "tokens.csv").read_text().split(",", 1)[0]
            if "kubelet_start" not in seen and (directory / cluster.STATE_FILE).exists():
                node = realnode.RealNode(**json.loads((directory / cluster.STATE_FILE).read_text())["real_nodes"][0])
                kubelets = [p for p in pids_under(node.kubelet.dir) if "kubelet" in " ".join(argv_of(p)[:1])]
                if kubelets:
                    seen["kubelet_start"] = start_time(min(kubelets)) / CLK_TCK
            if ctx is not None and "kubelet_start" in seen and "node_ready" not in seen:
                node_obj = get("/api/v1/nodes/real-node-0")
                if node_obj and _ready(node_obj):
                    seen["node_ready"] = boottime()
            if ctx is not None and "sts_ready" not in seen:
                sts = get(f"/apis/apps/v1/namespaces/{NS}/statefulsets/postgres")
                if sts is not None:
                    seen.setdefault("sts_created", boottime())
                    if ((sts.get("status") or {}).get("readyReplicas") or 0) >= REPLICAS:
                        seen["sts_ready"] = boottime()
        except (OSError, ValueError, KeyError, IndexError):
            pass
        stop.wait(0.05)


def measure_up(directory: Path, bin_dir: str | None) -> dict[str, Any]:
    """One ``up`` with the watcher of :func:`_watch_up` beside it."""
    seen: dict[str, float] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_up, args=(directory, stop, seen), daemon=True)
    load = load1()
    watcher.start()
    t0, boot0 = time.monotonic(), boottime()
    try:
        cluster.up(directory, "benchreal", address=ADDRESS, nodes=0, workload_names=["postgres"], replicas=REPLICAS,
                   bin_dir=bin_dir, timeout=600, real_nodes=1)
        up_s = time.monotonic() - t0
        done = boottime()
    finally:
        stop.set()
        watcher.join(10)
    api.reset_clients()
    missing = [k for k in ("kubelet_start", "node_ready", "sts_created", "sts_ready") if k not in seen]
    if missing:
        raise RuntimeError(f"the watcher of up did not see {', '.join(missing)}")
    return {"up_s": round(up_s, 2), "node_ready_s": round(seen["node_ready"] - seen["kubelet_start"], 2),
            "statefulset_ready_s": round(seen["sts_ready"] - seen["sts_created"], 2),
            "kubelet_started_after_s": round(seen["kubelet_start"] - boot0, 2),
            "after_statefulset_ready_s": round(done - seen["sts_ready"], 2), "load1": load}


def memory(b: Bench) -> dict[str, Any]:
    """Resident memory of kubelet, containerd, each shim and each pod of the real node."""
    procs = realnode.node_processes(b.node)
    pods = api.call_json("listing pods", api.core_v1(b.cfg).list_pod_for_all_namespaces,
                         field_selector=f"spec.nodeName={b.node.name}")
    per_pod = {}
    for p in pods.get("items") or []:
        meta = p["metadata"]
        per_pod[f"{meta['namespace']}/{meta['name']}"] = rss_mb(pids_in(b.pod_cgroups(meta["uid"])))
    kubelet, containerd = rss_mb(procs["kubelet"]), rss_mb(procs["containerd"])
    shims = [rss_mb([s]) for s in procs["shims"]]
    pods_total = round(sum(per_pod.values()), 1)
    return {"kubelet": kubelet, "containerd": containerd, "shims": shims, "shims_total": round(sum(shims), 1),
            "pods": per_pod, "pods_total": pods_total,
            "pods_vs_kubelet_and_containerd": round(pods_total / (kubelet + containerd), 2), "load1": load1()}


# --- the peer: the API's own round trip ---------------------------------------------------------------------------

def api_round_trip(b: Bench, name: str) -> dict[str, float]:
    """A ConfigMap created and read back, then deleted and read until the API says it is gone."""
    core = api.core_v1(b.cfg)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    t0 = time.monotonic()
    api.call_json("creating ConfigMap", core.create_namespaced_config_map, "default", body)
    api.call_json("reading ConfigMap", core.read_namespaced_config_map, name, "default")
    created = time.monotonic() - t0
    t1 = time.monotonic()
    api.call_json("deleting ConfigMap", core.delete_namespaced_config_map, name, "default")
    while True:
        try:
            api.call_json("reading ConfigMap", core.read_namespaced_config_map, name, "default")
        except api.K8sApiError as e:
            if e.status == 404:
                break
            raise
        time.sleep(0.01)
    return {"create_read_s": created, "delete_gone_s": time.monotonic() - t1, "load1": load1()}


# --- the faults ---------------------------------------------------------------------------------------------------

def _create(b: Bench, kind: str, name: str, spec: dict[str, Any], role: str) -> tuple[float, float]:
    """``create_chaos`` aimed at *role* (returns once Chaos Mesh reports it injected); the monotonic time of the
    call and how long it took."""
    t0 = time.monotonic()
    cm.create_chaos(kind=kind, name=name, namespace=NS, spec={"mode": "all", "selector": {"namespaces": [NS]}, **spec},
                    target={"role": role, "namespace": NS}, configuration=b.cfg)
    return t0, time.monotonic() - t0


def _delete(b: Bench, kind: str, name: str) -> tuple[float, float]:
    """``delete_chaos`` (waits until the object is gone); the monotonic time of the call and how long it took."""
    t1 = time.monotonic()
    cm.delete_chaos(kind, name, NS, configuration=b.cfg)
    return t1, time.monotonic() - t1


def _need(value: float | None, what: str) -> float:
    if value is None:
        raise RuntimeError(f"{what} was not observed within the deadline")
    return value


def pod_kill(b: Bench, name: str) -> dict[str, Any]:
    """PodChaos pod-kill of the primary (see the module's documentation)."""
    leader, replica = b.settled()
    uid = b.pod(leader)["metadata"]["uid"]
    folders = b.pod_cgroups(uid)

    def container_pids() -> list[int]:
        return [p for p, c in commands(pids_in(folders)).items() if c != "/pause"]

    def api_view() -> tuple[str, bool]:
        """The killed pod as the API sees it (present, terminating, gone) and whether its replacement is Ready."""
        try:
            p = b.pod(leader)
        except api.K8sApiError as e:
            if e.status == 404:
                return "gone", False
            raise
        if p["metadata"]["uid"] != uid:
            return "gone", _ready(p)
        return ("terminating" if p["metadata"].get("deletionTimestamp") else "present"), False

    def new_primary() -> str | None:
        """The pod, other than the killed one, whose PostgreSQL answers as a primary (None: none does)."""
        pods = api.call_json("listing pods", api.core_v1(b.cfg).list_namespaced_pod, NS)["items"]
        for p in pods:
            ip = (p.get("status") or {}).get("podIP")
            if p["metadata"]["uid"] != uid and ip:
                try:
                    if b.sql(ip, "SELECT NOT pg_is_in_recovery()") is True:
                        return str(p["metadata"]["name"])
                except Exception:  # noqa: BLE001 - not answering (yet) is what is watched
                    continue
        return None

    assert container_pids(), f"no process in pod {leader}'s cgroup"
    load = load1()
    with Watch(container_pids, PROC_POLL_S) as procs, Watch(new_primary, SQL_POLL_S) as promoted, \
            Watch(api_view, SQL_POLL_S) as seen:
        t0, create_s = _create(b, "PodChaos", name, {"action": "pod-kill"}, "patroni-primary")
        effect = _need(procs.first(t0, lambda v: v == []), "the pod's processes gone")
        failover = _need(promoted.first(t0, lambda v: isinstance(v, str), 120), "a new primary")
        deleted = seen.first(t0, lambda v: isinstance(v, tuple) and v[0] != "present")
        replaced = _need(seen.first(t0, lambda v: isinstance(v, tuple) and v[1], 300), "the replacement pod Ready")
        _, delete_s = _delete(b, "PodChaos", name)
        new = next(v for t, _, v in promoted.samples if t >= t0 and isinstance(v, str))
    return {"target": leader, "effect_s": effect, "pod_deleted_in_api_s": deleted, "failover_s": failover,
            "new_primary": new,
            "new_primary_is": "the replica" if new == replica else "the replacement pod of the killed primary",
            "replacement_ready_s": replaced, "create_call_s": create_s, "delete_call_s": delete_s, "load1": load}


def container_kill(b: Bench, name: str) -> dict[str, Any]:
    """PodChaos container-kill of the primary's ``postgres`` container (see the module's documentation)."""
    leader, _ = b.settled()
    folders = b.pod_cgroups(b.pod(leader)["metadata"]["uid"])

    def patroni() -> list[int]:
        return [p for p, c in commands(pids_in(folders)).items() if "bin/patroni" in c]

    old, (_, restarts, _) = patroni(), _postgres_container(b, leader)
    assert old, f"no Patroni process in pod {leader}"
    load, log_at = load1(), _log_size(b)
    with Watch(patroni, PROC_POLL_S) as procs, Watch(lambda: _postgres_container(b, leader), SQL_POLL_S) as state:
        t0, create_s = _create(b, "PodChaos", name, {"action": "container-kill", "containerNames": ["postgres"]},
                               "patroni-primary")
        effect = _need(procs.first(t0, lambda v: isinstance(v, list) and not set(old) & set(v)), "Patroni gone")
        restarted = _need(procs.first(t0, lambda v: isinstance(v, list) and bool(set(v) - set(old)), 120),
                          "a new Patroni process")
        counted = _need(state.first(t0, lambda v: isinstance(v, tuple) and v[1] > restarts, 120), "restartCount up")
        ready = _need(state.first(t0, lambda v: isinstance(v, tuple) and v[1] > restarts and v[2], 300),
                      "the container Ready again")
        _, delete_s = _delete(b, "PodChaos", name)
    return {"target": leader, "effect_s": effect, "restarted_s": restarted, "restart_count_up_s": counted,
            "ready_again_s": ready, "restarts_before": restarts, "kubelet_backoff": _backoffs(b, log_at, leader),
            "create_call_s": create_s, "delete_call_s": delete_s, "load1": load}


def pod_failure(b: Bench, name: str) -> dict[str, Any]:
    """PodChaos pod-failure of a replica (see the module's documentation)."""
    _, replica = b.settled()
    pod = b.pod(replica)
    folders, ip = b.pod_cgroups(pod["metadata"]["uid"]), pod["status"]["podIP"]

    def database() -> list[int]:
        return [p for p, c in commands(pids_in(folders)).items() if "postgres" in c or "patroni" in c]

    own, restarts, _ = _postgres_container(b, replica)
    load = load1()
    with Watch(database, PROC_POLL_S) as procs, Watch(lambda: b.sql(ip, "SELECT 1") == 1, SQL_POLL_S) as answers, \
            Watch(lambda: _postgres_container(b, replica), SQL_POLL_S) as spec:
        t0, create_s = _create(b, "PodChaos", name, {"action": "pod-failure", "duration": "120s"}, "patroni-replica")
        effect = _need(procs.first(t0, lambda v: v == []), "PostgreSQL and Patroni gone")
        during, state = _failed_container(b, replica)
        log_at = _log_size(b)
        t1, delete_s = _delete(b, "PodChaos", name)
        gone = _need(answers.first(t1, lambda v: v is True, 300), "PostgreSQL answering again")
        processes_back = procs.first(t1, lambda v: isinstance(v, list) and bool(v), 300)
        replaced = spec.first(t0, lambda v: isinstance(v, tuple) and v[0] != own)
        restored = spec.first(t1, lambda v: isinstance(v, tuple) and v[0] == own)
    return {"target": replica, "effect_s": effect, "image_replaced_in_api_s": replaced, "gone_s": gone,
            "image_restored_in_api_s": restored, "processes_back_s": processes_back, "restarts_before": restarts,
            "kubelet_backoff": _backoffs(b, log_at, replica),
            "image_during": during, "container_state_during": state, "create_call_s": create_s,
            "delete_call_s": delete_s, "load1": load}


def _postgres_container(b: Bench, pod: str) -> tuple[str, int, bool]:
    """The pod's ``postgres`` container: its image in the spec, its restartCount, whether it is Ready."""
    p = b.pod(pod)
    image = str(next(c["image"] for c in p["spec"]["containers"] if c["name"] == "postgres"))
    statuses = (p.get("status") or {}).get("containerStatuses") or []
    status: dict[str, Any] = next((s for s in statuses if s["name"] == "postgres"), {})
    return image, int(status.get("restartCount") or 0), bool(status.get("ready"))


def _log_size(b: Bench) -> int:
    """How far kubelet's log goes now."""
    return os.path.getsize(b.node.kubelet.log)


def _backoffs(b: Bench, since: int, pod: str) -> list[str]:
    """The restart back-offs kubelet logged for *pod*'s ``postgres`` container since offset *since* of its log
    (``CrashLoopBackOff: back-off 10s restarting failed container=postgres pod=<pod>_...``), e.g. ``["10s"]``."""
    with open(b.node.kubelet.log, "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    return sorted(set(re.findall(rf"back-off (\S+) restarting failed container=postgres pod={re.escape(pod)}_", text)))


def _failed_container(b: Bench, pod: str, wait_s: float = 5.0) -> tuple[str, dict[str, Any]]:
    """The image the pod's ``postgres`` container is given during a pod-failure, and its state once the kubelet
    has acted on it (not running any more, or *wait_s* passed)."""
    end = time.monotonic() + wait_s
    while True:
        p = b.pod(pod)
        image = next(c["image"] for c in p["spec"]["containers"] if c["name"] == "postgres")
        state: dict[str, Any] = next((s.get("state") or {} for s in (p["status"].get("containerStatuses") or [])
                                      if s["name"] == "postgres"), {})
        if "running" not in state or time.monotonic() > end:
            return image, state
        time.sleep(0.1)


def stress(b: Bench, name: str, which: str) -> dict[str, Any]:
    """StressChaos *which* (cpu on the primary, memory on a replica): stress-ng / memStress in the pod's cgroup."""
    leader, replica = b.settled()
    target = leader if which == "cpu" else replica
    folders = b.pod_cgroups(b.pod(target)["metadata"]["uid"])
    stressor = {"cpu": {"workers": 1, "load": 50}} if which == "cpu" else {"memory": {"workers": 1, "size": "64MB"}}

    def stressors() -> list[int]:
        return [p for p, c in commands(pids_in(folders)).items() if "stress-ng" in c or "memStress" in c]

    assert not stressors(), f"stress processes in pod {target} before the fault"
    load = load1()
    with Watch(stressors, PROC_POLL_S) as procs:
        t0, create_s = _create(b, "StressChaos", name, {"duration": "120s", "stressors": stressor},
                               "patroni-primary" if which == "cpu" else "patroni-replica")
        effect = _need(procs.first(t0, lambda v: isinstance(v, list) and bool(v)), "a stress process in the pod")
        time.sleep(0.3)
        t1, delete_s = _delete(b, "StressChaos", name)
        gone = _need(procs.first(t1, lambda v: v == []), "no stress process left")
    return {"target": target, "effect_s": effect, "gone_s": gone, "create_call_s": create_s,
            "delete_call_s": delete_s, "load1": load}


def partition(b: Bench, name: str) -> dict[str, Any]:
    """NetworkChaos partition of the primary from the replica, both directions (see the module's documentation)."""
    leader, replica = b.settled()
    pods = {p: b.pod(p) for p in (leader, replica)}
    sandbox = {p: next(pid for pid, c in commands(pids_in(b.pod_cgroups(pods[p]["metadata"]["uid"]))).items()
                       if c == "/pause") for p in pods}
    probers = [ConnectProber(sandbox[leader], pods[replica]["status"]["podIP"], 5432),
               ConnectProber(sandbox[replica], pods[leader]["status"]["podIP"], 5432)]
    spec = {"action": "partition", "direction": "both",
            "target": {"mode": "all", "selector": {"namespaces": [NS],
                                                   "labelSelectors": {"statefulset.kubernetes.io/pod-name": replica}}}}
    load = load1()
    try:
        time.sleep(0.3)
        before = time.monotonic() - 0.25
        assert all(pr.first(before, True, 1, 5) is not None for pr in probers), "the pods do not reach each other"
        t0, create_s = _create(b, "NetworkChaos", name, spec, "patroni-primary")
        cut = [_need(pr.first(t0, False, 3), "a direction cut") for pr in probers]
        time.sleep(0.3)
        t1, delete_s = _delete(b, "NetworkChaos", name)
        healed = [_need(pr.first(t1, True, 1), "a direction healed") for pr in probers]
    finally:
        for pr in probers:
            pr.close()
    return {"target": f"{leader}<->{replica}", "effect_s": max(cut), "gone_s": max(healed),
            "each_direction": {"primary->replica": [round(cut[0], 3), round(healed[0], 3)],
                               "replica->primary": [round(cut[1], 3), round(healed[1], 3)]},
            "create_call_s": create_s,
            "delete_call_s": delete_s,
            "load1": load}


def time_skew(b: Bench, name: str) -> dict[str, Any]:
    """TimeChaos -10m on a replica, read through PostgreSQL's clock_timestamp()."""
    _, replica = b.settled()
    pod = b.pod(replica)
    ip, folders = pod["status"]["podIP"], b.pod_cgroups(pod["metadata"]["uid"])

    def skew() -> float:
        return float(b.sql(ip, "SELECT extract(epoch FROM clock_timestamp())")) - time.time()

    def postmaster() -> list[int]:
        """PostgreSQL's postmaster in the pod (a process exec'd after the injection has the real clock again)."""
        return [p for p, c in commands(pids_in(folders)).items() if c.startswith(f"{POSTGRES_BIN} ")]

    before = postmaster()
    load = load1()
    with Watch(skew, SQL_POLL_S) as clock:
        t0, create_s = _create(b, "TimeChaos", name,
                               {"timeOffset": "-10m", "clockIds": ["CLOCK_REALTIME"], "duration": "120s"},
                               "patroni-replica")
        effect = clock.first(t0, lambda v: isinstance(v, float) and v < -590)
        if effect is None:
            seen = [v if isinstance(v, float) else repr(v) for _, _, v in clock.samples[-3:]]
            raise RuntimeError(f"the skewed clock was not observed within the deadline on {replica} (last skews "
                               f"seen: {seen}; the postmaster's pid before the create {before}, now {postmaster()})")
        time.sleep(0.3)
        t1, delete_s = _delete(b, "TimeChaos", name)
        gone = _need(clock.first(t1, lambda v: isinstance(v, float) and abs(v) < 5), "the clock back")
    return {"target": replica, "effect_s": effect, "gone_s": gone, "postmaster_before": before,
            "postmaster_after": postmaster(), "create_call_s": create_s, "delete_call_s": delete_s, "load1": load}


#: kind -> (what is measured instead of "gone" for one-shot kills, or None, the measurement)
FAULTS: dict[str, tuple[str | None, Callable[[Bench, str], dict[str, Any]]]] = {
    "PodChaos pod-kill": ("replacement_ready_s", pod_kill),
    "PodChaos container-kill": ("ready_again_s", container_kill),
    "PodChaos pod-failure": (None, pod_failure),
    "StressChaos cpu": (None, lambda b, n: stress(b, n, "cpu")),
    "StressChaos memory": (None, lambda b, n: stress(b, n, "memory")),
    "NetworkChaos partition": (None, partition),
    "TimeChaos": (None, time_skew),
}


def summarise_kind(samples: list[dict[str, Any]], instead: str | None, peer: dict[str, float]) -> dict[str, Any]:
    """Median/max per figure, ratios to the API round trip, the 2 s target per direction."""
    ok = [s for s in samples if "error" not in s]
    figures = sorted({k for s in ok for k, v in s.items() if k.endswith("_s") and isinstance(v, float)})
    out: dict[str, Any] = {k: spread([s[k] for s in ok if s.get(k) is not None]) for k in figures}
    if any("restarts_before" in s for s in ok):  # kubelet's restart back-off grows with a container's restarts
        first = [s for s in ok if s.get("restarts_before") == 0]
        out["runs_on_a_container_restarted_before"] = len(ok) - len(first)
        out["first_restart_of_the_container"] = {k: spread([s[k] for s in first if s.get(k) is not None])
                                                 for k in figures if k not in ("create_call_s", "delete_call_s")}
    out["errors"] = [s["error"] for s in samples if "error" in s]
    out["targets"] = sorted({s["target"] for s in ok})
    out["load1"] = [s["load1"] for s in samples if "load1" in s]
    effect = out.get("effect_s", {}).get("median")
    back = out.get("gone_s", {}).get("median")
    worst_effect = out.get("effect_s", {}).get("max")
    worst_back = out.get("gone_s", {}).get("max")
    out["gone"] = "measured" if instead is None else f"not applicable to a one-shot kill: {instead} instead"
    out["effect_vs_api_create"] = round(effect / peer["create_read_s"], 1) if effect is not None else None
    out["gone_vs_api_delete"] = round(back / peer["delete_gone_s"], 1) if back is not None else None
    clean = not out["errors"]
    out["meets_target"] = {"effect": effect is not None and effect <= TARGET_S,
                           "gone": None if instead is not None else back is not None and back <= TARGET_S,
                           "effect_every_run": clean and worst_effect is not None and worst_effect <= TARGET_S,
                           "gone_every_run": None if instead is not None
                           else clean and worst_back is not None and worst_back <= TARGET_S}
    if instead is not None:
        median = out.get(instead, {}).get("median")
        out["meets_target"][instead] = median is not None and median <= TARGET_S
    return out


def diagnosis(b: Bench) -> dict[str, Any]:
    """After a failed measurement: the chaos objects in the namespace as Chaos Mesh reports them (records,
    failures) and the database pods' containers (restarts, state)."""
    out: dict[str, Any] = {"chaos": [], "pods": {}}
    try:
        custom = api.custom_objects(b.cfg)
        for kind in ("PodChaos", "StressChaos", "NetworkChaos", "TimeChaos"):
            out["chaos"] += [summarise(o) for o in list_objects(custom, kind, NS)]
        for i in range(REPLICAS):
            pod = b.pod(f"postgres-{i}")
            out["pods"][pod["metadata"]["name"]] = [
                {"restarts": s.get("restartCount"), "state": s.get("state"), "last": s.get("lastState")}
                for s in (pod.get("status") or {}).get("containerStatuses") or []]
        daemons = api.call_json("listing chaos-daemon", api.core_v1(b.cfg).list_namespaced_pod, "chaos-mesh")
        for d in daemons.get("items") or []:
            text = api.call("reading chaos-daemon's log", api.core_v1(b.cfg).read_namespaced_pod_log,
                            d["metadata"]["name"], "chaos-mesh", tail_lines=30)
            out["chaos_daemon_log"] = str(text).splitlines()
    except ChaosDBError as exc:
        out["error"] = str(exc)
    return out


def run_faults(b: Bench, repeat: int) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, float]]]:
    """``repeat`` rounds of every fault kind, with the API round trip at the start of each round."""
    samples: dict[str, list[dict[str, Any]]] = {k: [] for k in FAULTS}
    peers = []
    for r in range(repeat):
        b.settled()
        peers.append(api_round_trip(b, f"bench-peer-{r}"))
        for kind, (_, measure) in FAULTS.items():
            name = f"bench-{kind.lower().replace(' ', '-')}-{r}"
            try:
                samples[kind].append(measure(b, name))
            except Exception as exc:  # noqa: BLE001 - one failed measurement is reported, the others still run
                samples[kind].append({"error": f"{type(exc).__name__}: {exc}", "load1": load1(),
                                      "diagnosis": diagnosis(b)})
                try:
                    cm.delete_all_chaos(NS, configuration=b.cfg, timeout_s=120)
                except ChaosDBError as cleanup:
                    samples[kind][-1]["cleanup_error"] = str(cleanup)
            print(f"round {r + 1}/{repeat} {kind}: {samples[kind][-1]}", file=sys.stderr, flush=True)
    return samples, peers


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module's documentation)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=None, help="folder with kube-apiserver, kubelet, chaos-daemon, ...")
    ap.add_argument("--repeat", type=int, default=5, help="rounds of faults (and starts of the apiserver alone)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root (a real node runs containerd and kubelet)", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="chaosdb-bench-realnode-"))
    directory = root / "kube"
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "repeat": args.repeat, "address": ADDRESS,
                              "host": {"cpus": os.cpu_count(), "kernel": os.uname().release,
                                       "netem": netem_available(), "load1_before": load1()},
                              "target_s": TARGET_S}
    try:
        alones = [apiserver_alone(args.bin_dir, root, ADDRESS) for _ in range(args.repeat)]
        up = measure_up(directory, args.bin_dir)
        b = Bench(directory)
        mem = memory(b)
        samples, peers = run_faults(b, args.repeat)
        peer = {k: statistics.median(p[k] for p in peers) for k in ("create_read_s", "delete_gone_s")}
        faults = {kind: {**summarise_kind(samples[kind], instead, peer), "samples": samples[kind]}
                  for kind, (instead, _) in FAULTS.items()}
        failovers = [s["failover_s"] for s in samples["PodChaos pod-kill"] if "failover_s" in s]
        result["node_and_pods"] = {
            **up, "apiserver_alone_s": spread(alones),
            "up_vs_apiserver_alone": round(up["up_s"] / statistics.median(alones), 1),
            "failover_s": spread(failovers), "memory_mb": mem}
        result["api_round_trip_s"] = {"create_read": spread([p["create_read_s"] for p in peers]),
                                      "delete_gone": spread([p["delete_gone_s"] for p in peers]),
                                      "load1": [p["load1"] for p in peers]}
        result["faults"] = faults
        # by the medians; a one-shot kill by its effect alone (its "instead" figure is reported beside it)
        result["meet_the_2s_target"] = sorted(k for k, f in faults.items() if f["meets_target"]["effect"]
                                              and f["meets_target"]["gone"] in (True, None))
        result["miss_the_2s_target"] = sorted(k for k in faults if k not in result["meet_the_2s_target"])
        result["with_failed_measurements"] = sorted(k for k, f in faults.items() if f["errors"])
        result["refused_here"] = ([] if result["host"]["netem"] else
                                  ["NetworkChaos delay/loss/duplicate/corrupt (no netem on this kernel)"]) + [
            "IOChaos (no toda in the local chaos-daemon image)"]
        result["host"]["load1_after"] = load1()
    finally:
        left: list[str] = []
        if (directory / cluster.STATE_FILE).exists():
            try:
                cm.delete_all_chaos(NS, configuration=cluster.configuration_of(
                    json.loads((directory / cluster.STATE_FILE).read_text())), timeout_s=120)
            except ChaosDBError as exc:
                left.append(f"chaos objects: {exc}")
            cluster.down(directory, purge=True)
        if pids_under(root):
            left.append(f"processes {pids_under(root)}")
        shutil.rmtree(root, ignore_errors=True)
        if left:
            print("left behind: " + "; ".join(left), file=sys.stderr)
    print(json.dumps(result, indent=1))
    path = Path(__file__).with_name(f"results-k8s_real_node-{result['date']}.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
