"""What the chaosd tests observe a node's processes with (their fixtures are in ``conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.embedded.processes import node_processes

__all__ = ["reachable", "slow_connects", "replica", "state", "postmaster", "answers", "date_header", "server_epoch"]


def replica(layout) -> str:
    return next(n.name for n in layout.nodes if n.name != lc.status(layout)["leader"])


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def postmaster(layout, name: str) -> int:
    node = layout.node(name)
    return next(p.pid for p in node_processes(node.path, node.data_dir) if p.kind == "postmaster")


def answers(layout, name: str) -> bool:
    try:
        with psycopg.connect(layout.node_dsn(name), connect_timeout=2, autocommit=True) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def server_epoch(layout, name: str) -> float:
    with psycopg.connect(layout.node_dsn(name), connect_timeout=5, autocommit=True) as conn:
        return float(conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()[0])


def date_header(url: str) -> float:
    """The time a server says it answered at (its HTTP Date header, written from its own wall clock)."""
    import urllib.request
    from email.utils import parsedate_to_datetime

    with urllib.request.urlopen(url, timeout=5) as resp:
        return parsedate_to_datetime(resp.headers["Date"]).timestamp()


def slow_connects(host: str, port: int, tries: int = 20) -> int:
    """How many of *tries* TCP connections to host:port took over 0.5 s: a dropped SYN or ACK is sent again
    after about a second, so with random loss on the path some do, and without it none (on loopback)."""
    import socket
    import time

    slow = 0
    for _ in range(tries):
        t0 = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=5) as sock:
                sock.sendall(b"\x00\x00\x00\x08\x04\xd2\x16\x2f")  # SSLRequest: PostgreSQL answers one byte
                sock.recv(1)
        except OSError:
            slow += 1
            continue
        slow += time.monotonic() - t0 > 0.5
    return slow


def reachable(host: str, port: int) -> bool:
    """Whether a TCP connection to host:port opens within 1.5 s."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=1.5):
            return True
    except OSError:
        return False
