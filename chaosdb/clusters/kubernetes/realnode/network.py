"""The real node's network: a bridge of its own on a private range that exists only inside this machine.

Pods get addresses from the bridge's /24 (CNI ``bridge`` + ``host-local``, the gateway address put on the bridge by
this module, so the bridge plugin never turns on IP forwarding); the node's IP is the bridge's address (kubelet
refuses a loopback node IP), and ``10.96.0.1``, the in-cluster address of the API server
(``KUBERNETES_SERVICE_HOST``, already a name of the local apiserver's certificate), is a second address of the
bridge, served by the API forwarder. IP forwarding stays as it was (off here): pods reach the node and each other,
never anything beyond the machine.

Everything this module changes is recorded in the node's state before it is changed (:class:`NetworkPlan`), so
``remove`` undoes it after a crash too: the bridge (and its addresses) and any sysctl the node's programs changed.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["API_SERVICE_IP", "SERVICE_RANGE", "NetworkPlan", "plan_network", "create", "remove", "bridge_exists",
           "bridge_mac",
           "WATCHED_SYSCTLS", "interface_of", "read_sysctls", "restore_sysctls", "cni_config", "write_cni_config"]

#: the API server's in-cluster address (the first of the service range, as every cluster has it)
API_SERVICE_IP = "10.96.0.1"
#: the apiserver's --service-cluster-ip-range
SERVICE_RANGE = "10.96.0.0/16"
#: where pod subnets are taken from (outside kwok's fake pod range 10.244.0.0/16 and the service range)
_POD_RANGE = ipaddress.ip_network("10.245.0.0/16")
#: host sysctls kubelet or the CNI plugins may change; recorded before the node starts, restored by ``down``
WATCHED_SYSCTLS = ("net.ipv4.ip_forward", "vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic",
                   "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
                   "net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables")
#: where the sysctls are read and written (a test points it at a folder of its own)
_SYSCTL_DIR = Path("/proc/sys")


@dataclass
class NetworkPlan:
    """The node's network: bridge name, its subnet, the node's (gateway) address, and the sysctls found before."""

    bridge: str
    subnet: str
    node_ip: str
    sysctls: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """For the cluster's state file."""
        return asdict(self)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ChaosDBError(f"ip {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def _used_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Every IPv4 network an address or a route of this machine covers."""
    found: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = [address.network for _, address in _addresses()]
    for line in _ip("-4", "route", "show").stdout.splitlines():
        dest = line.split()[0]
        if dest != "default":
            try:
                found.append(ipaddress.ip_network(dest, strict=False))
            except ValueError:
                continue
    return found


def _addresses() -> list[tuple[str, ipaddress.IPv4Interface | ipaddress.IPv6Interface]]:
    """(interface name, address with its prefix) for every IPv4 address of this machine."""
    found = []
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            found.append((parts[1].split("@")[0], ipaddress.ip_interface(parts[parts.index("inet") + 1])))
    return found


def interface_of(address: str) -> str:
    """The name of the interface that holds *address* (``""``: none)."""
    return next((name for name, held in _addresses() if str(held.ip) == address), "")


def bridge_exists(name: str) -> bool:
    """Whether a network interface called *name* exists."""
    return _ip("link", "show", "dev", name, check=False).returncode == 0


def plan_network(tag: str) -> NetworkPlan:
    """A bridge name for the cluster of *tag* (``cdbr-<tag>``, at most 15 characters) and the first free /24 of
    the private pod range; refused when this machine already serves ``10.96.0.1`` (another local Kubernetes with
    real nodes)."""
    used = _used_networks()
    api = ipaddress.ip_address(API_SERVICE_IP)
    if any(api in n and n.prefixlen == 32 for n in used):
        holder = interface_of(API_SERVICE_IP)
        stale = (f"; if no cluster of this machine owns it any more (its folder was removed, the machine's processes "
                 f"were killed), 'ip link delete {holder}' removes it" if holder.startswith("cdbr-") else "")
        raise ChaosDBError(f"{API_SERVICE_IP} is already an address of this machine (interface {holder or '?'}): "
                           "another local Kubernetes with real nodes runs here ('chaosdb cluster status --kind "
                           "kubernetes' lists it); stop it first with 'chaosdb cluster down --kind kubernetes' (one "
                           f"real-node cluster per machine){stale}")
    for subnet in _POD_RANGE.subnets(new_prefix=24):
        if not any(subnet.overlaps(n) for n in used):
            return NetworkPlan(bridge=f"cdbr-{tag}"[:15], subnet=str(subnet), node_ip=str(next(subnet.hosts())))
    raise ChaosDBError(f"no free /24 left in {_POD_RANGE} for the node's pods")


def bridge_mac(bridge: str) -> str:
    """The bridge's own MAC address: locally administered, unicast, the same for the same name.

    A bridge without an address of its own takes the lowest of its ports' (the pods' veths): when that pod goes, the
    bridge's MAC changes, every pod's neighbour entry for its gateway (the node's address, 10.96.0.1) goes stale, and
    connections through the bridge stall until it is resolved again. Seen on the real node: Litmus's pod-delete of
    the Patroni primary lost the experiment's own connection to the API ("http2: client connection lost")."""
    digest = hashlib.sha256(bridge.encode()).digest()
    return ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))


