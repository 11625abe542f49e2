"""``chaosdb cluster up|status|down --kind fakedb``: a cluster folder holding one state file, nothing running."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["KIND", "HELP", "TITLE", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "up", "status", "down",
           "show_up", "show_status"]

KIND = "fakedb"
TITLE = "fakedb cluster"
HELP = "a fake database that runs nothing"
STATE_FILE = "fakedb.json"
DEFAULT_ADDRESS = "127.0.60.1"
EXTRAS: tuple[str, ...] = ()


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for fakedb."""
    group.add_argument("--fake-shards", type=int, default=2, help="shards of the fake cluster")


def up(args: argparse.Namespace, directory: Path, name: str) -> dict[str, Any]:
    """Write the state file."""
    directory.mkdir(parents=True, exist_ok=True)
    state = {"cluster": name, "shards": args.fake_shards, "address": args.address_base or DEFAULT_ADDRESS}
    (directory / STATE_FILE).write_text(json.dumps(state))
    return state


def status(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """The state file's content; healthy while it is there."""
    state = json.loads((directory / STATE_FILE).read_text())
    return {**state, "healthy": True}


def down(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """Remove the state file."""
    state = json.loads((directory / STATE_FILE).read_text())
    (directory / STATE_FILE).unlink()
    return {"cluster": state["cluster"], "stopped": 0, "purged": True, "dir": str(directory)}


def show_up(result: dict[str, Any]) -> None:
    """One line."""
    print(f"fakedb {result['cluster']}: {result['shards']} shards at {result['address']}")


def show_status(result: dict[str, Any]) -> None:
    """The state as JSON."""
    print(json.dumps(result))
