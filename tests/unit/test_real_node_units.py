"""The real node of the local Kubernetes cluster, part by part and with no server of its own: containerd's and
kubelet's configuration, the bridge's plan and CNI configuration, the host sysctls recorded and put back, the
prerequisites, the TCP forwarder (against loopback stand-ins: an echo server and an HTTPS Endpoints reader with a
throwaway CA), chaos-daemon's and Patroni's objects, the cluster's plan with real nodes, the refusals of chaos kinds
this kernel cannot carry out, and the node's teardown helpers (mounts, host folders) on temporary folders."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import signal
import socket
import socketserver
import ssl
import subprocess
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from chaosdb.chaosmesh import capabilities
from chaosdb.clusters.kubernetes import chaos_daemon, cluster, patroni_pods, resources, workloads
from chaosdb.clusters.kubernetes.pki import Pki
from chaosdb.clusters.kubernetes.realnode import forwarder, network, node, prerequisites
from chaosdb.clusters.kubernetes.realnode.containerd import DISABLED_PLUGINS, ContainerdPaths, config_toml
from chaosdb.clusters.kubernetes.realnode.kubelet import (
    KUBELET_PATH,
    REAL_NODE_LABEL,
    KubeletPaths,
    command_line,
    kubelet_config,
    write_config,
)
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import path_tag
from chaosdb.core.netem import NO_NETEM
from chaosdb.core.pki import issue, make_ca
from chaosdb.images.recipes import POSTGRES_UID

CRI = "io.containerd.grpc.v1.cri"
#: generous: every wait below ends as soon as what it waits for happens
DEADLINE_S = 30.0


# --- containerd ----------------------------------------------------------------------------------------------------


def test_containerd_config_is_toml_that_keeps_everything_in_the_node_folder(tmp_path):
    paths = ContainerdPaths(tmp_path / "real-node-0", Path("/run/chaosdb/k8s-abc123"))
    config = tomllib.loads(config_toml(paths, "chaosdb/pause:sha-1", "/usr/lib/cni"))

    assert config["version"] == 2
    assert config["root"] == str(tmp_path / "real-node-0" / "containerd" / "root")
    assert config["state"] == str(tmp_path / "real-node-0" / "containerd" / "state")
    assert config["grpc"]["address"] == "/run/chaosdb/k8s-abc123/containerd.sock" == str(paths.socket)
    assert config["ttrpc"]["address"].startswith(str(paths.run_dir) + "/")
    assert paths.endpoint == "unix:///run/chaosdb/k8s-abc123/containerd.sock"
    cri = config["plugins"][CRI]
    assert cri["sandbox_image"] == "chaosdb/pause:sha-1"
    assert cri["restrict_oom_score_adj"] is True
    assert cri["netns_mounts_under_state_dir"] is True
    assert cri["containerd"]["default_runtime_name"] == "runc"
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["SystemdCgroup"] is False
    assert cri["cni"]["bin_dir"] == "/usr/lib/cni"
    assert cri["cni"]["conf_dir"] == str(tmp_path / "real-node-0" / "cni" / "net.d") == str(paths.cni_conf)
    assert config["disabled_plugins"] == DISABLED_PLUGINS
    for plugin in ("io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
                   "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                   "io.containerd.snapshotter.v1.aufs"):
        assert plugin in config["disabled_plugins"]


def test_containerd_config_quotes_paths_and_names_as_toml_reads_them_back(tmp_path):
    odd = tmp_path / 'node "one" \\ two'
    paths = ContainerdPaths(odd, Path("/run/chaosdb/k8s-x"))
    config = tomllib.loads(config_toml(paths, 'pause:"quoted"\\', "/opt/cni/bin"))

    assert config["root"] == str(odd / "containerd" / "root")
    assert config["plugins"][CRI]["sandbox_image"] == 'pause:"quoted"\\'
    assert config["plugins"][CRI]["cni"]["conf_dir"] == str(odd / "cni" / "net.d")


def test_containerd_socket_paths_fit_a_unix_socket_address(tmp_path):
    """A socket path may not exceed 107 bytes: the node's runtime folder is short whatever the cluster folder."""
    net = network.NetworkPlan(bridge="cdbr-x", subnet="10.245.0.0/24", node_ip="10.245.0.1").as_dict()
    deep = tmp_path / ("very-long-cluster-folder-name-" * 6)
    real = node.RealNode(name="real-node-0", dir=str(deep / "real-node-0"), run_dir=f"/run/chaosdb/k8s-{path_tag(deep)}",
                         cgroup_root="/chaosdb-x", network=net)
    sockets = [real.containerd.socket, Path(tomllib.loads(config_toml(real.containerd, "p", "/c"))["ttrpc"]["address"])]
    for sock in sockets:
        assert len(str(sock).encode()) <= 107, sock


# --- kubelet -------------------------------------------------------------------------------------------------------


def test_kubelet_config_binds_to_the_node_ip_and_keeps_its_files_in_the_node_folder(tmp_path):
    paths = KubeletPaths(tmp_path / "real-node-0")
    config = kubelet_config(paths, "10.245.3.1", "/chaosdb-abc123", "/cluster/pki/ca.crt")

    assert config["kind"] == "KubeletConfiguration"
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == "/chaosdb-abc123"
    assert config["address"] == config["healthzBindAddress"] == "10.245.3.1"
    assert config["readOnlyPort"] == 0
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authentication"]["webhook"]["enabled"] is True
    assert config["authentication"]["x509"]["clientCAFile"] == "/cluster/pki/ca.crt"
    assert config["authorization"]["mode"] == "Webhook"
    # image garbage collection never starts: nothing could pull the images built here back
    assert config["imageGCHighThresholdPercent"] == 100
    assert config["podLogsDir"] == str(paths.pod_logs)
    assert Path(config["podLogsDir"]).is_relative_to(tmp_path / "real-node-0")
    assert config["resolvConf"] == str(paths.resolv)
    assert Path(config["resolvConf"]).is_relative_to(tmp_path / "real-node-0")
    assert config["clusterDNS"] == []


def test_kubelet_written_config_and_resolv_conf(tmp_path):
    paths = KubeletPaths(tmp_path / "real-node-0")
    write_config(paths, "10.245.3.1", "/chaosdb-abc123", "/ca.crt")

    assert yaml.safe_load(paths.config.read_text()) == kubelet_config(paths, "10.245.3.1", "/chaosdb-abc123", "/ca.crt")
    assert paths.root.is_dir()
    assert not [line for line in paths.resolv.read_text().splitlines() if line.split()[:1] == ["nameserver"]]


def test_kubelet_path_has_no_iptables_in_it():
    entries = KUBELET_PATH.split(":")
    assert not {"/usr/sbin", "/sbin", "/usr/local/sbin"} & set(entries)
    # on this machine too: kubelet would find no iptables and add no KUBE-* chains to the host
    for program in ("iptables", "ip6tables", "iptables-legacy", "iptables-nft"):
        assert not any(os.access(Path(d) / program, os.X_OK) for d in entries), program


