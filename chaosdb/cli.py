"""The ``chaosdb`` command. Each subcommand delegates to the module that does the work."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaosdb import __version__
from chaosdb.checks.command import add_parser as add_checks_parser
from chaosdb.core.clusterkinds import (
    DEFAULT_KIND,
    add_kind_arguments,
    cluster_kinds,
    kind_module,
    kind_of_folder,
    run_command,
)
from chaosdb.core.console import print_json, show_progress
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import missing_extra_of, needs_line, require_extras
from chaosdb.core.faultrecords.sweep import cleanup, residue
from chaosdb.core.home import cluster_dir_for, resolve_cluster_dir
from chaosdb.core.settings import env_value
from chaosdb.embedded.state import load_layout
from chaosdb.faults.probes import active_faults
from chaosdb.gameday.cli import add_parser as add_gameday_parser
from chaosdb.history.command import add_parser as add_history_parser
from chaosdb.images.command import add_parser as add_images_parser
from chaosdb.load.calibrate import calibrate
from chaosdb.load.distributed_control import worker_argv
from chaosdb.load.dsn import etcd_endpoints, etcd_tls
from chaosdb.load.runner import LOCUSTFILES
from chaosdb.manifests.cli import add_parser as add_manifests_parser
from chaosdb.report.compare import compare, load_runs, render_compare_markdown
from chaosdb.report.upb import render_upb_markdown, upb_indices
from chaosdb.shipped.cli import add_parser as add_experiments_parser
from chaosdb.workloads import kv, ycsb
from chaosdb.workloads.tpcc import loader
from chaosdb.workloads.tpcc.rand import Scale

__all__ = ["build_parser", "main"]


def _cluster_name(args: argparse.Namespace) -> str:
    """--name, else the kind's own name for the kinds other than postgres-ha (a PD or Kubernetes cluster never
    shares the folder of the default embedded cluster), else chaosdb."""
    kind = getattr(args, "kind", None)
    return args.name or (kind if kind and kind != DEFAULT_KIND else "chaosdb")


def _cluster_dir(args: argparse.Namespace) -> Path:
    return Path(args.dir) if args.dir else cluster_dir_for(_cluster_name(args))


def _kind(args: argparse.Namespace) -> str:
    """--kind, else the kind of the cluster already in the folder, else the default (postgres-ha)."""
    kind = getattr(args, "kind", None)
    if kind:
        return kind
    return kind_of_folder(_cluster_dir(args)) or DEFAULT_KIND


def cmd_cluster(args: argparse.Namespace) -> int:
    """up, status or down of the cluster kind asked for (or found in the folder), by its own command module."""
    kind = _kind(args)
    module = kind_module(kind)
    if args.cluster_command == "up":
        require_extras(f"'chaosdb cluster up --kind {kind}'", module.EXTRAS)
    if args.cluster_command in ("up", "down") and not args.json:
        show_progress()  # a cluster takes tens of seconds to start or to stop: say what it is doing
    return run_command(kind, args, _cluster_dir(args), _cluster_name(args))


def _load_dsn(args: argparse.Namespace) -> str:
    """--dsn, else CHAOSDB_LOAD_DSN, else the embedded cluster named by --cluster/--cluster-dir."""

    if args.dsn:
        return args.dsn
    if env_value("CHAOSDB_LOAD_DSN"):
        return env_value("CHAOSDB_LOAD_DSN")
    return load_layout(resolve_cluster_dir(args.cluster, args.cluster_dir)).dsn()  # no password: its pgpass file


def cmd_load_tpcc(args: argparse.Namespace) -> int:
    """``chaosdb load tpcc-load``: create the TPC-C schema and load what is missing, saying each part as it goes."""
    scale = Scale.reduced(args.warehouses, args.scale_down)
    result = loader.load(_load_dsn(args), scale, workers=args.workers, drop=args.drop,
                         progress=None if args.json else (lambda m: print(f"  {m}", flush=True)))
    if args.json:
        print_json(result)
    else:
        print(f"TPC-C: {result['warehouses']} warehouse(s), {result['items']} items, "
              f"{result['customers_per_district']} customers/district; loaded {len(result['loaded'])} part(s) "
              f"in {result['seconds']}s ({len(result['already_loaded'])} already there)")
    return 0


def cmd_load_ycsb(args: argparse.Namespace) -> int:
    """``chaosdb load ycsb-load``: the YCSB usertable in PostgreSQL, or its keys in the cluster's etcd."""
    if args.backend == "sql":
        require_extras("'chaosdb load ycsb-load --backend sql'", ("postgres",))
    if args.backend == "etcd":
        cluster = {"chaosdb_cluster": args.cluster or "chaosdb", "chaosdb_cluster_dir": args.cluster_dir}
        endpoints = args.dsn or etcd_endpoints(cluster)
        result = kv.load_etcd(endpoints, args.records, tls=None if args.dsn else etcd_tls(cluster))
    else:
        result = ycsb.load(_load_dsn(args), args.records)
    if args.json:
        print_json(result)
    else:
        where = "etcd /ycsb/" if args.backend == "etcd" else "usertable"
        print(f"YCSB {where}: {result['records']} records ({result['inserted']} inserted) in {result['seconds']}s")
    return 0


