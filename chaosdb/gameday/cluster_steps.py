"""The between-run steps of a game day on the embedded cluster: restore, wait until healthy, set the
replication level, move the primary, reset TPC-C, cool down. Each returns what it did and how long
it took; the runner records that in the manifest."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ChaosException

from chaosdb.clusters.postgres_ha import cluster, launcher
from chaosdb.clusters.postgres_ha.launcher import Data
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.sweep import cleanup
from chaosdb.core.http import HttpError, request_json
from chaosdb.core.settings import referenced_value
from chaosdb.embedded import scale
from chaosdb.embedded.state import STATE_FILE, load_layout, load_secrets, resolve_cluster_dir
from chaosdb.workloads.tpcc import loader
from chaosdb.workloads.tpcc.rand import Scale

__all__ = ["cluster_dir_of", "embedded_control", "restore", "wait_healthy", "set_synchronous_standbys",
           "move_leader", "reset_tpcc", "take_down", "restore_replication"]


def _config_value(value: Any) -> Any:
    if isinstance(value, dict) and value.get("type") == "env":
        return referenced_value(str(value.get("key", "")), value.get("default"))
    return value


def cluster_dir_of(experiment: dict[str, Any]) -> Path:
    """The embedded cluster directory the experiment's activities will use."""

    cfg = {k: _config_value(v) for k, v in (experiment.get("configuration") or {}).items()}
    return resolve_cluster_dir("", "", {k: v for k, v in cfg.items() if k in ("chaosdb_cluster", "chaosdb_cluster_dir")
                                        and v})