def test_kubelet_command_line_names_the_node_its_labels_and_the_runtime(tmp_path):
    paths = KubeletPaths(tmp_path / "real-node-0")
    argv = command_line("/bin-dir/kubelet", paths, "/cluster/kubeconfig", "unix:///run/chaosdb/k8s-x/containerd.sock",
                        "real-node-0", "10.245.3.1")

    assert argv[0] == "/bin-dir/kubelet"
    assert f"--config={paths.config}" in argv
    assert "--kubeconfig=/cluster/kubeconfig" in argv
    assert "--container-runtime-endpoint=unix:///run/chaosdb/k8s-x/containerd.sock" in argv
    assert "--node-ip=10.245.3.1" in argv
    assert "--hostname-override=real-node-0" in argv
    assert f"--root-dir={paths.root}" in argv
    labels = dict(kv.split("=", 1) for a in argv if a.startswith("--node-labels=")
                  for kv in a.removeprefix("--node-labels=").split(","))
    key, value = REAL_NODE_LABEL
    assert labels[key] == value
    # the fake workloads select kwok's nodes (type=kwok): never the real node
    assert labels.get("type") != "kwok"


# --- network -------------------------------------------------------------------------------------------------------


def _plan(subnet: str = "10.245.7.0/24", node_ip: str = "10.245.7.1") -> network.NetworkPlan:
    return network.NetworkPlan(bridge="cdbr-abc123", subnet=subnet, node_ip=node_ip)


def test_cni_config_is_a_bridge_with_no_gateway_no_masquerade_and_no_portmap(tmp_path):
    config = network.cni_config(_plan(), tmp_path / "ipam")

    assert config["name"] == "cdbr-abc123"
    assert [p["type"] for p in config["plugins"]] == ["bridge"]  # no portmap: hostPort would need iptables
    bridge = config["plugins"][0]
    assert bridge["bridge"] == "cdbr-abc123"
    assert bridge["isGateway"] is False and bridge["isDefaultGateway"] is False
    assert bridge["ipMasq"] is False
    ipam = bridge["ipam"]
    assert ipam["type"] == "host-local"
    assert ipam["dataDir"] == str(tmp_path / "ipam")
    [[pod_range]] = ipam["ranges"]
    assert pod_range["subnet"] == "10.245.7.0/24"
    assert pod_range["gateway"] == "10.245.7.1"
    assert pod_range["rangeStart"] == "10.245.7.10"
    assert ipaddress.ip_address(pod_range["rangeStart"]) in ipaddress.ip_network(pod_range["subnet"])
    assert ipam["routes"] == [{"dst": "0.0.0.0/0", "gw": "10.245.7.1"}]


def test_cni_config_file_is_written_where_containerd_reads_it(tmp_path):
    paths = ContainerdPaths(tmp_path / "real-node-0", tmp_path / "run")
    written = network.write_cni_config(_plan(), paths.cni_conf, paths.cni_data)

    assert written.parent == paths.cni_conf
    assert written.name.endswith(".conflist")
    assert json.loads(written.read_text()) == network.cni_config(_plan(), paths.cni_data)
    conf_dir = tomllib.loads(config_toml(paths, "p", "/usr/lib/cni"))["plugins"][CRI]["cni"]["conf_dir"]
    assert conf_dir == str(written.parent)


def _nets(*cidrs: str) -> Callable[[], list[Any]]:
    return lambda: [ipaddress.ip_network(c, strict=False) for c in cidrs]


def test_plan_network_takes_the_first_free_24_of_the_pod_range(monkeypatch):
    monkeypatch.setattr(network, "_used_networks", _nets())
    plan = network.plan_network("abc123")
    assert (plan.bridge, plan.subnet, plan.node_ip) == ("cdbr-abc123", "10.245.0.0/24", "10.245.0.1")

    # an address's /24, a route and a /25 inside the next /24 are all taken
    monkeypatch.setattr(network, "_used_networks", _nets("10.245.0.5/24", "10.245.1.0/24", "10.245.2.128/25",
                                                         "127.0.0.0/8", "192.168.1.0/24"))
    plan = network.plan_network("abc123")
    assert (plan.subnet, plan.node_ip) == ("10.245.3.0/24", "10.245.3.1")


def test_plan_network_bridge_name_fits_an_interface_name(monkeypatch):
    monkeypatch.setattr(network, "_used_networks", _nets())
    assert len(network.plan_network("0123456789abcdef").bridge) <= 15


def test_plan_network_refuses_when_the_pod_range_is_covered(monkeypatch):
    monkeypatch.setattr(network, "_used_networks", _nets("10.0.0.0/8"))
    with pytest.raises(ChaosDBError, match="no free /24 left in 10.245.0.0/16"):
        network.plan_network("abc123")


def test_plan_network_refuses_when_another_real_node_serves_the_api_address(monkeypatch):
    monkeypatch.setattr(network, "_used_networks", _nets("10.245.0.1/24", "10.96.0.1/32"))
    monkeypatch.setattr(network, "interface_of", lambda address: "cdbr-a0c19c")
    with pytest.raises(ChaosDBError, match=r"10.96.0.1 is already an address of this machine \(interface "
                       r"cdbr-a0c19c\).*'ip link delete cdbr-a0c19c'"):
        network.plan_network("abc123")


def test_interface_of_names_the_interface_holding_an_address(monkeypatch):
    out = ("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
           "7: cdbr-a0c19c    inet 10.245.0.1/24 scope global cdbr-a0c19c\\       valid_lft forever\n"
           "7: cdbr-a0c19c    inet 10.96.0.1/32 scope global cdbr-a0c19c\\       valid_lft forever\n")
    monkeypatch.setattr(network, "_ip", lambda *a, **k: subprocess.CompletedProcess(a, 0, out, ""))
    assert network.interface_of("10.96.0.1") == "cdbr-a0c19c"
    assert network.interface_of("10.96.0.2") == ""


@pytest.fixture
def fake_proc_sys(tmp_path, monkeypatch) -> Path:
    """A folder standing for /proc/sys, with two of the watched sysctls."""
    root = tmp_path / "proc-sys"
    (root / "net" / "ipv4").mkdir(parents=True)
    (root / "vm").mkdir()
    (root / "net" / "ipv4" / "ip_forward").write_text("0\n")
    (root / "vm" / "overcommit_memory").write_text("1\n")
    monkeypatch.setattr(network, "_SYSCTL_DIR", root)
    return root


def test_read_sysctls_reads_those_that_exist(fake_proc_sys):
    assert network.read_sysctls(("net.ipv4.ip_forward", "vm.overcommit_memory", "kernel.not_here")) == {
        "net.ipv4.ip_forward": "0", "vm.overcommit_memory": "1"}
    assert network.read_sysctls() == {"net.ipv4.ip_forward": "0", "vm.overcommit_memory": "1"}


def test_restore_sysctls_puts_back_only_what_changed(fake_proc_sys):
    before = network.read_sysctls()
    forward, overcommit = fake_proc_sys / "net/ipv4/ip_forward", fake_proc_sys / "vm/overcommit_memory"
    forward.write_text("1\n")
    os.utime(overcommit, ns=(1_000_000_000, 1_000_000_000))

    restored = network.restore_sysctls({**before, "kernel.panic": "5"})

    assert restored == ["net.ipv4.ip_forward: 1 -> 0"]
    assert forward.read_text() == "0\n"
    assert overcommit.stat().st_mtime_ns == 1_000_000_000  # unchanged: never written
    assert not (fake_proc_sys / "kernel").exists()  # a sysctl that is not there is not made
    assert network.restore_sysctls(before) == []


# --- prerequisites -------------------------------------------------------------------------------------------------


