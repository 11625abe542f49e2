"""Operator changes to a running embedded cluster: add a node (scale-out), remove it (scale-in),
restart every node one at a time (rolling restart).

Scale-out is what an operator does on real machines: the new node joins etcd as a member
(``member add``, then etcd starts with ``--initial-cluster-state existing``), then Patroni starts
on it, takes a base backup from the primary and streams. It *serves* when its PostgreSQL answers a
query as a replica; the cluster is healthy again when it streams with a small lag. Scale-in takes
the highest-numbered node out again: Patroni stops (its member key goes, the primary drops its
slot), the etcd member is removed, its directory is deleted and the layout no longer lists it.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded import health as cluster_health
from chaosdb.embedded import nodeproc
from chaosdb.embedded.config import etcd_argv, prepare_dirs, write_configs
from chaosdb.embedded.nodeproc import check_ports, spawn
from chaosdb.embedded.runtime import RunAs, node_users
from chaosdb.embedded.state import ClusterLayout, NodeLayout, load_secrets

__all__ = ["add_node", "remove_node", "rolling_restart", "wait_serving"]


def _next_node(layout: ClusterLayout) -> NodeLayout:
    first = layout.nodes[0]
    numbers = [int(n.name[4:]) for n in layout.nodes if n.name[4:].isdigit()]
    i = max(numbers) + 1
    if i > 9:
        raise ChaosDBError(f"cluster {layout.name!r} already has node{i - 1}: embedded clusters stop at 9 nodes")
    single = all(n.host == first.host for n in layout.nodes) and len(layout.nodes) > 1
    if single:
        host, off = first.host, i - 1
    else:
        parts = [int(p) for p in first.host.split(".")]
        if parts[3] + i - 1 > 254:
            raise ChaosDBError(f"no loopback address left after {first.host} for node{i}")
        host, off = ".".join(map(str, parts[:3] + [parts[3] + i - 1])), 0
    per_node_users = any(n.user and n.user != layout.run_as for n in layout.nodes)
    cluster_user = RunAs(layout.run_as, layout.uid, layout.gid)
    user = node_users(cluster_user, i, cluster=layout.name)[-1] if per_node_users else cluster_user
    return NodeLayout(name=f"node{i}", host=host, pg_port=first.pg_port + off, api_port=first.api_port + off,
                      etcd_client_port=first.etcd_client_port + off, etcd_peer_port=first.etcd_peer_port + off,
                      dir=str(layout.path / f"node{i}"), user=user.user, uid=user.uid, gid=user.gid,
                      tls=first.tls)


def wait_serving(layout: ClusterLayout, name: str, timeout: float) -> float:
    """Seconds until node *name*'s PostgreSQL answers a query (as a replica or a primary)."""
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    t0 = time.monotonic()
    last = ""
    while time.monotonic() - t0 < timeout:
        try:
            with psycopg.connect(layout.node_dsn(name), connect_timeout=2) as conn:
                conn.execute("SELECT 1").fetchone()
                return round(time.monotonic() - t0, 3)
        except psycopg.Error as exc:
            last = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        time.sleep(0.25)
    raise ChaosDBError(f"{name} did not serve queries within {timeout:.0f}s (last error: {last})\n"
                       + cluster_health.tail(layout.node(name).log_dir / "patroni.out"))


def add_node(layout: ClusterLayout, timeout: float = 180.0) -> dict[str, Any]:
    """Scale out by one node; returns its name and how long each step took. On failure the half-added
    node is removed again before the error is raised."""
    node = _next_node(layout)
    check_ports([(node.host, node.pg_port, f"PostgreSQL of {node.name}"),
                           (node.host, node.api_port, f"Patroni of {node.name}"),
                           (node.host, node.etcd_client_port, f"etcd client of {node.name}"),
                           (node.host, node.etcd_peer_port, f"etcd peer of {node.name}")])
    secrets = load_secrets(layout.path)
    t0 = time.monotonic()
    member_id = cluster_health.etcd_client(layout).add_member(node.etcd_peer_url)
    layout.nodes.append(node)
    layout.save()
    try:
        prepare_dirs(layout)
        write_configs(layout, secrets)
        argv = etcd_argv(layout, node)
        argv[argv.index("--initial-cluster-state") + 1] = "existing"
        run_as = RunAs(*layout.node_user(node))
        spawn(argv, node, "etcd.log", run_as, {"PATH": "/usr/bin:/bin", "HOME": str(node.path)})
        client = cluster_health.etcd_client(layout)
        while not client.health(node.etcd_client_url):
            if time.monotonic() - t0 > min(timeout, 60):
                raise ChaosDBError(f"the etcd member of {node.name} did not become healthy:\n"
                                   + cluster_health.tail(node.log_dir / "etcd.log"))
            time.sleep(0.2)
        etcd_s = time.monotonic() - t0
        t1 = time.monotonic()
        nodeproc.start_node(layout, node.name, components=("patroni",))
        serving_s = wait_serving(layout, node.name, max(10.0, timeout - (t1 - t0)))
        health = cluster_health.wait_healthy(layout, timeout=max(10.0, timeout - (time.monotonic() - t0)))
    except BaseException:
        remove_node(layout, node.name, member_id=member_id)
        raise
    return {"node": node.name, "host": node.host, "etcd_member_id": member_id, "etcd_join_s": round(etcd_s, 3),
            "serving_s": serving_s, "healthy_s": round(time.monotonic() - t1, 3),
            "total_s": round(time.monotonic() - t0, 3), "leader": health["leader"], "nodes": len(layout.nodes)}


