"""A real node of the local Kubernetes cluster: its plan, start, status and removal.

A real node is containerd (with runc and the CNI plugins) and kubelet on this machine, on a bridge of its own
(:mod:`.network`), with a TCP forwarder that lets pods reach the API server at ``10.96.0.1:443``
(:mod:`.forwarder`). Everything it starts runs with its working directory in the node's folder (how ``status`` and
``down`` find it, also after a crash), its pods' cgroups live under a cgroup root of the cluster's own, its sockets
in ``/run/chaosdb/k8s-<tag>``. :func:`stop` removes all of it: pods (through the API while it answers, so kubelet
tears down their sandboxes), kubelet, containerd and its shims, every process left in the node's cgroups, every
mount under its folders (container root file systems, network namespaces, pod volumes), the cgroups, the bridge,
and it puts back any host sysctl that changed while the node ran.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from chaosdb.clusters.kubernetes.realnode import network, prerequisites
from chaosdb.clusters.kubernetes.realnode.containerd import ContainerdPaths, config_toml, wait_serving
from chaosdb.clusters.kubernetes.realnode.kubelet import KUBELET_PATH, KubeletPaths, command_line, write_config
from chaosdb.clusters.kubernetes.realnode.network import NetworkPlan
from chaosdb.core.binaries import find_binary
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import cmdline, pid_alive, pids_under, signal_pids, wait_gone
from chaosdb.core.servers import spawn_server

__all__ = ["RealNode", "plan_node", "start", "stop", "status", "node_processes", "mounts_under", "cgroup_dirs",
           "make_cgroup_root"]

#: the apiserver's port (the forwarder passes 10.96.0.1:443 on to it)
_API_PORT = 6443


@dataclass
class RealNode:
    """One real node: its name, folders, runtime folder, network and cgroup root (kept in the cluster's state)."""

    name: str
    dir: str
    run_dir: str
    cgroup_root: str
    network: dict[str, Any]

    @property
    def net(self) -> NetworkPlan:
        """The node's network plan."""
        return NetworkPlan(**self.network)

    @property
    def containerd(self) -> ContainerdPaths:
        """Where its containerd lives."""
        return ContainerdPaths(Path(self.dir), Path(self.run_dir))

    @property
    def kubelet(self) -> KubeletPaths:
        """Where its kubelet lives."""
        return KubeletPaths(Path(self.dir))

    @property
    def forwarder_dir(self) -> Path:
        """The API forwarder's working directory."""
        return Path(self.dir) / "api-forwarder"

    def as_dict(self) -> dict[str, Any]:
        """For the cluster's state file."""
        return asdict(self)


def plan_node(cluster_dir: Path, tag: str, index: int = 0) -> RealNode:
    """A real node's plan: folders, a free private subnet for its bridge, its cgroup root; the host sysctls as they
    are now (restored by :func:`stop`)."""
    net = network.plan_network(tag)
    net.sysctls = network.read_sysctls()
    return RealNode(name=f"real-node-{index}", dir=str(Path(cluster_dir) / f"real-node-{index}"),
                    run_dir=f"/run/chaosdb/k8s-{tag}", cgroup_root=f"/chaosdb-{tag}", network=net.as_dict())


def start(node: RealNode, api_address: str, kubeconfig: str, ca_file: str, bin_dir: str | None,
          sandbox_image: str, load_images: Callable[[ContainerdPaths], None], deadline: float) -> None:
    """Bring the node up: its bridge, the API forwarder, containerd (then *load_images* into it: the pause image at
    least), kubelet. Returns once kubelet runs (the caller waits for the Node to be Ready)."""
    prerequisites.require(bin_dir)
    kubelet_binary = find_binary("kubelet", bin_dir)
    Path(node.dir).mkdir(parents=True, exist_ok=True)
    Path(node.run_dir).mkdir(parents=True, exist_ok=True)
    os.chmod(node.run_dir, 0o700)
    net = node.net
    network.create(net)
    if not pids_under(node.forwarder_dir):
        spawn_server([sys.executable, "-m", "chaosdb.clusters.kubernetes.realnode.forwarder",
                      f"{network.API_SERVICE_IP}:443", f"{api_address}:{_API_PORT}"], node.forwarder_dir,
                     node.forwarder_dir / "forwarder.log")
    paths = node.containerd
    network.write_cni_config(net, paths.cni_conf, paths.cni_data)
    paths.dir.mkdir(parents=True, exist_ok=True)
    paths.config.write_text(config_toml(paths, sandbox_image, prerequisites.cni_bin_dir() or "/usr/lib/cni"))
    if not pids_under(paths.dir):
        spawn_server(["containerd", "--config", str(paths.config)], paths.dir, paths.log)
    wait_serving(paths, deadline)
    load_images(paths)
    make_cgroup_root(node)
    _note_host_dirs(node)
    kubelet = node.kubelet
    write_config(kubelet, net.node_ip, node.cgroup_root, ca_file)
    if not pids_under(kubelet.dir):
        spawn_server(command_line(kubelet_binary, kubelet, kubeconfig, paths.endpoint, node.name, net.node_ip),
                     kubelet.dir, kubelet.log, {"PATH": KUBELET_PATH})


#: folders kubelet, containerd's shims and the CNI library make on the host whatever their configuration says: links
#: to containers' logs, kubelet's device-plugin socket, runc's state and the shims' sockets, the CNI result cache
HOST_DIRS = ("/var/log/containers", "/var/log/pods", "/var/lib/kubelet", "/var/lib/cni", "/run/containerd")
#: where the CNI library caches each attachment's result (whatever the configuration says)
CNI_RESULTS = "/var/lib/cni/results"


def _host_dirs_file(node: RealNode) -> Path:
    return Path(node.dir) / "host-dirs-made.txt"


def _note_host_dirs(node: RealNode) -> None:
    """Which of :data:`HOST_DIRS` do not exist before kubelet first starts (removed again by :func:`stop`)."""
    record = _host_dirs_file(node)
    if not record.exists():
        record.write_text("".join(f"{d}\n" for d in HOST_DIRS if not os.path.exists(d)))


def _remove_host_traces(node: RealNode) -> list[str]:
    """kubelet's links to this node's containers' logs, and the host folders it made for them (when empty)."""
    removed = []
    links = Path(HOST_DIRS[0])
    if links.is_dir():
        for link in links.iterdir():
            target = os.readlink(link) if link.is_symlink() else ""
            if target.startswith(os.path.realpath(node.dir) + os.sep) or target.startswith(node.dir + os.sep):
                link.unlink()
                removed.append(str(link))
    removed += _remove_cni_results(node)
    record = _host_dirs_file(node)
    for folder in record.read_text().split() if record.exists() else []:
        removed += _remove_emptied(Path(folder))
    return removed


def _remove_cni_results(node: RealNode) -> list[str]:
    """The CNI library's cached results of this node's pods (``<bridge>-<container>-<interface>`` and their loopback
    ``cni-loopback-<container>-lo``): a pod deleted cleanly takes its own away, a node whose machine restarted
    under it leaves them."""
    results = Path(CNI_RESULTS)
    if not results.is_dir():
        return []
    prefix = node.net.bridge + "-"
    removed = []
    for entry in sorted(results.iterdir()):
        if not entry.name.startswith(prefix):
            continue
        container = entry.name[len(prefix):].rsplit("-", 1)[0]
        for path in (entry, results / f"cni-loopback-{container}-lo"):
            if path.exists():
                path.unlink()
                removed.append(str(path))
    return removed


def _remove_emptied(top: Path) -> list[str]:
    """A host folder the node's programs made, bottom up: its sockets and empty folders (anything else stays, and so
    does every folder above it)."""
    removed: list[str] = []
    if not top.is_dir():
        return removed
    for folder, _, files in sorted(os.walk(top), key=lambda w: w[0].count(os.sep), reverse=True):
        for name in files:
            path = Path(folder) / name
            if path.is_socket():
                path.unlink()
                removed.append(str(path))
        try:
            os.rmdir(folder)
            removed.append(folder)
        except OSError:
            continue
    return removed


def node_processes(node: RealNode) -> dict[str, list[int]]:
    """The node's processes by part: kubelet, containerd, its shims (and every process of the node's containers),
    the API forwarder."""
    shims = [p for p in _shims(node)]
    return {"kubelet": pids_under(node.kubelet.dir), "containerd": pids_under(node.containerd.dir),
            "shims": shims, "containers": _cgroup_pids(node), "api-forwarder": pids_under(node.forwarder_dir)}


def _shims(node: RealNode) -> list[int]:
    """containerd's shims of this node (their command line names its socket)."""
    socket = str(node.containerd.socket)
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            pid = int(entry.name)
            text = cmdline(pid)
            if "containerd-shim" in text and socket in text and pid_alive(pid):
                found.append(pid)
    return sorted(found)


def make_cgroup_root(node: RealNode) -> list[Path]:
    """The node's cgroup root in every cgroup hierarchy of this machine (kubelet wants it to exist in each; cpuset's
    gets its parent's CPUs and memory nodes, as a new cpuset must before a task may join it); the folders made."""
    base, made = Path("/sys/fs/cgroup"), []
    root = node.cgroup_root.strip("/")
    for hierarchy in sorted(d for d in base.iterdir() if d.is_dir() and (d / "cgroup.procs").exists()):
        folder = hierarchy / root
        if not folder.is_dir():
            folder.mkdir()
            made.append(folder)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if (folder / knob).exists() and not (folder / knob).read_text().strip():
                (folder / knob).write_text((hierarchy / knob).read_text())
    return made


def cgroup_dirs(node: RealNode) -> list[Path]:
    """Every cgroup folder of the node (its cgroup root in each hierarchy that has it)."""
    base = Path("/sys/fs/cgroup")
    root = node.cgroup_root.strip("/")
    candidates = [base / root] + [d / root for d in base.iterdir() if d.is_dir()] if base.is_dir() else []
    return [c for c in candidates if c.is_dir()]


def _cgroup_pids(node: RealNode) -> list[int]:
    pids: set[int] = set()
    for top in cgroup_dirs(node):
        for folder, _, _ in os.walk(top):
            try:
                pids.update(int(p) for p in (Path(folder) / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
    return sorted(p for p in pids if pid_alive(p))


def mounts_under(*folders: str) -> list[str]:
    """Every mount point below *folders* (from /proc/self/mountinfo), deepest first."""
    roots = [os.path.realpath(f) for f in folders]
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
        if any(point == r or point.startswith(r + os.sep) for r in roots):
            found.append(point)
    return sorted(set(found), key=lambda p: p.count(os.sep), reverse=True)


def _stop(pids: list[int], timeout: float) -> list[int]:
    signal_pids(pids, signal.SIGTERM)
    left = wait_gone(pids, timeout)
    if left:
        signal_pids(left, signal.SIGKILL)
        left = wait_gone(left, 5)
    return left


def stop(node: RealNode, delete_pods: Callable[[], None] | None = None, timeout: float = 20.0) -> dict[str, Any]:
    """Remove everything the node started (see the module's documentation); what was removed. *delete_pods*, when
    the API still answers, deletes the node's pods first so kubelet stops their sandboxes cleanly."""
    removed: dict[str, Any] = {}
    if delete_pods is not None and pids_under(node.kubelet.dir):
        try:
            delete_pods()
            _wait_no_containers(node, timeout * 3)
        except ChaosDBError as exc:
            removed["pods_not_deleted"] = str(exc)
    procs = node_processes(node)
    removed["kubelet"] = len(procs["kubelet"])
    _stop(procs["kubelet"], timeout)
    removed["containerd"] = len(procs["containerd"])
    _stop(procs["containerd"], timeout)
    shims = _shims(node)
    removed["shims"] = len(shims)
    containers = _cgroup_pids(node)
    removed["container_processes"] = len(containers)
    signal_pids(containers + shims, signal.SIGKILL)
    left = wait_gone(containers + shims, 10)
    mounts = _unmount(node)
    removed["mounts"] = len(mounts)
    removed["cgroups"] = _remove_cgroups(node)
    forwarder = pids_under(node.forwarder_dir)
    _stop(forwarder, timeout)
    removed["host_traces"] = _remove_host_traces(node)
    removed["bridge"] = network.remove(node.net)
    removed["sysctls_restored"] = network.restore_sysctls(node.net.sysctls)
    try:
        for entry in sorted(Path(node.run_dir).rglob("*"), key=lambda p: len(p.parts), reverse=True):
            entry.rmdir() if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        Path(node.run_dir).rmdir()
    except OSError:
        pass  # whatever stays is named by the check below
    still = [p for p in left if pid_alive(p)] + pids_under(node.dir)
    if still or mounts_under(node.dir, node.run_dir) or cgroup_dirs(node):
        raise ChaosDBError(f"real node {node.name} left processes {still}, mounts "
                           f"{mounts_under(node.dir, node.run_dir)[:5]} or cgroups {cgroup_dirs(node)} behind")
    return removed


def _wait_no_containers(node: RealNode, timeout: float) -> None:
    """Wait until the node's containerd runs no container task (kubelet stopped every pod)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        proc = subprocess.run(["ctr", "--address", str(node.containerd.socket), "-n", "k8s.io", "tasks", "ls",
                               "--quiet"], capture_output=True, text=True, timeout=30)
        if proc.returncode != 0 or not proc.stdout.strip():
            return
        time.sleep(0.5)
    raise ChaosDBError(f"real node {node.name}: kubelet did not stop its pods within {timeout:g} s")


def _unmount(node: RealNode) -> list[str]:
    done = []
    for point in mounts_under(node.dir, node.run_dir):
        proc = subprocess.run(["umount", point], capture_output=True, text=True)
        if proc.returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True, text=True)
        done.append(point)
    return done


def _remove_cgroups(node: RealNode) -> int:
    removed = 0
    for top in cgroup_dirs(node):
        for folder, _, _ in sorted(os.walk(top), key=lambda w: w[0].count(os.sep), reverse=True):
            try:
                os.rmdir(folder)
                removed += 1
            except OSError:
                continue
    return removed


def status(node: RealNode) -> dict[str, Any]:
    """The node's processes by part, whether its bridge exists, its mounts and cgroups."""
    procs = node_processes(node)
    return {"name": node.name, "processes": {k: len(v) for k, v in procs.items()},
            "bridge": node.net.bridge if network.bridge_exists(node.net.bridge) else None,
            "subnet": node.net.subnet, "node_ip": node.net.node_ip,
            "mounts": len(mounts_under(node.dir, node.run_dir)), "cgroups": [str(c) for c in cgroup_dirs(node)]}