def _no_kubelet(name: str, bin_dir: str | None = None) -> str:
    raise ChaosDBError(f"no {name} binary (looked in {bin_dir}, PATH): get it")


def test_every_missing_prerequisite_is_named_at_once_with_its_install_line(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(prerequisites.shutil, "which",
                        lambda program, *a, **k: None if program in ("containerd", "ctr", "runc") else f"/x/{program}")
    monkeypatch.setattr(prerequisites, "cni_bin_dir", lambda: None)
    monkeypatch.setattr(prerequisites, "find_binary", _no_kubelet)

    with pytest.raises(ChaosDBError) as refused:
        prerequisites.require("/my/bins")
    text = str(refused.value)
    assert text.startswith("a real node cannot start here: ")
    assert "needs root" in text
    assert "apt-get install -y containerd runc containernetworking-plugins" in text
    assert "no kubelet binary (looked in /my/bins" in text and "same Kubernetes version" in text
    assert len(prerequisites.problems("/my/bins")) >= 3


def test_missing_tools_of_the_system_are_named_by_their_packages(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 0)
    monkeypatch.setattr(prerequisites, "_cgroups_writable", lambda: True)
    monkeypatch.setattr(prerequisites.shutil, "which", lambda program, *a, **k: None)
    monkeypatch.setattr(prerequisites, "cni_bin_dir", lambda: None)
    monkeypatch.setattr(prerequisites, "find_binary", lambda name, bin_dir=None: f"/bins/{name}")

    [missing] = [p for p in prerequisites.problems(None) if p.startswith("missing ")]
    assert missing.endswith(": apt-get install -y containerd runc iproute2 mount containernetworking-plugins")
    assert not any("root" in p for p in prerequisites.problems(None))


def test_nothing_refused_when_every_prerequisite_is_there(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 0)
    monkeypatch.setattr(prerequisites, "_cgroups_writable", lambda: True)
    monkeypatch.setattr(prerequisites.shutil, "which", lambda program, *a, **k: f"/usr/bin/{program}")
    monkeypatch.setattr(prerequisites, "cni_bin_dir", lambda: "/usr/lib/cni")
    monkeypatch.setattr(prerequisites, "find_binary", lambda name, bin_dir=None: f"/bins/{name}")

    overlay = "overlay" in Path("/proc/filesystems").read_text()
    assert [p for p in prerequisites.problems(None) if "overlay" not in p] == []
    if overlay:
        prerequisites.require(None)


def test_cni_bin_dir_is_the_first_folder_with_every_plugin(tmp_path, monkeypatch):
    partial, complete = tmp_path / "partial", tmp_path / "complete"
    for folder, plugins in ((partial, ["bridge"]), (complete, list(prerequisites.CNI_PLUGINS))):
        folder.mkdir()
        for plugin in plugins:
            (folder / plugin).write_text("#!/bin/sh\n")
            (folder / plugin).chmod(0o755)
    monkeypatch.setattr(prerequisites, "CNI_BIN_DIRS", (str(partial), str(complete)))
    assert prerequisites.cni_bin_dir() == str(complete)

    (complete / "host-local").chmod(0o644)  # not executable: not usable
    assert prerequisites.cni_bin_dir() is None


# --- forwarder -----------------------------------------------------------------------------------------------------


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class _UpstreamHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: _Upstream = self.server  # type: ignore[assignment]
        self.request.sendall(server.name + b"\n")
        if server.close_first:
            return
        while chunk := self.request.recv(65536):
            self.request.sendall(chunk)
        server.client_closed.set()


class _Upstream(socketserver.ThreadingTCPServer):
    """What the forwarder passes connections on to: greets each connection with its name, then echoes until the
    client closes (``client_closed``), or closes right after the greeting (``close_first``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], name: bytes, close_first: bool = False) -> None:
        self.name, self.close_first = name, close_first
        self.client_closed = threading.Event()
        super().__init__(address, _UpstreamHandler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self.server_address[1]

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self.shutdown()
        self.server_close()
        self.thread.join(DEADLINE_S)


@contextlib.contextmanager
def _upstream(host: str = "127.0.0.1", port: int = 0, name: bytes = b"A", close_first: bool = False
              ) -> Iterator[_Upstream]:
    server = _Upstream((host, port), name, close_first)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def signals_kept() -> Iterator[None]:
    """serve() installs SIGTERM/SIGINT handlers in this thread's event loop, whose closing resets them: the test
    session's own handlers are put back afterwards."""
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def _connect(address: tuple[str, int]) -> socket.socket:
    """A connection to the forwarder, once it listens."""
    end = time.monotonic() + DEADLINE_S
    while True:
        try:
            conn = socket.create_connection(address, timeout=DEADLINE_S)
            return conn
        except ConnectionRefusedError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def _closed(conn: socket.socket) -> bool:
    """Whether the other side closed the connection (end of stream, or a reset), with nothing sent first."""
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True


def _through_forwarder(target: forwarder.Target, client: Callable[[tuple[str, int]], Any],
                       stop_with_sigterm: bool = False) -> Any:
    """Run :func:`forwarder.serve` on a free loopback port in this thread's event loop (it installs signal
    handlers: the main thread's), call *client* with its address in another thread, then stop the forwarder
    (cancelled, or with SIGTERM as ``down`` stops it); what *client* returned."""
    listen = ("127.0.0.1", _free_port("127.0.0.1"))

    async def scenario() -> Any:
        serving = asyncio.create_task(forwarder.serve(listen, target))
        try:
            result = await asyncio.to_thread(client, listen)
            assert not serving.done(), serving
            if stop_with_sigterm:
                assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
                os.kill(os.getpid(), signal.SIGTERM)
                await asyncio.wait_for(serving, DEADLINE_S)
            return result
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving

    return asyncio.run(scenario())


def test_forwarder_passes_bytes_both_ways_until_the_client_closes(signals_kept):
    payload = os.urandom(16384 * 64)
    with _upstream() as upstream:

        def client(address: tuple[str, int]) -> tuple[bytes, bytes]:
            with _connect(address) as conn:
                greeting = _read_line(conn)  # upstream -> client with nothing sent first
                echoed = bytearray()
                for i in range(0, len(payload), 16384):
                    conn.sendall(payload[i:i + 16384])
                    while len(echoed) < i + 16384:
                        chunk = conn.recv(65536)
                        assert chunk, "the forwarder closed the connection"
                        echoed += chunk
            return greeting, bytes(echoed)

        greeting, echoed = _through_forwarder(forwarder.static_target(("127.0.0.1", upstream.port)), client)
        assert greeting == b"A\n"
        assert echoed == payload
        assert upstream.client_closed.wait(DEADLINE_S), "the upstream never saw the client's close"


def test_forwarder_closes_the_client_when_the_upstream_closes(signals_kept):
    with _upstream(close_first=True) as upstream:

        def client(address: tuple[str, int]) -> tuple[bytes, bool]:
            with _connect(address) as conn:
                return _read_line(conn), _closed(conn)

        assert _through_forwarder(forwarder.static_target(("127.0.0.1", upstream.port)), client) == (b"A\n", True)


def test_forwarder_closes_a_connection_with_nowhere_to_go(signals_kept):
    async def nowhere() -> None:
        return None

    def client(address: tuple[str, int]) -> bool:
        with _connect(address) as conn:
            return _closed(conn)

    assert _through_forwarder(nowhere, client) is True
    refused = ("127.0.0.1", _free_port("127.0.0.1"))  # nothing listens there
    assert _through_forwarder(forwarder.static_target(refused), client) is True


def test_forwarder_stops_on_sigterm(signals_kept):
    with _upstream() as upstream:

        def client(address: tuple[str, int]) -> bytes:
            with _connect(address) as conn:
                return _read_line(conn)

        target = forwarder.static_target(("127.0.0.1", upstream.port))
        assert _through_forwarder(target, client, stop_with_sigterm=True) == b"A\n"


class _EndpointsApi(ThreadingHTTPServer):
    """An HTTPS stand-in of the API server's Endpoints read: ``endpoints`` by (namespace, name), the bearer token
    required, every path asked for noted."""

    daemon_threads = True

    def __init__(self, cert: Path, key: Path, token: str) -> None:
        self.token = token
        self.endpoints: dict[tuple[str, str], dict[str, Any]] = {}
        self.asked: list[str] = []
        super().__init__(("127.0.0.1", 0), _EndpointsHandler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """Where it serves."""
        return f"https://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self.shutdown()
        self.server_close()
        self.thread.join(DEADLINE_S)


class _EndpointsHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        server: _EndpointsApi = self.server  # type: ignore[assignment]
        server.asked.append(self.path)
        parts = urlsplit(self.path).path.split("/")
        if self.headers.get("Authorization") != f"Bearer {server.token}":
            self._answer(401, {"kind": "Status", "code": 401})
        elif len(parts) == 7 and parts[:4] == ["", "api", "v1", "namespaces"] and parts[5] == "endpoints" \
                and (parts[4], parts[6]) in server.endpoints:
            self._answer(200, server.endpoints[(parts[4], parts[6])])
        else:
            self._answer(404, {"kind": "Status", "code": 404})

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        return


@pytest.fixture(scope="module")
def api_pki(tmp_path_factory) -> dict[str, Path]:
    """A throwaway CA (the ``openssl`` command, as the clusters' own) and a serving certificate for 127.0.0.1."""
    d = tmp_path_factory.mktemp("endpoints-api-pki")
    make_ca(d / "ca.key", d / "ca.crt", "chaosdb-test-ca")
    issue(d / "ca.key", d / "ca.crt", d / "server.key", d / "server.crt", "kube-apiserver", ["127.0.0.1"],
          ["localhost"], usage="serverAuth")
    return {"ca": d / "ca.crt", "cert": d / "server.crt", "key": d / "server.key"}


@pytest.fixture
def endpoints_api(api_pki, tmp_path) -> Iterator[tuple[_EndpointsApi, str]]:
    """The stand-in API and a kubeconfig for it, as the cluster writes one (its CA, a bearer token)."""
    api = _EndpointsApi(api_pki["cert"], api_pki["key"], "s3cret-token")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": api.url, "certificate-authority": str(api_pki["ca"])}}],
        "users": [{"name": "admin", "user": {"token": "s3cret-token"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "admin"}}]}))
    try:
        yield api, str(kubeconfig)
    finally:
        api.stop()


