"""``chaosdb cluster up|status|down --kind kubernetes``: a local control plane with kwok nodes and the Chaos Mesh
controller (:mod:`chaosdb.clusters.kubernetes.cluster`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from chaosdb.clusters.kubernetes import cluster as kube_cluster

__all__ = ["KIND", "HELP", "TITLE", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "up", "show_up",
           "show_status", "CLUSTER"]

KIND = "kubernetes"
TITLE = "Kubernetes cluster"
HELP = ("kube-apiserver, controller-manager, scheduler, kwok fake nodes and pods and the Chaos Mesh controller "
        "(binaries from --bin-dir); 127.0.50.1")

#: the module whose status(directory) and down(directory, purge, timeout) the command calls
CLUSTER = kube_cluster
STATE_FILE = kube_cluster.STATE_FILE
DEFAULT_ADDRESS = "127.0.50.1"
#: the extras ``cluster up`` of this kind needs (:mod:`chaosdb.core.extras`)
EXTRAS: tuple[str, ...] = ("k8s", "local")


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for this kind."""
    group.add_argument("--workloads", default="cockroachdb,tikv,postgres",
                       help="database-shaped StatefulSets of fake pods (cockroachdb, tikv, postgres, or none)")
    group.add_argument("--replicas", type=int, default=3, help="pods per database StatefulSet")
    group.add_argument("--no-chaos-mesh", action="store_true", help="without the Chaos Mesh controller")
    group.add_argument("--real-nodes", type=int, default=0, choices=(0, 1),
                       help="a node that runs real containers (containerd, runc and the CNI plugins from the "
                            "distribution, kubelet from --bin-dir; root): chaos-daemon on it, and the postgres "
                            "workload as Patroni + PostgreSQL in pods; --nodes 0 leaves out kwok's fake nodes")
    group.add_argument("--litmus", action="store_true",
                       help="with --real-nodes 1: the LitmusChaos operator (3.18.0) in a pod of the real node, its "
                            "runner and experiment images built from --bin-dir (litmus-chaos-operator, "
                            "litmus-chaos-runner, litmus-experiments) and imported there; apply a fault's setup "
                            "with EXPERIMENT_IMAGE set to the litmus-go-runner image it prints")
    group.add_argument("--chaosd-tls", action="store_true",
                       help="the Chaos Mesh controller talks to chaosd over mutual TLS only (CHAOSD_SECURITY_MODE); "
                            "start chaosd with --chaosd-tls-from this cluster's folder")


def up(args: argparse.Namespace, directory: Path, name: str) -> dict[str, Any]:
    """Start (create on first use) the control plane, fake nodes and workloads, and Chaos Mesh."""
    names = [] if args.workloads in ("", "none") else [w.strip() for w in args.workloads.split(",") if w.strip()]
    return kube_cluster.up(directory, name, address=args.address_base or DEFAULT_ADDRESS, nodes=args.nodes,
                        workload_names=names, replicas=args.replicas, chaos_mesh=not args.no_chaos_mesh,
                        bin_dir=args.bin_dir, timeout=max(args.timeout, 180.0),
                        chaosd_tls=bool(getattr(args, "chaosd_tls", False)),
                        real_nodes=int(getattr(args, "real_nodes", 0) or 0),
                        litmus_operator=bool(getattr(args, "litmus", False)))


def show_up(res: dict[str, Any]) -> None:
    """What started and how experiments reach it."""
    real = res.get("real_nodes") or []
    print(f"Kubernetes cluster {res['cluster']}: {len(res['nodes'])} kwok nodes, "
          + (f"{len(real)} real node(s) ({', '.join(n['name'] + ' on ' + n['node_ip'] for n in real)}), "
             if real else "")
          + ("Chaos Mesh with its webhooks, " if res["chaos_mesh"] else "")
          + ("the Litmus operator, " if res.get("litmus") else "")
          + f"workloads {', '.join(res['workloads']) or 'none'}"
          + (f", ready in {res['seconds']}s" if res.get("seconds") else f" ({res.get('note', '')})"))
    print(f"  API server: {res['server']}")
    print(f"  export KUBECONFIG={res['kubeconfig']}   (configuration k8s_kubeconfig for experiments)")
    if real:
        print("  pods on the real node run real containers (images built here); the pods of kwok's nodes are fake")
        print("  the shipped Kubernetes experiments reach it with:")
        for key, value in (res.get("environment") or {}).items():
            print(f"    export {key}={shlex.quote(value)}")
    else:
        print("  pods are fake (kwok): nothing runs inside them; 'chaosdb cluster down --kind kubernetes' stops it")
    if res.get("litmus"):
        print(f"  Litmus: ChaosExperiments run the image {res['litmus']['litmus-go-runner']} (EXPERIMENT_IMAGE of "
              "the litmus/<fault>-setup templates)")
    if res.get("chaosd_tls"):
        print(f"  chaosd over mutual TLS only: chaosdb cluster up --chaosd BINARY --chaosd-tls-from {res['dir']}")


def show_status(res: dict[str, Any]) -> None:
    """Healthy or not, each server, nodes and workloads."""
    print(f"Kubernetes cluster {res['cluster']}: {'healthy' if res['healthy'] else 'NOT healthy'}; servers "
          + ", ".join(f"{k}={'up' if v else 'DOWN'}" for k, v in res["servers"].items()))
    print(f"  nodes: {res['nodes_ready']}; workloads: {res['workloads_ready']}")
    for node in res.get("real_nodes") or []:
        procs = ", ".join(f"{k} {v}" for k, v in node["processes"].items())
        print(f"  real node {node['name']} ({node['node_ip']} on bridge {node['bridge'] or 'MISSING'}, pods in "
              f"{node['subnet']}): processes {procs}; {node['mounts']} mounts, {len(node['cgroups'])} cgroup roots")