def create(plan: NetworkPlan) -> None:
    """The bridge, up, with its own MAC address (:func:`bridge_mac`), the node's address and the API's in-cluster
    address (idempotent)."""
    if not bridge_exists(plan.bridge):
        _ip("link", "add", "name", plan.bridge, "address", bridge_mac(plan.bridge), "type", "bridge")
    prefix = ipaddress.ip_network(plan.subnet).prefixlen
    present = _ip("-4", "-o", "addr", "show", "dev", plan.bridge).stdout
    for address in (f"{plan.node_ip}/{prefix}", f"{API_SERVICE_IP}/32"):
        if f" {address} " not in present:
            _ip("addr", "add", address, "dev", plan.bridge)
    _ip("link", "set", plan.bridge, "up")


def remove(plan: NetworkPlan) -> bool:
    """Delete the bridge (its addresses and routes go with it); whether it was there."""
    if not bridge_exists(plan.bridge):
        return False
    _ip("link", "set", plan.bridge, "down", check=False)
    _ip("link", "delete", plan.bridge, "type", "bridge")
    return True


def read_sysctls(names: tuple[str, ...] = WATCHED_SYSCTLS) -> dict[str, str]:
    """The current value of each sysctl that exists here."""
    out = {}
    for name in names:
        path = _SYSCTL_DIR / name.replace(".", "/")
        try:
            out[name] = path.read_text().strip()
        except OSError:
            continue
    return out


def restore_sysctls(before: dict[str, str]) -> list[str]:
    """Put back every sysctl whose value changed since *before*; ``name: now -> before`` for each one restored."""
    restored = []
    for name, value in before.items():
        path = _SYSCTL_DIR / name.replace(".", "/")
        try:
            now = path.read_text().strip()
            if now != value:
                path.write_text(value + "\n")
                restored.append(f"{name}: {now} -> {value}")
        except OSError:
            continue
    return restored


def cni_config(plan: NetworkPlan, data_dir: Path) -> dict[str, Any]:
    """The CNI network list containerd's CRI gives every pod: loopback, and a veth on the node's bridge with an
    address of its subnet (host-local, its leases under *data_dir*), the default route through the node's address
    (which reaches the API at ``10.96.0.1``), and no IP masquerade: nothing is routed beyond the machine."""
    return {
        "cniVersion": "0.4.0", "name": plan.bridge,
        "plugins": [{
            "type": "bridge", "bridge": plan.bridge, "isGateway": False, "isDefaultGateway": False,
            "ipMasq": False, "hairpinMode": True,
            "ipam": {"type": "host-local", "dataDir": str(data_dir),
                     "ranges": [[{"subnet": plan.subnet, "gateway": plan.node_ip,
                                  "rangeStart": str(ipaddress.ip_network(plan.subnet).network_address + 10)}]],
                     "routes": [{"dst": "0.0.0.0/0", "gw": plan.node_ip}]},
        }],  # no portmap: hostPort would need iptables rules on the host
    }


def write_cni_config(plan: NetworkPlan, conf_dir: Path, data_dir: Path) -> Path:
    """Write the node's CNI network list into *conf_dir* (containerd's CRI reads it); its path."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / "10-chaosdb.conflist"
    path.write_text(json.dumps(cni_config(plan, data_dir), indent=1) + "\n")
    return path