def _ready(*ips: str, not_ready: tuple[str, ...] = ()) -> dict[str, Any]:
    subsets: list[dict[str, Any]] = []
    if not_ready:
        subsets.append({"notReadyAddresses": [{"ip": ip} for ip in not_ready]})
    if ips:
        subsets.append({"addresses": [{"ip": ip} for ip in ips]})
    return {"kind": "Endpoints", "metadata": {"name": "postgres", "namespace": "postgres"}, "subsets": subsets}


def test_endpoints_target_reads_the_first_ready_address_at_every_call(endpoints_api):
    api, kubeconfig = endpoints_api
    target = forwarder.endpoints_target("postgres/postgres:5432", kubeconfig)

    api.endpoints[("postgres", "postgres")] = _ready("10.245.0.11", "10.245.0.12", not_ready=("10.245.0.13",))
    assert asyncio.run(target()) == ("10.245.0.11", 5432)
    api.endpoints[("postgres", "postgres")] = _ready("10.245.0.12", not_ready=("10.245.0.11",))
    assert asyncio.run(target()) == ("10.245.0.12", 5432)  # read anew: a failover is followed
    api.endpoints[("postgres", "postgres")] = _ready(not_ready=("10.245.0.11", "10.245.0.12"))
    assert asyncio.run(target()) is None
    api.endpoints[("postgres", "postgres")] = {"kind": "Endpoints", "metadata": {"name": "postgres"}}
    assert asyncio.run(target()) is None
    assert set(api.asked) == {"/api/v1/namespaces/postgres/endpoints/postgres"}

    other = forwarder.endpoints_target("postgres/postgres-members:8008", kubeconfig)
    assert asyncio.run(other()) is None  # 404: no such Endpoints
    assert api.asked[-1] == "/api/v1/namespaces/postgres/endpoints/postgres-members"


def test_endpoints_target_with_a_wrong_token_or_no_api_has_nowhere_to_go(endpoints_api, tmp_path):
    api, kubeconfig = endpoints_api
    api.endpoints[("postgres", "postgres")] = _ready("10.245.0.11")
    wrong = yaml.safe_load(Path(kubeconfig).read_text())
    wrong["users"][0]["user"]["token"] = "not-it"
    (tmp_path / "wrong").write_text(yaml.safe_dump(wrong))
    assert asyncio.run(forwarder.endpoints_target("postgres/postgres:5432", str(tmp_path / "wrong"))()) is None

    target = forwarder.endpoints_target("postgres/postgres:5432", kubeconfig)
    assert asyncio.run(target()) == ("10.245.0.11", 5432)
    api.stop()
    assert asyncio.run(target()) is None


def _upstream_pair() -> tuple[_Upstream, _Upstream]:
    """Two upstreams on one port, at 127.0.0.1 and 127.0.0.2 (a Service's port, two pods' addresses)."""
    for _ in range(20):
        first = _Upstream(("127.0.0.1", 0), b"A")
        try:
            return first, _Upstream(("127.0.0.2", first.port), b"B")
        except OSError:
            first.stop()
    raise AssertionError("no port free on both 127.0.0.1 and 127.0.0.2")


def test_forwarder_follows_the_services_endpoints(endpoints_api, signals_kept):
    api, kubeconfig = endpoints_api
    first, second = _upstream_pair()
    try:
        target = forwarder.endpoints_target(f"postgres/postgres:{first.port}", kubeconfig)

        def client(address: tuple[str, int]) -> list[Any]:
            seen: list[Any] = []
            for ready in (_ready("127.0.0.1"), _ready("127.0.0.2", not_ready=("127.0.0.1",)),
                          _ready(not_ready=("127.0.0.1", "127.0.0.2"))):
                api.endpoints[("postgres", "postgres")] = ready
                with _connect(address) as conn:
                    greeting = _read_line(conn)
                    if greeting:
                        conn.sendall(b"ping")
                        seen.append((greeting, conn.recv(4)))
                    else:
                        seen.append(_closed(conn))
            return seen

        assert _through_forwarder(target, client) == [(b"A\n", b"ping"), (b"B\n", b"ping"), True]
        assert first.client_closed.wait(DEADLINE_S) and second.client_closed.wait(DEADLINE_S)
    finally:
        first.stop()
        second.stop()


