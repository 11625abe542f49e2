"""Separate "hosts" on one machine for tests and benchmarks: network namespaces joined by veth pairs, and a load
run across them (the database on one host behind HAProxy, the load's master on another, workers on others).

Each host is a network namespace of its own with one interface (``eth0``) and one address; the other end of its
veth pair sits in a switch namespace, on a bridge, so every host reaches every other and nothing else (the
machine's own namespace is not touched: no address, route or rule is added there). Cutting a host's link
(:meth:`Hosts.cut`) sets its cable's switch end down, as ``ip link set ... down`` on a real switch port.

Everything is named ``<tag>-...`` and removed by :meth:`Hosts.close` (processes still running in a host are
killed first), also after a failure: use it as a context manager.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chaosdb.embedded.processes import cpu_time_s, node_processes
from chaosdb.embedded.state import load_layout

__all__ = ["Hosts", "SUBNET", "database_host", "run_load", "leftover_namespaces", "MASTER", "WORKERS"]

#: the private network the hosts share (it exists only inside the namespaces made here)
SUBNET = "10.213.0"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class Hosts:
    """Hosts on a private bridge; ``add("db", 2)`` makes host ``db`` with address ``10.213.0.2``."""

    def __init__(self, tag: str | None = None) -> None:
        self.tag = tag or f"cdb{uuid.uuid4().hex[:5]}"
        self.switch = f"{self.tag}-sw"
        self.hosts: dict[str, str] = {}  # name -> address
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def namespace(self, name: str) -> str:
        """The network namespace of host *name*."""
        return f"{self.tag}-{name}"

    def add(self, name: str, last_octet: int) -> str:
        """A new host on the bridge; its address."""
        ns, address = self.namespace(name), f"{SUBNET}.{last_octet}"
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p-{name}", "netns", self.switch)
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", self.switch, "link", "set", f"p-{name}", "master", "br0")
        _ip("-n", self.switch, "link", "set", f"p-{name}", "up")
        self.hosts[name] = address
        return address

    def argv(self, name: str, argv: list[str]) -> list[str]:
        """*argv* run on host *name*."""
        return ["ip", "netns", "exec", self.namespace(name), *argv]

    def cut(self, name: str) -> None:
        """Unplug host *name*: its switch port goes down (``ip link set ... down``)."""
        _ip("-n", self.switch, "link", "set", f"p-{name}", "down")

    def plug(self, name: str) -> None:
        """Plug host *name* back in."""
        _ip("-n", self.switch, "link", "set", f"p-{name}", "up")

    def pids(self, name: str) -> list[int]:
        """Processes running on host *name*."""
        out = subprocess.run(["ip", "netns", "pids", self.namespace(name)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def close(self) -> None:
        """Kill what still runs on the hosts and remove every namespace made here."""
        for name in list(self.hosts):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in self.pids(name):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + 10
                while self.pids(name) and time.monotonic() < deadline:
                    time.sleep(0.1)
        for ns in [self.namespace(n) for n in self.hosts] + [self.switch]:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        self.hosts.clear()

    def __enter__(self) -> "Hosts":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def leftover_namespaces(prefix: str = "cdb") -> list[str]:
    """Namespaces of these helpers still on the machine (for residue checks)."""
    names = Path("/run/netns").iterdir() if Path("/run/netns").is_dir() else []
    return sorted(p.name for p in names if p.name.startswith(prefix))


PYTHON = sys.executable
CHAOSDB = str(Path(sys.executable).parent / "chaosdb")
ROOT = Path(__file__).resolve().parents[1]
DB, MASTER = "db", "m"
WORKERS = ("w1", "w2", "w3")
MASTER_PORT = 5557


def _in(hosts: Hosts, host: str, code: str, timeout: float = 600) -> str:
    """Python *code* run on *host* (this repository importable); its stdout."""
    proc = subprocess.run(hosts.argv(host, [PYTHON, "-c", code]), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if proc.returncode:
        raise RuntimeError(f"on {host}: {code[:120]}...\n{proc.stderr[-2000:]}")
    return proc.stdout


def _password(layout: Any, user: str) -> str:
    return next(line.split(":")[-1] for line in (layout.path / "pgpass").read_text().splitlines()
                if line.split(":")[3] == user)


HAPROXY = """global
    maxconn 4000
defaults
    mode tcp
    timeout connect 3s
    timeout client 1h
    timeout server 1h
    timeout check 2s
