"""``chaosdb cluster up|status|down --kind pd``: PD members and pd-simulator stores on this machine
(:mod:`chaosdb.clusters.pd.simulated_cluster`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chaosdb.clusters.pd import simulated_cluster

__all__ = ["KIND", "HELP", "TITLE", "STATE_FILE", "DEFAULT_ADDRESS", "EXTRAS", "add_arguments", "up", "show_up",
           "show_status", "CLUSTER"]

KIND = "pd"
TITLE = "PD cluster"
HELP = "PD members with pd-simulator's simulated TiKV stores (binaries from --bin-dir); addresses 127.0.40.x"

#: the module whose status(directory) and down(directory, purge, timeout) the command calls
CLUSTER = simulated_cluster
STATE_FILE = simulated_cluster.STATE_FILE
DEFAULT_ADDRESS = "127.0.40.1"
#: the extras ``cluster up`` of this kind needs (:mod:`chaosdb.core.extras`)
EXTRAS: tuple[str, ...] = ()


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``cluster up``'s options for this kind."""
    group.add_argument("--pd-members", type=int, default=1, choices=[1, 3], help="PD members")
    group.add_argument("--stores", type=int, default=5, help="simulated TiKV stores")
    group.add_argument("--regions", type=int, default=60, help="regions the simulator creates")


def up(args: argparse.Namespace, directory: Path, name: str) -> dict[str, Any]:
    """Start (create on first use) the PD cluster in *directory*, and its simulated stores."""
    return simulated_cluster.up(directory, name, members=args.pd_members, stores=args.stores, regions=args.regions,
                      address_base=args.address_base or DEFAULT_ADDRESS, bin_dir=args.bin_dir, timeout=args.timeout,
                      secure=bool(getattr(args, "secure", False)))


def show_up(res: dict[str, Any]) -> None:
    """What started and how to reach it."""
    took = f", in {res['seconds']}s" if res.get("seconds") else f" ({res.get('note', '')})"
    if res["stores"]:
        print(f"PD cluster {res['cluster']}: {res['members']} PD member(s), {res['stores']} simulated stores, "
              f"{res['regions']} regions, every region leader known" + took)
    else:
        print(f"PD cluster {res['cluster']}: {res['members']} PD member(s) with TLS and client certificates, "
              "no stores (pd-simulator cannot speak TLS)" + took)
    print(f"  PD URL (configuration pd_url): {res['pd_url']}")
    for key in ("pd_ca_file", "pd_cert_file", "pd_key_file"):
        if key in res["configuration"]:
            print(f"  {key}: {res['configuration'][key]}")
    print(f"  simulator status: {res['simulator_status'] if res['stores'] else '-'}   data: {res['dir']}")


def show_status(res: dict[str, Any]) -> None:
    """Ready, healthy, the stores' states and any problem."""
    print(f"PD cluster {res['cluster']}: {'ready' if res['ready'] else 'not ready (' + res['why'] + ')'}, "
          f"{'healthy' if res['healthy'] else 'unhealthy'}; stores "
          + ", ".join(f"{k}={v}" for k, v in res["store_states"].items()))
    for problem in res["problems"]:
        print(f"  {problem}")
