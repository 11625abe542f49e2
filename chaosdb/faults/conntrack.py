"""Forgetting what the kernel's connection tracking remembers of a cluster's connections, so that a network fault's
marks start from the connections as they are.

On loopback the kernel tracks connections only while some rule needs it: iptables (nf_tables) registers connection
tracking with a fault's first rule and lets it go with the last. Between two faults nothing is tracked, and what a
fault left in the table goes stale: a connection that closed in between stays "established" for days, one that a
partition kept half-open stays "SYN sent", and a new connection that reuses a port finds a stale entry whose mark
and state belong to another. A fault's rules then see a wrong mark, or none, for a live connection, and a partition
lets it through (seen: a replica's replication stream that a partition of the primary did not cut).

:func:`forget_connections` deletes every entry of the cluster's node addresses (never another's) when a network fault
has been applied and when it is reverted: each live connection is then picked up afresh from its next packet and
marked by its opener's (:mod:`chaosdb.faults.classify`), and no stale entry of the fault outlives it.
"""

from __future__ import annotations

import errno
from typing import Any, Iterable

from chaosdb.core.errors import ChaosDBError

__all__ = ["forget_connections"]

#: TCP and UDP: the protocols whose entries are keyed by ports
_PROTOCOLS = (6, 17)


def _tuple(entry: Any) -> tuple[str, str, int, int, int] | None:
    orig = entry.get_attr("CTA_TUPLE_ORIG")
    if orig is None:
        return None
    ip, proto = orig.get_attr("CTA_TUPLE_IP"), orig.get_attr("CTA_TUPLE_PROTO")
    if ip is None or proto is None or proto.get_attr("CTA_PROTO_NUM") not in _PROTOCOLS:
        return None
    src, dst = ip.get_attr("CTA_IP_V4_SRC"), ip.get_attr("CTA_IP_V4_DST")
    if not src or not dst:
        return None
    return (str(src), str(dst), int(proto.get_attr("CTA_PROTO_NUM")), int(proto.get_attr("CTA_PROTO_SRC_PORT")),
            int(proto.get_attr("CTA_PROTO_DST_PORT")))


def _matches(entry: tuple[str, str, int, int, int], wanted: set[str]) -> bool:
    return entry[0] in wanted or entry[1] in wanted


def _entries_of(ct: Any, wanted: set[str]) -> set[tuple[str, str, int, int, int]]:
    """The TCP and UDP entries from or to one of *wanted*, asked of the kernel one address and direction at a time
    (it filters a dump by the original tuple since Linux 5.8), so a host tracking many other connections is not
    read whole. A kernel that ignores the filter answers with everything: that one answer is then read whole."""
    from pyroute2.netlink.exceptions import NetlinkError  # noqa: PLC0415
    from pyroute2.netlink.nfnetlink.nfctsocket import NFCTAttrTuple  # noqa: PLC0415 - see forget_connections

    found: set[tuple[str, str, int, int, int]] = set()
    for address in sorted(wanted):
        for side in ("saddr", "daddr"):
            try:
                answer = [t for t in (_tuple(e) for e in ct.dump(tuple_orig=NFCTAttrTuple(**{side: address}))) if t]
            except NetlinkError as exc:
                if exc.code not in (errno.EINVAL, errno.EOPNOTSUPP):
                    raise
                return {t for t in (_tuple(e) for e in ct.dump()) if t and _matches(t, wanted)}  # no filter here
            found.update(t for t in answer if _matches(t, wanted))
            if any(t[0 if side == "saddr" else 1] != address for t in answer):
                return found  # the filter was ignored: this answer held every entry
    return found


def forget_connections(addresses: Iterable[str]) -> int:
    """Delete every TCP and UDP connection-tracking entry to or from one of *addresses* (IPv4); how many were
    deleted. An entry that went away meanwhile is not an error."""
    wanted = {str(a) for a in addresses if a}
    if not wanted:
        return 0
    from pyroute2 import NFCTSocket  # noqa: PLC0415 - netlink, imported only when a network fault needs it
    from pyroute2.netlink.exceptions import NetlinkError  # noqa: PLC0415
    from pyroute2.netlink.nfnetlink.nfctsocket import NFCTAttrTuple  # noqa: PLC0415
    deleted = 0
    try:
        with NFCTSocket() as ct:
            for src, dst, proto, sport, dport in sorted(_entries_of(ct, wanted)):
                try:
                    ct.entry("del", tuple_orig=NFCTAttrTuple(saddr=src, daddr=dst, proto=proto, sport=sport,
                                                             dport=dport))
                    deleted += 1
                except NetlinkError as exc:
                    if exc.code != errno.ENOENT:
                        raise
    except NetlinkError as exc:
        if exc.code == errno.EPERM:
            raise ChaosDBError("forgetting tracked connections needs root (CAP_NET_ADMIN), as network faults do") \
                from None
        if exc.code in (errno.ENOENT, errno.EOPNOTSUPP, errno.EPROTONOSUPPORT):
            return 0  # no connection tracking in this kernel: nothing remembered, nothing stale
        raise ChaosDBError(f"forgetting tracked connections failed: {exc}") from None
    return deleted
