"""Patroni's answer to "which node has this role": its leader (the primary) or a running replica, asked of the
Patroni REST API. The member name is the pod name (Spilo, the Zalando operator) unless ``patroni_pods`` in the
configuration maps members to pods (see :mod:`chaosdb.core.adapters`)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.podnames import pod_map
from chaosdb.postgres.endpoints import patroni_client

__all__ = ["ADAPTER", "PatroniAdapter"]


class PatroniAdapter(DatabaseAdapter):
    """``patroni-primary``, ``patroni-replica`` (the first running or streaming replica by name)."""

    name = "patroni"
    roles = ("primary", "replica")

    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        members = patroni_client(configuration, secrets).members()
        if role == "primary":
            chosen = [m for m in members if m.is_leader]
            if not chosen:
                raise ChaosDBError("the Patroni cluster has no leader right now")
        else:
            chosen = sorted((m for m in members if not m.is_leader and m.state in ("running", "streaming")),
                            key=lambda m: m.name)[:1]
            if not chosen:
                raise ChaosDBError("the Patroni cluster has no running replica to target")
        m = chosen[0]
        pod = pod_map(configuration, "patroni_pods").get(m.name, m.name)
        return ResolvedNode(name=m.name, pod=pod, detail={"member": m.name, "patroni_role": m.role})


ADAPTER = PatroniAdapter()
