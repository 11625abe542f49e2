"""Patroni's answer to "which node has this role": its leader (the primary) or a running replica, asked of the
Patroni REST API. The member name is the pod name (Spilo, the Zalando operator) unless ``patroni_pods`` in the
configuration maps members to pods (see :mod:`chaosdb.core.adapters`)."""

from __future__ import annotations

from typing import Any, ClassVar

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.local_cluster import names_local_cluster
from chaosdb.core.podnames import pod_map
from chaosdb.postgres.endpoints import patroni_client

#: a replica within one WAL segment of the leader has caught up (under load it is never exactly level)
CAUGHT_UP_BYTES = 16 * 1024 * 1024
_UP = ("running", "streaming")

__all__ = ["ADAPTER", "PatroniAdapter"]


class PatroniAdapter(DatabaseAdapter):
    """``patroni-primary``, ``patroni-replica`` (the first running or streaming replica by name)."""

    name = "patroni"
    roles = ("primary", "replica")
    target_keys: ClassVar[dict[str, Any] | None] = {}  # the cluster is the configuration's (patroni_urls, an embedded cluster)

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

    def sources(self, configuration: dict[str, Any]) -> tuple[str, ...]:
        """Patroni when ``patroni_urls`` or an embedded cluster is configured (its etcd is the etcd adapter's)."""
        if configuration.get("patroni_urls") or names_local_cluster(configuration, environment=False):
            return ("patroni",)
        return ()

    def view(self, source: str, configuration: dict[str, Any], secrets: dict[str, Any] | None) -> View:
        """Patroni's ``/cluster``: leader, members, the leader's timeline, replicas on it within
        :data:`CAUGHT_UP_BYTES`."""
        if source != "patroni":
            return super().view(source, configuration, secrets)
        members = patroni_client(configuration, secrets).members()
        leader = next((m for m in members if m.is_leader), None)
        replicas = [m for m in members if not m.is_leader]
        converged = leader is not None and bool(replicas) and all(
            m.state in _UP and m.timeline == leader.timeline and m.lag_bytes is not None
            and m.lag_bytes <= CAUGHT_UP_BYTES for m in replicas)
        return View("patroni", leader.name if leader else None,
                    {m.name: {"up": m.state in _UP, "state": m.state, "role": m.role, "timeline": m.timeline,
                              "lag_bytes": m.lag_bytes} for m in members},
                    term=leader.timeline if leader else None, term_name="timeline", converged=converged)


ADAPTER = PatroniAdapter()