def cmd_load_worker(args: argparse.Namespace) -> int:
    """Become a Locust worker of a load control's master (``remote_workers``); the DSN comes from this
    machine's CHAOSDB_LOAD_DSN (the master sends none)."""
    host, _, port = args.master.rpartition(":")
    if not host or not port.isdigit():
        print(f"--master must be HOST:PORT (the master's bind address and port), got {args.master!r}", file=sys.stderr)
        return 2
    if not env_value("CHAOSDB_LOAD_DSN"):
        print("set CHAOSDB_LOAD_DSN to this machine's DSN of the database under test", file=sys.stderr)
        return 2
    argv = worker_argv(args.locustfile or LOCUSTFILES[args.workload], host, int(port))
    os.execv(argv[0], argv)
    return 0  # not reached


def cmd_load_calibrate(args: argparse.Namespace) -> int:
    """``chaosdb load calibrate``: raise the offered rate step by step and say the highest the database sustains."""
    result = calibrate(_load_dsn(args), Path(args.out), workload=args.workload, users=args.users,
                       step_pct=args.step_pct, step_s=args.step_s, max_steps=args.max_steps,
                       start_rate=args.start_rate, progress=None if args.json else (lambda m: print(m, flush=True)))
    if args.json:
        print_json(result)
    else:
        print(f"sustainable rate: {result['sustainable_tps']} tps ({result['stopped_because']})")
    return 0