listen postgres
    bind {address}:5432
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
"""


@contextmanager
def database_host(hosts: Hosts, root: Path, warehouses: int) -> Iterator[dict[str, Any]]:
    """The cluster and HAProxy on host ``db``: what a worker needs to reach it, and what to measure."""
    address = hosts.add(DB, 2)
    cluster_dir = root / "cluster"
    haproxy = None
    try:
        _in(hosts, DB, f"from pathlib import Path; from chaosdb.clusters.postgres_ha import cluster; "
                       f"cluster.up(Path({str(cluster_dir)!r}), 'hostsdb', address_base='127.0.0.21', timeout=180)")
        layout = load_layout(cluster_dir)
        _in(hosts, DB, f"from chaosdb.embedded.state import load_layout; from chaosdb.workloads.tpcc import loader; "
                       f"from chaosdb.workloads.tpcc.rand import Scale; "
                       f"loader.load(load_layout({str(cluster_dir)!r}).dsn(), Scale.reduced({warehouses}, 10))")
        servers = "\n".join(f"    server {n.name} {n.host}:{n.pg_port} check port {n.api_port}" for n in layout.nodes)
        config = root / "haproxy.cfg"
        config.write_text(HAPROXY.format(address=address, servers=servers))
        haproxy = subprocess.Popen(hosts.argv(DB, ["haproxy", "-f", str(config), "-db"]), stdout=subprocess.DEVNULL,
                                   stderr=open(root / "haproxy.log", "ab"), start_new_session=True)
        dsn = f"postgresql://chaosdb@{address}:5432/chaosdb?connect_timeout=3&sslmode=disable"
        probe = f"import psycopg; psycopg.connect({dsn!r}, password={_password(layout, 'chaosdb')!r}).close()"
        deadline = time.monotonic() + 60
        while True:
            try:
                _in(hosts, MASTER if MASTER in hosts.hosts else DB, probe, timeout=20)
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield {"dsn": dsn, "password": _password(layout, "chaosdb"), "layout": layout, "haproxy": haproxy}
    finally:
        if haproxy is not None:
            haproxy.terminate()
            haproxy.wait(10)
        if (cluster_dir / "cluster.json").exists():
            _in(hosts, DB, f"from chaosdb.clusters.postgres_ha import cluster; from chaosdb.embedded.state import load_layout; "
                           f"cluster.down(load_layout({str(cluster_dir)!r}), purge=True)")


def _cluster_cpu(layout: Any) -> float:
    """CPU seconds used so far by every PostgreSQL process of the cluster."""
    pids = [p.pid for n in layout.nodes for p in node_processes(Path(n.dir), n.data_dir)
            if p.kind in ("postgres", "postmaster")]
    return cpu_time_s(pids)


MASTER_CODE = """
import json, sys, time
from chaosdb.load import control
record = control.start_load(users={users}, warmup_s={warmup}, baseline_s={seconds}, samples_dir={samples!r},
                            remote_workers={workers}, master_bind_host={bind!r}, master_port={port}, progress_s=0,
                            dsn="postgresql://unused@{bind}/chaosdb", observe="none", start_timeout_s=120)
time.sleep({after})
record = control.stop_load()
print(json.dumps(record))
"""


def run_load(hosts: Hosts, db: dict[str, Any], root: Path, workers: int, users: int, seconds: int, warmup: int,
        cut_at_s: float | None = None, after_s: float = 0.0) -> dict[str, Any]:
    """One run: the master on ``m``, *workers* workers on ``w1``..; optionally ``w<workers>`` cut *cut_at_s* seconds
    into the baseline. Returns what was measured."""
    samples = root / f"samples-{workers}{'-cut' if cut_at_s is not None else ''}"
    master_address = hosts.hosts[MASTER]
    code = MASTER_CODE.format(users=users, warmup=warmup, seconds=seconds, samples=str(samples), workers=workers,
                              bind=master_address, port=MASTER_PORT, after=after_s)
    master = subprocess.Popen(hosts.argv(MASTER, [PYTHON, "-c", code]), stdout=subprocess.PIPE,
                              stderr=open(root / f"master-{workers}.log", "ab"), text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)), start_new_session=True)
    env = dict(os.environ, CHAOSDB_LOAD_DSN=db["dsn"], PGPASSWORD=db["password"], PYTHONPATH=str(ROOT))
    started = []
    for name in WORKERS[:workers]:
        log = open(root / f"worker-{name}-{workers}.log", "ab")
        started.append(subprocess.Popen(hosts.argv(name, [CHAOSDB, "load", "worker", "--master",
                                                          f"{master_address}:{MASTER_PORT}"]),
                                        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    db_cpu0, proxy_cpu0 = _cluster_cpu(db["layout"]), cpu_time_s([db["haproxy"].pid])
    cut_ts = None
    if cut_at_s is not None:
        from chaosdb.load.distributed import read_workers  # noqa: PLC0415

        deadline = time.monotonic() + 180
        while not ((ws := read_workers(samples)) and len(ws) == workers and all(w["samples"] > 0 for w in ws)):
            if time.monotonic() > deadline or master.poll() is not None:
                raise RuntimeError(f"the workers did not all send samples: {read_workers(samples)}")
            time.sleep(0.5)
        time.sleep(warmup + cut_at_s)
        hosts.cut(WORKERS[workers - 1])
        cut_ts = time.time()
    out, _ = master.communicate(timeout=seconds + warmup + after_s + 300)
    db_cpu, proxy_cpu = _cluster_cpu(db["layout"]) - db_cpu0, cpu_time_s([db["haproxy"].pid]) - proxy_cpu0
    if master.returncode:
        raise RuntimeError(f"the master failed: see {root / f'master-{workers}.log'}")
    record = json.loads(out.strip().splitlines()[-1])
    # the master told its workers to quit; one cut off never heard it and is ended here
    worker_cpu = [round(u.ru_utime + u.ru_stime, 2) for u in (_reap(w, 20.0) for w in started)]
    return {"record": record, "samples": samples, "cut_ts": cut_ts, "worker_cpu_s": worker_cpu,
            "cluster_cpu_s": round(db_cpu, 2), "haproxy_cpu_s": round(proxy_cpu, 2)}


def _reap(proc: subprocess.Popen, timeout_s: float) -> Any:
    """Wait for *proc* (killing it after *timeout_s*); its resource usage (CPU time included)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage
