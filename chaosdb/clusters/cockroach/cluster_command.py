"""``chaosdb cluster up|status|down --kind cockroach``: a local CockroachDB cluster from a user-supplied
``cockroach`` binary (:mod:`chaosdb.clusters.cockroach.localcluster`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from chaosdb.clusters.cockroach import localcluster
from chaosdb.core.console import fmt

__all__ = ["KIND", "HELP", "TITLE", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "up", "show_up",
           "show_status", "CLUSTER"]

KIND = "cockroach"
TITLE = "CockroachDB cluster"
HELP = "CockroachDB nodes from a cockroach binary you bring (--cockroach-bin); addresses 127.0.30.x"

#: the module whose status(directory) and down(directory, purge, timeout) the command calls
CLUSTER = localcluster
STATE_FILE = localcluster.STATE_FILE
DEFAULT_ADDRESS = "127.0.30.1"
#: the extras ``cluster up`` of this kind needs (:mod:`chaosdb.core.extras`)
EXTRAS: tuple[str, ...] = ()


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for this kind."""
    group.add_argument("--cockroach-bin", default=None, metavar="BINARY",
                       help="the cockroach binary (default: cockroach on PATH)")


def up(args: argparse.Namespace, directory: Path, name: str) -> dict[str, Any]:
    """Start (create on first use) the CockroachDB cluster in *directory*."""
    return localcluster.up(directory, name, nodes=args.nodes, address_base=args.address_base or DEFAULT_ADDRESS,
                           cockroach_bin=args.cockroach_bin, timeout=args.timeout)


def show_up(res: dict[str, Any]) -> None:
    """What started and how to reach it."""
    print(f"CockroachDB {res['version']} cluster {res['cluster']}: {res['live_nodes']} live nodes "
          f"({'created' if res['created'] else 'started ' + (', '.join(res['started']) or 'nothing')}) in "
          f"{res['seconds']}s")
    print(f"  data: {res['dir']}\n  configuration for experiments: {json.dumps(res['configuration'])}")


def show_status(res: dict[str, Any]) -> None:
    """One line per node."""
    for n in res["nodes"]:
        print(f"n{n['id']:<3}{n['address'] or '-':<22}live={n['is_live']!s:<6}{n['membership'] or '-':<16}"
              f"replicas={fmt(n['replicas'])} leases={fmt(n['leaseholders'])}")
    if res["error"]:
        print(res["error"])
