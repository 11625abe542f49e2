"""What is wrong with a malformed experiment file, in plain sentences.

Chaos Toolkit's loader (chaoslib 1.44) turns YAML errors into a message but lets everything else escape as a
Python traceback from ``chaos validate`` and ``chaos run``: a file that is not UTF-8, JSON that is truncated or
empty, a list where the experiment or an activity's ``arguments`` must be an object, a string where a secrets scope
or a control's provider must be an object, a number where a module name must be a string. :func:`file_problems`
reads the file as the loader does and says what is wrong with its shape (:mod:`chaosdb.experiment.shape`, the one
typed model of the format); :func:`install_hook` (called when Chaos Toolkit
loads this pack's CLI plugin, before it reads the experiment) prints those sentences instead of the traceback
when ``chaos validate|run FILE`` dies on such a file. An exception on a well-formed file keeps its traceback:
that is a defect to report, not a file to fix.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from chaosdb.experiment.shape import shape_problems

__all__ = ["file_problems", "shape_problems", "chaos_source", "install_hook"]

def file_problems(path: str) -> list[str]:
    """One sentence per problem that keeps Chaos Toolkit from reading the experiment at ``path`` (empty when the
    file reads as an experiment; what the file means is left to ``chaos validate``)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        return [f"cannot read {path}: {exc.strerror or exc}"]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return [f"{path} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line}, column {column} "
                "cannot be read (save the file as UTF-8)"]
    if not text.strip():
        return [f"{path} is empty: an experiment is a JSON or YAML object with a title and a method"]
    if os.path.splitext(path)[1].lower() in (".yaml", ".yml"):
        import yaml  # noqa: PLC0415 - only for YAML experiments; a dependency of chaostoolkit-lib

        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            return [f"{path} is not valid YAML: {' '.join(str(exc).split())}"]
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            truncated = exc.pos >= len(text.rstrip()) or text.rstrip()[-1] not in "}]"
            hint = "; the file ends before the JSON does: is it cut short?" if truncated else ""
            return [f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}){hint}"]
    return [f"{path}: {problem}" for problem in shape_problems(document)]


def chaos_source(argv: Sequence[str], group: Any) -> str | None:
    """The experiment file of a ``chaos validate|run`` command line (``group`` is Chaos Toolkit's click group),
    or None for other commands and for sources that are not local files."""
    try:
        context = group.make_context("chaos", list(argv[1:]), resilient_parsing=True)
        rest = [*getattr(context, "_protected_args", []), *context.args]
        if not rest or rest[0] not in ("validate", "run"):
            return None
        command = group.get_command(context, rest[0])
        sub = command.make_context(rest[0], rest[1:], parent=context, resilient_parsing=True)
        source = sub.params.get("source")
    except Exception:  # noqa: BLE001 - a command line we cannot read leaves Chaos Toolkit's own output alone
        return None
    return source if isinstance(source, str) and os.path.isfile(source) else None


def install_hook(argv: Sequence[str] | None = None) -> None:
    """Print :func:`file_problems` instead of a traceback when ``chaos validate|run FILE`` dies on a malformed
    FILE (exit status 1, as Chaos Toolkit's own refusals)."""
    previous: Callable[..., Any] = sys.excepthook
    arguments = list(sys.argv if argv is None else argv)

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        problems: list[str] = []
        if not issubclass(kind, KeyboardInterrupt):
            try:
                from chaostoolkit.cli import cli  # noqa: PLC0415 - only in the chaos process

                source = chaos_source(arguments, cli)
                problems = file_problems(source) if source else []
            except Exception:  # noqa: BLE001 - never hide the original error behind one of ours
                problems = []
        if not problems:
            previous(kind, exc, tb)
            return
        for problem in problems:
            print(f"chaos: error: {problem}", file=sys.stderr)

    sys.excepthook = hook
