"""Malformed experiment files get sentences, not tracebacks, from the real ``chaos validate`` and ``chaos run``
(issue 32, item 4): the file checker, the command-line reading, and the hook through the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from chaostoolkit.cli import cli

from chaosdb.experiment import malformed

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = json.loads((ROOT / "experiments" / "quickstart.json").read_text())
CHAOS = str(Path(sys.executable).with_name("chaos"))


def _with_list_arguments() -> dict:
    experiment = json.loads(json.dumps(QUICKSTART))
    python = next(a for a in experiment["method"] if a.get("provider", {}).get("type") == "python")
    python["provider"]["arguments"] = ["leader", 10]
    return experiment


def _write(folder: Path, name: str, content: bytes) -> str:
    path = folder / name
    path.write_bytes(content)
    return str(path)


MALFORMED = {
    "list-arguments.json": (json.dumps(_with_list_arguments()).encode(),
                            r"the arguments of 'method\[\d+\]' \('[^']+'\) must be an object of name: value, not a list"),
    "not-utf8.json": (json.dumps(QUICKSTART).encode().replace(b'"title"', b'"ti\xfftle"', 1),
                      r"is not UTF-8 text: byte 0xff at line 1, column \d+"),
    "truncated.json": (json.dumps(QUICKSTART, indent=2).encode()[:300],
                       r"is not valid JSON: .* \(line \d+, column \d+\); the file ends before the JSON does"),
    "broken-middle.json": (b'{"title": "x",, "method": []}', r"is not valid JSON: Expecting property name .*\(line 1, column 15\)$"),
    "empty.json": (b"  \n", r"is empty"),
    "top-level-list.json": (b"[1, 2]", r"the file holds a list; an experiment is one object"),
    "method-object.json": (b'{"title": "x", "description": "y", "method": {"name": "a"}}',
                           r"'method' must be a list, not an object"),
    "activity-string.json": (b'{"title": "x", "description": "y", "method": ["kill the leader"]}',
                             r"'method\[0\]' must be an activity object, not a string"),
    "not-utf8.yaml": (b"title: caf\xe9\nmethod: []\n", r"is not UTF-8 text: byte 0xe9 at line 1, column 11"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_each_malformed_file_gets_one_sentence(tmp_path, name):
    content, expected = MALFORMED[name]
    problems = malformed.file_problems(_write(tmp_path, name, content))
    assert len(problems) == 1, problems
    assert re.search(expected, problems[0]), problems[0]


def test_a_well_formed_experiment_has_no_file_problems():
    for path in sorted((ROOT / "experiments").rglob("*.json")):
        assert malformed.file_problems(str(path)) == [], path


def test_the_source_is_read_from_real_chaos_command_lines(tmp_path):
    path = _write(tmp_path, "e.json", b"{}")
    assert malformed.chaos_source(["chaos", "validate", path], cli) == path
    assert malformed.chaos_source(["chaos", "--no-log-file", "--settings", "/nonexistent", "run",
                                   "--journal-path", str(tmp_path / "j.json"), "--var", "a=1", path], cli) == path
    assert malformed.chaos_source(["chaos", "discover", "chaostoolkit-db"], cli) is None
    assert malformed.chaos_source(["chaos", "run", "https://example.invalid/e.json"], cli) is None


def test_an_error_on_a_well_formed_file_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    path = _write(tmp_path, "e.json", json.dumps(QUICKSTART).encode())
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: seen.append(a))
    malformed.install_hook(["chaos", "run", path])
    try:
        raise RuntimeError("a defect")
    except RuntimeError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    assert seen and seen[0][0] is RuntimeError, "the original hook must print the traceback"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_the_real_chaos_cli_prints_the_sentence_and_no_traceback(tmp_path, command, name):
    content, expected = MALFORMED[name]
    path = _write(tmp_path, name, content)
    env = {**os.environ, "CHAOSDB_HOME": str(tmp_path / "home")}
    done = subprocess.run([CHAOS, "--no-log-file", command, path], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert re.search(r"chaos: error: .*" + expected, done.stderr), done.stderr
    assert not (tmp_path / "home").exists(), "nothing may start for a file that cannot be read"
