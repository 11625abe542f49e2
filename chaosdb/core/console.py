"""Small things every ``chaosdb`` command prints the same way."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["print_json", "fmt", "print_stopped"]


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def fmt(v: Any) -> str:
    """A value for a table cell: ``-`` for nothing."""
    return "-" if v is None else str(v)


def print_stopped(res: dict[str, Any], what: str) -> None:
    """One line for a stopped cluster of any kind (``stopped``, ``purged``, ``dir``)."""
    print(f"{what} stopped ({res['stopped']} processes)"
          + ("; data removed" if res["purged"] else f"; data kept in {res['dir']}"))
