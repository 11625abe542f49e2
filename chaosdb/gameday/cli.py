"""``chaosdb gameday``: validate | schema | run | status | report | gate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from chaosdb.gameday.runner import read_manifest, rebuild_runs, run_suite
from chaosdb.gameday.suite import load_suite, plan_runs

__all__ = ["add_parser"]


def _validate(args: argparse.Namespace) -> int:
    suite = load_suite(args.suite)
    runs = plan_runs(suite, validate=False)
    if args.json:
        print(json.dumps({"suite": suite.name, "runs": [r.summary() for r in runs]}, indent=2, default=str))
        return 0
    print(f"suite {suite.name}: valid, {len(suite.scenarios)} scenario(s), {len(runs)} run(s)")
    for r in runs:
        params = ", ".join(f"{k}={v}" for k, v in r.parameters.items()
                           if not k.startswith(("configuration:chaosdb_cluster", "configuration:address_base"))
                           and not k.endswith(".down_after"))
        print(f"  {r.id:<40} {Path(r.source).name:<40} {params}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from chaosdb.gameday.suite_schema import suite_json_schema  # noqa: PLC0415 - only for this command

    print(json.dumps(suite_json_schema(), indent=2))
    return 0


def _run(args: argparse.Namespace) -> int:
    return run_suite(args.suite, args.results, fail_on_deviation=args.fail_on_deviation, only=args.only or None)


def _status(args: argparse.Namespace) -> int:
    m = read_manifest(Path(args.results))
    if args.json:
        print(json.dumps(m, indent=2, default=str))
        return 0
    counts: dict[str, int] = {}
    for e in m["runs"]:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    print(f"suite {m['suite']['name']} (resumed {m.get('resumed', 0)}x): "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for e in m["runs"]:
        mm = e.get("metrics") or {}
        extra = f"recovery={mm.get('recovery_s')} p99={mm.get('impact_p99_ms')}" if mm else e.get("error", "")[:80]
        print(f"  {e['id']:<40} {e['status']:<12} attempts={e.get('attempts', 0)} {extra}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from chaosdb.gameday.render import write_report  # noqa: PLC0415 - needs the report extra

    if args.rebuild_runs:
        print(f"rebuilt {rebuild_runs(Path(args.results))} run report(s) from their journals and samples")
    out = write_report(Path(args.results))
    if args.json:
        print(json.dumps(out["summary"], indent=2, default=str))
    else:
        print(f"wrote {', '.join(out['files'])} in {args.results}")
    return 0


def _gate(args: argparse.Namespace) -> int:
    from chaosdb.gameday.gate import DEFAULT_CHECKS, gate, load_summary, parse_check, render_gate  # noqa: PLC0415 - needs the report extra

    checks = [parse_check(c) for c in (args.check or DEFAULT_CHECKS)]
    result = gate(load_summary(args.results), load_summary(args.baseline), checks,
                  scenarios=args.scenario or None, allow_missing=args.allow_missing)
    print(json.dumps(result, indent=2) if args.json else render_gate(result))
    return 0 if result["passed"] else 1


def add_parser(sub: Any) -> None:
    """``chaosdb gameday validate|schema|run|status|report|gate``."""
    gd = sub.add_parser("gameday", help="game days: suites of repeated runs, sweeps, UPB; aggregated report; gate")
    gsub = gd.add_subparsers(dest="gameday_command", required=True)
    p = gsub.add_parser("validate", help="check a suite file and list the runs it expands to (runs nothing)")
    p.add_argument("suite", help="the suite file (YAML or JSON)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_validate)
    p = gsub.add_parser("schema", help="print the JSON Schema of a suite file (for editors: completion and checks)")
    p.set_defaults(func=_schema)
    p = gsub.add_parser("run", help="run a suite (resumes when RESULTS already holds part of it)")
    p.add_argument("suite", help="the suite file (YAML or JSON)")
    p.add_argument("--results", default=None, help="results directory (default: reports/gamedays/SUITE-NAME)")
    p.add_argument("--only", action="append", metavar="SCENARIO", help="run only this scenario (repeatable)")
    p.add_argument("--fail-on-deviation", action="store_true",
                   help="exit 1 when a run's hypothesis failed (default: only when runs could not finish)")
    p.set_defaults(func=_run, extras=("report",))
    p = gsub.add_parser("status", help="what ran, what is left")
    p.add_argument("results", help="the suite's results directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_status)
    p = gsub.add_parser("report", help="(re)build summary.json, report.md and report.html of a results directory")
    p.add_argument("results", help="the suite's results directory")
    p.add_argument("--rebuild-runs", action="store_true",
                   help="first recompute every run's metrics from its journal and samples (after a reporter update)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_report, extras=("report",))
    p = gsub.add_parser("gate", help="exit 1 when the results got worse than a baseline beyond the limits")
    p.add_argument("results", help="results directory or its summary.json")
    p.add_argument("--baseline", required=True, help="baseline results directory or summary.json")
    p.add_argument("--check", action="append", metavar="METRIC:LIMIT",
                   help="e.g. p99_ms:+20%% or recovery_s:+5 (repeatable; default: "
                        "p99_ms:+25%%, recovery_s:+25%%, error_rate:+0.01, hypothesis_failed:+0)")
    p.add_argument("--scenario", action="append", help="gate only this scenario (repeatable)")
    p.add_argument("--allow-missing", action="store_true", help="skip baseline scenarios the results lack")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_gate, extras=("report",))
