"""The load control's side of Locust's master/worker mode: the master's address and options, the worker
processes started on this machine, and the orderly stop (see :mod:`chaosdb.load.distributed` for the Locust
side)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from chaosdb.core.commands import die_with_parent
from chaosdb.core.detach import source_env
from chaosdb.core.processes import end_groups
from chaosdb.load.distributed import STOP_REQUEST, STOPPED, read_workers

__all__ = ["MasterAddress", "master_address", "master_args", "worker_argv", "start_worker", "connected", "drain",
           "stop_workers"]

_die_with_parent = die_with_parent(signal.SIGTERM)


@dataclass(frozen=True)
class MasterAddress:
    bind_host: str  # what the master listens on
    host: str  # what a worker on this machine connects to
    port: int


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def master_address(bind_host: str = "127.0.0.1", port: int = 0) -> MasterAddress:
    """Where the master listens (one TCP port, Locust's ZeroMQ socket); port 0 picks a free one."""
    bind_host = bind_host or "127.0.0.1"
    local = "127.0.0.1" if bind_host in ("*", "0.0.0.0") else bind_host
    return MasterAddress(bind_host, local, port or _free_port(local))


def master_args(master: MasterAddress, expected_workers: int, wait_s: float) -> list[str]:
    """Locust options of the master: bind, wait for every worker, collect their samples."""
    return ["--master", "--master-bind-host", master.bind_host, "--master-bind-port", str(master.port),
            "--expect-workers", str(expected_workers), "--expect-workers-max-wait", str(max(1, int(wait_s))),
            "--chaosdb-ship-samples", "--chaosdb-workers", str(expected_workers)]


def worker_argv(locustfile: str, host: str, port: int) -> list[str]:
    """The command of one worker (its option values come from the master)."""
    return [sys.executable, "-m", "locust", "-f", locustfile, "--worker", "--master-host", host,
            "--master-port", str(port)]


def start_worker(locustfile: str, master: MasterAddress, index: int, out: Path, dsn: str,
                 extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """One worker process on this machine, with the DSN (and *extra_env*: the etcd load's TLS settings and login) in
    its environment, never on its command line, and its own log."""
    env = source_env(CHAOSDB_LOAD_DSN=dsn, PYTHONUNBUFFERED="1", **(extra_env or {}))
    with open(out / f"worker-{index}.log", "ab") as log:
        return subprocess.Popen(worker_argv(locustfile, master.host, master.port), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(out),
                                start_new_session=True, preexec_fn=_die_with_parent)


def connected(samples_dir: Path) -> int:
    """How many workers the master has seen (its ``workers.json``)."""
    return len(read_workers(samples_dir))


def drain(samples_dir: Path, master: subprocess.Popen, timeout_s: float = 15.0) -> bool:
    """Ask the master to stop the test and collect every worker's last samples; True when it said it did."""
    (samples_dir / STOP_REQUEST).write_text(f"{time.time():.6f}\n")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and master.poll() is None:
        if (samples_dir / STOPPED).exists():
            return True
        time.sleep(0.1)
    return (samples_dir / STOPPED).exists()


def stop_workers(workers: list[subprocess.Popen], timeout_s: float = 20.0) -> None:
    """End the workers started here (the master told them to quit; this makes sure)."""
    end_groups(workers, timeout_s)
