"""``chaosdb history check LOCATION`` and ``chaosdb history merge FOLDER OUTPUT``.

``check`` reads a history (a JSON array or JSON Lines file in Jepsen's form, or a run's folder of
``history-*.jsonl``), checks it (:func:`chaosdb.history.check.check_history`) and prints what it found: a summary
with each anomaly explained, or with ``--json`` the result as one JSON document (``valid``, ``anomaly_types``,
``anomalies``, ...). Exit status 0 when the history is valid, 1 when it is not, 2 when the input is wrong or the
checker gave up (``unknown``). ``merge`` writes a run's histories as one file (what elle-cli reads).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from chaosdb.history.check import MODELS, check_history
from chaosdb.history.recording import read_history, write_history

__all__ = ["add_parser", "cmd_history_check", "cmd_history_merge", "render_text"]

#: the consistency models the transactional checkers know (Elle's names), shown in the help
CONSISTENCY_HELP = ("read-uncommitted, read-committed, repeatable-read, snapshot-isolation, serializable, "
                    "strict-serializable and Elle's session models (strong-session-...)")


def render_text(result: dict[str, Any], location: str, examples: int = 2) -> str:
    """The result as a person reads it: the verdict, the counts, each anomaly with its first explanations."""
    model = result.get("model", "?")
    against = result.get("consistency_model", "")
    verdict = {True: "valid", False: "NOT valid"}.get(result["valid"], "unknown (the checker gave up)")
    lines = [f"{location}: {model} history, {result.get('operations', 0)} events, "
             f"{result.get('info', 0)} operations of unknown outcome (info)",
             f"checked against {against}: {verdict}"]
    if result.get("not"):
        lines.append(f"rules out: {', '.join(result['not'])}")
    for name, found in (result.get("anomalies") or {}).items():
        found = found if isinstance(found, list) else [found]
        lines.append(f"\n{name} ({len(found)} example{'s' if len(found) != 1 else ''} shown)")
        for example in found[:examples]:
            text = example.get("explanation", "") if isinstance(example, dict) else str(example)
            lines += ["  " + line for line in str(text).splitlines()]
            served = example.get("served_by") if isinstance(example, dict) else None
            if served:
                lines.append("  served by: " + ", ".join(f"op {i} {node}" for i, node in served.items()))
    return "\n".join(lines)


def cmd_history_check(args: argparse.Namespace) -> int:
    """``chaosdb history check``: exit 0 (valid), 1 (anomalies the model forbids), 2 (bad input, or unknown)."""
    result = check_history(args.location, args.model, args.consistency_model, max_examples=args.max_examples,
                           time_limit_s=args.time_limit_s)
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print(render_text(result, args.location))
    return {True: 0, False: 1}.get(result["valid"], 2)


def cmd_history_merge(args: argparse.Namespace) -> int:
    """``chaosdb history merge``: the folder's histories as one file, in time order with their indexes."""
    ops = read_history(args.folder)
    out = write_history(ops, args.output)
    print(f"{len(ops)} operations written to {out}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """``chaosdb history check`` and ``chaosdb history merge`` under the ``chaosdb`` command's subcommands *sub*."""
    p = sub.add_parser("history", help="check operation histories for isolation anomalies (as Jepsen's Elle does) "
                                       "or linearizability")
    hsub = p.add_subparsers(dest="history_command", required=True)
    c = hsub.add_parser("check", help="check a history: exit 0 valid, 1 anomalies, 2 bad input or unknown",
                        description="Check a history (a JSON array or JSON Lines file in Jepsen's form, as elle-cli "
                                    "reads it, or a run's samples folder of history-*.jsonl) and say which anomalies "
                                    "it shows, each explained. Exit status 0 when it is valid under the consistency "
                                    "model, 1 when it is not, 2 when the input is wrong or the checker gave up.")
    c.add_argument("location", metavar="LOCATION", help="the history file, or a run's folder")
    c.add_argument("--model", choices=MODELS, default=None,
                   help="how the operations are written (default: found from them; register histories are "
                        "checked for linearizability)")
    c.add_argument("--consistency-model", default="serializable", metavar="MODEL",
                   help=f"what the database promises (transactional models): {CONSISTENCY_HELP} "
                        "(default: serializable)")
    c.add_argument("--json", action="store_true",
                   help="print the result as JSON: {\"valid\", \"anomaly_types\", \"anomalies\", ...}")
    c.add_argument("--max-examples", type=int, default=8, metavar="N", help="examples kept per anomaly (default 8)")
    c.add_argument("--time-limit-s", type=float, default=60.0, metavar="S",
                   help="registers: seconds a key's search may take before the checker says unknown (default 60)")
    c.set_defaults(func=cmd_history_check)
    m = hsub.add_parser("merge", help="write a run's histories as one file (JSON array, or JSON Lines for .jsonl)")
    m.add_argument("folder", metavar="FOLDER", help="a run's samples folder (history-*.jsonl)")
    m.add_argument("output", metavar="OUTPUT", help="the file to write")
    m.set_defaults(func=cmd_history_merge)
