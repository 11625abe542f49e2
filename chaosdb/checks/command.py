"""``chaosdb check FILE [NAME ...]`` and ``chaosdb serve FILE``.

``check`` evaluates the checks once and prints exactly one JSON line on standard output, ``{"ok": ..., "checks":
[...], "latency_ms": ...}``; its exit status is 0 when every check passes, 1 when one fails, 2 when the input is
wrong (the sentence on standard error, and ``{"ok": false, "error": ...}`` on standard output): what a Litmus
``cmdProbe`` or a Chaos Mesh Workflow ``Task`` container reads. With ``--within S`` it evaluates again until every
check passes or S seconds have passed (a recovery check). ``serve`` answers the same checks over HTTP
(:mod:`chaosdb.checks.server`, the ``serve`` extra).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any

from chaosdb.checks.evaluate import evaluate_all
from chaosdb.checks.spec import SHIPPED_PREFIX, load_checks
from chaosdb.core.errors import ChaosDBError

__all__ = ["add_parser", "cmd_check", "cmd_serve"]


def _seconds(text: str, above_zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0 or (above_zero and value == 0):
        raise argparse.ArgumentTypeError(f"{text} must be {'more than' if above_zero else 'at least'} 0 seconds")
    return value


def _interval(text: str) -> float:
    return _seconds(text, above_zero=True)


def _for_s(text: str) -> float:
    return _seconds(text, above_zero=False)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535; 0: any free port)")
    return int(text)


def _print_line(data: dict[str, Any]) -> None:
    print(json.dumps(data), flush=True)


def cmd_check(args: argparse.Namespace) -> int:
    """``chaosdb check``: evaluate the checks once; one JSON line; exit 0 (all pass), 1 (one fails), 2 (bad input)."""
    try:
        checks = load_checks(args.file, args.var, args.var_file)
        result = evaluate_all(checks, args.names)
        rounds, deadline = 1, time.monotonic() + args.within
        while not result["ok"] and time.monotonic() + args.every <= deadline:
            time.sleep(args.every)
            result, rounds = evaluate_all(checks, args.names), rounds + 1
        if args.within:
            result["rounds"] = rounds
    except ChaosDBError as exc:
        message = " ".join(str(exc).split())
        _print_line({"ok": False, "error": message, "checks": []})
        print(f"chaosdb: error: {message}", file=sys.stderr)
        return 2
    _print_line(result)
    return 0 if result["ok"] else 1


def cmd_serve(args: argparse.Namespace) -> int:
    """``chaosdb serve``: the checks over HTTP until SIGTERM or SIGINT."""
    checks = load_checks(args.file, args.var, args.var_file, default_for_s=args.for_s)
    from chaosdb.checks.server import run_server  # noqa: PLC0415 - needs the serve extra

    log = logging.getLogger("chaosdb.checks")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s chaosdb serve: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    run_server(checks, args.host, args.port, args.interval)
    return 0


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
    """``chaosdb check`` and ``chaosdb serve`` under the ``chaosdb`` command's subcommands *sub*."""
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
    p.add_argument("--within", type=_for_s, default=0.0, metavar="S",
                   help="evaluate again every --every seconds until every check passes or S seconds have passed "
                        "(a recovery check: exit 0 as soon as the database is back, 1 if it is not within S); the "
                        "line is the last round's, with \"rounds\" (default: 0, one round)")
    p.add_argument("--every", type=_interval, default=1.0, metavar="S",
                   help="seconds between two rounds with --within (default: 1)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("serve", help="serve the checks over HTTP: /checks/NAME answers 200 or 503 (after failing "
                                     "for_s seconds), for a Chaos Mesh StatusCheck or a Litmus httpProbe",
                       description="Evaluate every check of FILE every --interval seconds in the background and "
                                   "answer GET /checks/NAME (200 passing, or failing for less than its for_s; 503 "
                                   "failing for for_s seconds or more, or not evaluated yet; 404 unknown), GET "
                                   "/checks (200 when every check answers 200) and GET /healthz. SIGTERM or SIGINT "
                                   "stops it.")
    _add_source_arguments(p)
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (0.0.0.0 in a pod)")
    p.add_argument("--port", type=_port, default=8099, help="the port to listen on (0: any free port)")
    p.add_argument("--interval", type=_interval, default=1.0, help="seconds between two rounds of evaluations")
    p.add_argument("--for-s", type=_for_s, default=None,
                   help="for_s of every check that does not set its own (all the checks of an experiment): seconds a "
                        "check must fail before it answers 503 (default: 0, at once)")
    p.set_defaults(func=cmd_serve, extras=("serve",))
