"""Latency without netem: a delaying TCP proxy per target port, reached through a DNAT rule for the connections
the fault's scope covers; open connections are reset or kept, as asked."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.lifecycle import checked_duration, inject, spawn_helper
from chaosdb.core.faultrecords.records import FaultRecord, faults_dir, new_record
from chaosdb.core.processes import same_process
from chaosdb.faults import netfilter
from chaosdb.faults.classify import (
    NodeIdentity,
)
from chaosdb.faults.host import require_tool
from chaosdb.faults.network_faults import check_network, new_chain

__all__ = ["PROXY_MARK", "inject_proxy_delay"]

#: the packet mark of the delay proxies' own connections to the nodes (never redirected to a proxy again)
PROXY_MARK = 0x10000000


def _established(address: str, port: int) -> list[dict[str, Any]]:
    """Established TCP connections to address:port seen from the client side, with the client's uid."""
    ss = require_tool("ss", "iproute2")
    proc = subprocess.run([ss, "-tnHe", "state", "established", "dst", f"{address}", "dport", "=", f":{port}"],
                          capture_output=True, text=True)
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        local, peer = parts[2], parts[3]
        uid = 0
        for p in parts[4:]:
            if p.startswith("uid:"):
                uid = int(p[4:])
        la, lp = local.rsplit(":", 1)
        out.append({"local": la, "lport": int(lp), "peer": peer, "uid": uid})
    return out


def _reset(conn: dict[str, Any], address: str, port: int) -> bool:
    ss = require_tool("ss", "iproute2")
    proc = subprocess.run([ss, "-K", "-tn", "state", "established", "src", conn["local"], "sport", "=",
                           f":{conn['lport']}", "dst", address, "dport", "=", f":{port}"],
                          capture_output=True, text=True)
    return proc.returncode == 0


def _wait_port_file(path: Path, entry: dict[str, Any], timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return int(path.read_text())
        if not same_process(entry):
            break
        time.sleep(0.002)  # the proxy listens within tens of ms: the fault is in effect as soon as it does
    raise ChaosDBError("the latency proxy did not start (is the address in use?)")


def inject_proxy_delay(targets: list[NodeIdentity], nodes: list[NodeIdentity], ports: dict[str, list[int]],
                       delay_ms: float, jitter_ms: float = 0.0, scope: str = "clients", direction: str = "both",
                       existing: str = "reset", duration_s: float = 0, cluster_dir: str = "") -> FaultRecord:
    """Latency and jitter on connections to *targets*' *ports* through a TCP proxy per port.

    New connections in *scope* are redirected (nat OUTPUT) to the proxy; existing ones are reset
    (``existing="reset"``: the client reconnects, through the proxy) or kept undelayed (``"keep"``)."""
    duration_s = checked_duration(duration_s)
    if not float(delay_ms) > 0:
        raise ChaosDBError(f"delay_ms must be > 0, got {delay_ms}")
    if not 0 <= float(jitter_ms) <= float(delay_ms):
        raise ChaosDBError(f"jitter_ms must be between 0 and delay_ms ({delay_ms}), got {jitter_ms}")
    if existing not in ("reset", "keep"):
        raise ChaosDBError(f"existing_connections must be 'reset' or 'keep', got {existing!r}")
    if scope not in ("peers", "clients", "all") or direction not in ("both", "inbound", "outbound"):
        raise ChaosDBError("scope must be peers|clients|all and direction both|inbound|outbound")
    if not targets:
        raise ChaosDBError("no target for the delay fault")
    check_network(targets, nodes, cluster_dir, "a delay fault")
    require_tool("ss", "iproute2")
    node_uids = [n.uid for n in nodes]
    params = {"delay_ms": float(delay_ms), "jitter_ms": float(jitter_ms), "scope": scope, "direction": direction,
              "existing_connections": existing, "via": "proxy (no netem on this kernel)"}
    rec = new_record("delay", targets=[{"name": t.name, "address": t.address, "uid": t.uid,
                                        "ports": ports[t.name]} for t in targets],
                     params=params, cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        # each proxy's listening socket is bound here and handed to it, so the redirections go in at once (one
        # iptables-restore): from then on new connections are held in the socket's backlog until the proxy serves
        # them, delayed; the action returns once every proxy serves
        batch = netfilter.Batch()
        chain = new_chain(rec, batch, "nat", "N", "OUTPUT")
        before: list[tuple[str, int, dict[str, Any]]] = []
        started: list[tuple[dict[str, Any], Path]] = []
        for t in targets:
            peers = [n for n in nodes if n.name != t.name]
            for port in ports[t.name]:
                before += [(t.address, port, c) for c in _established(t.address, port)]
                port_file = faults_dir() / f".{rec.id}-{t.name}-{port}.port"
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
                    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    listener.bind((t.address, 0))
                    listener.listen(512)
                    proxy_port = listener.getsockname()[1]
                    entry = spawn_helper([
                        sys.executable, "-m", "chaosdb.faults.netproxy", "--listen", f"{t.address}:{proxy_port}",
                        "--listen-fd", str(listener.fileno()), "--upstream", f"{t.address}:{port}",
                        "--delay-ms", str(delay_ms), "--jitter-ms", str(jitter_ms),
                        "--direction", {"inbound": "inbound", "outbound": "outbound"}.get(direction, "both"),
                        "--mark", hex(PROXY_MARK), "--port-file", str(port_file), "--fault-id", rec.id],
                        pass_fds=(listener.fileno(),))
                entry.update(what=f"proxy {t.name}:{port}", port=proxy_port)
                rec.processes.append(entry)
                started.append((entry, port_file))
                dnat = ["-j", "DNAT", "--to-destination", f"{t.address}:{proxy_port}"]
                base = ["-p", "tcp", "-d", t.address, "--dport", str(port)]
                if scope in ("peers", "all"):
                    for x in peers:
                        batch.rule("nat", chain, base + ["-m", "owner", "--uid-owner", str(x.uid)] + dnat)
                if scope in ("clients", "all"):
                    for uid in node_uids:
                        batch.rule("nat", chain, base + ["-m", "owner", "--uid-owner", str(uid), "-j", "RETURN"])
                    batch.rule("nat", chain, base + ["-m", "mark", "!", "--mark",
                                                     f"0x{PROXY_MARK:x}/0x{PROXY_MARK:x}"] + dnat)
        batch.hook("nat", "OUTPUT", chain, rec.id)
        rec.save()  # every proxy and chain recorded before the redirections go in
        batch.apply()
        for entry, port_file in started:  # a proxy that does not come up fails the fault, which is then reverted
            try:
                _wait_port_file(port_file, entry)
            finally:
                port_file.unlink(missing_ok=True)
        if existing == "reset":
            peer_uids = {n.uid for n in nodes}
            reset = 0
            for address, port, conn in before:
                is_peer = conn["uid"] in peer_uids
                t_uid = next(t.uid for t in targets if t.address == address)
                if conn["uid"] == t_uid:
                    continue  # the node's own connections to itself are never delayed
                if (scope == "all") or (scope == "peers" and is_peer) or (scope == "clients" and not is_peer):
                    reset += _reset(conn, address, port)
            rec.notes.append(f"reset {reset} existing connection(s) so that they reconnect through the proxy")
            rec.save()

    return inject(rec, steps, duration_s)