def remove_node(layout: ClusterLayout, name: str = "", member_id: str = "", timeout: float = 60.0) -> dict[str, Any]:
    """Scale in: take node *name* (default: the highest-numbered one) out of the cluster for good.
    A leader is switched over first; the last three nodes are never removed."""
    if not name:
        name = max(layout.nodes, key=lambda n: int(n.name[4:]) if n.name[4:].isdigit() else 0).name
    node = layout.node(name)
    if len(layout.nodes) <= 3 and not member_id:
        raise ChaosDBError(f"cluster {layout.name!r} has {len(layout.nodes)} nodes: scale-in keeps at least 3")
    t0 = time.monotonic()
    switched = None
    try:
        leader = cluster_health.patroni_client(layout).leader()
    except ChaosDBError:
        leader = None
    if leader is not None and leader.name == name:
        client = cluster_health.patroni_client(layout)
        client.switchover(name)
        switched = client.wait_for_leader(timeout, not_named=name).name
    nodeproc.stop_node(layout, name, graceful=True, timeout=30.0, components=("patroni",))
    others = [n for n in layout.nodes if n.name != name]
    if not member_id:
        for m in cluster_health.etcd_client(layout).members():
            if m.name == name or node.etcd_peer_url in m.peer_urls:
                member_id = m.id
    if member_id:
        cluster_health.etcd_client(layout, urls=[n.etcd_client_url for n in others]).remove_member(member_id)
    nodeproc.stop_node(layout, name, graceful=True, timeout=15.0, components=("etcd",))
    layout.nodes = others
    layout.save()
    write_configs(layout, load_secrets(layout.path))
    shutil.rmtree(node.path, ignore_errors=True)
    return {"node": name, "switched_over_to": switched, "nodes": len(layout.nodes),
            "seconds": round(time.monotonic() - t0, 3)}


def rolling_restart(layout: ClusterLayout, wait_healthy_s: float = 120.0, pause_s: float = 0.0,
                    switchover: bool = True, components: tuple[str, ...] = ("patroni",)) -> dict[str, Any]:
    """Restart every node one at a time, replicas first and the leader last (after a switchover when
    *switchover*), waiting until the whole cluster is healthy before the next node (what an operator
    does for a configuration change or a minor version upgrade)."""
    t0 = time.monotonic()
    client = cluster_health.patroni_client(layout)
    cluster_health.wait_healthy(layout, timeout=wait_healthy_s)
    leader = client.leader()
    order = [n.name for n in layout.nodes if leader is None or n.name != leader.name]
    if leader is not None:
        order.append(leader.name)
    steps = []
    for name in order:
        step: dict[str, Any] = {"node": name, "start_ts": time.time()}
        current = client.leader()
        if switchover and current is not None and current.name == name:
            s0 = time.monotonic()
            client.switchover(name)
            step["switchover_to"] = client.wait_for_leader(wait_healthy_s, not_named=name).name
            step["switchover_s"] = round(time.monotonic() - s0, 3)
        s1 = time.monotonic()
        stopped = nodeproc.stop_node(layout, name, graceful=True, timeout=30.0, components=components)
        step["stop_s"] = round(time.monotonic() - s1, 3)
        step["sigkilled"] = stopped["sigkilled"]
        s2 = time.monotonic()
        nodeproc.start_node(layout, name, components=("etcd", "patroni"))
        step["serving_s"] = wait_serving(layout, name, wait_healthy_s)
        cluster_health.wait_healthy(layout, timeout=wait_healthy_s)
        step["healthy_s"] = round(time.monotonic() - s2, 3)
        step["end_ts"] = time.time()
        steps.append(step)
        if pause_s:
            time.sleep(pause_s)
    final = client.leader()
    return {"order": order, "steps": steps, "leader": final.name if final else None,
            "seconds": round(time.monotonic() - t0, 3)}
