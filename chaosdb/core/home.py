"""Where chaosdb keeps its state on this machine: ``$CHAOSDB_HOME``, else ``/var/lib/chaosdb`` for root, else
``$XDG_STATE_HOME/chaosdb`` or ``~/.local/state/chaosdb``. Clusters, fault records and saved process command
lines live below it."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import env_value, system_value

__all__ = ["DEFAULT_CLUSTER", "default_home", "check_cluster_name", "cluster_dir_for", "resolve_cluster_dir",
           "path_tag"]

#: the name of the cluster a command or an experiment means when it names none
DEFAULT_CLUSTER = "chaosdb"


def default_home() -> Path:
    """The state folder (not created here)."""
    env = env_value("CHAOSDB_HOME")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/chaosdb")
    xdg = system_value("XDG_STATE_HOME")
    return Path(xdg) / "chaosdb" if xdg else Path.home() / ".local" / "state" / "chaosdb"


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def check_cluster_name(name: str) -> str:
    """*name*, when it is a cluster name (letters, digits, ``-`` and ``_``, at most 63): a name is never a path, so a
    cluster always lives directly in its home folder."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ChaosDBError(f"cluster name {name!r} may contain only letters, digits, '-' and '_' (at most 63, "
                           "starting with a letter or digit): it names a folder in CHAOSDB_HOME, never a path; "
                           "give a folder with chaosdb_cluster_dir / --dir instead")
    return str(name)


def cluster_dir_for(name: str = DEFAULT_CLUSTER) -> Path:
    """The folder of the local cluster called *name*: ``$CHAOSDB_HOME/<name>``."""
    return default_home() / check_cluster_name(name)


def resolve_cluster_dir(cluster: str = "", cluster_dir: str = "",
                        configuration: dict[str, Any] | None = None) -> Path:
    """Arguments first, then configuration ``chaosdb_cluster_dir`` / ``chaosdb_cluster``,
    then ``CHAOSDB_CLUSTER_DIR``, then the default cluster name."""
    configuration = configuration or {}
    if cluster_dir:
        return Path(cluster_dir)
    if cluster:
        return cluster_dir_for(cluster)
    if configuration.get("chaosdb_cluster_dir"):
        return Path(str(configuration["chaosdb_cluster_dir"]))
    if configuration.get("chaosdb_cluster"):
        return cluster_dir_for(str(configuration["chaosdb_cluster"]))
    if env_value("CHAOSDB_CLUSTER_DIR"):
        return Path(env_value("CHAOSDB_CLUSTER_DIR"))
    return cluster_dir_for(DEFAULT_CLUSTER)


def path_tag(path: str | os.PathLike[str]) -> str:
    """Six hex digits naming a folder by its real path (the same whether the folder still exists or not): what a
    cluster's fault chains, bridge and runtime folder are tagged with."""
    return hashlib.sha1(os.path.realpath(os.fspath(path)).encode()).hexdigest()[:6]
