"""``chaosdb experiments list|copy``: the shipped experiments, and a copy of them in a folder the user owns."""

from __future__ import annotations

import argparse
import json
from typing import Any

from chaosdb.shipped import copy_shipped, experiments_dir, list_experiments

__all__ = ["add_parser"]


def cmd_list(args: argparse.Namespace) -> int:
    """``chaosdb experiments list``: every shipped experiment and game-day suite."""
    names = list_experiments()
    if args.json:
        print(json.dumps({"dir": str(experiments_dir()), "experiments": names}, indent=2))
    else:
        print("\n".join(names))
    return 0


def cmd_copy(args: argparse.Namespace) -> int:
    """``chaosdb experiments copy DIR``: the shipped experiments, the locustfiles, the checks files and the chosen
    templates into a folder of your own."""
    written = copy_shipped(args.dir, templates=args.template, force=args.force)
    if args.json:
        print(json.dumps(written, indent=2))
        return 0
    print(f"{written['dir']}: {len(written['experiments'])} experiment file(s), locustfiles in load/, checks files in checks/"
          + (f", {len(written['templates'])} template(s) in templates/" if written["templates"] else ""))
    print(f"run one: cd {written['dir']} && chaos run quickstart.json")
    return 0


def add_parser(sub: Any) -> None:
    """``chaosdb experiments list|copy``."""
    ep = sub.add_parser("experiments", help="the shipped experiments: list them, copy them into your own folder")
    esub = ep.add_subparsers(dest="experiments_command", required=True)
    p = esub.add_parser("list", help="every shipped experiment and game-day suite")
    p.add_argument("--json", action="store_true", help="print JSON (with the folder they are in)")
    p.set_defaults(func=cmd_list)
    p = esub.add_parser("copy", help="copy the shipped experiments (sub-folders kept), the locustfiles (load/), "
                                     "the checks files (checks/) and any chosen templates (templates/) into DIR")
    p.add_argument("dir", help="the folder to copy into (created if missing)")
    p.add_argument("--template", action="append", default=[], metavar="NAME",
                   help="also copy this manifest template, e.g. kubernetes/gameday-cronjob (repeatable; "
                        "'chaosdb manifests list' names them)")
    p.add_argument("--force", action="store_true", help="overwrite files that already exist (default: refuse)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=cmd_copy)
