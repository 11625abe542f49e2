"""``chaosdb cluster up|status|down --kind fakedb``: a cluster folder holding one state file, nothing running."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["KIND", "HELP", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "run"]

KIND = "fakedb"
HELP = "a fake database that runs nothing"
STATE_FILE = "fakedb.json"
DEFAULT_ADDRESS = "127.0.60.1"
EXTRAS: tuple[str, ...] = ()


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for fakedb."""
    group.add_argument("--fake-shards", type=int, default=2, help="shards of the fake cluster")


def run(args: argparse.Namespace, directory: Path, name: str) -> int:
    """up writes the state file; status prints it; down removes it."""
    state = directory / STATE_FILE
    if args.cluster_command == "up":
        directory.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"name": name, "shards": args.fake_shards,
                                     "address": args.address_base or DEFAULT_ADDRESS}))
    elif args.cluster_command == "status":
        print(state.read_text())
    else:
        state.unlink(missing_ok=True)
    return 0
