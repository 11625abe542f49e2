"""The load's progress lines tell a pause on purpose from a load that stopped committing: while the replica
convergence check holds the load (SIGSTOP), the line says "load paused for the integrity check", never "no
transactions in the last seconds"; a line whose seconds were partly paused says how many."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

from chaosdb.experiment.context import end_run
from chaosdb.load import integrity
from chaosdb.load import state as load_state
from chaosdb.load.progress import Progress


def test_a_pause_that_lasts_is_said_with_its_reason_and_its_length():
    progress = Progress()
    progress.paused("the integrity check")
    now = time.time()
    paused, note = progress.pause_note(now - 5, now - 1.5, now + 12)
    assert paused and note.startswith("load paused for the integrity check (") and note.endswith("s so far)")


def test_seconds_partly_paused_are_counted_and_a_window_without_a_pause_says_nothing():
    progress = Progress()
    progress._pauses = [["the integrity check", 100.0, 103.0]]
    assert progress.pause_note(101.0, 106.0, 107.5) == (False, "(paused 2 of these 5 s for the integrity check)")
    assert progress.pause_note(104.0, 109.0, 110.5) == (False, "")


def test_the_progress_line_during_a_pause_says_so(tmp_path, caplog):
    progress = Progress()
    caplog.set_level(logging.INFO, logger="chaostoolkit")
    progress.start(tmp_path, 0.1)  # no samples at all: without the pause this says "no transactions"
    try:
        progress.paused("the integrity check")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("load paused" in r.getMessage() for r in caplog.records):
            time.sleep(0.05)
        progress.resumed()
        while time.monotonic() < deadline and not any("(paused " in r.getMessage() for r in caplog.records):
            time.sleep(0.05)  # the lines' seconds lag 1.5 s behind: they cover the pause after it ended
    finally:
        progress.stop()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[load]")]
    paused = [line for line in lines if "load paused for the integrity check" in line]
    assert paused, lines
    assert all("no transactions" not in line for line in lines[: lines.index(paused[-1]) + 1]), lines
    after = lines[lines.index(paused[-1]) + 1:]
    assert any("for the integrity check)" in line for line in after), lines


def test_the_convergence_check_marks_its_pause_for_the_progress_lines(monkeypatch):
    """integrity's pause (SIGSTOP of the load's process groups) begins and ends the pause the lines report."""
    record = {"running": True, "settings": {}}
    monkeypatch.setattr(load_state, "current", lambda: record)
    monkeypatch.setattr(load_state, "process", lambda: SimpleNamespace(poll=lambda: None))
    monkeypatch.setattr(load_state, "pause_group", lambda: [])  # no process group is signalled
    end_run()
    progress = load_state.progress()  # the run's progress lines, in its run context
    with integrity._load_paused(True):
        now = time.time()
        assert progress.pause_note(now - 5, now, now)[0]
    now = time.time()
    assert not progress.pause_note(now - 5, now, now)[0]
    assert record["pauses"][0]["reason"] == "replica convergence check"
    end_run()
