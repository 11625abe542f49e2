"""containerd for the real node: the distribution's containerd with its CRI plugin, runc and the CNI plugins, all
of its state in the node's folder.

The configuration (``config.toml``, version 2 as containerd 1.6 reads it) puts containerd's root and state in the
node's folder and its socket in a short runtime folder of the cluster (``/run/chaosdb/k8s-<tag>``: a socket path
may not exceed 107 bytes). The traps found on these machines are set (``shared/testenv`` README, "A real node"):
``restrict_oom_score_adj = true`` (nobody here may lower ``oom_score_adj``; without it every sandbox fails with
"can't get final child's PID from pipe"), cgroupfs rather than systemd cgroups, network namespaces under the state
folder (``netns_mounts_under_state_dir``), the pause image is one built here (no registry to pull from). The
snapshotters and plugins that would touch the host beyond the node's folder (btrfs, zfs, devmapper, aufs,
tracing) are disabled.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["ContainerdPaths", "config_toml", "ctr", "wait_serving", "images"]


class ContainerdPaths:
    """Where a node's containerd keeps everything."""

    def __init__(self, node_dir: Path, run_dir: Path) -> None:
        self.dir = Path(node_dir) / "containerd"
        self.root = self.dir / "root"
        self.state = self.dir / "state"
        self.config = self.dir / "config.toml"
        self.log = self.dir / "containerd.log"
        self.run_dir = Path(run_dir)
        self.socket = self.run_dir / "containerd.sock"
        self.cni_conf = Path(node_dir) / "cni" / "net.d"
        self.cni_data = Path(node_dir) / "cni" / "ipam"

    @property
    def endpoint(self) -> str:
        """The CRI endpoint kubelet is given."""
        return f"unix://{self.socket}"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml(tables: dict[str, dict[str, Any]], top: dict[str, Any]) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items()]
    for table, entries in tables.items():
        lines += ["", f"[{table}]"] + [f"  {k} = {_toml_value(v)}" for k, v in entries.items()]
    return "\n".join(lines) + "\n"


#: plugins that would use host facilities beyond the node's folder, or are not needed
DISABLED_PLUGINS = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
                    "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing",
                    "io.containerd.internal.v1.opt"]  # "opt" would make /opt/containerd on the host


def config_toml(paths: ContainerdPaths, sandbox_image: str, cni_bin_dir: str) -> str:
    """containerd 1.6's configuration for the node (see the module's documentation)."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return _toml({
        "grpc": {"address": str(paths.socket)},
        "ttrpc": {"address": str(paths.socket) + ".ttrpc"},
        cri: {"sandbox_image": sandbox_image, "restrict_oom_score_adj": True,
              "netns_mounts_under_state_dir": True, "enable_selinux": False, "stream_server_address": "127.0.0.1",
              "stream_server_port": "0", "enable_unprivileged_ports": False, "enable_unprivileged_icmp": False,
              "disable_apparmor": True},
        f"{cri}.containerd": {"snapshotter": "overlayfs", "default_runtime_name": "runc",
                              "discard_unpacked_layers": False},
        f"{cri}.containerd.runtimes.runc": {"runtime_type": "io.containerd.runc.v2"},
        f"{cri}.containerd.runtimes.runc.options": {"SystemdCgroup": False},
        f"{cri}.cni": {"bin_dir": cni_bin_dir, "conf_dir": str(paths.cni_conf), "max_conf_num": 1},
    }, {"version": 2, "root": str(paths.root), "state": str(paths.state), "oom_score": 0,
        "disabled_plugins": DISABLED_PLUGINS})


def ctr(paths: ContainerdPaths, *args: str, namespace: str = "k8s.io", timeout: float = 300.0,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ctr`` against the node's containerd (namespace ``k8s.io``: the CRI's)."""
    proc = subprocess.run(["ctr", "--address", str(paths.socket), "--namespace", namespace, *args],
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise ChaosDBError(f"ctr {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def wait_serving(paths: ContainerdPaths, deadline: float) -> None:
    """Return once containerd answers and its CRI plugin is ``ok``; refused with its log's tail at *deadline*."""
    why = "not started"
    while time.monotonic() < deadline:
        if paths.socket.exists():
            proc = ctr(paths, "plugins", "ls", check=False, timeout=10)
            cri = [line for line in proc.stdout.splitlines() if "io.containerd.grpc.v1" in line and " cri " in line]
            if cri and cri[0].split()[-1] == "ok":
                return
            why = cri[0] if cri else (proc.stderr.strip() or "the CRI plugin is not listed")
        time.sleep(0.2)
    tail = paths.log.read_text()[-1500:] if paths.log.exists() else ""
    raise ChaosDBError(f"containerd's CRI did not come up ({why}); its log ends: {tail}")


def images(paths: ContainerdPaths) -> set[str]:
    """The references of the images the node's containerd has (namespace ``k8s.io``)."""
    proc = ctr(paths, "images", "list", "--quiet", check=False, timeout=30)
    return {line.strip() for line in proc.stdout.splitlines() if line.strip()}
