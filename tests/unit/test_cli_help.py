"""The ``chaosdb`` command explains itself: every option and argument has a help text, each default is shown,
every subcommand that needs an extra names it with its install line, ``--version`` answers, and a starting
cluster says what it is doing."""

from __future__ import annotations

import argparse
import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

import chaosdb
from chaosdb.cli import build_parser
from chaosdb.core.clusterkinds import cluster_kinds, kind_module
from chaosdb.core.console import PROGRESS, show_progress
from chaosdb.core.extras import install_line

BIN = Path(sys.executable).parent


def _parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*words, name))


def _options():
    for words, parser in _parsers(build_parser()):
        for action in parser._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                yield " ".join(words), parser, action


def test_every_option_and_argument_says_what_it_is():
    found = list(_options())
    assert len(found) > 100
    missing = [(words, action.option_strings or action.dest) for words, _, action in found if not action.help]
    assert not missing, missing


def test_every_default_is_shown_in_the_help():
    unshown = []
    for words, parser, action in _options():
        if action.default in (None, False, "", []) or not action.option_strings:
            continue
        shown = parser._get_formatter()._get_help_string(action) % {"default": action.default}
        if "default" not in shown:
            unshown.append((words, action.option_strings[-1]))
    assert not unshown, unshown


def _leaves():
    """(words, parser, its parent) of every subcommand that runs something (aliases included)."""
    parsers = dict(_parsers(build_parser()))
    for words, parser in parsers.items():
        if words and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            yield words, parser, parsers[words[:-1]]


def _flat(text: str) -> str:
    return " ".join(text.split())


#: subcommands whose extra depends on an option (their help says which)
_CONDITIONAL = {("cluster", "up"): [install_line(kind_module(k).EXTRAS) for k in cluster_kinds()
                                    if kind_module(k).EXTRAS],
                ("load", "ycsb-load"): [install_line(["postgres"])]}


@pytest.mark.parametrize("words,parser,parent", [pytest.param(*leaf, id=" ".join(leaf[0])) for leaf in _leaves()])
def test_every_subcommand_names_the_extras_it_needs_in_its_help(words, parser, parent):
    """The extras a command refuses to run without (its ``extras``) are in its ``--help`` with the install line,
    and in its parent's list of subcommands; a command that needs none says none."""
    extras = parser.get_default("extras") or ()
    wanted = [install_line(extras)] if extras else _CONDITIONAL.get(words, [])
    text = _flat(parser.format_help())
    for line in wanted:
        assert line in text, (words, line)
    assert text.count("pip install 'chaostoolkit-db[") == len(wanted), (words, text)
    listing = _flat(parent.format_help())
    entry = listing[listing.index(f" {words[-1]} "):]
    for extra in extras:
        assert f"'{extra}'" in entry.split(" extra")[0], (words, entry[:200])


def test_the_commands_that_need_an_extra_are_the_ones_that_say_so():
    named = {words for words, parser, _ in _leaves() if "pip install" in parser.format_help()}
    assert {("report", "build"), ("load", "tpcc-load"), ("load", "ycsb-load"), ("load", "worker"),
            ("load", "calibrate"), ("cluster", "up"), ("manifests", "render"), ("manifests", "validate"),
            ("gameday", "run"), ("gameday", "report"), ("gameday", "gate")} <= named


def test_version():
    done = subprocess.run([str(BIN / "chaosdb"), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"chaosdb {chaosdb.__version__} (chaostoolkit-db)"


@pytest.mark.parametrize("option", ["--pg-port", "--stores", "--replicas", "--timeout"])
def test_cluster_up_help_shows_the_kind_options_with_their_defaults(option):
    up = dict(_parsers(build_parser()))["cluster", "up"]
    text = " ".join(up.format_help().split())
    after = text[text.rindex(option):][:300]  # its entry, after the usage line
    assert "(default: " in after


def test_progress_lines_carry_the_seconds_since_the_start():
    out = io.StringIO()
    handler = show_progress(out)
    try:
        PROGRESS.info("starting etcd on %s", "node1")
        PROGRESS.debug("not shown")
    finally:
        PROGRESS.removeHandler(handler)
        PROGRESS.setLevel(logging.NOTSET)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].endswith("s] starting etcd on node1") and lines[0].startswith("  [")


def test_the_fault_engine_commands():
    listed = subprocess.run([str(BIN / "chaosdb"), "faults", "list", "--json"], capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0 and isinstance(json.loads(listed.stdout), list) and listed.stderr == ""
