"""Which packets are "between node T and its peers" or "between node T and its clients".

On one machine every node talks over ``lo`` and the kernel gives connections a
node opens the source address 127.0.0.1, so addresses alone cannot tell who
talks to whom. Nodes are told apart by two things they own:

* its **address**: servers of node X listen on X's address, so a packet sent *to*
  X's address goes to a server of X, and a packet sent *from* X's address comes
  from one;
* its **user**: every process of node X runs as X's own user (the embedded
  cluster does this as root), so a packet X's user sends from an address other
  than X's own is X *opening* a connection to someone. A rule in ``mangle
  OUTPUT`` writes that into the connection mark: bit ``16 + i`` for node *i*
  (bits 16-23 are the pack's; other bits are left alone).

(Conntrack's notion of direction is not used: connections that existed before
conntrack was loaded are picked up mid-stream with their direction guessed.)

The fault's rules then sit in ``filter INPUT`` (or ``mangle OUTPUT`` for
bandwidth marks) and drop a packet *silently, as a network would* (a drop in
OUTPUT would fail the sender's ``connect`` at once, which no partition does):

====================  ======================================================
packets               rule
====================  ======================================================
peer X -> T           to T's address on a connection X opened,
                      or from X's address on a connection T opened
T -> peer X           to X's address on a connection T opened,
                      or from T's address on a connection X opened
client -> T           to T's address on a connection no node opened
T -> client           from T's address on a connection no node opened
====================  ======================================================

A node's traffic with itself (Patroni to its own PostgreSQL and etcd) is never
matched. Connections that existed before the fault get their mark from the
opener's next packet (an ACK at most a round trip later); until then a packet of
such a connection may count as a client's. So that no entry left from an earlier
fault speaks for a live connection, a network fault forgets the tracked
connections of the cluster's nodes once its rules are in force
(:mod:`chaosdb.faults.conntrack`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from chaosdb.core.errors import ChaosDBError

__all__ = ["NodeIdentity", "MARK_SHIFT", "MARK_MASK", "label_rules", "packet_matches", "check_identities",
           "SCOPES", "DIRECTIONS"]

MARK_SHIFT = 16
MARK_MASK = 0x00FF0000
SCOPES = ("peers", "clients", "all")
DIRECTIONS = ("both", "inbound", "outbound")


@dataclass(frozen=True)
class NodeIdentity:
    name: str
    index: int  # 0..7
    address: str
    uid: int
    ports: tuple[int, ...] = ()

    @property
    def bit(self) -> int:
        """The packet mark bit of this node."""
        return 1 << (MARK_SHIFT + self.index)


def _hex(v: int) -> str:
    return f"0x{v:x}"


def check_identities(nodes: Iterable[NodeIdentity]) -> list[NodeIdentity]:
    """The nodes, when the classifier can tell them apart (at most 8, each on its own address and with its own
    unprivileged user); refused with what to change otherwise."""
    nodes = list(nodes)
    if len(nodes) > 8:
        raise ChaosDBError(f"network faults tell at most 8 nodes apart, this cluster has {len(nodes)}")
    addrs = [n.address for n in nodes]
    uids = [n.uid for n in nodes]
    if len(set(addrs)) != len(addrs):
        raise ChaosDBError("network faults need every node on its own address; this cluster shares one "
                           "(--single-address): recreate it without --single-address")
    if len(set(uids)) != len(uids) or 0 in uids or os.geteuid() in uids:
        raise ChaosDBError(
            "network faults need every node to run as a user of its own (none shared with the other nodes or with "
            "the client, here uid " + str(os.geteuid()) + "): the embedded cluster does this when started by root "
            "without --run-as (users chaosdb-n1, chaosdb-n2, ..., or chaosdb-<cluster>-n1, ...); recreate the cluster "
            "that way")
    return nodes


def label_rules(nodes: Iterable[NodeIdentity]) -> list[list[str]]:
    """mangle OUTPUT rules writing "opened by node i" into the connection mark."""
    return [["!", "-s", n.address, "-m", "owner", "--uid-owner", str(n.uid),
             "-j", "CONNMARK", "--or-mark", _hex(n.bit)] for n in nodes]


def _to(address: str) -> list[str]:
    return ["-d", address]


def _from(address: str) -> list[str]:
    return ["-s", address]


def _opened_by(node: NodeIdentity) -> list[str]:
    return ["-m", "connmark", "--mark", f"{_hex(node.bit)}/{_hex(node.bit)}"]


def _opened_by_nobody(nodes: Iterable[NodeIdentity]) -> list[str]:
    mask = 0
    for n in nodes:
        mask |= n.bit
    return ["-m", "connmark", "--mark", f"0x0/{_hex(mask)}"]


def packet_matches(target: NodeIdentity, nodes: Iterable[NodeIdentity], scope: str = "all",
                   direction: str = "both") -> list[list[str]]:
    """Match arguments selecting the packets of *target*'s traffic in *scope* and *direction*."""
    if scope not in SCOPES:
        raise ChaosDBError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if direction not in DIRECTIONS:
        raise ChaosDBError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    nodes = list(nodes)
    peers = [n for n in nodes if n.name != target.name]
    inbound = direction in ("both", "inbound")
    outbound = direction in ("both", "outbound")
    t = target
    rules: list[list[str]] = []
    if scope in ("peers", "all"):
        for x in peers:
            if inbound:
                rules.append(_to(t.address) + _opened_by(x))
                rules.append(_from(x.address) + _opened_by(t))
            if outbound:
                rules.append(_to(x.address) + _opened_by(t))
                rules.append(_from(t.address) + _opened_by(x))
    if scope in ("clients", "all"):
        if inbound:
            rules.append(_to(t.address) + _opened_by_nobody(nodes))
        if outbound:
            rules.append(_from(t.address) + _opened_by_nobody(nodes))
    return rules
