"""Benchmark: how soon a local fault is in effect after its action is called, and gone after its revert is called,
measured by the traffic or the process itself, not by when the call returns.

On an embedded cluster at 127.0.0.81-83, for each fault ``--cycles`` times (median reported, target 50 ms):

* partition, loss, bursty loss (``scope=clients``, ``direction=inbound``, a replica): four prober threads send
  SYNs back to back to a closed port of the node's address (a refusal means the packets pass; no answer within 20 ms
  means they were dropped); in effect = the start of the first attempt that gets no answer after the call, gone =
  the start of the first one answered after the revert call (loss 99.9 %, bursty loss 99.9 % in bursts of 1000
  packets: nearly every SYN is dropped);
* bandwidth (8 kbit/s on the replica's traffic with clients): four prober threads fetch 1200 bytes back to back
  from a small sender running as the node's user on its address (not from the cluster's servers, which the action
  asks too), each giving up after 50 ms; in effect = the start of the first transfer not done within 50 ms (at
  8 kbit/s one takes over a second once the class's 4 KiB bucket is spent; unshaped well under a millisecond),
  gone = the first one done in time after the revert call;
* delay (the TCP proxy, 200 ms on the PostgreSQL port): one prober thread's new connections each send PostgreSQL's SSLRequest and read
  its one-byte answer; in effect = the first round trip over 150 ms;
* suspend: the node's postmaster polled in ``/proc`` every millisecond; in effect = state ``T``;
* cpu: a spinning process (a ``{"pids": [...]}`` target) stamps the time in a tight loop into shared memory; in effect = the
  first gap over 20 ms (its quota 1 ms per 100 ms), gone = the first stretch without one after the revert call.

Every time is from the start of the call. Prints JSON and writes it to ``--out``. Needs root and iptables; removes
everything it created. Usage: ``python benchmarks/fault_latency.py [--cycles 20]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fault_bench_cluster import benchmark_cluster, write_result  # noqa: E402
from chaosdb.clusters.postgres_ha import cluster  # noqa: E402
from chaosdb.faults import actions, probes  # noqa: E402

ADDRESS_BASE = "127.0.0.81"
SENDER_PORT = 18099
SSL_REQUEST = (8).to_bytes(4, "big") + (80877103).to_bytes(4, "big")


class Prober:
    """Runs *attempt* back to back in *threads* threads of a process of its own (the action under test keeps this
    process and its interpreter lock to itself); an attempt the fault holds up blocks only its own thread, so the
    others see the change soon after it happens. Keeps (start, ok) of each attempt, on the system's monotonic
    clock."""

    def __init__(self, attempt: Callable[[], bool], threads: int = 4, stagger_s: float = 0.005) -> None:
        self.attempt, self.threads, self.stagger_s = attempt, threads, stagger_s
        self.log: list[tuple[float, bool]] = []
        ctx = multiprocessing.get_context("fork")
        self._queue, self._stop = ctx.SimpleQueue(), ctx.Event()
        self._proc = ctx.Process(target=self._main, daemon=True)

    def _main(self) -> None:
        def run() -> None:
            while not self._stop.is_set():
                t = time.monotonic()
                ok = self.attempt()
                self._queue.put((t, ok))
                # fast attempts 1 ms apart; after one the fault held up, a random pause keeps the threads interleaved
                time.sleep(0.001 if ok else random.uniform(0, self.stagger_s * self.threads))

        workers = []
        for _ in range(self.threads):  # started a timeout / threads apart, so that their attempts stay interleaved
            workers.append(threading.Thread(target=run, daemon=True))
            workers[-1].start()
            time.sleep(self.stagger_s)
        for w in workers:
            w.join()

    def __enter__(self) -> Prober:
        self._proc.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()

    def _drain(self) -> None:
        while not self._queue.empty():
            self.log.append(self._queue.get())

    def first(self, after: float, ok: bool, deadline_s: float = 10.0) -> float | None:
        """Seconds from *after* to the start of the first attempt that started after it with outcome *ok*."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            self._drain()
            hits = [t for t, result in self.log if t >= after and result == ok]
            if hits:
                return min(hits) - after
            time.sleep(0.002)
        return None


