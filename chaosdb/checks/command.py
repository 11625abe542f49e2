"""``chaosdb check FILE [NAME ...]``.

``check`` evaluates the checks once and prints exactly one JSON line on standard output, ``{"ok": ..., "checks":
[...], "latency_ms": ...}``; its exit status is 0 when every check passes, 1 when one fails, 2 when the input is
wrong (the sentence on standard error, and ``{"ok": false, "error": ...}`` on standard output): what a Litmus
``cmdProbe`` or a Chaos Mesh Workflow ``Task`` container reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from chaosdb.checks.evaluate import evaluate_all
from chaosdb.checks.spec import SHIPPED_PREFIX, load_checks
from chaosdb.core.errors import ChaosDBError

__all__ = ["add_parser", "cmd_check"]


def _print_line(data: dict[str, Any]) -> None:
    print(json.dumps(data), flush=True)


def cmd_check(args: argparse.Namespace) -> int:
    """``chaosdb check``: evaluate the checks once; one JSON line; exit 0 (all pass), 1 (one fails), 2 (bad input)."""
    try:
        checks = load_checks(args.file, args.var, args.var_file)
        result = evaluate_all(checks, args.names)
    except ChaosDBError as exc:
        message = " ".join(str(exc).split())
        _print_line({"ok": False, "error": message, "checks": []})
        print(f"chaosdb: error: {message}", file=sys.stderr)
        return 2
    _print_line(result)
    return 0 if result["ok"] else 1


def _add_source_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE",
                   help="a checks file (JSON, or YAML by its name), a Chaos Toolkit experiment (each probe of its "
                        f"steady-state hypothesis is a check), or {SHIPPED_PREFIX}NAME for one this pack ships "
                        f"({SHIPPED_PREFIX}patroni, {SHIPPED_PREFIX}tikv)")
    p.add_argument("--var", action="append", default=[], metavar="KEY[:TYPE]=VALUE",
                   help="set a configuration value, as 'chaos run --var' does (repeatable)")
    p.add_argument("--var-file", action="append", default=[], metavar="FILE",
                   help="configuration and secrets from a JSON or YAML file ({\"configuration\": {...}, \"secrets\": "
                        "{...}}) or a .env file, as 'chaos run --var-file' reads them (repeatable)")


def add_parser(sub: Any) -> None:
    """``chaosdb check`` under the ``chaosdb`` command's subcommands *sub*."""
    p = sub.add_parser("check", help="evaluate database-aware checks once: one JSON line, exit 0 (all pass), 1 (one "
                                     "fails) or 2 (bad input); for a Litmus cmdProbe or a Chaos Mesh Task",
                       description="Evaluate the checks of FILE (the NAMEs, or all) with Chaos Toolkit's own probe "
                                   "and tolerance semantics and print exactly one JSON line: {\"ok\", \"checks\": "
                                   "[{\"check\", \"ok\", \"value\", \"reason\", \"latency_ms\", \"at\"}], "
                                   "\"latency_ms\"}. Exit status 0 when every check passes, 1 when one fails, 2 when "
                                   "the input is wrong (the reason on standard error too).")
    _add_source_arguments(p)
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="the checks to evaluate (an experiment's hypothesis title names all of its probes; "
                        "default: every check)")
    p.set_defaults(func=cmd_check)
