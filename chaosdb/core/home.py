"""Where chaosdb keeps its state on this machine: ``$CHAOSDB_HOME``, else ``/var/lib/chaosdb`` for root, else
``$XDG_STATE_HOME/chaosdb`` or ``~/.local/state/chaosdb``. Clusters, fault records and saved process command
lines live below it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from chaosdb.core.errors import ChaosDBError

__all__ = ["default_home", "check_cluster_name"]


def default_home() -> Path:
    """The state folder (not created here)."""
    env = os.environ.get("CHAOSDB_HOME")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/chaosdb")
    xdg = os.environ.get("XDG_STATE_HOME")
    return Path(xdg) / "chaosdb" if xdg else Path.home() / ".local" / "state" / "chaosdb"


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def check_cluster_name(name: str) -> str:
    """*name*, when it is a cluster name (letters, digits, ``-`` and ``_``, at most 63): a name is never a path, so a
    cluster always lives directly in its home folder."""
    if not _NAME.match(str(name)):
        raise ChaosDBError(f"cluster name {name!r} may contain only letters, digits, '-' and '_' (at most 63, "
                           "starting with a letter or digit): it names a folder in CHAOSDB_HOME, never a path; "
                           "give a folder with chaosdb_cluster_dir / --dir instead")
    return str(name)
