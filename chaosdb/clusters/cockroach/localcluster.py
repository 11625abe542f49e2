"""A local CockroachDB cluster on this machine (``chaosdb cluster up --kind cockroach``), for running the
CockroachDB experiments on a laptop. Needs a ``cockroach`` binary (a single file from Cockroach Labs) on
PATH or ``--cockroach-bin``; none ships with this package and none can run on the CI machines.

Node *i* listens on its own loopback address (``127.0.30.<i>`` by default, SQL/RPC ``:26257``, DB
Console ``:8080``), insecure (local experiments only), store and logs under the cluster directory. State
is ``cockroach.json`` in that directory: the configuration keys experiments need are in it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from chaosdb.cockroach import channels, node_processes
from chaosdb.cockroach.version import parse_version
from chaosdb.core import processes
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.servers import spawn_server

__all__ = ["STATE_FILE", "find_binary", "plan", "start_argv", "up", "status", "down", "configuration_of"]

STATE_FILE = "cockroach.json"


def find_binary(cockroach_bin: str | None = None) -> str:
    """The ``cockroach`` binary (``cockroach_bin``, else on PATH); refused with where to get one when there is none."""
    path = shutil.which(cockroach_bin or "cockroach")
    if not path:
        raise ChaosDBError(
            f"no cockroach binary{' at ' + cockroach_bin if cockroach_bin else ' on PATH'}: --kind cockroach runs "
            "a real CockroachDB. Download the binary for your platform from "
            "https://www.cockroachlabs.com/docs/releases/ , put it on PATH (or pass --cockroach-bin), then run "
            "this again. Without it, use --kind postgres-ha (the embedded cluster) or point the experiments at "
            "a running cluster (CHAOSDB_COCKROACH_URL).")
    return path


def plan(directory: Path, name: str, nodes: int, address_base: str) -> dict[str, Any]:
    """The cluster's layout: each node's loopback address, HTTP address, store and log folders under *directory*."""
    if not 1 <= nodes <= 9:
        raise ChaosDBError("--nodes must be between 1 and 9")
    octets = [int(x) for x in address_base.split(".")]
    if len(octets) != 4 or octets[0] != 127 or octets[3] + nodes - 1 > 254:
        raise ChaosDBError(f"--address-base must be a 127.x.y.z address with room for {nodes} nodes")
    addrs = [".".join(map(str, octets[:3] + [octets[3] + i])) for i in range(nodes)]
    return {"kind": "cockroach", "cluster": name, "dir": str(directory), "nodes": [
        {"name": f"node{i + 1}", "address": f"{a}:26257", "http": f"{a}:8080",
         "store": str(directory / f"node{i + 1}" / "store"), "logs": str(directory / f"node{i + 1}" / "logs")}
        for i, a in enumerate(addrs)]}


def start_argv(binary: str, layout: dict[str, Any], node: dict[str, Any]) -> list[str]:
    """The ``cockroach start`` command line of *node* (insecure, its own address, joining the first three nodes)."""
    join = ",".join(n["address"] for n in layout["nodes"][:3])
    return [binary, "start", "--insecure", f"--store={node['store']}", f"--listen-addr={node['address']}",
            f"--http-addr={node['http']}", f"--join={join}", "--cache=64MiB", "--max-sql-memory=128MiB",
            f"--log-dir={node['logs']}"]


def configuration_of(layout: dict[str, Any]) -> dict[str, Any]:
    """The experiment configuration keys that reach this cluster (CLI channel, SQL URL, every node's HTTP URL)."""
    first = layout["nodes"][0]
    return {"cockroach_channel": "cli", "cockroach_bin": layout["binary"], "cockroach_host": first["address"],
            "cockroach_insecure": True,
            "cockroach_url": f"postgresql://root@{first['address']}/defaultdb?sslmode=disable",
            "cockroach_http_urls": [f"http://{n['http']}" for n in layout["nodes"]]}


def _spawn(argv: list[str], node: dict[str, Any]) -> int:
    """A node's ``cockroach start``, its output in its log folder."""
    Path(node["logs"]).mkdir(parents=True, exist_ok=True)
    return spawn_server(argv, Path(node["store"]).parent, Path(node["logs"]) / "stdout.log")


def _save(layout: dict[str, Any]) -> None:
    path = Path(layout["dir"]) / STATE_FILE
    path.write_text(json.dumps(layout, indent=1))


def up(directory: Path, name: str = "crdb", nodes: int = 3, address_base: str = "127.0.30.1",
       cockroach_bin: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
    """Start the cluster in *directory* (create and initialise it on first use) and wait until every node is live."""
    binary = find_binary(cockroach_bin)
    version = parse_version(channels.run_cli([binary, "version"], 30))
    state = directory / STATE_FILE
    created = not state.exists()
    layout = plan(directory, name, nodes, address_base) if created else json.loads(state.read_text())
    layout["binary"], layout["version"] = binary, "v%d.%d.%d" % version
    directory.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    started = []
    for node in layout["nodes"]:
        Path(node["store"]).mkdir(parents=True, exist_ok=True)
        if node_processes.find_node_process(node["address"]) is None:
            _spawn(start_argv(binary, layout, node), node)
            started.append(node["name"])
    _save(layout)
    cfg = configuration_of(layout)
    if not layout.get("initialized"):
        deadline = time.monotonic() + timeout
        while True:
            try:
                init_cfg = {k: v for k, v in cfg.items() if k != "cockroach_url"}
                channels.run_cli(channels.cli_argv(init_cfg, "init"), 30)
                break
            except ChaosDBError as exc:
                if "already been initialized" in str(exc):
                    break
                if time.monotonic() > deadline:
                    raise ChaosDBError(f"cockroach init did not succeed within {timeout:g} s: {exc}; logs in "
                                       f"{layout['nodes'][0]['logs']}") from None
                time.sleep(1)
        layout["initialized"] = True
        _save(layout)
    live = _wait_live(cfg, len(layout["nodes"]), t0 + timeout)
    return {"cluster": name, "dir": str(directory), "created": created, "started": started,
            "seconds": round(time.monotonic() - t0, 1), "version": layout["version"], "live_nodes": live,
            "configuration": cfg}


def _wait_live(cfg: dict[str, Any], want: int, deadline: float) -> int:
    last: Any = None
    while True:
        try:
            nodes = channels.cli_node_status(cfg)
            live = sum(1 for n in nodes if n["is_live"] and n["membership"] in (None, "active"))
            if live >= want:
                return live
            last = f"{live} of {want} nodes live"
        except ChaosDBError as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise ChaosDBError(f"the cluster is not up: {last}")
        time.sleep(1)


def _layout(directory: Path) -> dict[str, Any]:
    path = directory / STATE_FILE
    if not path.exists():
        raise ChaosDBError(f"no CockroachDB cluster at {directory} (start one with 'chaosdb cluster up --kind "
                           "cockroach')")
    return json.loads(path.read_text())


def status(directory: Path) -> dict[str, Any]:
    """Each node's process, liveness, membership, replicas and leases; healthy when every node is live."""
    layout = _layout(directory)
    cfg = configuration_of(layout)
    pids = {n["name"]: node_processes.find_node_process(n["address"]) for n in layout["nodes"]}
    try:
        nodes, error = channels.cli_node_status(cfg), None
    except ChaosDBError as exc:
        nodes, error = [], str(exc)
    healthy = bool(nodes) and all(n["is_live"] for n in nodes if n["membership"] in (None, "active"))
    return {"cluster": layout["cluster"], "kind": "cockroach", "dir": str(directory), "pids": pids,
            "nodes": nodes, "error": error, "healthy": healthy and error is None, "configuration": cfg}


def down(directory: Path, purge: bool = False, timeout: float = 30.0) -> dict[str, Any]:
    """Stop every node (SIGTERM, then SIGKILL after *timeout*); ``purge`` also removes the cluster's folder."""
    layout = _layout(directory)
    pids = [p for p in (node_processes.find_node_process(n["address"]) for n in layout["nodes"]) if p]
    processes.signal_pids(pids, signal.SIGTERM)
    left = processes.wait_gone(pids, timeout)
    if left:
        processes.signal_pids(left, signal.SIGKILL)
        processes.wait_gone(left, 5)
    if purge:
        shutil.rmtree(directory, ignore_errors=True)
    return {"cluster": layout["cluster"], "stopped": len(pids), "killed": len(left), "purged": purge,
            "dir": str(directory), "pid": os.getpid()}
