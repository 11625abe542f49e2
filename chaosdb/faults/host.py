"""What this host can do, checked before a fault changes anything."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.netem import netem_available
from chaosdb.core.settings import env_value

__all__ = ["require_root", "CgroupHost", "cgroup_host", "require_tool", "netem_available", "CGROUP_ROOT"]

CGROUP_ROOT = Path(env_value("CHAOSDB_CGROUP_ROOT", "/sys/fs/cgroup"))


def require_root(what: str) -> None:
    """Refuse, saying why, when this process is not root."""
    if os.geteuid() != 0:
        raise ChaosDBError(f"{what} needs root (it changes cgroups / packet filters of the host): "
                           "run the experiment as root, e.g. with sudo")


@dataclass(frozen=True)
class CgroupHost:
    """Where the controllers are: ``version`` 2 (unified) or 1 (one hierarchy per controller)."""

    version: int
    root: Path  # v2: the unified mount; v1: the tmpfs holding the hierarchies
    controllers: frozenset[str]

    def hierarchy(self, controller: str) -> Path:
        """The folder of *controller*'s hierarchy; refused when this host does not offer it."""
        if controller not in self.controllers:
            raise ChaosDBError(
                f"the {controller} cgroup controller is not available on this host "
                f"(cgroup v{self.version} at {self.root}; available: {', '.join(sorted(self.controllers)) or 'none'})"
            )
        return self.root if self.version == 2 else self.root / controller


def _v1_controllers(root: Path) -> set[str]:
    found = set()
    for c in ("cpu", "memory"):
        d = root / c
        if (d / "cgroup.procs").exists() and os.access(d, os.W_OK):
            found.add(c)
    return found


def cgroup_host(root: Path | None = None) -> CgroupHost:
    """Detect cgroup v2 (``cgroup.controllers`` at the root) or v1 (``cpu/``, ``memory/`` hierarchies).

    A hybrid host (v1 controllers plus an empty v2 tree at ``unified/``) counts as v1:
    the controllers are where the limits can be set.
    """
    root = Path(root or CGROUP_ROOT)
    ctl = root / "cgroup.controllers"
    if ctl.exists():
        controllers = set(ctl.read_text().split()) & {"cpu", "memory"}
        return CgroupHost(2, root, frozenset(controllers))
    if (root / "cpu").is_dir() or (root / "memory").is_dir():
        return CgroupHost(1, root, frozenset(_v1_controllers(root)))
    raise ChaosDBError(f"no cgroup file system at {root}: CPU and memory faults need cgroups (v1 or v2)")


def require_tool(name: str, package: str) -> str:
    """The path of the tool *name*; refused with the package that brings it when it is not installed."""
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.path.exists(p)), None)
    if not path:
        raise ChaosDBError(f"{name} is not installed: network faults need it (Debian/Ubuntu: apt-get install {package})")
    return path


