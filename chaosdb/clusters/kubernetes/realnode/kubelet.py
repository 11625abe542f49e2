"""kubelet for the real node: the user's binary (``--bin-dir``), its configuration and command line.

The settings that work on these machines (``shared/testenv`` README, "A real node"): cgroupfs under a cgroup root
of the cluster's own (``/chaosdb-<tag>``, removed by ``down``), cgroup v1 accepted, swap not refused, the node's IP
on its bridge (kubelet refuses a loopback one) with the server and health endpoints bound there only, a resolv.conf
with no servers (nothing beyond the machine is asked), the apiserver's client certificate checked against the
cluster's CA and every request authorized by the apiserver (webhook), image garbage collection off (the images were
built here: nothing could pull them back). kubelet runs with a ``PATH`` without ``/usr/sbin`` and ``/sbin``, so it
finds no ``iptables`` and adds no ``KUBE-*`` chains to the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["KubeletPaths", "kubelet_config", "command_line", "KUBELET_PATH", "REAL_NODE_LABEL"]

#: kubelet's PATH: no iptables in it (it would add KUBE-* chains to the host)
KUBELET_PATH = "/usr/local/bin:/usr/bin:/bin"
#: the label every real node carries (workloads that need containers select it; kwok's fake nodes carry type=kwok)
REAL_NODE_LABEL = ("chaosdb.io/node", "real")


class KubeletPaths:
    """Where a node's kubelet keeps its files."""

    def __init__(self, node_dir: Path) -> None:
        self.dir = Path(node_dir) / "kubelet"
        self.root = self.dir / "root"
        self.config = self.dir / "config.yaml"
        self.certs = self.dir / "pki"
        self.resolv = self.dir / "resolv.conf"
        self.log = self.dir / "kubelet.log"
        self.pod_logs = self.dir / "pod-logs"


def kubelet_config(paths: KubeletPaths, node_ip: str, cgroup_root: str, ca_file: str) -> dict[str, Any]:
    """The KubeletConfiguration (see the module's documentation)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": node_ip, "port": 10250, "readOnlyPort": 0, "healthzBindAddress": node_ip, "healthzPort": 10248,
        "cgroupDriver": "cgroupfs", "cgroupRoot": cgroup_root, "cgroupsPerQOS": True,
        "failSwapOn": False, "failCgroupV1": False, "protectKernelDefaults": False,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": ca_file}},
        "authorization": {"mode": "Webhook"},
        "resolvConf": str(paths.resolv), "clusterDNS": [],
        "serializeImagePulls": False, "maxPods": 110,
        # a shared disk must not evict the node's pods, and the images built here must never be collected
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "rotateCertificates": False, "serverTLSBootstrap": False, "registerNode": True,
        "nodeStatusUpdateFrequency": "4s", "nodeStatusReportFrequency": "10s",
        "shutdownGracePeriod": "0s", "containerLogMaxSize": "10Mi", "containerLogMaxFiles": 2,
        "localStorageCapacityIsolation": True,
        # containers' logs in the node's folder (kubelet's links to them still go to /var/log/containers: the node's
        # removal takes them out)
        "podLogsDir": str(paths.pod_logs),
    }


def write_config(paths: KubeletPaths, node_ip: str, cgroup_root: str, ca_file: str) -> None:
    """The configuration file and the empty resolv.conf."""
    paths.dir.mkdir(parents=True, exist_ok=True)
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.resolv.write_text("# no name servers: pods of the local cluster ask nothing beyond this machine\n")
    paths.config.write_text(yaml.safe_dump(kubelet_config(paths, node_ip, cgroup_root, ca_file), sort_keys=False))


def command_line(binary: str, paths: KubeletPaths, kubeconfig: str, endpoint: str, node_name: str,
                 node_ip: str) -> list[str]:
    """kubelet's argv."""
    key, value = REAL_NODE_LABEL
    return [binary, f"--config={paths.config}", f"--kubeconfig={kubeconfig}",
            f"--container-runtime-endpoint={endpoint}", f"--root-dir={paths.root}", f"--cert-dir={paths.certs}",
            f"--node-ip={node_ip}", f"--hostname-override={node_name}",
            f"--node-labels={key}={value},type=real", "--v=1"]
