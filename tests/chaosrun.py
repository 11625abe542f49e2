"""A ``chaos run`` subprocess that tests can follow line by line and interrupt as a person would (Ctrl-C).

A process started from a job whose SIGINT is ignored (``nohup ... &``, some CI runners) passes SIG_IGN on
to its children, and Python then never installs its KeyboardInterrupt handler: a SIGINT sent to such a
``chaos run`` does nothing. The child here gets SIGINT's default back before it starts, so the interrupt
tests work whatever the test runner's parent did with the signal.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from chaosdb.core.commands import restore_default_sigint

CHAOS = str(Path(sys.executable).parent / "chaos")
CHAOSDB = str(Path(sys.executable).parent / "chaosdb")


def build_report(journal: Path, out: Path) -> str:
    """``chaosdb report build`` of a journal, as a user runs it after ``chaos run``; returns the Markdown report
    (the HTML report and metrics.json must be there too)."""
    built = subprocess.run([CHAOSDB, "report", "build", str(journal), "-o", str(out)], capture_output=True,
                           text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    assert (out / "report.html").exists() and (out / "metrics.json").exists(), sorted(p.name for p in out.iterdir())
    return (out / "report.md").read_text()


class ChaosRun:
    """``chaos run`` with its output collected by a thread; ``wait_for`` a phase, then ``interrupt``."""

    def __init__(self, args: list[str], **popen: object) -> None:
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self.proc = subprocess.Popen([CHAOS, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, preexec_fn=restore_default_sigint,
                                     **popen)  # type: ignore[call-overload]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 120.0) -> bool:
        """True once a line containing *text* was printed; False if the run ended or *timeout* passed first."""
        deadline = time.monotonic() + timeout
        with self._seen:
            while not any(text in ln for ln in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    return any(text in ln for ln in self.lines)
                self._seen.wait(min(left, 0.5))
            return True

    def interrupt(self, timeout: float = 120.0) -> int:
        """Ctrl-C; a second one if the run is still sleeping in a pause after *timeout* / 2; returns the exit
        code."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout / 2)
        except subprocess.TimeoutExpired:  # chaoslib sleeps an activity's pauses.after before re-raising
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=timeout / 2)
        self._reader.join(10)
        return self.proc.returncode

    def finish(self, timeout: float = 600.0) -> int:
        """Wait for the run to end by itself; returns the exit code."""
        self.proc.wait(timeout=timeout)
        self._reader.join(10)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(10)
