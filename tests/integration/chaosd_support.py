"""What the chaosd tests observe a node's processes with (their fixtures are in ``conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from chaosdb.local import cluster as lc
from chaosdb.local.processes import node_processes

__all__ = ["replica", "state", "postmaster", "answers", "date_header", "server_epoch"]


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