# --- chaos-daemon --------------------------------------------------------------------------------------------------


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_chaos_daemon_runs_on_real_nodes_only_with_the_node_runtime():
    daemonset, service = chaos_daemon.chaos_daemon_objects("chaosdb/chaos-daemon:sha-1",
                                                           "/run/chaosdb/k8s-abc123/containerd.sock")
    assert (daemonset["kind"], daemonset["metadata"]["namespace"]) == ("DaemonSet", "chaos-mesh")
    spec = daemonset["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"chaosdb.io/node": "real"} == dict([REAL_NODE_LABEL])
    assert spec["hostPID"] is True
    assert not spec.get("hostNetwork")  # the daemon serves on its pod's address
    [container] = spec["containers"]
    assert container["image"] == "chaosdb/chaos-daemon:sha-1"
    assert container["imagePullPolicy"] == "Never"
    assert container["securityContext"]["privileged"] is True
    argv = container["command"]
    assert _flag(argv, "--runtime") == "containerd"
    assert _flag(argv, "--runtime-socket-path") == "/run/containerd/containerd.sock"
    assert _flag(argv, "--grpc-port") == "31767"
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    socket_volume = volumes[mounts["/run/containerd/containerd.sock"]]
    assert socket_volume["hostPath"] == {"path": "/run/chaosdb/k8s-abc123/containerd.sock", "type": "Socket"}
    assert volumes[mounts["/host-sys"]]["hostPath"]["path"] == "/sys"
    assert daemonset["spec"]["selector"]["matchLabels"].items() <= daemonset["spec"]["template"]["metadata"][
        "labels"].items()

    assert (service["kind"], service["metadata"]["name"], service["metadata"]["namespace"]) == (
        "Service", "chaos-daemon", "chaos-mesh")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"].items() <= daemonset["spec"]["template"]["metadata"]["labels"].items()
    grpc = [p for p in service["spec"]["ports"] if p["port"] == 31767]
    assert grpc and grpc[0]["targetPort"] == 31767
    assert 31767 in [p["containerPort"] for p in container["ports"]]


# --- Patroni in pods -----------------------------------------------------------------------------------------------


PASSWORDS = {"superuser": "su-pw", "replication": "repl-pw", "app": "app-pw"}


def _patroni(tmp_path: Path, replicas: int = 2) -> dict[tuple[str, str], dict[str, Any]]:
    objects = patroni_pods.patroni_objects("chaosdb/patroni:sha-1", "real-node-0", tmp_path / "real-node-0", replicas,
                                           PASSWORDS)
    by_key = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    assert len(by_key) == len(objects), "two objects of one kind share a name"
    return by_key


def test_patroni_objects_carry_the_names_the_templates_select(tmp_path):
    objects = _patroni(tmp_path)
    sts = objects[("StatefulSet", "postgres")]
    assert sts["metadata"]["namespace"] == "postgres"
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert labels["application"] == "spilo" and labels["cluster-name"] == "postgres"
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    spec = sts["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["postgres"]
    assert spec["nodeSelector"] == dict([REAL_NODE_LABEL])
    for container in spec["containers"] + spec["initContainers"]:
        assert container["imagePullPolicy"] == "Never"
        assert container["image"] == "chaosdb/patroni:sha-1"
    assert {p["containerPort"] for p in spec["containers"][0]["ports"]} == {5432, 8008}
    # the fake workload's StatefulSet has the same namespace and name (the readiness wait reads it)
    assert workloads.statefulsets_of(["postgres"], 2) == [("postgres", "postgres", 2)]


def test_patroni_services(tmp_path):
    objects = _patroni(tmp_path)
    primary = objects[("Service", "postgres")]
    assert "selector" not in primary["spec"]  # Patroni keeps its Endpoints on the leader
    repl = objects[("Service", "postgres-repl")]
    assert repl["spec"]["selector"]["role"] == "replica"
    members = objects[("Service", "postgres-members")]
    assert members["spec"]["clusterIP"] == "None"
    assert members["spec"]["publishNotReadyAddresses"] is True
    assert objects[("StatefulSet", "postgres")]["spec"]["serviceName"] == "postgres-members"
    # Patroni's Endpoints for the primary name the Service's port
    config = yaml.safe_load(objects[("ConfigMap", "postgres-patroni-config")]["data"]["patroni.yml"])
    assert [(p["name"], p["port"]) for p in config["kubernetes"]["ports"]] == [
        (p["name"], p["port"]) for p in primary["spec"]["ports"]]


def test_patroni_role_lets_it_keep_its_state_and_label_its_pods(tmp_path):
    objects = _patroni(tmp_path)
    rules = objects[("Role", "postgres-patroni")]["rules"]

    def verbs(resource: str) -> set[str]:
        return {v for r in rules if resource in r["resources"] for v in r["verbs"]}

    assert {"create", "get", "list", "patch", "update", "watch", "delete"} <= verbs("endpoints")
    assert {"create", "get", "list", "patch", "update", "watch", "delete"} <= verbs("configmaps")
    assert {"get", "list", "patch", "watch"} <= verbs("pods")
    assert "create" in verbs("services")
    binding = objects[("RoleBinding", "postgres-patroni")]
    assert binding["roleRef"]["name"] == "postgres-patroni"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "postgres", "namespace": "postgres"}]
    assert ("ServiceAccount", "postgres") in objects
    assert objects[("StatefulSet", "postgres")]["spec"]["template"]["spec"]["serviceAccountName"] == "postgres"


def test_patroni_local_volumes_one_per_replica_bound_to_its_claim_on_the_node(tmp_path):
    objects = _patroni(tmp_path, replicas=3)
    sts = objects[("StatefulSet", "postgres")]
    [claim] = sts["spec"]["volumeClaimTemplates"]
    volumes = [o for (kind, _), o in objects.items() if kind == "PersistentVolume"]
    assert len(volumes) == 3
    folders = patroni_pods.volume_dirs(tmp_path / "real-node-0", 3)
    for i, (pv, folder) in enumerate(zip(volumes, folders, strict=True)):
        spec = pv["spec"]
        # the claim a StatefulSet makes for pod i: <template>-<statefulset>-<i>
        assert spec["claimRef"] == {"namespace": "postgres",
                                    "name": f"{claim['metadata']['name']}-{sts['metadata']['name']}-{i}"}
        assert spec["claimRef"]["name"] == f"pgdata-postgres-{i}"
        assert spec["local"]["path"] == str(folder)
        assert Path(spec["local"]["path"]).is_relative_to(tmp_path / "real-node-0")
        [term] = spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In",
                                             "values": ["real-node-0"]}]
        assert spec["storageClassName"] == claim["spec"]["storageClassName"] == patroni_pods.STORAGE_CLASS
        assert set(claim["spec"]["accessModes"]) <= set(spec["accessModes"])
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert objects[("StorageClass", patroni_pods.STORAGE_CLASS)]["volumeBindingMode"] == "WaitForFirstConsumer"