def _positive_seconds(text: str) -> float:
    """A number of seconds > 0 (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 seconds")
    return value


def cmd_report_build(args: argparse.Namespace) -> int:
    """``chaosdb report JOURNAL``: metrics, Markdown, HTML and plots of one run, with a summary (or the files as JSON).
    """
    if args.json:
        from chaosdb.report.build import build_report  # noqa: PLC0415 - needs the report extra

        result = build_report(args.journal, samples=args.samples, out_dir=args.out, rule=args.rule,
                              window_s=args.window_s)
        print_json({"out_dir": result["out_dir"], "files": result["files"]})
        return 0
    from chaosdb.report.console import build_and_summarise  # noqa: PLC0415 - needs the report extra

    build_and_summarise(args.journal, samples=args.samples, out_dir=args.out, rule=args.rule,
                        window_s=args.window_s)
    return 0


def cmd_report_compare(args: argparse.Namespace) -> int:
    """``chaosdb report compare``: the runs side by side (Table 6.1 of the thesis), as Markdown or JSON."""
    result = compare(load_runs(args.inputs))
    text = json.dumps(result, indent=2) if args.json else render_compare_markdown(result)
    if args.output:
        Path(args.output).write_text(text)
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def cmd_report_upb(args: argparse.Namespace) -> int:
    """``chaosdb report upb``: the UPB availability indices from measured throughputs."""
    try:
        data = json.loads(Path(args.input).read_text())
    except (OSError, ValueError) as exc:
        raise ChaosDBError(f"cannot read UPB input {args.input}: {exc}") from None
    result = upb_indices(data)
    print(json.dumps(result, indent=2) if args.json else render_upb_markdown(result), end="")
    return 0


def cmd_faults_cleanup(args: argparse.Namespace) -> int:
    """``chaosdb faults cleanup``: revert one cluster's faults (or every fault on this host) and remove what they left;
    exit 1 while something is left."""
    if args.all_clusters:
        result = cleanup()
    else:
        directory = resolve_cluster_dir(args.name or "", args.dir or "")
        result = cleanup(str(directory))
    if args.json:
        print_json(result)
    else:
        if not args.all_clusters:
            print(f"faults of the cluster at {directory}:" if result["reverted"] or result["errors"]
                  else f"no fault of the cluster at {directory} is active")
        for r in result["reverted"]:
            print(f"reverted {r['kind']} fault {r['id']} on {', '.join(map(str, r['targets']))}")
        for s in result["swept"]:
            print(f"removed {s}")
        for e in result["errors"]:
            print(f"error: {e}")
        if result.get("kept_other_faults"):
            print(f"kept {len(result['kept_other_faults'])} fault(s) of other clusters or runs "
                  f"({', '.join(result['kept_other_faults'])}): --all-clusters reverts them too")
        if args.all_clusters:
            print("clean: nothing of chaosdb's fault engine is left" if result["clean"]
                  else "NOT clean: " + json.dumps(result["residue"]))
        elif not result["clean"]:
            print("NOT clean: " + json.dumps(result["residue"]))
    return 0 if result["clean"] else 1


def cmd_faults_residue(args: argparse.Namespace) -> int:
    """``chaosdb faults residue``: anything of the fault engine on this host (records, rules, cgroups, qdiscs, helper
    processes), or with ``--name``/``--dir`` what belongs to one cluster; exit 1 when there is."""
    scoped = bool(args.name or args.dir)
    directory = resolve_cluster_dir(args.name or "", args.dir or "") if scoped else None
    left = residue(str(directory)) if directory is not None else residue()
    if args.json:
        print_json(left)
    else:
        for key in ("records", "iptables", "cgroups", "tc", "processes"):
            for item in left.get(key, []):
                print(f"{key}: {item}")
        where = f" of the cluster at {directory}" if scoped else ""
        fix = f"'chaosdb faults cleanup --dir {directory}'" if scoped else "'chaosdb faults cleanup --all-clusters'"
        print(f"clean: nothing{where}" if left["clean"] else f"residue found{where}: {fix} removes it")
    return 0 if left["clean"] else 1


def cmd_faults_list(args: argparse.Namespace) -> int:
    """``chaosdb faults list``: the active local faults and what each did so far."""
    faults = active_faults()
    if args.json:
        print_json(faults)
    else:
        for f in faults:
            print(f"{f['id']}  {f['kind']:<12} {','.join(map(str, f['targets'])):<16} {json.dumps(f['params'])}"
                  f"  {json.dumps(f['stats'])}")
        if not faults:
            print("no active local fault")
    return 0


def _add_dsn_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dsn", default="", help="libpq DSN (default: CHAOSDB_LOAD_DSN, else the embedded cluster)")
    p.add_argument("--cluster", default="", help="embedded cluster name (default: chaosdb)")
    p.add_argument("--cluster-dir", default="", help="embedded cluster directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def _add_cluster_target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default=None, help="cluster name, also the Patroni scope (default: chaosdb; for "
                                                "--kind pd, cockroach or kubernetes the kind's name)")
    p.add_argument("--dir", default="", help="cluster directory (default: $CHAOSDB_HOME/NAME)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


class _DefaultsShown(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already says it or there is none to say; lines
    break between words, never at a hyphen (an install line stays one piece to copy)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or default in (None, False, "", [], argparse.SUPPRESS)
                or not (action.option_strings or action.nargs in ("?", "*"))):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """The CLI's parsers: subcommands are made of the same class, so every one shows its options' defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _DefaultsShown)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The ``chaosdb`` command line: every option with a help text that names its default."""
    parser = _Parser(prog="chaosdb", description="chaostoolkit-db: chaos experiments for databases")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} (chaostoolkit-db)")
    sub = parser.add_subparsers(dest="command", required=True)

    cl = sub.add_parser("cluster", help="embedded HA clusters on this machine")
    csub = cl.add_subparsers(dest="cluster_command", required=True)

    p = csub.add_parser("up", help="start a cluster (create it on first use); a no-op when it runs",
                        description="Start a local cluster of the kind asked for; options under '--kind KIND' "
                                    "apply to that kind only.", epilog=_extras_by_kind())
    _add_cluster_target(p)
    add_kind_arguments(p)
    p.add_argument("--nodes", type=int, default=3, help="number of nodes (kubernetes: kwok nodes)")
    p.add_argument("--address-base", default=None,
                   help="loopback address of the first node (node i gets +i-1; default: the kind's own)")
    p.add_argument("--bin-dir", default=None, help="where the server binaries of the kinds that need them are "
                                                   "(default: CHAOSDB_BIN_DIR, ~/.cache/chaosdb/bin, PATH)")
    p.add_argument("--secure", action="store_true",
                   help="postgres-ha and pd: a cluster CA; TLS with client certificates on every HTTP port (Patroni "
                        "REST, etcd client and peer, PD); PostgreSQL TLS-only with scram-sha-256. The CA and a client "
                        "certificate are written to the cluster's tls/ folder (only when the cluster is created)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for a healthy cluster")
    p.set_defaults(func=cmd_cluster)

    p = csub.add_parser("status", help="members, roles, lag, timeline, etcd leader")
    _add_cluster_target(p)
    p.add_argument("--kind", default=None, choices=cluster_kinds(), metavar="KIND",
                   help="the kind the cluster was started with, one of " + ", ".join(cluster_kinds())
                        + " (default: found from its folder)")
    p.add_argument("--check", action="store_true", help="exit 1 when the cluster is not healthy")
    p.set_defaults(func=cmd_cluster)

    p = csub.add_parser("down", help="stop every process of the cluster")
    _add_cluster_target(p)
    p.add_argument("--kind", default=None, choices=cluster_kinds(), metavar="KIND",
                   help="the kind the cluster was started with, one of " + ", ".join(cluster_kinds())
                        + " (default: found from its folder)")
    p.add_argument("--purge", action="store_true", help="also delete data, logs and the staged runtime")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds for a graceful stop before SIGKILL")
    p.set_defaults(func=cmd_cluster)

    ld = sub.add_parser("load", help="load generation: TPC-C data, calibration")
    lsub = ld.add_subparsers(dest="load_command", required=True)
    p = lsub.add_parser("tpcc-load", help="create the TPC-C schema and load what is missing (resumable)")
    _add_dsn_options(p)
    p.add_argument("--warehouses", type=int, default=1, help="TPC-C warehouses")
    p.add_argument("--scale-down", type=int, default=1,
                   help="divide items and customers by this factor for quick runs (1 = spec sizes)")
    p.add_argument("--workers", type=int, default=2, help="loader processes")
    p.add_argument("--drop", action="store_true", help="drop the TPC-C tables first")
    p.set_defaults(func=cmd_load_tpcc, extras=("postgres",))
    p = lsub.add_parser("ycsb-load", help="create the YCSB usertable and insert missing records",
                        epilog=f"--backend sql, the default, {needs_line(['postgres'])}; --backend etcd needs "
                               "no extra")
    _add_dsn_options(p)
    p.add_argument("--records", type=int, default=10000, help="records of the YCSB table")
    p.add_argument("--backend", choices=["sql", "etcd"], default="sql",
                   help="sql: usertable in PostgreSQL; etcd: keys /ycsb/user<n> in the cluster's etcd (--dsn = URLs)")
    p.set_defaults(func=cmd_load_ycsb)
    p = lsub.add_parser("worker", help="run a Locust worker for a load control's master on another machine")
    p.add_argument("--master", required=True, help="HOST:PORT the master binds (the load control's "
                   "master_bind_host and master_port)")
    p.add_argument("--workload", choices=sorted(LOCUSTFILES), default="tpcc",
                   help="the master's workload (its Locust user classes)")
    p.add_argument("--locustfile", default="", help="a locustfile of your own (the master's must match)")
    p.set_defaults(func=cmd_load_worker, extras=("load",))
    p = lsub.add_parser("calibrate", help="find the sustainable rate (UPB-style 10 %% steps)")
    _add_dsn_options(p)
    p.add_argument("--workload", choices=["tpcc", "ycsb"], default="tpcc", help="the workload to calibrate")
    p.add_argument("--users", type=int, default=16, help="Locust users (terminals) offering the load")
    p.add_argument("--step-pct", type=float, default=10.0, help="each step offers this many percent more")
    p.add_argument("--step-s", type=float, default=10.0, help="seconds each step lasts")
    p.add_argument("--max-steps", type=int, default=20, help="stop after this many steps")
    p.add_argument("--start-rate", type=float, default=0.0, help="first offered rate (default: half the probe)")
    p.add_argument("--out", default="chaosdb-calibration", help="directory for the steps' samples")
    p.set_defaults(func=cmd_load_calibrate, extras=("load",))

    lo = sub.add_parser("faults", help="the host fault engine: active faults, residue, cleanup")
    losub = lo.add_subparsers(dest="faults_command", required=True)
    p = losub.add_parser("list", help="active CPU/memory/network/process faults and what they did so far")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_faults_list)
    p = losub.add_parser("residue", help="anything of the fault engine on this host, or of one cluster with "
                                         "--name/--dir (exit 1 if so)")
    p.add_argument("--name", default=None, help="only what belongs to this embedded cluster (its records, the "
                                                 "iptables chains tagged with its folder, even once it is gone)")
    p.add_argument("--dir", default="", help="only what belongs to the cluster in this directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_faults_residue)
    p = losub.add_parser("cleanup", help="revert one cluster's faults (--name/--dir, default: the default cluster), "
                                         "or with --all-clusters every fault and every tagged rule, cgroup, qdisc, "
                                         "proxy on this host")
    p.add_argument("--name", default=None, help="the embedded cluster whose faults are reverted (default: chaosdb)")
    p.add_argument("--dir", default="", help="that cluster's directory (default: $CHAOSDB_HOME/NAME)")
    p.add_argument("--all-clusters", action="store_true",
                   help="every fault of every cluster and run on this host, and whatever of the engine has no record")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_faults_cleanup)

    rp = sub.add_parser("report", help="reports: 'chaosdb report JOURNAL', 'report compare', 'report upb'")
    rsub = rp.add_subparsers(dest="report_command", required=True)
    p = rsub.add_parser("build", help="metrics, Markdown, HTML and PNGs of one run (the default)")
    p.add_argument("journal", help="Chaos Toolkit journal (journal.json)")
    p.add_argument("--samples", default=None, help="samples file or directory (default: from the journal)")
    p.add_argument("-o", "--out", default=None, help="output directory (default: report/ beside the journal)")
    p.add_argument("--rule", choices=["runs", "literal"], default="runs",
                   help="recovery rule: runs (for high rates: the disturbance starts and ends with runs of 5 "
                        "consecutive transactions outside the baseline's mean + 2 sigma) or literal (the thesis's "
                        "wording: it ends with the last such transaction followed by 5 s without one)")
    p.add_argument("--window-s", type=_positive_seconds, default=5.0,
                   help="width of the timeline's windows in seconds (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_report_build, extras=("report",))
    p = rsub.add_parser("compare", help="Table 6.1-style comparison of runs (dirs or metrics.json; NAME=DIR)")
    p.add_argument("inputs", nargs="+", help="run folders or metrics.json files, each optionally NAME=PATH")
    p.add_argument("-o", "--output", default=None, help="also write the table to this file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_report_compare)
    p = rsub.add_parser("upb", help="UPB indices D_K0, D_KF, DF_K, D_T, D_F from measured throughputs")
    p.add_argument("input", help='JSON: {"T": {"K": {"F": throughput}}}')
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_report_upb)

    add_experiments_parser(sub)
    add_manifests_parser(sub)
    add_gameday_parser(sub)
    add_images_parser(sub)
    add_checks_parser(sub)
    add_history_parser(sub)
    _say_the_extras(parser)
    return parser


def _extras_by_kind() -> str:
    """``cluster up``'s word on extras: what each kind needs."""
    kinds = {kind: tuple(kind_module(kind).EXTRAS) for kind in cluster_kinds()}
    needing = [f"--kind {kind} {needs_line(extras)}" for kind, extras in kinds.items() if extras]
    free = [kind for kind, extras in kinds.items() if not extras]
    return "; ".join(needing) + (f"; {', '.join(free)} need{'s' if len(free) == 1 else ''} no extra" if free else "")


