"""Fixtures the unit test modules share."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_host_network(monkeypatch):
    """A real node's plan made with this machine's networks and sysctls left unread: the same plan whether or not a
    real node runs here (one may, beside the unit tests: it owns 10.96.0.1)."""
    from chaosdb.clusters.kubernetes.realnode import network

    monkeypatch.setattr(network, "_used_networks", lambda: [])
    monkeypatch.setattr(network, "read_sysctls", lambda *a, **k: {})
