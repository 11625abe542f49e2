"""etcd probes: leader, members, health (configuration ``etcd_urls`` or the embedded cluster)."""

from typing import Any, List

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments
from chaosdb.core.errors import ChaosDBError
from chaosdb.etcd.endpoints import etcd_client

__all__ = ["etcd_leader", "etcd_members", "etcd_is_healthy"]


def etcd_members(configuration: Configuration = None, secrets: Secrets = None) -> List[dict[str, Any]]:
    """Every member: name, id, client and peer URLs, whether it is healthy and whether it leads."""
    client = etcd_client(configuration, secrets)
    members = client.members()
    overview = client.overview()["members"]
    leader = client.leader_id()
    healthy_ids = {r.get("member_id") for r in overview if r.get("healthy")}
    return [{"name": m.name, "id": m.id, "client_urls": m.client_urls, "peer_urls": m.peer_urls,
             "healthy": m.id in healthy_ids, "leader": m.id == leader} for m in members]


def etcd_leader(configuration: Configuration = None, secrets: Secrets = None) -> str:
    """Name of the etcd Raft leader. Fails when no member reports a leader (no quorum)."""
    client = etcd_client(configuration, secrets)
    leader = client.leader_id()
    if leader is None:
        raise ChaosDBError("no etcd member reports a leader: the cluster has no quorum")
    for m in client.members():
        if m.id == leader:
            return m.name
    raise ChaosDBError(f"etcd leader id {leader} is not in the member list")


def etcd_is_healthy(configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when every configured etcd endpoint answers /health with true and a leader exists."""
    client = etcd_client(configuration, secrets)
    return all(client.health(u) for u in client.urls) and client.leader_id() is not None


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals())