def _say_the_extras(parser: argparse.ArgumentParser) -> None:
    """Every subcommand that needs an extra (its ``extras`` default, or an epilog that says which) names it with
    its install line at the end of its help, and in its parent's list of subcommands."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        listed = {choice.dest: choice for choice in action._choices_actions}
        for name, sub in action.choices.items():
            extras = sub.get_default("extras")
            if extras and not sub.epilog:
                sub.epilog = needs_line(extras)
            if name in listed and sub.epilog and "pip install 'chaostoolkit-db[" in sub.epilog \
                    and "extra" not in (listed[name].help or ""):
                listed[name].help = f"{listed[name].help} ({_short_needs(sub.epilog)})"
            _say_the_extras(sub)


def _short_needs(epilog: str) -> str:
    """The extras part of a subcommand's epilog, for its line in the parent's list: ``needs the 'report' extra``."""
    return "; ".join(part.split(":")[0].strip() for part in epilog.split(";") if "pip install" in part)


def _command_words(args: argparse.Namespace) -> str:
    """The command and sub-command that were run, e.g. ``report build``."""
    words = [args.command] + [str(v) for k, v in vars(args).items() if k.endswith("_command") and k != "command"
                              and isinstance(v, str)]
    return " ".join(words)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``chaosdb`` command: parse, check the extras the command needs, run it; an error is one line on standard
    error (exit 2), never a traceback."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # 'chaosdb report JOURNAL' is short for 'chaosdb report build JOURNAL'
    if len(argv) >= 2 and argv[0] == "report" and argv[1] not in ("build", "compare", "upb", "-h", "--help"):
        argv.insert(1, "build")
    args = parser.parse_args(argv)
    what = f"'chaosdb {_command_words(args)}'"
    try:
        require_extras(what, getattr(args, "extras", ()))
        return int(args.func(args) or 0)
    except ChaosDBError as exc:
        print(f"chaosdb: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # a module of an extra: one line, never a traceback
        missing = missing_extra_of(exc, what)
        if missing is None:
            raise
        print(f"chaosdb: error: {missing}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("chaosdb: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
