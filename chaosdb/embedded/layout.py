"""The embedded cluster's layout: which node binds which loopback address and ports, with which timings."""

from __future__ import annotations

from pathlib import Path

from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.runtime import RunAs, resolve_run_as
from chaosdb.embedded.state import (
    ClusterLayout,
    NodeLayout,
)

DEFAULT_TIMINGS = {"ttl": 20, "loop_wait": 1, "retry_timeout": 5}
SUPPORTED_KINDS = ("postgres-ha",)


def parse_ipv4(addr: str) -> list[int]:
    """The four octets of an IPv4 address; refused when it is not one."""
    try:
        parts = [int(p) for p in addr.split(".")]
    except ValueError:
        parts = []
    if len(parts) != 4 or any(not 0 <= p <= 255 for p in parts):
        raise ChaosDBError(f"{addr!r} is not an IPv4 address")
    if parts[0] != 127:
        raise ChaosDBError(f"{addr} is not a loopback address: embedded clusters bind 127.0.0.0/8 only")
    return parts


def plan_layout(
    name: str,
    directory: Path,
    nodes: int = 3,
    address_base: str = "127.0.0.11",
    single_address: bool = False,
    pg_port: int = 5432,
    api_port: int = 8008,
    etcd_port: int = 2379,
    etcd_peer_port: int = 2380,
    run_as: RunAs | None = None,
    replication: str = "sync",
    kind: str = "postgres-ha",
    users: list[RunAs] | None = None,
    secure: bool = False,
) -> ClusterLayout:
    """Decide names, addresses, ports and directories; validate the request."""
    if kind not in SUPPORTED_KINDS:
        raise ChaosDBError(f"unknown cluster kind {kind!r}: supported kinds are {', '.join(SUPPORTED_KINDS)}")
    if not 1 <= nodes <= 9:
        raise ChaosDBError(f"--nodes must be between 1 and 9, got {nodes}")
    if replication not in ("sync", "async"):
        raise ChaosDBError(f"--replication must be 'sync' or 'async', got {replication!r}")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ChaosDBError(f"cluster name {name!r} may contain only letters, digits, '-' and '_'")
    ports = {"--pg-port": pg_port, "--api-port": api_port, "--etcd-port": etcd_port,
             "--etcd-peer-port": etcd_peer_port}
    for opt, port in ports.items():
        if not 1024 <= port <= 65535 - nodes:
            raise ChaosDBError(f"{opt} {port} is outside 1024..{65535 - nodes}")
    base = parse_ipv4(address_base)
    if not single_address and base[3] + nodes - 1 > 254:
        raise ChaosDBError(f"--address-base {address_base} leaves no room for {nodes} nodes")
    if single_address:
        span = {p: set(range(p, p + nodes)) for p in ports.values()}
        values = list(span.values())
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                if a & b:
                    raise ChaosDBError("with --single-address the port ranges of the components overlap: "
                                       "space the ports at least --nodes apart")
    elif len(set(ports.values())) != len(ports):
        raise ChaosDBError("the four component ports must differ")
    run_as = run_as or resolve_run_as(None)
    layout_nodes = []
    for i in range(nodes):
        host = "127.0.0.1" if single_address else ".".join(map(str, base[:3] + [base[3] + i]))
        off = i if single_address else 0
        user = users[i] if users else run_as
        layout_nodes.append(NodeLayout(
            name=f"node{i + 1}", host=host, pg_port=pg_port + off, api_port=api_port + off,
            etcd_client_port=etcd_port + off, etcd_peer_port=etcd_peer_port + off,
            dir=str(directory / f"node{i + 1}"), user=user.user, uid=user.uid, gid=user.gid, tls=secure,
        ))
    return ClusterLayout(
        name=name, kind=kind, dir=str(directory), run_as=run_as.user, uid=run_as.uid, gid=run_as.gid,
        nodes=layout_nodes, replication=replication, timings=dict(DEFAULT_TIMINGS),
    )


# ---------------------------------------------------------------------------
# configuration files


