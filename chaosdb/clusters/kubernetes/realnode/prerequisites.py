"""What a real node needs on this machine, checked before anything starts: every missing part named at once, each
with its install line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from chaosdb.core.binaries import find_binary
from chaosdb.core.errors import ChaosDBError

__all__ = ["CNI_BIN_DIRS", "CNI_PLUGINS", "problems", "require", "cni_bin_dir"]

#: where distributions install the CNI plugins (Debian: /usr/lib/cni; upstream tarballs: /opt/cni/bin)
CNI_BIN_DIRS = ("/usr/lib/cni", "/opt/cni/bin")
#: the CNI plugins the node's network uses
CNI_PLUGINS = ("bridge", "host-local", "loopback")
_APT = "apt-get install -y"


def cni_bin_dir() -> str | None:
    """The first folder holding every CNI plugin the node needs, or None."""
    for folder in CNI_BIN_DIRS:
        if all(os.access(Path(folder) / p, os.X_OK) for p in CNI_PLUGINS):
            return folder
    return None


def _cgroups_writable() -> bool:
    for path in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        if os.access(path, os.W_OK):
            return True
    return False


def problems(bin_dir: str | None) -> list[str]:
    """One sentence per missing part (empty when the node can start)."""
    found = []
    if os.geteuid() != 0:
        found.append("a real node needs root (containerd, network namespaces, cgroups, a bridge): run as root")
    missing_packages = []
    for program, package in (("containerd", "containerd"), ("ctr", "containerd"), ("runc", "runc"),
                             ("ip", "iproute2"), ("mount", "mount")):
        if shutil.which(program) is None and package not in missing_packages:
            missing_packages.append(package)
    if cni_bin_dir() is None:
        missing_packages.append("containernetworking-plugins")
    if missing_packages:
        found.append(f"missing {', '.join(missing_packages)} (containerd with its CRI plugin, runc and the CNI "
                     f"plugins {', '.join(CNI_PLUGINS)}): {_APT} {' '.join(missing_packages)}")
    try:
        find_binary("kubelet", bin_dir)
    except ChaosDBError as exc:
        found.append(f"{exc} (kubelet of the same Kubernetes version as the control plane)")
    if "overlay" not in Path("/proc/filesystems").read_text():
        found.append("the kernel has no overlay file system (containerd's overlayfs snapshotter needs it): "
                     "modprobe overlay")
    if os.geteuid() == 0 and not _cgroups_writable():
        found.append("no writable cgroup hierarchy under /sys/fs/cgroup (kubelet and runc need one)")
    return found


def require(bin_dir: str | None) -> None:
    """Refuse, before anything starts, with every missing part."""
    found = problems(bin_dir)
    if found:
        raise ChaosDBError("a real node cannot start here: " + "; ".join(found))
