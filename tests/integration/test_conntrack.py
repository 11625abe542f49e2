"""faults.conntrack on this machine's kernel: a network fault forgets the tracked connections of its cluster's node
addresses, and only those; the connections themselves live on.

Needs root and the iptables command (a rule that needs connection tracking makes the kernel track loopback)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid

import pytest

from chaosdb.faults.conntrack import forget_connections

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="connection tracking is changed by root only"),
    pytest.mark.skipif(not shutil.which("iptables"), reason="iptables is not installed (apt-get install iptables)"),
]


def _entries(port: int) -> list[str]:
    with open("/proc/net/nf_conntrack") as f:
        return [line for line in f if f"dport={port} " in line]


@pytest.fixture
def tracked():
    """A mangle rule that needs connection tracking (so loopback is tracked), removed afterwards."""
    chain = f"CDBTEST{uuid.uuid4().hex[:6]}"
    subprocess.run(["iptables", "-t", "mangle", "-N", chain], check=True)
    subprocess.run(["iptables", "-t", "mangle", "-A", chain, "-m", "connmark", "--mark", "0x1/0x1"], check=True)
    subprocess.run(["iptables", "-t", "mangle", "-A", "OUTPUT", "-j", chain], check=True)
    try:
        yield
    finally:
        subprocess.run(["iptables", "-t", "mangle", "-D", "OUTPUT", "-j", chain], check=False)
        subprocess.run(["iptables", "-t", "mangle", "-F", chain], check=False)
        subprocess.run(["iptables", "-t", "mangle", "-X", chain], check=False)


def _pair(address: str, client_address: str = "") -> tuple[socket.socket, socket.socket, socket.socket, int]:
    server = socket.socket()
    server.bind((address, 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection((address, port), timeout=5,
                                      source_address=(client_address, 0) if client_address else None)
    accepted, _ = server.accept()
    return server, client, accepted, port


def test_only_the_named_addresses_are_forgotten_and_the_connections_live_on(tracked):
    ours = _pair("127.0.0.97")
    theirs = _pair("127.0.0.96")
    try:
        assert _entries(ours[3]) and _entries(theirs[3])
        assert forget_connections(["127.0.0.97"]) >= 1
        assert not _entries(ours[3]), "the named address's connection is still tracked"
        assert _entries(theirs[3]), "a connection of another address was forgotten"
        ours[1].sendall(b"x")
        assert ours[2].recv(1) == b"x"  # the connection lives on, tracked again from its next packet
        assert _entries(ours[3])
    finally:
        for s in (*ours[:3], *theirs[:3]):
            s.close()


@pytest.mark.parametrize("named", ["127.0.0.94", "127.0.0.98"], ids=["its-source", "its-destination"])
def test_a_connection_is_forgotten_by_either_of_its_addresses(tracked, named):
    """The kernel is asked one address and one side at a time: a connection from 127.0.0.94 to 127.0.0.98 is
    found by its source and by its destination alike."""
    pair = _pair("127.0.0.98", client_address="127.0.0.94")
    try:
        assert _entries(pair[3])
        assert forget_connections([named]) >= 1
        assert not _entries(pair[3]), f"the connection of {named} is still tracked"
    finally:
        for s in pair[:3]:
            s.close()


def test_nothing_named_nothing_forgotten():
    assert forget_connections([]) == 0