def reaches(host: str, port: int = 9) -> Callable[[], bool]:
    """A SYN to a closed port of the node's address: refused (a RST came back) or accepted means the packets pass,
    no answer within 20 ms means they are dropped. No server is asked, so the prober loads nothing."""
    def attempt() -> bool:
        try:
            socket.create_connection((host, port), timeout=0.02).close()
            return True
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
    return attempt


#: a server that sends 1200 bytes to whoever connects, run as a node's user so that the node's shaping applies to it
#: (the prober asks it, not the cluster's own servers, which the action under test asks too)
SENDER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(128)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b"x" * 1200)
    except OSError:
        pass
    c.close()
"""


def start_sender(host: str, port: int, uid: int, cwd: str) -> subprocess.Popen:
    # in the node's folder: a process of the node's user elsewhere would make the fault refuse (it could not tell
    # the node's traffic from that process's)
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable  # one the user may run
    proc = subprocess.Popen([python, "-c", SENDER, host, str(port)], user=uid, cwd=cwd)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the sender did not start")


def fast_transfer(host: str, port: int, limit_s: float = 0.05) -> Callable[[], bool]:
    def attempt() -> bool:  # 1200 bytes not all in within the limit is a slow transfer: given up, not waited for
        t = time.perf_counter()
        got = 0
        try:
            with socket.create_connection((host, port), timeout=limit_s) as c:
                while got < 1200:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    got += len(chunk)
        except OSError:
            return False
        return got >= 1200 and time.perf_counter() - t < limit_s
    return attempt


def fast_ssl_request(host: str, port: int, limit_s: float = 0.15) -> Callable[[], bool]:
    def attempt() -> bool:
        t = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(SSL_REQUEST)
                s.recv(1)
        except OSError:
            return False
        return time.perf_counter() - t < limit_s
    return attempt


def _spin(stamp: Any) -> None:
    os.setsid()
    while True:
        stamp.value = time.perf_counter()


def measure(inject: Callable[[], Any], prober_args: tuple[Callable[[], bool], int, float],
            cfg: dict[str, Any]) -> tuple[float, float]:
    with Prober(*prober_args) as prober:
        time.sleep(0.1)
        t0 = time.monotonic()
        inject()
        on = prober.first(t0, False)
        time.sleep(0.05)  # every prober thread blocked by the fault before it is reverted
        t1 = time.monotonic()
        actions.revert_faults(configuration=cfg)
        off = prober.first(t1, True)
    if on is None or off is None:
        raise RuntimeError(f"the fault never showed in the traffic (in effect {on}, gone {off})")
    return on, off


def measure_suspend(layout: Any, name: str, cfg: dict[str, Any]) -> tuple[float, float]:
    from chaosdb.core.processes import proc_state
    from chaosdb.embedded.processes import postmaster_pid

    node = layout.node(name)
    pid = postmaster_pid(node.data_dir)
    t0 = time.perf_counter()
    threading.Thread(target=lambda: actions.suspend_processes(target=name, configuration=cfg)).start()
    while proc_state(pid) != "T":
        time.sleep(0.0005)
    on = time.perf_counter() - t0
    time.sleep(0.05)
    t1 = time.perf_counter()
    threading.Thread(target=lambda: actions.revert_faults(configuration=cfg)).start()
    while proc_state(pid) == "T":
        time.sleep(0.0005)
    return on, time.perf_counter() - t1


def measure_cpu(cfg: dict[str, Any]) -> tuple[float, float]:
    stamp = multiprocessing.Value("d", 0.0, lock=False)
    proc = multiprocessing.Process(target=_spin, args=(stamp,), name="chaosdb-bench-spin")
    proc.start()
    try:
        time.sleep(0.2)

        def gap_after(after: float) -> float | None:
            last = stamp.value
            end = time.perf_counter() + 10
            while time.perf_counter() < end:
                time.sleep(0.0005)
                now, value = time.perf_counter(), stamp.value
                if value == last and now - last > 0.02 and last >= after:
                    return last - after
                last = value
            return None

        def running_after(after: float) -> float | None:
            end = time.perf_counter() + 10
            while time.perf_counter() < end:
                if stamp.value > after and time.perf_counter() - stamp.value < 0.005:
                    return stamp.value - after
                time.sleep(0.0005)
            return None

        t0 = time.perf_counter()
        threading.Thread(target=lambda: actions.limit_cpu(target={"pids": [proc.pid], "name": "spinner"},
                                                          quota_s=0.001, period_s=0.1, configuration=cfg)).start()
        on = gap_after(t0)
        time.sleep(0.3)
        t1 = time.perf_counter()
        threading.Thread(target=lambda: actions.revert_faults(configuration=cfg)).start()
        off = running_after(t1)
        time.sleep(0.3)
    finally:
        proc.kill()
        proc.join()
    if on is None or off is None:
        raise RuntimeError(f"the CPU limit never showed (in effect {on}, gone {off})")
    return on, off


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=20, help="injections per fault")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / f"results-fault_latency-{time.strftime('%Y-%m-%d')}.json"))
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("iptables"):
        print("needs root and iptables", file=sys.stderr)
        return 2
    result: dict[str, Any] = {"host": {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0]},
                              "cycles": args.cycles, "target_ms": 50}
    with benchmark_cluster("chaosdb-bench-latency-", "benchlatency", ADDRESS_BASE) as (layout, _):
        sender = None
        try:
            cfg = {"chaosdb_cluster_dir": layout.dir}
            leader = cluster.status(layout)["leader"]
            name = next(n.name for n in layout.nodes if n.name != leader)
            node = layout.node(name)
            drop = reaches(node.host)
            _, uid, _ = layout.node_user(node)
            sender = start_sender(node.host, SENDER_PORT, uid, str(node.path))
            common = {"target": name, "scope": "clients", "direction": "inbound", "configuration": cfg}
            drop_probe = (drop, 4, 0.005)  # 20 ms timeout, 4 threads 5 ms apart
            faults: dict[str, tuple[Callable[[], Any], tuple[Callable[[], bool], int, float]]] = {
                "partition": (lambda: actions.partition_node(**common), drop_probe),
                "loss": (lambda: actions.lose_packets(loss_percent=99.9, **common), drop_probe),
                "bursty-loss": (lambda: actions.lose_packets_in_bursts(loss_percent=99.9, mean_burst_packets=1000,
                                                                       **common), drop_probe),
                "bandwidth": (lambda: actions.limit_bandwidth(target=name, rate_kbit=8, scope="clients",
                                                              configuration=cfg),
                              (fast_transfer(node.host, SENDER_PORT), 4, 0.0125)),
                "delay (proxy)": (lambda: actions.delay_traffic(target=name, delay_ms=200, scope="clients",
                                                                existing_connections="keep", configuration=cfg),
                                  (fast_ssl_request(node.host, node.pg_port), 1, 0.0)),  # each attempt forks a backend
            }
            out: dict[str, Any] = {}
            for kind, (inject, attempt) in faults.items():
                on, off = [], []
                for _ in range(args.cycles):
                    a, b = measure(inject, attempt, cfg)
                    on.append(a)
                    off.append(b)
                out[kind] = {"in_effect_ms": round(statistics.median(on) * 1000, 1),
                             "gone_ms": round(statistics.median(off) * 1000, 1),
                             "in_effect_max_ms": round(max(on) * 1000, 1)}
            on, off = zip(*(measure_suspend(layout, name, cfg) for _ in range(args.cycles)), strict=True)
            out["suspend"] = {"in_effect_ms": round(statistics.median(on) * 1000, 1),
                              "gone_ms": round(statistics.median(off) * 1000, 1), "in_effect_max_ms": round(max(on) * 1000, 1)}
            on, off = zip(*(measure_cpu(cfg) for _ in range(args.cycles)), strict=True)
            out["cpu"] = {"in_effect_ms": round(statistics.median(on) * 1000, 1),
                          "gone_ms": round(statistics.median(off) * 1000, 1), "in_effect_max_ms": round(max(on) * 1000, 1)}
            result["median_from_the_call"] = out
            result["host"]["load_after"] = os.getloadavg()[0]
            assert probes.no_fault_residue() or time.sleep(2) or probes.no_fault_residue(), probes.fault_residue()
        finally:
            if sender is not None:
                sender.kill()
                sender.wait()
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
