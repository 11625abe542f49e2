"""The embedded HA PostgreSQL cluster: N nodes of etcd + Patroni + PostgreSQL; ``up`` and ``down`` here.

Every node binds its own loopback address (``127.0.0.11``, ``.12``, ... by
default) so that network faults can later hit exactly one node, and uses the
standard ports on it:

=====================  ======  ==========================
component              port    option
=====================  ======  ==========================
PostgreSQL             5432    ``--pg-port``
Patroni REST API       8008    ``--api-port``
etcd client            2379    ``--etcd-port``
etcd peer              2380    ``--etcd-peer-port``
=====================  ======  ==========================

With ``--single-address`` every node binds ``127.0.0.1`` instead and node *i*
uses port + *i* - 1.

Patroni timings (``ttl`` 20 s, the minimum Patroni accepts; ``loop_wait`` 1 s;
``retry_timeout`` 5 s) trade a little CPU for fast detection: after a hard
leader failure a new leader is elected once the leader key's lease expires,
that is within ``ttl`` seconds. Replication is synchronous by default
(``synchronous_mode: true``, not strict) so that a failover never loses an
acknowledged commit; ``--replication async`` shows what asynchronous
replication loses.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

from chaosdb.clusters.postgres_ha.chaosd import stop_chaosd
from chaosdb.core.console import PROGRESS
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError
from chaosdb.embedded.config import (
    new_secrets,
    prepare_dirs,
    run_as_of,
    write_configs,
    write_pgpass,
    write_private,
)
from chaosdb.embedded.health import etcd_client, patroni_client, status, tail, wait_etcd, wait_healthy
from chaosdb.embedded.layout import DEFAULT_TIMINGS, parse_ipv4, plan_layout
from chaosdb.embedded.nodeproc import check_ports, start_node, stop_node
from chaosdb.embedded.processes import node_processes, pid_alive, signal_pids, wait_gone
from chaosdb.embedded.runtime import find_binaries, node_users, prepare_runtime, resolve_run_as
from chaosdb.embedded.state import (
    SECRETS_FILE,
    STATE_FILE,
    ClusterLayout,
    NodeLayout,
    load_layout,
    load_secrets,
)
from chaosdb.embedded.tls import ensure_cluster_ca

#: the cluster's life (up, down) is here; its parts live beside it and are named here too, where callers have
#: always found them: layout (plan_layout), config (Patroni and etcd configuration, secrets), nodeproc (a
#: node's servers started and stopped), health (clients, wait_healthy, status, logs)
__all__ = ["plan_layout", "parse_ipv4", "up", "down", "status", "start_node", "stop_node", "wait_etcd",
           "wait_healthy", "patroni_client", "etcd_client", "tail", "DEFAULT_TIMINGS"]


def _ensure_app_database(layout: ClusterLayout, secrets: dict[str, str]) -> None:
    try:
        import psycopg  # noqa: PLC0415 - needs the postgres extra
        from psycopg import sql  # noqa: PLC0415 - needs the postgres extra
    except ImportError:
        raise ChaosDBError("psycopg is not installed: pip install 'chaostoolkit-db[local]'") from None
    dsn = layout.dsn(user="postgres", database="postgres")
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (layout.app_user,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(layout.app_user), sql.Literal(secrets["app_password"])))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (layout.database,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(layout.database), sql.Identifier(layout.app_user)))


# ---------------------------------------------------------------------------
# cluster lifecycle


def up(
    directory: Path,
    name: str,
    nodes: int = 3,
    run_as: str | None = None,
    postgres_bin: str | None = None,
    etcd_bin: str | None = None,
    timeout: float = 120.0,
    created_by: dict[str, Any] | None = None,
    **layout_options: Any,
) -> dict[str, Any]:
    """Create and start a cluster, or restart the stopped parts of an existing one.

    Idempotent: on a healthy running cluster it changes nothing. *created_by* is recorded when the cluster is created
    (who may later stop or purge it: :mod:`chaosdb.embedded.ownership`); the result says who created it.
    """
    directory = Path(directory).absolute()
    t0 = time.monotonic()
    created = False
    if (directory / STATE_FILE).exists():
        layout = load_layout(directory)  # an existing cluster keeps its own name and layout
        if layout_options.get("secure") and not layout.secure:
            raise ChaosDBError(f"the cluster at {directory} was created without --secure, which can only be chosen "
                               "when a cluster is created: 'chaosdb cluster down --purge' it first, or use another "
                               "--name")
        secrets = load_secrets(directory)
        ras = run_as_of(layout)
    else:
        if directory.exists() and any(directory.iterdir()):
            raise ChaosDBError(f"{directory} exists, is not empty and holds no chaosdb cluster: choose another --dir")
        ras = resolve_run_as(run_as)
        layout = plan_layout(name, directory, nodes=nodes, run_as=ras,
                             users=node_users(ras, nodes, run_as, cluster=name), **layout_options)
        PROGRESS.info("creating cluster %s at %s: %d nodes", name, directory, nodes)
        bins = find_binaries(postgres_bin, etcd_bin)
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o755)
        # check every port before anything starts: a clear error beats a half-started cluster
        items = []
        for n in layout.nodes:
            items += [(n.host, n.pg_port, f"PostgreSQL of {n.name}"), (n.host, n.api_port, f"Patroni of {n.name}"),
                      (n.host, n.etcd_client_port, f"etcd client of {n.name}"),
                      (n.host, n.etcd_peer_port, f"etcd peer of {n.name}")]
        try:
            check_ports(items)
            layout.binaries = prepare_runtime(bins, ras, directory / "runtime").as_dict()
        except ChaosDBError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        secrets = new_secrets()
        write_private(directory / SECRETS_FILE, json.dumps(secrets, indent=2) + "\n")
        write_pgpass(layout, secrets)
        layout.created_by = dict(created_by or {"by": "command"})
        layout.save()
        if layout.secure:
            ensure_cluster_ca(layout)
        created = True
    prepare_dirs(layout, ras)
    write_configs(layout, secrets)
    started = {}
    PROGRESS.info("starting etcd on %s", ", ".join(n.name for n in layout.nodes))
    for node in layout.nodes:
        started[node.name] = start_node(layout, node.name, components=("etcd",))["started"]
    wait_etcd(layout, timeout=min(timeout, 30))
    PROGRESS.info("etcd is up; starting Patroni (and through it PostgreSQL) on %s",
                  ", ".join(n.name for n in layout.nodes))
    for node in layout.nodes:
        started[node.name].update(start_node(layout, node.name, components=("patroni",))["started"])
    PROGRESS.info("waiting for a leader and every replica streaming (at most %.0f s)", timeout)
    health = wait_healthy(layout, timeout=timeout, fail_fast=True)
    PROGRESS.info("leader %s; creating the application database", health["leader"])
    _ensure_app_database(layout, secrets)
    return {
        "cluster": layout.name,
        "dir": str(directory),
        "created": created,
        "created_by": layout.created_by,
        "started": {k: v for k, v in started.items() if v},
        "leader": health["leader"],
        "seconds": round(time.monotonic() - t0, 2),
        "dsn": layout.dsn(),
        "admin_dsn": layout.dsn(user="postgres", database="postgres"),
        "patroni_urls": layout.patroni_urls,
        "etcd_urls": layout.etcd_urls,
        **({"tls": {"ca_file": str(layout.tls_dir / "ca.crt"), "cert_file": str(layout.tls_dir / "client.crt"),
                    "key_file": str(layout.tls_dir / "client.key")}} if layout.secure else {}),
    }


def _revert_faults_of(layout: ClusterLayout) -> list[dict[str, Any]]:
    """Every live fault on the cluster reverted through the host engine (``cleanup_faults`` of this cluster);
    what was reverted, each ``{"id", "kind", "targets"}``. A failure is said and stops the ``down``: removing the
    cluster would leave its faults with nothing to name them."""
    done = engine_action("host", "cleanup_faults")(cluster_dir=layout.dir)
    if done.get("errors"):
        raise ChaosDBError(f"the live faults of cluster {layout.name} could not all be reverted "
                           f"({'; '.join(done['errors'])}): run 'chaosdb faults cleanup --dir {layout.dir}', then "
                           "'chaosdb cluster down' again")
    reverted = [{"id": r.get("id"), "kind": r.get("kind"), "targets": r.get("targets") or []}
                for r in done.get("reverted") or []]
    if reverted or done.get("swept"):
        PROGRESS.info("reverted the live faults of cluster %s first: %s", layout.name,
                      ", ".join([f"{r['kind']} {r['id']} on {', '.join(map(str, r['targets'])) or '-'}"
                                 for r in reverted] + list(done.get("swept") or [])))
    return reverted


def down(layout: ClusterLayout, purge: bool = False, timeout: float = 30.0) -> dict[str, Any]:
    """Stop every process of every node (replicas first, the leader last, etcd at the end).

    ``purge`` also deletes the cluster directory (data, logs, staged runtime). The cluster's own live faults go first,
    whoever made them (their iptables rules name its addresses: left behind they would cut the next cluster on
    them); the result lists them (``reverted_faults``).
    """
    run_as_of(layout)
    reverted = _revert_faults_of(layout)
    leader = None
    try:
        leader = patroni_client(layout, timeout=1.0).leader()
    except (ChaosDBError, HttpError):
        pass
    order = sorted(layout.nodes, key=lambda n: (leader is not None and n.name == leader.name, n.name))
    results = []
    threads = []
    stop_results: dict[str, Any] = {}

    def _stop(n: NodeLayout) -> None:
        stop_results[n.name] = stop_node(layout, n.name, graceful=True, timeout=timeout, components=("patroni",))

    replicas = [n for n in order if not (leader and n.name == leader.name)]
    PROGRESS.info("stopping cluster %s: Patroni and PostgreSQL on %s, then %s, then etcd (each at most %.0f s "
                  "before SIGKILL)", layout.name, ", ".join(n.name for n in replicas) or "no replica",
                  f"the leader {leader.name}" if leader else "no leader", timeout)
    for n in replicas:
        th = threading.Thread(target=_stop, args=(n,))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    for n in order:
        if n not in replicas:
            PROGRESS.info("stopping Patroni and PostgreSQL on the leader %s", n.name)
            _stop(n)
    PROGRESS.info("stopping etcd on %s", ", ".join(n.name for n in layout.nodes))
    for n in layout.nodes:
        results.append(stop_node(layout, n.name, graceful=True, timeout=10, components=("etcd",)))
    leftovers = {n.name: [p.pid for p in node_processes(n.path, n.data_dir)] for n in layout.nodes}
    leftovers = {k: v for k, v in leftovers.items() if v}
    if leftovers:
        PROGRESS.info("killing what is left (SIGKILL): %s", "; ".join(f"{k}: pids {', '.join(map(str, v))}"
                                                                       for k, v in leftovers.items()))
        for pids in leftovers.values():
            signal_pids(pids, signal.SIGKILL)
            wait_gone(pids, 5)
        leftovers = {n.name: [p.pid for p in node_processes(n.path, n.data_dir) if pid_alive(p.pid)]
                     for n in layout.nodes}
        leftovers = {k: v for k, v in leftovers.items() if v}
    if leftovers:
        raise ChaosDBError(f"processes survived SIGKILL: {leftovers}")
    chaosd = stop_chaosd(layout.dir)
    if purge:
        PROGRESS.info("every process stopped; removing %s (data, logs, the staged runtime)", layout.path)
        shutil.rmtree(layout.path, ignore_errors=False)
    return {"cluster": layout.name, "dir": layout.dir, "stopped": [n.name for n in layout.nodes], "purged": purge,
            "reverted_faults": reverted,
            "sigkilled": {k: v["sigkilled"] for k, v in stop_results.items() if v["sigkilled"]},
            "chaosd_stopped": chaosd["stopped"]}
