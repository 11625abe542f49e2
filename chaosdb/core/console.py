"""Small things every ``chaosdb`` command prints the same way."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO, Any

__all__ = ["print_json", "fmt", "print_stopped", "PROGRESS", "show_progress"]

#: what a long command is doing now (the steps of ``cluster up``): the CLI prints it, a library caller may listen
PROGRESS = logging.getLogger("chaosdb.progress")


def print_json(data: Any) -> None:
    """*data* as indented JSON on standard output (anything JSON cannot say, as text)."""
    print(json.dumps(data, indent=2, default=str))


def fmt(v: Any) -> str:
    """A value for a table cell: ``-`` for nothing."""
    return "-" if v is None else str(v)


def print_stopped(res: dict[str, Any], what: str) -> None:
    """One line for a stopped cluster of any kind (``stopped``, ``purged``, ``dir``)."""
    print(f"{what} stopped ({res['stopped']} processes)"
          + ("; data removed" if res["purged"] else f"; data kept in {res['dir']}"))


class _Elapsed(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self.t0 = time.monotonic()

    def format(self, record: logging.LogRecord) -> str:
        return f"  [{time.monotonic() - self.t0:5.1f}s] {record.getMessage()}"


def show_progress(stream: IO[str] | None = None) -> logging.Handler:
    """Print :data:`PROGRESS` lines to *stream* (standard error), each with the seconds since this call."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_Elapsed())
    PROGRESS.addHandler(handler)
    PROGRESS.setLevel(logging.INFO)
    return handler
