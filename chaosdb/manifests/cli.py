"""``chaosdb manifests list|render|validate``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.manifests.templates import list_templates, render

__all__ = ["add_parser"]


def _parse_sets(items: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ChaosDBError(f"--set wants KEY=VALUE, got {item!r}")
        values[key.strip()] = value
    return values


def cmd_list(args: argparse.Namespace) -> int:
    """``chaosdb manifests list``: the templates and their variables."""
    templates = list_templates(args.dir or None)
    if args.json:
        print(json.dumps([t.as_dict() for t in templates], indent=2))
        return 0
    width = max((len(t.name) for t in templates), default=10)
    for t in templates:
        print(f"{t.name:<{width}}  {'+'.join(t.kinds):<28} {t.summary}")
        if args.verbose:
            for v in t.variables.values():
                default = "(required)" if v.required else repr(v.default)
                print(f"{'':<{width}}    {v.name:<18} {v.type:<16} {default:<28} {v.description}")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    """``chaosdb manifests render``: the exact YAML a template gives with the values set, validated first."""
    result = render(args.template, _parse_sets(args.set), args.dir or None)
    if args.json:
        print(json.dumps({"template": result.template, "values": result.values, "objects": result.objects},
                         indent=2))
    else:
        sys.stdout.write(result.text)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """``chaosdb manifests validate``: check files against the CRD schemas and the admission rules; exit 1 when an
    object would be refused."""
    from chaosdb.manifests.validate import validate_file, validate_text  # noqa: PLC0415 - needs the k8s extra

    reports: list[Any] = []
    for path in args.files:
        try:
            reports += validate_text(sys.stdin.read(), "<stdin>") if path == "-" else validate_file(path)
        except (OSError, ValueError) as e:
            print(f"FAIL  {path}: {e}")
            reports.append(None)
    ok = all(r is not None and r.ok for r in reports) and bool(reports)
    if args.strict:
        ok = ok and not any(r.warnings for r in reports if r is not None)
    if args.json:
        print(json.dumps({"ok": ok, "objects": [r.as_dict() for r in reports if r is not None]}, indent=2))
    else:
        for r in reports:
            if r is not None:
                print("\n".join(r.lines()))
        bad = sum(1 for r in reports if r is None or not r.ok)
        print(f"{len(reports)} object(s), {bad} refused" + (", warnings count as errors" if args.strict else ""))
    return 0 if ok else 1


def add_parser(sub: Any) -> None:
    """``chaosdb manifests list|render|validate``."""
    mp = sub.add_parser("manifests", help="Chaos Mesh / Litmus templates: list, render, validate offline")
    msub = mp.add_subparsers(dest="manifests_command", required=True)
    p = msub.add_parser("list", help="the templates and their variables")
    p.add_argument("--dir", default="", help="template folder (default: $CHAOSDB_MANIFESTS, else the templates shipped with the package)")
    p.add_argument("-v", "--verbose", action="store_true", help="also list every variable with type and default")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_list)
    p = msub.add_parser("render", help="print the exact YAML that would be applied (validated first)")
    p.add_argument("template", help="template name, e.g. cockroachdb/pod-kill")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a variable (repeatable)")
    p.add_argument("--dir", default="", help="template folder (default: $CHAOSDB_MANIFESTS, else the shipped ones)")
    p.add_argument("--json", action="store_true", help="print the objects as JSON")
    p.set_defaults(func=cmd_render, extras=("k8s",))
    p = msub.add_parser("validate", help="check manifests against the CRD schemas and admission rules "
                                         "(exit 1 when any object would be refused)")
    p.add_argument("files", nargs="+", help="YAML/JSON files, or - for stdin")
    p.add_argument("--strict", action="store_true", help="warnings (e.g. pod-failure without duration) fail too")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_validate, extras=("k8s",))
