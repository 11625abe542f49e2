"""etcd's answer to "which member has this role": its Raft leader, or a healthy follower, asked of the members'
status over the client URLs (``etcd_urls``, else the embedded cluster's etcd). The member name is the pod name
(an etcd StatefulSet names its members after its pods) unless ``etcd_pods`` maps members to pods. It also
watches etcd for a run's event log (:func:`chaosdb.etcd.view.etcd_view`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.dbevents import View
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.local_cluster import names_local_cluster
from chaosdb.core.podnames import pod_map
from chaosdb.core.processes import other_processes
from chaosdb.etcd.endpoints import etcd_client
from chaosdb.etcd.view import etcd_view

__all__ = ["ADAPTER", "EtcdAdapter"]


class EtcdAdapter(DatabaseAdapter):
    """``etcd-leader`` (the member every answering member names as Raft leader), ``etcd-follower`` (the first
    healthy member by name that is not the leader). Locally a member is the ``etcd`` process serving its client
    URL."""

    name = "etcd"
    roles = ("leader", "follower")
    target_keys: ClassVar[dict[str, Any] | None] = {}  # the members are the configuration's (etcd_urls, an embedded cluster)
    watch_order = 1  # Patroni's DCS: a run of the embedded cluster watches Patroni first, then its etcd

    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        """Asks every configured member at once; refuses when the members disagree on the leader or none leads."""
        client = etcd_client(configuration, secrets)
        rows = [r for r in client.overview()["members"] if r.get("reachable")]
        if not rows:
            raise ChaosDBError("no etcd member answered: is etcd_urls right and the cluster up?")
        members = {m.id: m for m in client.members()}
        leaders = {r["leader_id"] for r in rows if r.get("leader_id") not in (None, "", "0")}
        if len(leaders) != 1 or next(iter(leaders)) not in members:
            raise ChaosDBError(f"etcd has no single leader right now (the members name {sorted(leaders) or 'none'})")
        leader = members[next(iter(leaders))]
        if role == "leader":
            chosen = leader
        else:
            healthy = {r["member_id"] for r in rows if r.get("healthy")}
            followers = sorted((m for m in members.values() if m.id != leader.id and m.id in healthy),
                               key=lambda m: m.name)
            if not followers:
                raise ChaosDBError("etcd has no healthy follower to target")
            chosen = followers[0]
        pod = pod_map(configuration, "etcd_pods").get(chosen.name, chosen.name)
        address = chosen.client_urls[0].split("://", 1)[-1] if chosen.client_urls else None
        return ResolvedNode(name=chosen.name, pod=pod, address=address,
                            detail={"member": chosen.name, "member_id": chosen.id, "leader": leader.name})

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        """The ``etcd`` processes on this machine whose client URLs (``--listen-client-urls`` /
        ``--advertise-client-urls``) name the member's address."""
        address = str(node.address or "")
        if not address:
            raise ChaosDBError(f"etcd member {node.name} has no client URL to find its process by")
        found = []
        for proc in other_processes(("cmdline",)):
            argv = [a for a in proc.info["cmdline"] or [] if a]
            if argv and Path(argv[0]).name == "etcd" and address in _client_urls(argv):
                found.append(proc.pid)
        if not found:
            raise ChaosDBError(f"no local etcd process serves member {node.name} ({address})")
        return sorted(found)

    def sources(self, configuration: dict[str, Any]) -> tuple[str, ...]:
        """etcd when ``etcd_urls`` or an embedded cluster (whose Patroni keeps its state in etcd) is configured."""
        if configuration.get("etcd_urls") or names_local_cluster(configuration, environment=False):
            return ("etcd",)
        return ()

    def view(self, source: str, configuration: dict[str, Any], secrets: dict[str, Any] | None) -> View:
        """etcd's Raft leader, members and term (:func:`chaosdb.etcd.view.etcd_view`)."""
        if source != "etcd":
            return super().view(source, configuration, secrets)
        return etcd_view(configuration, secrets)


def _client_urls(argv: list[str]) -> set[str]:
    """``host:port`` of every client URL an etcd command line listens on or advertises."""
    urls: set[str] = set()
    for i, arg in enumerate(argv):
        for flag in ("--listen-client-urls", "--advertise-client-urls"):
            value = argv[i + 1] if arg == flag and i + 1 < len(argv) else \
                arg.split("=", 1)[1] if arg.startswith(flag + "=") else None
            if value:
                urls |= {u.split("://", 1)[-1].rstrip("/") for u in value.split(",") if u}
    return urls


ADAPTER = EtcdAdapter()
