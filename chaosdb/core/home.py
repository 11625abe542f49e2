"""Where chaosdb keeps its state on this machine: ``$CHAOSDB_HOME``, else ``/var/lib/chaosdb`` for root, else
``$XDG_STATE_HOME/chaosdb`` or ``~/.local/state/chaosdb``. Clusters, fault records and saved process command
lines live below it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_home"]


def default_home() -> Path:
    """The state folder (not created here)."""
    env = os.environ.get("CHAOSDB_HOME")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/chaosdb")
    xdg = os.environ.get("XDG_STATE_HOME")
    return Path(xdg) / "chaosdb" if xdg else Path.home() / ".local" / "state" / "chaosdb"
