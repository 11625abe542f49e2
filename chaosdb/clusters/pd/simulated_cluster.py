"""A local PD cluster with simulated TiKV stores (``chaosdb cluster up --kind pd``).

Real PD members (``pd-server``, 1 or 3) and ``pd-simulator``, which registers N mock stores and M regions and
heartbeats them to PD as TiKV stores do; PD schedules them and the simulator carries out PD's operators
(transfer leader, evict leaders, store state changes). Every TiKV probe and action of this pack works against
it as against a real cluster; what it cannot do is serve data (no TiKV, so no load and no process to kill per
store: ``kill_store`` and the local CPU/memory limits need real ``tikv-server`` processes).

Member *i* listens on ``127.0.40.<i>`` (client ``:2379``, peer ``:2380``); the simulator's status address is
99 above the first member's (``127.0.40.100:20180`` by default), so clusters on other bases never share it (``/event?event=down-node&node-id=N`` takes a store away). Binaries are found by
:mod:`chaosdb.core.binaries`. State is ``pd.json`` in the cluster directory; every process runs with its working
directory inside it, which is how ``down`` finds them (also after a crash of this program).

A simulator cannot rejoin the PD data it registered before ("server is not clean"), so ``up`` on a stopped
cluster starts it afresh (the data directory is wiped first).

``--secure``: a CA for the cluster (``tls/``) signs each member's certificate; members speak HTTPS on both ports and
ask every client for a certificate of that CA (``pd-server --cacert/--cert/--key``); ``tls/client.crt`` and
``client.key`` are for experiments (configuration ``pd_ca_file``, ``pd_cert_file``, ``pd_key_file``). pd-simulator
has no TLS settings for its PD client (tried with PD v8.5.7: ``[server.security]`` in its config is not used, and it
stops with "failed to get cluster id"), so a secure cluster has PD members only, no stores.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from chaosdb.core.binaries import find_binary
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import request_json
from chaosdb.core.pki import cluster_ca, issue
from chaosdb.core.processes import pids_under, signal_pids, wait_gone
from chaosdb.core.servers import spawn_server, wait_ready
from chaosdb.tikv import cluster as pd_cluster

__all__ = ["STATE_FILE", "configuration_of", "down", "plan", "sim_event", "simulator_config", "status", "up"]

STATE_FILE = "pd.json"
PD_VERSION_FOR_STORES = "8.5.7"  # PD refuses stores without a dotted version


def plan(directory: Path, name: str = "pd", members: int = 1, stores: int = 5, regions: int = 60,
         address_base: str = "127.0.40.1", secure: bool = False) -> dict[str, Any]:
    """The PD cluster's layout: 1 or 3 members, the simulator's stores and regions, addresses from *address_base*."""
    if members not in (1, 3):
        raise ChaosDBError(f"--pd-members must be 1 or 3, got {members}")
    if not 1 <= stores <= 50:
        raise ChaosDBError(f"--stores must be between 1 and 50, got {stores}")
    if not 1 <= regions <= 100_000:
        raise ChaosDBError(f"--regions must be between 1 and 100000, got {regions}")
    octets = [int(x) for x in address_base.split(".")] if address_base.count(".") == 3 else []
    if len(octets) != 4 or octets[0] != 127 or octets[3] + members > 99:
        raise ChaosDBError(f"--address-base must be a 127.x.y.z address with room for {members} members, "
                           f"got {address_base!r}")
    hosts = [".".join(map(str, octets[:3] + [octets[3] + i])) for i in range(members)]
    scheme = "https" if secure else "http"
    members_plan = [{"name": f"pd{i + 1}", "host": h, "client_url": f"{scheme}://{h}:2379",
                     "peer_url": f"{scheme}://{h}:2380", "dir": str(directory / f"pd{i + 1}")}
                    for i, h in enumerate(hosts)]
    return {"kind": "pd", "cluster": name, "dir": str(directory), "members": members_plan, "secure": secure,
            "stores": 0 if secure else stores, "regions": 0 if secure else regions,
            "simulator": {"dir": str(directory / "simulator"),
                          "status_addr": ".".join(map(str, octets[:3] + [octets[3] + 99])) + ":20180"}}


def simulator_config(layout: dict[str, Any]) -> str:
    """pd-simulator's TOML: the ``stable`` case (never ends), heartbeats fast enough that PD knows every region
    leader within seconds."""
    return (f'case-name = "stable"\ntotal-store = {layout["stores"]}\ntotal-region = {layout["regions"]}\n'
            f'sim-tick-interval = "100ms"\nstore-version = "{PD_VERSION_FOR_STORES}"\n'
            '[raftstore]\npd-heartbeat-tick-interval = "2s"\npd-store-heartbeat-tick-interval = "1s"\n')


def configuration_of(layout: dict[str, Any]) -> dict[str, Any]:
    """The configuration keys an experiment sets to reach this cluster (with a secure one's CA and client
    certificate)."""
    urls = [m["client_url"] for m in layout["members"]]
    cfg: dict[str, Any] = {"pd_url": urls[0], "pd_urls": urls}
    if layout.get("secure"):
        tls = _tls_dir(layout)
        cfg.update(pd_ca_file=str(tls / "ca.crt"), pd_cert_file=str(tls / "client.crt"),
                   pd_key_file=str(tls / "client.key"))
    return cfg


def _tls_dir(layout: dict[str, Any]) -> Path:
    return Path(layout["dir"]) / "tls"


def _make_certificates(layout: dict[str, Any]) -> None:
    """The cluster's CA, a certificate per member (its address) and the experiments' client certificate (once)."""
    d = _tls_dir(layout)
    cluster_ca(d, f"chaosdb {layout['cluster']} PD CA")
    for m in layout["members"]:
        if (d / f"{m['name']}.key").exists():
            continue
        issue(d / "ca.key", d / "ca.crt", d / f"{m['name']}.key", d / f"{m['name']}.crt", m["host"],
              ips=sorted({m["host"], "127.0.0.1"}), dns=["localhost"])


def _tls_argv(layout: dict[str, Any], member: dict[str, Any]) -> list[str]:
    if not layout.get("secure"):
        return []
    d = _tls_dir(layout)
    return ["--cacert", str(d / "ca.crt"), "--cert", str(d / f"{member['name']}.crt"),
            "--key", str(d / f"{member['name']}.key")]


def _save(layout: dict[str, Any]) -> None:
    (Path(layout["dir"]) / STATE_FILE).write_text(json.dumps(layout, indent=1) + "\n")


def _layout(directory: Path) -> dict[str, Any]:
    path = directory / STATE_FILE
    if not path.exists():
        raise ChaosDBError(f"no PD cluster at {directory} (start one with 'chaosdb cluster up --kind pd')")
    return json.loads(path.read_text())


def _ready(cfg: dict[str, Any], layout: dict[str, Any]) -> tuple[bool, str]:
    """Every member healthy with a leader, every store Up, every region known with a leader."""
    try:
        health = pd_cluster.health(cfg)
        if len(health) < len(layout["members"]) or not all(m["healthy"] for m in health):
            return False, f"PD members healthy: {sum(m['healthy'] for m in health)} of {len(layout['members'])}"
        if not layout["stores"]:  # a secure cluster: PD members only
            return bool(pd_cluster.members(cfg).get("leader")), "no PD leader yet"
        stores = pd_cluster.stores(cfg)
        up = [s for s in stores if s["state"] == "Up"]
        if len(up) < layout["stores"]:
            return False, f"{len(up)} of {layout['stores']} stores Up"
        leaders = sum(s["leader_count"] for s in up)
        if leaders < layout["regions"]:
            return False, f"{leaders} of {layout['regions']} region leaders known"
        return True, "ready"
    except ChaosDBError as exc:
        return False, str(exc)


def up(directory: Path, name: str = "pd", members: int = 1, stores: int = 5, regions: int = 60,
       address_base: str = "127.0.40.1", bin_dir: str | None = None, timeout: float = 120.0,
       secure: bool = False) -> dict[str, Any]:
    """Start (or create) the cluster and wait until PD knows every store and region leader."""
    pd_bin = find_binary("pd-server", bin_dir)
    directory = Path(directory)
    state = directory / STATE_FILE
    created = not state.exists()
    layout = plan(directory, name, members, stores, regions, address_base, secure) if created \
        else _layout(directory)
    if secure and not layout.get("secure"):
        raise ChaosDBError(f"the PD cluster at {directory} was created without --secure, which can only be chosen "
                           "when a cluster is created: 'chaosdb cluster down --kind pd --purge' it first")
    sim_bin = find_binary("pd-simulator", bin_dir) if layout["stores"] else ""
    if pids_under(directory):
        ok, why = _ready(configuration_of(layout), layout)
        if ok:
            return {**_summary(layout, created=False, started=[], seconds=0.0), "note": "already running"}
        down(directory)
    # PD's data is not kept across runs: a simulator cannot rejoin the stores it registered before
    for m in layout["members"]:
        shutil.rmtree(Path(m["dir"]) / "data", ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    _save(layout)
    if layout.get("secure"):
        _make_certificates(layout)
    t0 = time.monotonic()
    initial = ",".join(f"{m['name']}={m['peer_url']}" for m in layout["members"])
    for m in layout["members"]:
        spawn_server([pd_bin, "--name", m["name"], "--data-dir", str(Path(m["dir"]) / "data"),
                "--client-urls", m["client_url"], "--peer-urls", m["peer_url"], "--initial-cluster", initial,
                "--log-file", str(Path(m["dir"]) / "pd.log"), *_tls_argv(layout, m)], m["dir"],
                Path(m["dir"]) / "stdout.log")
    cfg = configuration_of(layout)
    deadline = t0 + timeout

    def leader_elected() -> tuple[bool, str]:
        try:
            return bool(pd_cluster.members(cfg).get("leader")), "no PD leader yet"
        except ChaosDBError as exc:
            return False, str(exc)

    _wait(directory, leader_elected, deadline, f"PD elected no leader within {timeout:g} s; logs: "
                                               f"{layout['members'][0]['dir']}/pd.log")
    if not sim_bin:  # a secure cluster: PD members only
        return _summary(layout, created=created, started=[m["name"] for m in layout["members"]],
                        seconds=round(time.monotonic() - t0, 1))
    sim = layout["simulator"]
    Path(sim["dir"]).mkdir(parents=True, exist_ok=True)
    (Path(sim["dir"]) / "simconfig.toml").write_text(simulator_config(layout))
    spawn_server([sim_bin, f"--pd-endpoints={','.join(m['client_url'] for m in layout['members'])}",
            f"--config={Path(sim['dir']) / 'simconfig.toml'}", "--case=stable", f"--status-addr={sim['status_addr']}",
            f"--log-file={Path(sim['dir']) / 'simulator.log'}"], sim["dir"], Path(sim["dir"]) / "stdout.log")
    _wait(directory, lambda: _ready(cfg, layout), deadline,
          f"the PD cluster was not ready within {timeout:g} s; logs in {directory}")
    return _summary(layout, created=created, started=[m["name"] for m in layout["members"]] + ["simulator"],
                    seconds=round(time.monotonic() - t0, 1))


def _wait(directory: Path, check: Any, deadline: float, failure: str) -> None:
    wait_ready(check, deadline, failure, on_timeout=lambda: down(directory), every_s=0.3)


def _summary(layout: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"cluster": layout["cluster"], "kind": "pd", "dir": layout["dir"], "members": len(layout["members"]),
            "stores": layout["stores"], "regions": layout["regions"], "pd_url": layout["members"][0]["client_url"],
            "simulator_status": f"http://{layout['simulator']['status_addr']}",
            "configuration": configuration_of(layout), **extra}


def status(directory: Path) -> dict[str, Any]:
    """Whether PD is ready and healthy, and each store's state."""
    layout = _layout(Path(directory))
    cfg = configuration_of(layout)
    ok, why = _ready(cfg, layout)
    health: dict[str, Any]
    try:
        health = pd_cluster.cluster_health(cfg) if layout["stores"] else {
            "healthy": ok, "problems": [] if ok else [why], "stores": []}  # a secure cluster: members only
    except ChaosDBError as exc:
        health = {"healthy": False, "problems": [str(exc)], "stores": []}
    return {**_summary(layout), "ready": ok, "why": why, "healthy": health["healthy"],
            "problems": health["problems"], "store_states": {s["id"]: s["state"] for s in health["stores"]},
            "processes": len(pids_under(Path(directory)))}


def sim_event(layout_or_dir: dict[str, Any] | Path, event: str, node_id: int) -> str:
    """Send the simulator an event (``down-node``, ``add-node``) through its status address."""

    layout = layout_or_dir if isinstance(layout_or_dir, dict) else _layout(Path(layout_or_dir))
    url = f"http://{layout['simulator']['status_addr']}/event?event={event}&node-id={int(node_id)}"
    return request_json("GET", url, timeout=5.0).body


def down(directory: Path, purge: bool = False, timeout: float = 20.0) -> dict[str, Any]:
    """Stop the members and the simulator (SIGTERM, then SIGKILL after *timeout*); ``purge`` also removes the folder."""
    directory = Path(directory)
    layout = _layout(directory)
    pids = pids_under(directory)
    signal_pids(pids, signal.SIGTERM)
    left = wait_gone(pids, timeout)
    if left:
        signal_pids(left, signal.SIGKILL)
        wait_gone(left, 5)
    if purge:
        shutil.rmtree(directory, ignore_errors=True)
    return {"cluster": layout["cluster"], "kind": "pd", "stopped": len(pids), "killed": len(left), "purged": purge,
            "dir": str(directory)}
