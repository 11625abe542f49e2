"""``chaosdb cluster up|status|down --kind cockroach``: a local CockroachDB cluster from a user-supplied
``cockroach`` binary (:mod:`chaosdb.cockroach.localcluster`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from chaosdb.cockroach import localcluster
from chaosdb.core.console import fmt, print_json, print_stopped

__all__ = ["KIND", "HELP", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "run"]

KIND = "cockroach"
HELP = "CockroachDB nodes from a cockroach binary you bring (--cockroach-bin); addresses 127.0.30.x"

STATE_FILE = localcluster.STATE_FILE
DEFAULT_ADDRESS = "127.0.30.1"
#: the extras ``cluster up`` of this kind needs (:mod:`chaosdb.core.extras`)
EXTRAS: tuple[str, ...] = ()


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for this kind."""
    group.add_argument("--cockroach-bin", default=None, metavar="BINARY",
                       help="the cockroach binary (default: cockroach on PATH)")


def run(args: argparse.Namespace, directory: Path, name: str) -> int:
    """``up``, ``status`` or ``down`` of the CockroachDB cluster in *directory*; the exit status."""
    d = directory
    if args.cluster_command == "up":
        res = localcluster.up(d, name, nodes=args.nodes, address_base=args.address_base or DEFAULT_ADDRESS,
                              cockroach_bin=args.cockroach_bin, timeout=args.timeout)
    elif args.cluster_command == "status":
        res = localcluster.status(d)
    else:
        res = localcluster.down(d, purge=args.purge, timeout=args.timeout)
    if args.json:
        print_json(res)
    elif args.cluster_command == "up":
        print(f"CockroachDB {res['version']} cluster {res['cluster']}: {res['live_nodes']} live nodes "
              f"({'created' if res['created'] else 'started ' + (', '.join(res['started']) or 'nothing')}) in "
              f"{res['seconds']}s")
        print(f"  data: {res['dir']}\n  configuration for experiments: {json.dumps(res['configuration'])}")
    elif args.cluster_command == "status":
        for n in res["nodes"]:
            print(f"n{n['id']:<3}{n['address'] or '-':<22}live={n['is_live']!s:<6}{n['membership'] or '-':<16}"
                  f"replicas={fmt(n['replicas'])} leases={fmt(n['leaseholders'])}")
        if res["error"]:
            print(res["error"])
    else:
        print_stopped(res, f"cluster {res['cluster']}")
    return 1 if args.cluster_command == "status" and getattr(args, "check", False) and not res["healthy"] else 0