def embedded_control(experiment: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments of the experiment's ``chaosdb.clusters.postgres_ha.control`` (None when it has none)."""
    for c in experiment.get("controls") or []:
        provider = c.get("provider") or {}
        if provider.get("module") == "chaosdb.clusters.postgres_ha.control":
            return dict(provider.get("arguments") or {})
    return None


def _layout(directory: Path):
    return load_layout(directory) if (directory / STATE_FILE).exists() else None


def restore(directory: Path, control: dict[str, Any], address_base: str, timeout: float) -> dict[str, Any]:
    """Remove this cluster's fault residue (another cluster's live faults on the machine stay), start the cluster
    (created on first use, with its data loaded, as the experiment's control would), start whatever is not
    running, take out nodes a scale-out left."""

    t0 = time.monotonic()
    cleaned = cleanup(str(directory))
    out: dict[str, Any] = {"reverted_faults": len(cleaned.get("reverted", [])),
                           "swept": len(cleaned.get("swept", []))}
    args = {k: v for k, v in control.items() if k in ("nodes", "tpcc_warehouses", "tpcc_scale_down", "ycsb_records",
                                                      "etcd_ycsb_records")}
    try:
        launcher.start(directory, by="gameday", revert_orphans=True,
                       configuration={"chaosdb_cluster_dir": str(directory)}, nodes=int(args.get("nodes", 3)),
                       timeout=timeout, address_base=address_base, secure=False,
                       data=Data(tpcc_warehouses=int(args.get("tpcc_warehouses", 0)),
                                 tpcc_scale_down=int(args.get("tpcc_scale_down", 10)),
                                 ycsb_records=int(args.get("ycsb_records", 0)),
                                 etcd_ycsb_records=int(args.get("etcd_ycsb_records", 0))))
    except (ChaosException, ChaosDBError, OSError, ValueError) as exc:
        reinitialized = _reinitialize_stuck_replicas(directory, timeout)
        if not reinitialized:
            raise ChaosDBError(f"could not start the cluster at {directory}: {exc}") from None
        out["reinitialized"] = reinitialized
    layout = _layout(directory)
    removed = []
    while layout is not None and len(layout.nodes) > max(3, int(control.get("nodes", 3))):
        removed.append(scale.remove_node(layout)["node"])
    if removed:
        out["removed_nodes"] = removed
    return {**out, "seconds": round(time.monotonic() - t0, 3)}


def _reinitialize_stuck_replicas(directory: Path, timeout: float) -> list[str]:
    """Nodes that run but do not stream from a running leader after the restart (a former leader that cannot
    catch up: the WAL it needs is gone from the new leader, as after a long partition under load) are copied again
    from the leader (Patroni's reinitialize), then the cluster must become healthy. The nodes reinitialized; []
    when there is no leader or every node streams (nothing this can mend)."""
    layout = _layout(directory)
    if layout is None:
        return []
    client = cluster.patroni_client(layout)
    try:
        members = {m.name: m for m in client.members()}
    except ChaosDBError:
        return []
    leader = next((m for m in members.values() if m.is_leader and m.state == "running"), None)
    if leader is None:
        return []
    stuck = [n for n in layout.nodes if n.name != leader.name
             and (n.name not in members or members[n.name].state not in ("running", "streaming"))]
    done = []
    for node in stuck:
        try:
            client.reinitialize(node.api_url)
        except ChaosDBError:
            continue
        done.append(node.name)
    if done:
        cluster.wait_healthy(layout, timeout=timeout)
    return done


def wait_healthy(directory: Path, timeout: float) -> dict[str, Any]:
    """Wait until the cluster in *directory* is healthy again; how long it took (skipped when there is no cluster yet).
    """
    t0 = time.monotonic()
    layout = _layout(directory)
    if layout is None:
        return {"skipped": "no cluster yet", "seconds": 0.0}
    health = cluster.wait_healthy(layout, timeout=timeout)
    return {"leader": health["leader"], "seconds": round(time.monotonic() - t0, 3)}


def _patch_config(directory: Path, body: dict[str, Any]) -> None:
    layout = _layout(directory)
    secrets = load_secrets(directory)
    last: Exception | None = None
    for url in layout.patroni_urls:
        try:
            request_json("PATCH", f"{url}/config", body, timeout=10.0,
                         auth=("patroni", secrets["patroni_password"]), tls=layout.client_tls("patroni"))
            return
        except HttpError as exc:
            last = exc
    raise ChaosDBError(f"no Patroni member accepted PATCH /config: {last}")


def _get_config(layout: Any) -> dict[str, Any]:
    last: Exception | None = None
    for url in layout.patroni_urls:
        try:
            return request_json("GET", f"{url}/config", timeout=5.0, tls=layout.client_tls("patroni")).json() or {}
        except HttpError as exc:
            last = exc
    raise ChaosDBError(f"no Patroni member answered GET /config: {last}")


def _wait_sync_count(client: Any, k: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        sync = [m for m in client.members() if m.role == "sync_standby"]
        if len(sync) == k:
            return
        if time.monotonic() > deadline:
            raise ChaosDBError(f"Patroni shows {len(sync)} synchronous standbys, not {k}, after {timeout:.0f}s")
        time.sleep(0.5)


def set_synchronous_standbys(directory: Path, k: int, timeout: float = 60.0) -> dict[str, Any]:
    """UPB's K on Patroni: K synchronous standbys (a commit is acknowledged once K replicas have it),
    0 = asynchronous replication. Waits until the cluster shows K sync standbys."""

    t0 = time.monotonic()
    layout = _layout(directory)
    if layout is None:
        raise ChaosDBError(f"no embedded cluster at {directory} to set synchronous standbys on")
    replicas = len(layout.nodes) - 1
    if k > replicas:
        raise ChaosDBError(f"K={k} synchronous standbys needs {k + 1} nodes; the cluster has {len(layout.nodes)}")
    body: dict[str, Any] = {"synchronous_mode": k > 0}
    if k > 0:
        body["synchronous_node_count"] = k
    _patch_config(directory, body)
    _wait_sync_count(cluster.patroni_client(layout), k, timeout)
    # the cluster's health rule (a synchronous standby must exist in sync mode) follows the live setting
    layout.replication = "sync" if k > 0 else "async"
    layout.save()
    return {"synchronous_standbys": k, "seconds": round(time.monotonic() - t0, 3)}


def replication_of(directory: Path) -> str | None:
    """The replication mode of the cluster in *directory* (``sync``/``async``), None when there is none."""
    layout = _layout(directory)
    return layout.replication if layout is not None else None


def restore_replication(directory: Path, replication: str = "sync") -> dict[str, Any]:
    """The cluster's replication setting of before the game day (sync: one synchronous standby; async: none)."""
    if _layout(directory) is None:
        return {"skipped": "no cluster"}
    return set_synchronous_standbys(directory, 1 if replication == "sync" else 0)


#: Patroni's refusals of a switchover that pass: the candidate's health check timed out on a busy machine
#: (412 no good candidates), the leader had not yet read the configuration without synchronous mode (412 sync
#: standby), the outcome was not known when it answered (503)
_PASSING_REFUSAL = re.compile(r"HTTP (412 (switchover is not possible|candidate name does not match)|503)")


def _switch_over(client: Any, node: str, timeout: float) -> None:
    """Ask for a switchover to *node*, again while Patroni refuses it for a passing reason, until *node* leads."""
    deadline = time.monotonic() + timeout
    while True:
        leader = client.leader()
        if leader is not None and leader.name == node:
            return
        if leader is not None:
            try:
                client.switchover(leader.name, candidate=node)
                return
            except ChaosDBError as exc:
                if not _PASSING_REFUSAL.search(str(exc)) or time.monotonic() > deadline:
                    raise
        elif time.monotonic() > deadline:
            raise ChaosDBError(f"no leader to switch over from to {node} within {timeout:.0f}s")
        time.sleep(2.0)


def move_leader(directory: Path, node: str, timeout: float = 90.0) -> dict[str, Any]:
    """Make *node* the primary (a switchover) unless it already is; then wait until healthy."""

    t0 = time.monotonic()
    layout = _layout(directory)
    if layout is None:
        raise ChaosDBError(f"no embedded cluster at {directory} to move the primary in")
    layout.node(node)  # a clear error for an unknown node
    client = cluster.patroni_client(layout)
    leader = client.leader()
    moved = False
    if leader is None or leader.name != node:
        cluster.wait_healthy(layout, timeout=timeout)
        leader = client.leader()
        if leader is None:
            raise ChaosDBError(f"the cluster at {directory} has no leader to move away from")
        # in synchronous mode Patroni switches over only to the synchronous standby: drop to asynchronous
        # for the switchover (no load runs between runs) and restore the setting after it
        config = _get_config(layout)
        sync_before = bool(config.get("synchronous_mode"))
        candidate_is_sync = any(m.name == node and m.role == "sync_standby" for m in client.members())
        if sync_before and not candidate_is_sync:
            _patch_config(directory, {"synchronous_mode": False})
            _wait_sync_count(client, 0, timeout)
        try:
            _switch_over(client, node, timeout)
            deadline = time.monotonic() + timeout
            while True:
                current = client.leader()
                if current is not None and current.name == node and current.state == "running":
                    break
                if time.monotonic() > deadline:
                    raise ChaosDBError(f"{node} did not become the primary within {timeout:.0f}s")
                time.sleep(0.5)
        finally:
            if sync_before and not candidate_is_sync:
                _patch_config(directory, {"synchronous_mode": True})
        if sync_before:
            _wait_sync_count(client, min(int(config.get("synchronous_node_count") or 1), len(layout.nodes) - 1),
                             timeout)
        moved = True
    cluster.wait_healthy(layout, timeout=timeout)
    return {"leader": node, "moved": moved, "seconds": round(time.monotonic() - t0, 3)}


def reset_tpcc(directory: Path, warehouses: int, scale_down: int) -> dict[str, Any]:
    """Drop and reload the TPC-C tables: every run starts from the same freshly loaded database."""

    layout = _layout(directory)
    if layout is None:
        return {"skipped": "no cluster yet (the control loads TPC-C)", "seconds": 0.0}
    if warehouses <= 0:
        raise ChaosDBError("reset_tpcc: the experiment's embedded-cluster control loads no TPC-C data "
                           "(tpcc_warehouses is 0)")
    t0 = time.monotonic()
    loaded = loader.load(layout.dsn(), Scale.reduced(warehouses, scale_down), drop=True)
    return {"warehouses": loaded["warehouses"], "seconds": round(time.monotonic() - t0, 3)}


def take_down(directory: Path, purge: bool) -> dict[str, Any]:
    """Stop the cluster in *directory* (``purge``: and remove it) when it was made for runs (by a game day or a run,
    :mod:`chaosdb.embedded.ownership`); a person's cluster (``chaosdb cluster up``) is left running; skipped when
    there is none."""
    layout = _layout(directory)
    if layout is None:
        return {"skipped": "no cluster"}
    if layout.created_by.get("by") not in ("gameday", "run"):
        return {"skipped": f"cluster {layout.name} was not made by a game day or a run: left running"}
    return cluster.down(layout, purge=purge)