def test_patroni_data_folder_belongs_to_the_images_postgres_user(tmp_path):
    sts = _patroni(tmp_path)[("StatefulSet", "postgres")]
    spec = sts["spec"]["template"]["spec"]
    [prepare] = spec["initContainers"]
    assert prepare["securityContext"]["runAsUser"] == 0
    script = prepare["command"][-1]
    assert f"chown {POSTGRES_UID}:{POSTGRES_UID} {patroni_pods.DATA_MOUNT}" in script
    assert f"chmod 0700 {patroni_pods.DATA_MOUNT}" in script
    assert {m["name"]: m["mountPath"] for m in prepare["volumeMounts"]} == {"pgdata": patroni_pods.DATA_MOUNT}
    [container] = spec["containers"]
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["pgdata"] == patroni_pods.DATA_MOUNT
    # every mounted volume is a pod volume or a claim template
    known = {v["name"] for v in spec["volumes"]} | {c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]}
    assert {m["name"] for c in spec["containers"] + spec["initContainers"] for m in c["volumeMounts"]} <= known


def test_patroni_yml_and_environment(tmp_path):
    objects = _patroni(tmp_path)
    config = yaml.safe_load(objects[("ConfigMap", "postgres-patroni-config")]["data"]["patroni.yml"])
    sts = objects[("StatefulSet", "postgres")]
    assert config["kubernetes"]["use_endpoints"] is True
    assert config["kubernetes"]["labels"] == sts["spec"]["selector"]["matchLabels"]
    assert config["kubernetes"]["role_label"] == "role"
    dcs = config["bootstrap"]["dcs"]
    assert (dcs["ttl"], dcs["loop_wait"], dcs["retry_timeout"]) == (20, 2, 5)
    assert dcs["loop_wait"] + 2 * dcs["retry_timeout"] <= dcs["ttl"]  # Patroni's own rule
    assert dcs["synchronous_mode"] is True
    assert config["postgresql"]["parameters"]["unix_socket_directories"] == "/tmp"
    assert Path(config["postgresql"]["data_dir"]).is_relative_to(patroni_pods.DATA_MOUNT)
    assert config["postgresql"]["data_dir"] != patroni_pods.DATA_MOUNT  # initdb wants a folder of its own

    [container] = sts["spec"]["template"]["spec"]["containers"]
    config_volume = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}["patroni-config"]
    assert config_volume["configMap"]["name"] == "postgres-patroni-config"
    mount = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["patroni-config"]
    assert container["command"] == ["patroni", f"{mount}/patroni.yml"]
    env = container["env"]
    names = [e["name"] for e in env]
    for i, e in enumerate(env):  # $(VAR) only expands a variable defined before it
        for ref in [n for n in names if f"$({n})" in str(e.get("value", ""))]:
            assert names.index(ref) < i, (e, ref)
    values = {e["name"]: e for e in env}
    assert values["PATRONI_SCOPE"]["value"] == "postgres"
    assert values["PATRONI_KUBERNETES_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    secret = objects[("Secret", "postgres-credentials")]
    assert secret["stringData"] == PASSWORDS
    for e in env:
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            assert ref["name"] == "postgres-credentials" and ref["key"] in secret["stringData"]


def test_new_passwords_are_random():
    first, second = patroni_pods.new_passwords(), patroni_pods.new_passwords()
    assert set(first) == {"superuser", "replication", "app"}
    assert len(set(first.values()) | set(second.values())) == 6


# --- the cluster's plan with real nodes ------------------------------------------------------------------------------


def test_plan_refuses_more_than_one_real_node(tmp_path, no_host_network):
    with pytest.raises(ChaosDBError, match=r"--real-nodes must be 0 or 1 \(one real node per machine"):
        cluster.plan(tmp_path, real_nodes=2)


def test_plan_without_kwok_nodes_only_with_a_real_node_and_real_workloads(tmp_path, no_host_network):
    with pytest.raises(ChaosDBError, match="between 1 and 20"):
        cluster.plan(tmp_path, nodes=0, workload_names=[])
    with pytest.raises(ChaosDBError, match="cockroachdb run on kwok's fake nodes"):
        cluster.plan(tmp_path, nodes=0, real_nodes=1, workload_names=["cockroachdb", "postgres"])
    with pytest.raises(ChaosDBError, match="cockroachdb, tikv run on kwok's fake nodes"):
        cluster.plan(tmp_path, nodes=0, real_nodes=1)  # every workload by default
    with pytest.raises(ChaosDBError, match="between 0 and 20"):
        cluster.plan(tmp_path, nodes=21, real_nodes=1)

    layout = cluster.plan(tmp_path, nodes=0, real_nodes=1, workload_names=["postgres"])
    assert layout["nodes"] == []
    assert cluster.plan(tmp_path, nodes=0, real_nodes=1, workload_names=[])["workloads"] == []


def test_plan_of_a_real_node(tmp_path, no_host_network):
    layout = cluster.plan(tmp_path, address="127.0.77.1", nodes=1, real_nodes=1, workload_names=["postgres"])
    tag = path_tag(tmp_path)
    [real] = layout["real_nodes"]
    assert real["name"] == "real-node-0"
    assert real["dir"] == str(tmp_path / "real-node-0")
    assert real["run_dir"] == f"/run/chaosdb/k8s-{tag}"
    assert real["cgroup_root"] == f"/chaosdb-{tag}"
    assert real["network"] == {"bridge": f"cdbr-{tag}", "subnet": "10.245.0.0/24", "node_ip": "10.245.0.1",
                               "sysctls": {}}
    # kept in the cluster's JSON state and read back
    again = node.RealNode(**json.loads(json.dumps(layout))["real_nodes"][0])
    assert again.net.node_ip == "10.245.0.1"
    assert again.containerd.socket == Path(f"/run/chaosdb/k8s-{tag}/containerd.sock")
    assert cluster.plan(tmp_path, nodes=1)["real_nodes"] == []


def _apiserver_argv(layout: dict[str, Any], pki: Pki) -> list[str]:
    bins = {s: f"/bins/{s}" for s in cluster.SERVERS if s != "chaos-controller-manager"}
    return cluster.command_lines(layout, bins, pki)["kube-apiserver"][0]


def test_apiserver_talks_to_kubelets_only_with_a_real_node(tmp_path, no_host_network):
    pki = Pki(tmp_path / "pki")
    with_real = cluster.plan(tmp_path, nodes=1, real_nodes=1, workload_names=[])
    flags = cluster._kubelet_flags(with_real, pki)
    assert flags == [f"--kubelet-client-certificate={pki.kubelet_client_crt}",
                     f"--kubelet-client-key={pki.kubelet_client_key}",
                     "--kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP"]
    argv = _apiserver_argv(with_real, pki)
    assert all(f in argv for f in flags)

    without = cluster.plan(tmp_path, nodes=1, workload_names=[])
    assert cluster._kubelet_flags(without, pki) == []
    assert not [a for a in _apiserver_argv(without, pki) if a.startswith("--kubelet-")]


def test_environment_and_configuration_point_at_patroni_in_pods(tmp_path, no_host_network):
    layout = cluster.plan(tmp_path, address="127.0.77.1", nodes=0, real_nodes=1, workload_names=["postgres"])
    env = cluster.environment_of(layout)
    assert env["CHAOSDB_KUBECONFIG"] == str(tmp_path / "kubeconfig")
    assert env["CHAOSDB_PATRONI_URLS"] == "http://127.0.77.1:8008"
    assert env["CHAOSDB_K8S_NAMESPACE"] == "postgres" and env["CHAOSDB_STATEFULSET"] == "postgres"
    dsn = urlsplit(env["CHAOSDB_LOAD_DSN"])
    assert (dsn.scheme, dsn.username, dsn.password, dsn.hostname, dsn.port, dsn.path) == (
        "postgresql", patroni_pods.APP_USER, None, "127.0.77.1", 5432, f"/{patroni_pods.APP_DATABASE}")
    assert parse_qs(dsn.query)["passfile"] == [str(tmp_path / "pgpass")]
    config = cluster.configuration_of(layout)
    assert config["k8s_kubeconfig"] == str(tmp_path / "kubeconfig")
    assert config["patroni_urls"] == "http://127.0.77.1:8008"
    assert config["k8s_namespace"] == "postgres"

    for plain in (cluster.plan(tmp_path, nodes=1, workload_names=["postgres"]),
                  cluster.plan(tmp_path, nodes=1, real_nodes=1, workload_names=["cockroachdb"])):
        assert cluster.environment_of(plain) == {"CHAOSDB_KUBECONFIG": str(tmp_path / "kubeconfig")}
        assert cluster.configuration_of(plain) == {"k8s_kubeconfig": str(tmp_path / "kubeconfig")}


def test_pods_reach_the_services_at_the_node_address_and_this_machine_at_the_clusters(tmp_path, no_host_network):
    layout = cluster.plan(tmp_path, address="127.0.77.1", nodes=0, real_nodes=1, workload_names=["postgres"])
    node_ip = layout["real_nodes"][0]["network"]["node_ip"]
    assert cluster.service_addresses(layout) == {"host": "127.0.77.1", "pods": node_ip}
    fake = cluster.plan(tmp_path, address="127.0.77.1", nodes=1, workload_names=["postgres"])
    assert cluster.service_addresses(fake) == {"host": "127.0.77.1"}


def test_service_forwards_name_services_of_the_patroni_cluster(tmp_path):
    objects = _patroni(tmp_path)
    for port, spec in cluster.SERVICE_FORWARDS.items():
        where, _, target_port = spec.rpartition(":")
        namespace, _, name = where.partition("/")
        service = objects[("Service", name)]
        assert service["metadata"]["namespace"] == namespace
        assert int(target_port) == port
        assert port in [p["port"] for p in service["spec"]["ports"]]


# --- workloads -----------------------------------------------------------------------------------------------------


def test_fake_workloads_go_to_kwok_nodes_and_postgres_is_left_to_the_real_node():
    everything = ["cockroachdb", "tikv", "postgres"]
    fake = workloads.workload_objects(everything, 3)
    assert ("postgres", "postgres") in [(o["metadata"].get("namespace"), o["metadata"]["name"])
                                        for o in fake if o["kind"] == "StatefulSet"]

    real = workloads.workload_objects(everything, 3, real_nodes=True)
    assert not [o for o in real if o["metadata"].get("namespace") == "postgres"
                or (o["kind"] == "Namespace" and o["metadata"]["name"] == "postgres")]
    sets = [o for o in real if o["kind"] == "StatefulSet"]
    assert sorted(o["metadata"]["name"] for o in sets) == ["basic-pd", "basic-tikv", "cockroachdb"]
    kwok_labels = resources.fake_node("kwok-node-0")["metadata"]["labels"]
    for o in sets + [o for o in fake if o["kind"] == "StatefulSet"]:
        selector = o["spec"]["template"]["spec"]["nodeSelector"]
        assert selector == {"type": "kwok"}
        assert selector.items() <= kwok_labels.items()  # kwok's nodes take them
    key, value = REAL_NODE_LABEL
    assert kwok_labels.get(key) != value  # and the real node's objects never land on kwok's nodes


# --- capabilities --------------------------------------------------------------------------------------------------


LOCAL, REMOTE = "https://127.0.50.1:6443", "https://10.20.30.40:6443"


class _Asked:
    """A has_real_node stand-in that counts its calls."""

    def __init__(self, answer: bool) -> None:
        self.answer, self.calls = answer, 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.answer


def _chaos(kind: str, action: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"mode": "one", "selector": {"namespaces": ["postgres"]}}
    if action:
        spec["action"] = action
    return {"apiVersion": "chaos-mesh.org/v1alpha1", "kind": kind, "metadata": {"name": f"my-{kind.lower()}"},
            "spec": spec}


@pytest.fixture
def no_netem(monkeypatch) -> None:
    monkeypatch.setattr(capabilities, "netem_available", lambda: False)


@pytest.mark.parametrize("action", sorted(capabilities.NETEM_NETWORK_ACTIONS))
def test_netem_network_chaos_refused_on_a_local_real_node_without_netem(action, no_netem):
    asked = _Asked(True)
    with pytest.raises(ChaosDBError) as refused:
        capabilities.refuse_what_this_kernel_cannot(_chaos("NetworkChaos", action), LOCAL, asked)
    assert f"NetworkChaos my-networkchaos ({action}) refused before it was created" in str(refused.value)
    assert NO_NETEM in str(refused.value)
    assert asked.calls == 1


def test_netem_network_chaos_allowed_otherwise(monkeypatch, no_netem):
    delay = _chaos("NetworkChaos", "delay")
    capabilities.refuse_what_this_kernel_cannot(delay, LOCAL, _Asked(False))  # kwok's pods only
    remote = _Asked(True)
    capabilities.refuse_what_this_kernel_cannot(delay, REMOTE, remote)  # the user's cluster
    assert remote.calls == 0
    monkeypatch.setattr(capabilities, "netem_available", lambda: True)
    capabilities.refuse_what_this_kernel_cannot(delay, LOCAL, _Asked(True))  # this kernel has netem


@pytest.mark.parametrize("obj", [_chaos("NetworkChaos", "partition"), _chaos("NetworkChaos", "bandwidth"),
                                 _chaos("PodChaos", "pod-kill"), _chaos("StressChaos"), _chaos("TimeChaos")],
                         ids=lambda o: f"{o['kind']}-{o['spec'].get('action', '')}")
def test_kinds_this_kernel_carries_out_are_never_refused_nor_is_the_node_asked(obj, no_netem):
    asked = _Asked(True)
    for server in (LOCAL, REMOTE):
        capabilities.refuse_what_this_kernel_cannot(obj, server, asked)
    assert asked.calls == 0


def test_io_chaos_refused_on_a_local_cluster_with_a_real_node_only(monkeypatch):
    monkeypatch.setattr(capabilities, "netem_available", lambda: True)
    with pytest.raises(ChaosDBError, match="IOChaos my-iochaos refused before it was created: it needs toda"):
        capabilities.refuse_what_this_kernel_cannot(_chaos("IOChaos", "latency"), LOCAL, _Asked(True))
    capabilities.refuse_what_this_kernel_cannot(_chaos("IOChaos", "latency"), LOCAL, _Asked(False))
    remote = _Asked(True)
    capabilities.refuse_what_this_kernel_cannot(_chaos("IOChaos", "latency"), REMOTE, remote)
    assert remote.calls == 0


@pytest.mark.parametrize(("server", "local"), [
    ("https://127.0.50.1:6443", True), ("https://localhost:6443", True), ("https://[::1]:6443", True),
    ("127.0.0.1:6443", True), ("https://10.20.30.40:6443", False), ("https://12.7.0.1:6443", False),
    ("https://kube.example.com", False)])
def test_is_local_api(server, local):
    assert capabilities.is_local_api(server) is local


# --- teardown helpers ----------------------------------------------------------------------------------------------


def _mountinfo_line(i: int, point: str) -> str:
    return f"{100 + i} 25 0:{50 + i} / {point.replace(' ', chr(92) + '040')} rw,relatime shared:{i} - overlay overlay rw"


def test_mounts_under_lists_the_nodes_mounts_deepest_first(tmp_path, monkeypatch):
    node_dir = os.path.realpath(tmp_path / "real-node-0")
    run_dir = os.path.realpath(tmp_path / "run")
    ours = [node_dir,
            f"{node_dir}/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
            f"{node_dir}/kubelet/root/pods/uid-1/volumes/kubernetes.io~projected/kube-api-access",
            f"{node_dir}/kubelet/root/pods/uid 2/volumes/kubernetes.io~empty-dir",
            f"{run_dir}/netns/cni-1234"]
    others = ["/", "/proc", f"{node_dir}-other/mnt", f"{run_dir}x", os.path.dirname(node_dir)]
    info = tmp_path / "mountinfo"
    info.write_text("\n".join(_mountinfo_line(i, p) for i, p in enumerate(others + ours + ours[1:2])) + "\n")
    real_path = node.Path

    def path(*parts: Any) -> Path:
        p = real_path(*parts)
        return info if str(p) == "/proc/self/mountinfo" else p

    monkeypatch.setattr(node, "Path", path)
    found = node.mounts_under(str(tmp_path / "real-node-0"), str(tmp_path / "run"))

    assert sorted(found) == sorted(ours)  # once each, the space unescaped, the lookalikes left out
    depths = [p.count(os.sep) for p in found]
    assert depths == sorted(depths, reverse=True)
    assert found[-1] == node_dir
    assert node.mounts_under(str(tmp_path / "elsewhere")) == []


def _unix_socket(folder: Path, name: str, monkeypatch) -> Path:
    """A real unix socket file (bound with a relative name: a temp path may be too long for a socket address)."""
    monkeypatch.chdir(folder)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(name)
    assert (folder / name).is_socket()
    return folder / name


def test_remove_emptied_takes_sockets_and_empty_folders_and_keeps_files(tmp_path, monkeypatch):
    top = tmp_path / "run-containerd"
    (top / "a" / "b" / "c").mkdir(parents=True)
    (top / "s").mkdir()
    sock = _unix_socket(top / "s", "shim.sock", monkeypatch)
    (top / "keep" / "inner" / "empty").mkdir(parents=True)
    (top / "keep" / "state.json").write_text("{}")
    monkeypatch.chdir(tmp_path)

    removed = node._remove_emptied(top)

    assert set(removed) == {str(top / "a" / "b" / "c"), str(top / "a" / "b"), str(top / "a"), str(sock),
                            str(top / "s"), str(top / "keep" / "inner" / "empty"), str(top / "keep" / "inner")}
    assert (top / "keep" / "state.json").read_text() == "{}"
    assert top.is_dir() and (top / "keep").is_dir()
    assert sorted(p.name for p in top.iterdir()) == ["keep"]


def test_remove_emptied_takes_the_folder_itself_when_nothing_else_is_in_it(tmp_path, monkeypatch):
    top = tmp_path / "var-lib-kubelet"
    (top / "device-plugins").mkdir(parents=True)
    _unix_socket(top / "device-plugins", "kubelet.sock", monkeypatch)
    monkeypatch.chdir(tmp_path)

    assert node._remove_emptied(top)[-1] == str(top)
    assert not top.exists()
    assert node._remove_emptied(top) == []


def test_host_traces_of_the_node_are_removed_and_nothing_else(tmp_path, monkeypatch):
    (tmp_path / "real-node-0-real").mkdir()
    (tmp_path / "real-node-0").symlink_to(tmp_path / "real-node-0-real")
    real = node.RealNode(name="real-node-0", dir=str(tmp_path / "real-node-0"), run_dir=str(tmp_path / "run"),
                         cgroup_root="/chaosdb-test", network=_plan().as_dict())
    host = tmp_path / "host"
    links, pods, lib = host / "log-containers", host / "log-pods", host / "lib-cni"
    links.mkdir(parents=True)
    lib.mkdir()
    monkeypatch.setattr(node, "HOST_DIRS", (str(links), str(pods), str(lib)))

    node._note_host_dirs(real)
    assert node._host_dirs_file(real).read_text() == f"{pods}\n"  # only what did not exist before
    pods.mkdir()
    node._note_host_dirs(real)  # noted once: a restart does not forget what the first start made
    assert node._host_dirs_file(real).read_text() == f"{pods}\n"

    (pods / "postgres_postgres-0_uid" / "postgres").mkdir(parents=True)
    (lib / "cache").mkdir()
    logs = Path(os.path.realpath(tmp_path / "real-node-0")) / "kubelet" / "pod-logs"
    (links / "by-real-path.log").symlink_to(logs / "a" / "0.log")
    (links / "by-given-path.log").symlink_to(tmp_path / "real-node-0" / "kubelet" / "pod-logs" / "b" / "0.log")
    (links / "someone-elses.log").symlink_to("/var/log/pods/other/0.log")
    (links / "a-file.log").write_text("x")

    removed = node._remove_host_traces(real)

    assert str(links / "by-real-path.log") in removed and str(links / "by-given-path.log") in removed
    assert sorted(p.name for p in links.iterdir()) == ["a-file.log", "someone-elses.log"]
    assert not pods.exists() and str(pods) in removed
    assert (lib / "cache").is_dir()  # lib existed before the node: not the node's to remove


def test_cni_results_of_the_nodes_pods_are_removed_and_no_others(tmp_path, monkeypatch):
    real = node.RealNode(name="real-node-0", dir=str(tmp_path / "real-node-0"), run_dir=str(tmp_path / "run"),
                         cgroup_root="/chaosdb-test", network=_plan().as_dict())
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(node, "CNI_RESULTS", str(results))
    bridge = real.net.bridge
    ours = [f"{bridge}-abc123-eth0", "cni-loopback-abc123-lo"]
    others = ["cdbr-ffffff-def456-eth0", "cni-loopback-def456-lo", "kindnet-abc999-eth0"]
    for name in ours + others:
        (results / name).write_text("{}")

    removed = node._remove_cni_results(real)

    assert sorted(Path(p).name for p in removed) == sorted(ours)
    assert sorted(p.name for p in results.iterdir()) == sorted(others)


def test_the_bridge_is_made_with_a_mac_of_its_own_so_that_a_pod_going_does_not_change_it(monkeypatch):
    mac = network.bridge_mac("cdbr-a0c19c")
    assert mac == network.bridge_mac("cdbr-a0c19c") != network.bridge_mac("cdbr-b1d2e3")
    first = int(mac.split(":")[0], 16)
    assert first & 0x02 and not first & 0x01 and len(mac.split(":")) == 6  # locally administered, unicast
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(network, "bridge_exists", lambda name: False)
    monkeypatch.setattr(network, "_ip", lambda *a, **k: calls.append(a) or subprocess.CompletedProcess(a, 0, "", ""))
    network.create(network.NetworkPlan(bridge="cdbr-a0c19c", subnet="10.245.0.0/24", node_ip="10.245.0.1"))
    assert calls[0] == ("link", "add", "name", "cdbr-a0c19c", "address", mac, "type", "bridge")
