"""Write the Chaos Mesh templates in ``chaos-mesh-manifests/{cockroachdb,tikv,postgres}/`` from one body per fault.

CockroachDB and TiKV get the same faults; only the pod selector, container, data directory and defaults differ.
PostgreSQL (Patroni, Spilo-labelled pods) gets the faults a kernel without netem and a chaos-daemon without toda
carry out, plus a partition from the Kubernetes API (Patroni's DCS).
A test checks that the committed files are what this script writes. Run: ``python -m
tools.make_manifests``.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PROFILES", "FAULTS", "render_all", "write_all"]


#: the faults every database family of the CockroachDB/TiKV kind gets
SHARED_FAULTS = ("pod-kill", "pod-failure", "container-kill", "stress-cpu", "stress-memory", "network-delay",
                 "network-loss", "network-partition", "network-bandwidth", "time-skew", "io-latency", "io-errors",
                 "schedule-pod-kill", "workflow-cascading")


@dataclass(frozen=True)
class Profile:
    key: str
    title: str
    namespace: str
    selector_vars: tuple[tuple[str, str, str, str], ...]   # variable rows the pod selector uses
    labels: tuple[tuple[str, str], ...]                     # labelSelectors (when no expression)
    expression: tuple[str, str] | None                      # (key, value) of an `In` expressionSelector
    container: str
    data_path: str
    first_pod: str
    second_pod: str
    notes: str
    faults: tuple[str, ...] = SHARED_FAULTS                 # the templates of this family
    docs: tuple[tuple[str, str], ...] = ()                  # fault -> its summary here (instead of the shared one)
    defaults: tuple[tuple[str, str], ...] = ()              # variable -> its default here (instead of the shared one)


PROFILES = {
    "cockroachdb": Profile(
        key="cockroachdb", title="CockroachDB", namespace="cockroachdb",
        selector_vars=(("LABEL_KEY", "labelkey", "app.kubernetes.io/name",
                        "label of the pods: app for the StatefulSet of CockroachDB's docs, "
                        "app.kubernetes.io/instance to tell clusters apart"),
                       ("LABEL_VALUE", "labelvalue", "cockroachdb", "its value (the release or cluster name for "
                                                                     "app.kubernetes.io/instance)")),
        labels=(), expression=("${LABEL_KEY}", "${LABEL_VALUE}"),
        container="db", data_path="/cockroach/cockroach-data",
        first_pod="cockroachdb-0", second_pod="cockroachdb-1",
        notes="Pods of the official Helm chart and of the CockroachDB operator (both label\n"
              "# app.kubernetes.io/name=cockroachdb; database container db) or, with LABEL_KEY=app and\n"
              "# CONTAINER=cockroachdb, of the StatefulSet in CockroachDB's docs (label app=cockroachdb)."),
    "tikv": Profile(
        key="tikv", title="TiKV", namespace="tidb-cluster",
        selector_vars=(("CLUSTER", "labelvalue", "basic", "app.kubernetes.io/instance: the TidbCluster name"),),
        labels=(("app.kubernetes.io/component", "tikv"), ("app.kubernetes.io/instance", "${CLUSTER}")),
        expression=None,
        container="tikv", data_path="/var/lib/tikv", first_pod="basic-tikv-0", second_pod="basic-tikv-1",
        notes="TiKV pods of a TiDB Operator cluster (labels app.kubernetes.io/component=tikv and\n"
              "# app.kubernetes.io/instance=<TidbCluster name>; container tikv, data in /var/lib/tikv)."),
    "postgres": Profile(
        key="postgres", title="Patroni/PostgreSQL", namespace="postgres",
        selector_vars=(("CLUSTER", "labelvalue", "postgres", "cluster-name: the Patroni cluster (scope)"),),
        labels=(("application", "spilo"), ("cluster-name", "${CLUSTER}")), expression=None,
        container="postgres", data_path="/var/lib/postgresql/data", first_pod="postgres-0",
        second_pod="postgres-1",
        notes="Patroni + PostgreSQL pods labelled as Spilo's (application=spilo, cluster-name=<cluster>: the Zalando\n"
              "# Postgres Operator and 'chaosdb cluster up --kind kubernetes --workloads postgres'); container postgres.\n"
              "# Patroni keeps each pod's role label (role=master|replica; primary with Patroni 4): aim at a role\n"
              "# with create_chaos(target={\"role\": \"patroni-primary\"}) or a labelSelector on role.",
        faults=("pod-kill", "container-kill", "pod-failure", "stress-cpu", "stress-memory", "network-partition",
                "network-partition-from-api", "time-skew"),
        docs=(("network-partition",
               "Cut the selected pods off from the other {title} pods in DIRECTION (both: a full partition).\n"
               "# The target is every pod of the cluster: Chaos Mesh does not leave the selected pod out, so its\n"
               "# traffic to its own pod IP is dropped too (Patroni and PostgreSQL reach themselves over localhost).\n"
               "# With synchronous replication, a primary cut from its synchronous standby stalls commits until\n"
               "# PostgreSQL drops that connection (wal_sender_timeout) or the partition ends; Patroni still reaches\n"
               "# the API and keeps its lock: no failover (network-partition-from-api takes the lock away)."),
              ("time-skew",
               "Shift the wall clock (CLOCK_REALTIME only) of the database container's processes by\n"
               "# TIME_OFFSET. CLOCK_MONOTONIC is left alone on purpose: skewing it stalls Go and Python timers,\n"
               "# Patroni's among them, after the recovery (measured here with chaosd). PostgreSQL times its\n"
               "# replication messages and timeouts with the wall clock.")),
        defaults=(("TIME_OFFSET", "5m"),)),
}

# variable rows: NAME TYPE DEFAULT DESCRIPTION  (DEFAULT "-" = required)
_COMMON = [
    ("NAME", "name", "{key}-{fault}", "name of the chaos object"),
    ("NAMESPACE", "label", "chaos-testing", "namespace the chaos object is created in"),
    ("DB_NAMESPACE", "label", "{namespace}", "namespace of the {title} pods"),
]
_TARGET = [
    ("MODE", "mode", "fixed", "how many selected pods are hit"),
    ("VALUE", "integer", "1", "pods (fixed) or percent (fixed-percent, random-max-percent); a string in YAML"),
]
_CONTAINER = [("CONTAINER", "labelvalue", "{container}", "container of the database process")]
_DURATION = [("DURATION", "duration", "{duration}", "how long the fault lasts (Go duration)")]


def _selector(p: Profile, indent: int, ns_var: str = "DB_NAMESPACE") -> str:
    pad = " " * indent
    lines = [f"{pad}selector:", f"{pad}  namespaces:", f'{pad}    - "${{{ns_var}}}"']
    if p.expression:
        lines += [f"{pad}  expressionSelectors:", f'{pad}    - key: "{p.expression[0]}"', f'{pad}      operator: "In"',
                  f"{pad}      values:", f'{pad}        - "{p.expression[1]}"']
    else:
        lines += [f"{pad}  labelSelectors:"] + [f'{pad}    "{k}": "{v}"' for k, v in p.labels]
    return "\n".join(lines)


FAULTS: dict[str, dict] = {
    "pod-kill": dict(
        kind="PodChaos", duration=None,
        doc="Kill (delete) pods with a grace period; the StatefulSet recreates them (the thesis's pod-level\n"
            "# failure: 0 = immediate, like kubectl delete --force).",
        vars=_TARGET + [("GRACE_PERIOD", "integer", "0", "seconds the database gets to shut down")],
        spec='  action: "pod-kill"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  gracePeriod: ${GRACE_PERIOD}\n'
             "{selector}\n"),
    "pod-failure": dict(
        kind="PodChaos", duration="60s",
        doc="Make pods unavailable (their containers replaced by a pause image) for DURATION, then restore them;\n"
            "# unlike pod-kill the pod keeps its name, IP and volume.",
        vars=_TARGET + _DURATION,
        spec='  action: "pod-failure"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             "{selector}\n"),
    "container-kill": dict(
        kind="PodChaos", duration=None,
        doc="Kill the database container (the kubelet restarts it in the same pod): the process-level failure.",
        vars=_TARGET + _CONTAINER,
        spec='  action: "container-kill"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  containerNames:\n'
             '    - "${CONTAINER}"\n{selector}\n'),
    "stress-cpu": dict(
        kind="StressChaos", duration="120s",
        doc="Burn CPU inside the database container (stress-ng workers at LOAD percent each).",
        vars=_TARGET + _CONTAINER + _DURATION + [
            ("WORKERS", "integer", "2", "stress-ng CPU workers"),
            ("LOAD", "integer", "90", "percent load per worker (0..100)")],
        spec='  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n  containerNames:\n'
             '    - "${CONTAINER}"\n  stressors:\n    cpu:\n      workers: ${WORKERS}\n      load: ${LOAD}\n'
             "{selector}\n"),
    "stress-memory": dict(
        kind="StressChaos", duration="120s",
        doc="Allocate memory inside the database container (SIZE per worker, e.g. 256MB or 50%).",
        vars=_TARGET + _CONTAINER + _DURATION + [
            ("WORKERS", "integer", "1", "stress-ng memory workers"),
            ("SIZE", "size", "256MB", "memory per worker: a size (256MB, 1GiB) or N% of the limit")],
        spec='  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n  containerNames:\n'
             '    - "${CONTAINER}"\n  stressors:\n    memory:\n      workers: ${WORKERS}\n      size: "${SIZE}"\n'
             "{selector}\n"),
    "network-delay": dict(
        kind="NetworkChaos", duration="120s",
        doc="Delay every packet the selected pods send (LATENCY +- JITTER, consecutive delays correlated).",
        vars=_TARGET + _DURATION + [
            ("LATENCY", "duration", "100ms", "added one-way delay"),
            ("JITTER", "duration", "10ms", "random variation of the delay"),
            ("CORRELATION", "percent", "25", "percent correlation with the previous packet's delay")],
        spec='  action: "delay"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  direction: "to"\n  delay:\n    latency: "${LATENCY}"\n    jitter: "${JITTER}"\n'
             '    correlation: "${CORRELATION}"\n{selector}\n'),
    "network-loss": dict(
        kind="NetworkChaos", duration="120s",
        doc="Drop packets the selected pods send; CORRELATION above 0 makes the loss bursty (Gilbert-like).",
        vars=_TARGET + _DURATION + [
            ("LOSS", "percent", "10", "percent of packets dropped"),
            ("CORRELATION", "percent", "50", "percent correlation with the previous packet (bursts)")],
        spec='  action: "loss"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  direction: "to"\n  loss:\n    loss: "${LOSS}"\n    correlation: "${CORRELATION}"\n{selector}\n'),
    "network-partition": dict(
        kind="NetworkChaos", duration="60s",
        doc="Cut the selected pods off from the other {title} pods in DIRECTION (both: a full partition).",
        vars=_TARGET + _DURATION + [("DIRECTION", "to|from|both", "both", "which traffic is cut")],
        spec='  action: "partition"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  direction: "${DIRECTION}"\n  target:\n    mode: "all"\n{target_selector}\n{selector}\n'),
    "network-partition-from-api": dict(
        kind="NetworkChaos", duration="60s",
        doc="Cut the selected pods off from the Kubernetes API server (packets to API_ADDRESS, the in-cluster\n"
            "# address of Service default/kubernetes; 10.96.0.1 on the local cluster). Patroni keeps its leader lock\n"
            "# in the API (Kubernetes DCS): a primary cut off for longer than ttl cannot renew it and demotes itself,\n"
            "# and the other members elect a new leader once the lock has expired.",
        vars=_TARGET + _DURATION + [
            ("API_ADDRESS", "address", "10.96.0.1",
             "the API server as pods reach it (kubectl get service kubernetes -n default)")],
        spec='  action: "partition"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  direction: "to"\n  externalTargets:\n    - "${API_ADDRESS}"\n{selector}\n'),
    "network-bandwidth": dict(
        kind="NetworkChaos", duration="120s",
        doc="Limit the bandwidth of the selected pods (token bucket: RATE, queue LIMIT bytes, BUFFER bytes).",
        vars=_TARGET + _DURATION + [
            ("RATE", "rate", "10mbit", "rate: N followed by bit|kbit|mbit|gbit|tbit or bps|kbps|... (bytes/s)"),
            ("LIMIT", "integer", "20971520", "bytes that can be queued"),
            ("BUFFER", "integer", "10000", "bucket size in bytes")],
        spec='  action: "bandwidth"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  direction: "to"\n  bandwidth:\n    rate: "${RATE}"\n    limit: ${LIMIT}\n    buffer: ${BUFFER}\n'
             "{selector}\n"),
    "time-skew": dict(
        kind="TimeChaos", duration="60s",
        doc="Shift the database container's clock by TIME_OFFSET (clock drift of the replication study).\n"
            "# CockroachDB nodes stop themselves when their offset reaches 80% of --max-offset (500ms by default).",
        vars=_TARGET + _CONTAINER + _DURATION + [
            ("TIME_OFFSET", "signed-duration", "-250ms", "clock offset, negative = behind (Go duration)")],
        spec='  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n  timeOffset: "${TIME_OFFSET}"\n'
             '  clockIds:\n    - "CLOCK_REALTIME"\n  containerNames:\n    - "${CONTAINER}"\n{selector}\n'),
    "io-latency": dict(
        kind="IOChaos", duration="120s",
        doc="Delay file operations on the data directory (PERCENT of them by DELAY).",
        vars=_TARGET + _CONTAINER + _DURATION + [
            ("DATA_PATH", "path", "{data_path}", "mount path of the data volume in the container"),
            ("DELAY", "duration", "50ms", "added latency per operation"),
            ("PERCENT", "integer", "50", "percent of operations delayed")],
        spec='  action: "latency"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  volumePath: "${DATA_PATH}"\n  path: "${DATA_PATH}/**/*"\n  delay: "${DELAY}"\n'
             '  percent: ${PERCENT}\n  containerNames:\n    - "${CONTAINER}"\n{selector}\n'),
    "io-errors": dict(
        kind="IOChaos", duration="60s",
        doc="Fail file operations on the data directory with ERRNO (5 = EIO, 28 = ENOSPC).",
        vars=_TARGET + _CONTAINER + _DURATION + [
            ("DATA_PATH", "path", "{data_path}", "mount path of the data volume in the container"),
            ("ERRNO", "integer", "5", "errno returned (5 EIO, 28 ENOSPC)"),
            ("PERCENT", "integer", "10", "percent of operations failed")],
        spec='  action: "fault"\n  mode: "${MODE}"\n  value: "${VALUE}"\n  duration: "${DURATION}"\n'
             '  volumePath: "${DATA_PATH}"\n  path: "${DATA_PATH}/**/*"\n  errno: ${ERRNO}\n'
             '  percent: ${PERCENT}\n  containerNames:\n    - "${CONTAINER}"\n{selector}\n'),
    "schedule-pod-kill": dict(
        kind="Schedule", duration=None,
        doc="A recurring game day: kill one pod on SCHEDULE (cron, e.g. every Monday 03:00 UTC).\n"
            "# Pause it with the annotation experiment.chaos-mesh.org/pause=true.",
        vars=[("SCHEDULE", "cron", "'0 3 * * 1'", "cron spec (minute hour day month weekday) or @every 1h"),
              ("HISTORY_LIMIT", "integer", "5", "how many finished PodChaos objects are kept"),
              ("GRACE_PERIOD", "integer", "0", "seconds the database gets to shut down")],
        spec='  schedule: "${SCHEDULE}"\n  type: "PodChaos"\n  historyLimit: ${HISTORY_LIMIT}\n'
             '  concurrencyPolicy: "Forbid"\n  podChaos:\n    action: "pod-kill"\n    mode: "fixed"\n'
             '    value: "1"\n    gracePeriod: ${GRACE_PERIOD}\n{selector4}\n'),
    "workflow-cascading": dict(
        kind="Workflow", duration=None,
        doc="A cascading (serial) failure: FIRST_POD fails for FAILURE_DURATION; GAP later SECOND_POD fails\n"
            "# too, while the first may still be catching up (with 3 replicas, both down loses the quorum).",
        vars=[("FIRST_POD", "name", "{first_pod}", "pod that fails first"),
              ("SECOND_POD", "name", "{second_pod}", "pod that fails second"),
              ("FAILURE_DURATION", "duration", "60s", "how long each pod stays failed"),
              ("GAP", "duration", "30s", "time between the start of the two failures")],
        spec='  entry: "cascade"\n  templates:\n    - name: "cascade"\n      templateType: "Parallel"\n'
             '      children:\n        - "first-pod-failure"\n        - "then-second"\n'
             '    - name: "then-second"\n      templateType: "Serial"\n      children:\n        - "gap"\n'
             '        - "second-pod-failure"\n'
             '    - name: "gap"\n      templateType: "Suspend"\n      deadline: "${GAP}"\n'
             '    - name: "first-pod-failure"\n      templateType: "PodChaos"\n      deadline: "${FAILURE_DURATION}"\n'
             '      podChaos:\n        action: "pod-failure"\n        mode: "all"\n'
             '        selector:\n          pods:\n            "${DB_NAMESPACE}":\n              - "${FIRST_POD}"\n'
             '    - name: "second-pod-failure"\n      templateType: "PodChaos"\n      deadline: "${FAILURE_DURATION}"\n'
             '      podChaos:\n        action: "pod-failure"\n        mode: "all"\n'
             '        selector:\n          pods:\n            "${DB_NAMESPACE}":\n              - "${SECOND_POD}"\n'),
}


_RENDER_1 = ("# Valid as it is (the defaults). Change values: chaosdb manifests render {name} --set VAR=value "
             "| kubectl apply -f -")
_RENDER_2 = "# Lines marked '# ${VAR}' take the variables. Columns: name, type, default (- = required), meaning."


def mark_defaults(text: str) -> str:
    """Replace the ``${VAR}`` placeholders of the body by the header's defaults, marking each line."""
    from chaosdb.manifests.templates import inline_defaults

    head, sep, body = text.partition("# end-variables\n")
    defaults = {}
    for row in head.split("# chaosdb-variables:\n", 1)[1].splitlines():
        m = re.match(r"#\s+([A-Z][A-Z0-9_]*)\s+\S+\s+('[^']*'|\S+)", row)
        if m:
            value = m.group(2).strip("'")
            defaults[m.group(1)] = EXAMPLES[m.group(1)] if value == "-" else value
    return head + sep + inline_defaults(body, defaults)


def _fmt(text: str, p: Profile, fault: str, duration: str | None) -> str:
    return (text.replace("{key}", p.key).replace("{fault}", fault).replace("{namespace}", p.namespace)
            .replace("{title}", p.title)
            .replace("{container}", p.container).replace("{data_path}", p.data_path)
            .replace("{first_pod}", p.first_pod).replace("{second_pod}", p.second_pod)
            .replace("{duration}", duration or ""))


def render_template_text(p: Profile, fault: str) -> str:
    f = FAULTS[fault]
    if p.docs:
        f = {**f, "doc": dict(p.docs).get(fault, f["doc"])}
    rows = list(_COMMON) + ([] if f["kind"] == "Workflow" else list(p.selector_vars)) + f["vars"]
    defaults = dict(p.defaults)
    rows = [(r[0], r[1], defaults.get(r[0], r[2]), r[3]) for r in rows]
    rows = [tuple(_fmt(c, p, fault, f["duration"]) for c in r) for r in rows]
    width = max(len(r[0]) for r in rows)
    twidth = max(len(r[1]) for r in rows)
    dwidth = max(len(r[2]) for r in rows)
    header = [f"# {p.title}: {_fmt(f['doc'], p, fault, f['duration'])}", f"# {p.notes}", "#",
              _RENDER_1.format(name=f"{p.key}/{fault}"), _RENDER_2,
              "# chaosdb-variables:"]
    header += [f"#   {r[0]:<{width}}  {r[1]:<{twidth}}  {r[2]:<{dwidth}}  {r[3]}".rstrip() for r in rows]
    header.append("# end-variables")
    body = _fmt(f["spec"], p, fault, f["duration"])
    body = body.replace("{selector4}", _selector(p, 4)).replace("{selector}", _selector(p, 2))
    body = body.replace("{target_selector}", _selector(p, 4))
    doc = ["apiVersion: chaos-mesh.org/v1alpha1", f"kind: {f['kind']}", "metadata:", '  name: "${NAME}"',
           '  namespace: "${NAMESPACE}"', "  labels:", '    "app.kubernetes.io/part-of": "chaostoolkit-db"',
           f'    "chaosdb/template": "{p.key}.{fault}"', "spec:"]
    return "\n".join(header) + "\n" + "\n".join(doc) + "\n" + body


def write_all(root: Path) -> list[Path]:
    written = []
    for rel, text in render_all().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# ---- LitmusChaos: per fault a setup file (ServiceAccount, Role, RoleBinding, ChaosExperiment) applied once
# ---- by an admin, and per database an engine file (the ChaosEngine a game day creates).

LITMUS_IMAGE = "litmuschaos.docker.scarf.sh/litmuschaos/go-runner:3.31.0"

LITMUS_DB = {
    "cockroachdb": dict(app_ns="cockroachdb", app_label="app.kubernetes.io/name=cockroachdb", container="db",
                        health_url="http://cockroachdb-public.cockroachdb.svc:8080/health?ready=1"),
    "tikv": dict(app_ns="tidb-cluster", app_label="app.kubernetes.io/component=tikv", container="tikv",
                 health_url="http://basic-pd.tidb-cluster.svc:2379/pd/api/v1/health"),
    # Patroni pods labelled as Spilo's: applabel takes one label (litmus-go splits it at commas into labels any of
    # which selects), the cluster's; the probe is `chaosdb check` in a pod of the pack's image (cmdProbe, source)
    "postgres": dict(app_ns="postgres", app_label="cluster-name=postgres", container="postgres",
                     patroni_urls="http://postgres-members.postgres.svc:8008", faults=("pod-delete",),
                     defaults={"TOTAL_CHAOS_DURATION": "10"}),
}

#: the example value a required variable of a generated template holds, so that the file validates as it is
EXAMPLES = {"IMAGE": "registry.example.com/chaosdb:0.1.0"}

# fault -> (summary, experiment env defaults [(name, value)], engine variables [(VAR, type, default, doc, ENV)])
LITMUS_FAULTS = {
    "pod-delete": (
        "Delete database pods repeatedly (CHAOS_INTERVAL apart) for TOTAL_CHAOS_DURATION seconds.",
        [("TOTAL_CHAOS_DURATION", "15"), ("RAMP_TIME", ""), ("FORCE", "true"), ("CHAOS_INTERVAL", "5"),
         ("PODS_AFFECTED_PERC", ""), ("TARGET_CONTAINER", ""), ("TARGET_PODS", ""),
         ("DEFAULT_HEALTH_CHECK", "false"), ("NODE_LABEL", ""), ("SEQUENCE", "parallel")],
        [("TOTAL_CHAOS_DURATION", "integer", "30", "seconds of chaos", "TOTAL_CHAOS_DURATION"),
         ("CHAOS_INTERVAL", "integer", "10", "seconds between deletions", "CHAOS_INTERVAL"),
         ("FORCE", "true|false", "false", "delete with grace period 0", "FORCE"),
         ("PODS_AFFECTED_PERC", "integer", "0", "percent of pods hit (0 = one pod)", "PODS_AFFECTED_PERC"),
         ("SEQUENCE", "serial|parallel", "serial", "order when several pods are hit", "SEQUENCE")]),
    "pod-cpu-hog": (
        "Burn CPU in the database container (CPU_CORES cores at CPU_LOAD percent).",
        [("TOTAL_CHAOS_DURATION", "60"), ("CPU_CORES", "1"), ("CPU_LOAD", "100"), ("PODS_AFFECTED_PERC", ""),
         ("RAMP_TIME", ""), ("LIB_IMAGE", LITMUS_IMAGE), ("STRESS_IMAGE", "alexeiled/stress-ng:latest-ubuntu"),
         ("CONTAINER_RUNTIME", "containerd"), ("SOCKET_PATH", "/run/containerd/containerd.sock"),
         ("TARGET_CONTAINER", ""), ("TARGET_PODS", ""), ("DEFAULT_HEALTH_CHECK", "false"), ("NODE_LABEL", ""),
         ("SEQUENCE", "parallel")],
        [("TOTAL_CHAOS_DURATION", "integer", "60", "seconds of chaos", "TOTAL_CHAOS_DURATION"),
         ("CPU_CORES", "integer", "1", "cores to burn", "CPU_CORES"),
         ("CPU_LOAD", "integer", "100", "percent load per core", "CPU_LOAD"),
         ("PODS_AFFECTED_PERC", "integer", "0", "percent of pods hit (0 = one pod)", "PODS_AFFECTED_PERC"),
         ("CONTAINER_RUNTIME", "containerd|crio|docker", "containerd", "runtime of the cluster's nodes",
          "CONTAINER_RUNTIME"),
         ("SOCKET_PATH", "path", "/run/containerd/containerd.sock", "runtime socket on the node", "SOCKET_PATH")]),
    "pod-network-latency": (
        "Add NETWORK_LATENCY ms (+- JITTER) to the database pods' traffic.",
        [("TARGET_CONTAINER", ""), ("NETWORK_INTERFACE", "eth0"), ("LIB_IMAGE", LITMUS_IMAGE),
         ("TC_IMAGE", "gaiadocker/iproute2"), ("NETWORK_LATENCY", "2000"), ("TOTAL_CHAOS_DURATION", "60"),
         ("RAMP_TIME", ""), ("JITTER", "0"), ("PODS_AFFECTED_PERC", ""), ("TARGET_PODS", ""),
         ("CONTAINER_RUNTIME", "containerd"), ("DEFAULT_HEALTH_CHECK", "false"), ("DESTINATION_IPS", ""),
         ("DESTINATION_HOSTS", ""), ("SOCKET_PATH", "/run/containerd/containerd.sock"), ("NODE_LABEL", ""),
         ("SEQUENCE", "parallel")],
        [("TOTAL_CHAOS_DURATION", "integer", "60", "seconds of chaos", "TOTAL_CHAOS_DURATION"),
         ("NETWORK_LATENCY", "integer", "100", "added latency in milliseconds", "NETWORK_LATENCY"),
         ("JITTER", "integer", "10", "jitter in milliseconds", "JITTER"),
         ("NETWORK_INTERFACE", "labelvalue", "eth0", "interface inside the pod", "NETWORK_INTERFACE"),
         ("PODS_AFFECTED_PERC", "integer", "0", "percent of pods hit (0 = one pod)", "PODS_AFFECTED_PERC"),
         ("CONTAINER_RUNTIME", "containerd|crio|docker", "containerd", "runtime of the cluster's nodes",
          "CONTAINER_RUNTIME"),
         ("SOCKET_PATH", "path", "/run/containerd/containerd.sock", "runtime socket on the node", "SOCKET_PATH")]),
}

_PERMISSIONS = [
    ('[""]', '["pods"]', '["create", "delete", "get", "list", "patch", "update", "deletecollection"]'),
    ('[""]', '["events"]', '["create", "get", "list", "patch", "update"]'),
    ('[""]', '["configmaps"]', '["get", "list"]'),
    ('[""]', '["pods/log"]', '["get", "list", "watch"]'),
    ('[""]', '["pods/exec"]', '["get", "list", "create"]'),
    ('["apps"]', '["deployments", "statefulsets", "replicasets", "daemonsets"]', '["list", "get"]'),
    ('["batch"]', '["jobs"]', '["create", "list", "get", "delete", "deletecollection"]'),
    ('["litmuschaos.io"]', '["chaosengines", "chaosexperiments", "chaosresults"]',
     '["create", "list", "get", "patch", "update", "delete"]'),
]


def _header(summary: str, name: str, rows: list[tuple[str, str, str, str]], extra: str = "") -> str:
    width = max(len(r[0]) for r in rows)
    twidth = max(len(r[1]) for r in rows)
    dwidth = max(len(r[2]) for r in rows)
    required = [r[0] for r in rows if r[2] == "-"]
    render = [_RENDER_1.format(name=name)] if not required else [
        f"# Render: chaosdb manifests render {name} " + " ".join(f"--set {v}=..." for v in required)
        + " | kubectl apply -f -",
        f"# ({', '.join(required)} {'is' if len(required) == 1 else 'are'} required: the file holds an example value "
        "so that it validates as it is)."]
    out = [f"# {summary}"] + ([f"# {extra}"] if extra else []) + ["#", *render, _RENDER_2, "# chaosdb-variables:"]
    out += [f"#   {r[0]:<{width}}  {r[1]:<{twidth}}  {r[2]:<{dwidth}}  {r[3]}".rstrip() for r in rows]
    return "\n".join(out + ["# end-variables"]) + "\n"


def litmus_setup_text(fault: str) -> str:
    summary, env, _ = LITMUS_FAULTS[fault]
    rows = [("NAMESPACE", "label", "cockroachdb", "namespace the ChaosEngine will run in (usually the database's)"),
            ("EXPERIMENT_IMAGE", "image", LITMUS_IMAGE, "litmus-go runner image (pin a version; on 'chaosdb cluster "
                                                        "up --litmus': chaosdb.local/litmus-go-runner:<pack version>)")]
    perms = "".join(f"      - apiGroups: {g}\n        resources: {r}\n        verbs: {v}\n" for g, r, v in _PERMISSIONS)
    rules = "".join(f"  - apiGroups: {g}\n    resources: {r}\n    verbs: {v}\n" for g, r, v in _PERMISSIONS)
    envs = "".join(f'      - name: "{k}"\n        value: "{v}"\n' for k, v in env)
    sa = f"{fault}-sa"
    labels = f'    "app.kubernetes.io/part-of": "chaostoolkit-db"\n    "name": "{sa}"\n'
    return _header(
        f"LitmusChaos {fault}: the ChaosExperiment and the account it runs as (apply once per namespace).",
        f"litmus/{fault}-setup", rows,
        "The Role also covers StatefulSets (upstream's pod-delete rbac.yaml lists only deployments).") + (
        f'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: "{sa}"\n  namespace: "${{NAMESPACE}}"\n'
        f"  labels:\n{labels}---\n"
        f'apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: "{sa}"\n'
        f'  namespace: "${{NAMESPACE}}"\n  labels:\n{labels}rules:\n{rules}---\n'
        f'apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: "{sa}"\n'
        f'  namespace: "${{NAMESPACE}}"\n  labels:\n{labels}roleRef:\n  apiGroup: "rbac.authorization.k8s.io"\n'
        f'  kind: "Role"\n  name: "{sa}"\nsubjects:\n  - kind: "ServiceAccount"\n    name: "{sa}"\n'
        f'    namespace: "${{NAMESPACE}}"\n---\n'
        f'apiVersion: litmuschaos.io/v1alpha1\nkind: ChaosExperiment\nmetadata:\n  name: "{fault}"\n'
        f'  namespace: "${{NAMESPACE}}"\n  labels:\n    "name": "{fault}"\n'
        f'    "app.kubernetes.io/part-of": "litmus"\n    "app.kubernetes.io/component": "chaosexperiment"\n'
        f'spec:\n  definition:\n    scope: "Namespaced"\n    permissions:\n{perms}'
        f'    image: "${{EXPERIMENT_IMAGE}}"\n    imagePullPolicy: "IfNotPresent"\n    args:\n      - "-c"\n'
        f'      - "./experiments -name {fault}"\n    command:\n      - "/bin/bash"\n    env:\n{envs}'
        f'    labels:\n      "name": "{fault}"\n      "app.kubernetes.io/part-of": "litmus"\n'
        f'      "app.kubernetes.io/component": "experiment-job"\n')


def _http_probe(db: str) -> str:
    return (f'        probe:\n          - name: "{db}-ready"\n            type: "httpProbe"\n'
            f'            mode: "Continuous"\n            httpProbe/inputs:\n              url: "${{HEALTH_URL}}"\n'
            f'              method:\n                get:\n                  criteria: "=="\n'
            f'                  responseCode: "200"\n            runProperties:\n              probeTimeout: "5s"\n'
            f'              interval: "2s"\n              retry: 1\n')


#: the Patroni probe: `chaosdb check shipped:patroni` in a pod of the pack's image (litmus-go's cmdProbe in source
#: mode creates the pod, execs `/bin/sh -c <command>` in it and compares the trimmed standard output). Its one JSON
#: line starts with the overall verdict ({"ok": true, "checks": [...]}; each check's own "ok" follows "check", so
#: '{"ok": true' matches the overall one only; litmus-go splits a comparator value at commas, so it holds none).
#: `|| true`: a failed check exits 1, which the exec reports as an error instead of output to compare.
_PATRONI_CHECK = "chaosdb check shipped:patroni --within ${RECOVERY_S} || true"


def _patroni_cmd_probe() -> str:
    return ('        probe:\n          - name: "patroni-checks"\n            type: "cmdProbe"\n'
            '            mode: "Edge"\n            cmdProbe/inputs:\n'
            f'              command: "{_PATRONI_CHECK}"\n'
            '              comparator:\n                type: "string"\n                criteria: "contains"\n'
            "                value: '{\"ok\": true'\n"
            '              source:\n                image: "${IMAGE}"\n                imagePullPolicy: "IfNotPresent"\n'
            '                env:\n                  - name: "CHAOSDB_PATRONI_URLS"\n'
            '                    value: "${PATRONI_URLS}"\n'
            '            runProperties:\n              probeTimeout: "300s"\n              interval: "5s"\n'
            "              attempt: 1\n")


def litmus_engine_text(db: str, fault: str) -> str:
    summary, _, evars = LITMUS_FAULTS[fault]
    d = LITMUS_DB[db]
    title = PROFILES[db].title
    rows = [("NAME", "name", f"{db}-{fault}", "ChaosEngine name (the ChaosResult is <NAME>-" + fault + ")"),
            ("NAMESPACE", "label", d["app_ns"], "namespace of the engine (where the setup was applied)"),
            ("APP_NAMESPACE", "label", d["app_ns"], f"namespace of the {title} pods"),
            ("APP_LABEL", "string", d["app_label"], f"label selector of the {title} StatefulSet"),
            ("TARGET_CONTAINER", "labelvalue", d["container"], "database container")]
    env = [("TARGET_CONTAINER", "TARGET_CONTAINER")]
    patroni = "patroni_urls" in d
    if patroni:
        rows += [("TARGET_PODS", "string", "''", "pods to delete, comma separated (empty: PODS_AFFECTED_PERC of the "
                                                  "APP_LABEL pods); run_chaos_engine(target=...) names the role's pod"),
                 ("IMAGE", "image", "-", "the chaostoolkit-db image the probe pod runs (pin a tag or digest)"),
                 ("PATRONI_URLS", "url", d["patroni_urls"], "Patroni's REST API as the probe pod reaches it (comma "
                                                            "separated; CHAOSDB_PATRONI_URLS)"),
                 ("RECOVERY_S", "integer", "60", "seconds the check after the fault may wait for every check to "
                                                 "pass (keep it well under the probe's 300s timeout)")]
        env.append(("TARGET_PODS", "TARGET_PODS"))
    else:
        rows.append(("HEALTH_URL", "url", d["health_url"], "readiness URL probed all along (probeSuccessPercentage)"))
    defaults = d.get("defaults") or {}
    rows += [(r[0], r[1], defaults.get(r[0], r[2]), r[3]) for r in evars]
    env += [(r[4], r[0]) for r in evars]
    envs = "".join(f'            - name: "{e}"\n              value: "${{{v}}}"\n' for e, v in env)
    extra = f"Needs litmus/{fault}-setup applied in NAMESPACE first. Env values are strings."
    if patroni:
        extra += ("\n# The probe: 'chaosdb check shipped:patroni' (one leader, replicas streaming) in a pod of IMAGE before the\n"
                  "# fault and after it (within RECOVERY_S), Patroni reached at PATRONI_URLS; every TARGET_PODS pod is\n"
                  "# deleted every CHAOS_INTERVAL seconds until TOTAL_CHAOS_DURATION has passed (TOTAL_CHAOS_DURATION at\n"
                  "# most CHAOS_INTERVAL: once; a StatefulSet pod comes back under the same name).")
    return _header(f"{title}: LitmusChaos {fault}. {summary}", f"litmus/{db}-{fault}-engine", rows, extra) + (
        f'apiVersion: litmuschaos.io/v1alpha1\nkind: ChaosEngine\nmetadata:\n  name: "${{NAME}}"\n'
        f'  namespace: "${{NAMESPACE}}"\n  labels:\n    "app.kubernetes.io/part-of": "chaostoolkit-db"\n'
        f'spec:\n  engineState: "active"\n  appinfo:\n    appns: "${{APP_NAMESPACE}}"\n'
        f'    applabel: "${{APP_LABEL}}"\n    appkind: "statefulset"\n  chaosServiceAccount: "{fault}-sa"\n'
        f'  jobCleanUpPolicy: "delete"\n  experiments:\n    - name: "{fault}"\n      spec:\n        components:\n'
        f"          env:\n{envs}" + (_patroni_cmd_probe() if patroni else _http_probe(db)))


# ---- PhysicalMachineChaos: faults on databases on machines, carried out by chaosd (``chaosd server`` on the
# ---- machine, run as root) when the Chaos Mesh controller asks it. Field names are the upstream CRD's.

_PM_COMMON = [("NAME", "name", "{fault}", "name of the chaos object"),
              ("NAMESPACE", "label", "chaos-testing", "namespace the chaos object is created in"),
              ("ADDRESS", "url", "http://127.0.0.1:31767", "chaosd's URL as the controller reaches it (https:// "
                                                            "with CHAOSD_SECURITY_MODE=true)")]
_PM_DURATION = [("DURATION", "duration", "60s", "how long the fault lasts (Go duration)")]
_PM_PID = [("PID", "integer", "1234", "the process (its PID on the machine)")]
_PM_TARGET = [("IP_ADDRESS", "address", "127.0.0.11", "the database node's address"),
              ("DEVICE", "labelvalue", "lo", "the interface that carries its traffic (lo for 127.x)")]

# fault -> (summary, variables, action, the action's block (YAML lines, 4 spaces in), duration?)
PHYSICAL_FAULTS = {
    "process-stop": ("Stop a database process (SIGSTOP) until the object is deleted or DURATION ends (SIGCONT).",
                     _PM_PID + _PM_DURATION, "process",
                     '    process: "${PID}"\n    signal: 19\n', True),
    "process-kill": ("Kill a database process (SIGKILL). One-shot: delete the object once it is injected (its "
                     "no-op recoverCmd lets the controller recover it).", _PM_PID, "process",
                     '    process: "${PID}"\n    signal: 9\n    recoverCmd: "true"\n', False),
    "clock-skew": ("Skew the wall clock (CLOCK_REALTIME) of one process by TIME_OFFSET (chaosd: ptrace + vDSO); "
                   "the machine's clock and other processes keep the true time.",
                   _PM_PID + [("TIME_OFFSET", "signed-duration", "-5m", "offset, negative = behind (Go duration)")]
                   + _PM_DURATION, "clock",
                   '    pid: ${PID}\n    time-offset: "${TIME_OFFSET}"\n    clock-ids-slice: "CLOCK_REALTIME"\n',
                   True),
    "stress-cpu": ("Burn CPU on the machine (stress-ng: WORKERS workers at LOAD percent each).",
                   [("WORKERS", "integer", "2", "stress-ng CPU workers"),
                    ("LOAD", "integer", "90", "percent load per worker (1..100)")] + _PM_DURATION, "stress-cpu",
                   "    workers: ${WORKERS}\n    load: ${LOAD}\n", True),
    "stress-memory": ("Hold SIZE of memory on the machine (chaosd's memStress).",
                      [("SIZE", "size", "256MB", "memory to hold")] + _PM_DURATION, "stress-mem",
                      '    size: "${SIZE}"\n', True),
    "network-partition": ("Drop the packets to (DIRECTION to) or from (from) a node's address on the machine "
                          "(iptables + ipset; one object per direction).",
                          _PM_TARGET + [("DIRECTION", "to|from", "to", "packets to the address or from it")] + _PM_DURATION,
                          "network-partition",
                          '    ip-address: "${IP_ADDRESS}"\n    device: "${DEVICE}"\n    direction: "${DIRECTION}"\n',
                          True),
    "network-loss": ("Drop PROBABILITY of the packets to a node's address with an iptables statistic rule "
                     "(user_defined): loss without netem, for kernels that lack it.",
                     [("IP_ADDRESS", "address", "127.0.0.11", "the database node's address"),
                      ("PROBABILITY", "fraction", "0.3", "fraction of the packets dropped (0..1)")] + _PM_DURATION,
                     "user_defined",
                     '    attackCmd: "iptables -w -I INPUT -d ${IP_ADDRESS} -m statistic --mode random --probability '
                     '${PROBABILITY} -m comment --comment chaosdb-pm-loss -j DROP"\n'
                     '    recoverCmd: "iptables -w -D INPUT -d ${IP_ADDRESS} -m statistic --mode random --probability '
                     '${PROBABILITY} -m comment --comment chaosdb-pm-loss -j DROP"\n', True),
    "disk-fill": ("Fill the disk a database writes to: a file of SIZE at PATH (a new file), removed on recovery.",
                  [("PATH", "path", "/var/lib/postgresql/chaosd-fill", "the file to create"),
                   ("SIZE", "size", "1GB", "how much to fill")] + _PM_DURATION, "disk-fill",
                  '    path: "${PATH}"\n    size: "${SIZE}"\n', True),
}


def physical_fault_text(fault: str) -> str:
    summary, rows, action, block, timed = PHYSICAL_FAULTS[fault]
    rows = [tuple(c.replace("{fault}", fault) for c in r) for r in _PM_COMMON + rows]
    return _header(f"A machine's database (chaosd): {summary}", f"physical-machines/{fault}", rows,
                   "Needs chaosd server on the machine and the Chaos Mesh controller (PhysicalMachineChaos).") + (
        'apiVersion: chaos-mesh.org/v1alpha1\nkind: PhysicalMachineChaos\nmetadata:\n  name: "${NAME}"\n'
        '  namespace: "${NAMESPACE}"\n  labels:\n    "app.kubernetes.io/part-of": "chaostoolkit-db"\n'
        f'    "chaosdb/template": "physical-machines.{fault}"\nspec:\n  action: "{action}"\n  mode: "all"\n'
        '  address:\n    - "${ADDRESS}"\n' + ('  duration: "${DURATION}"\n' if timed else "")
        + f"  {action}:\n{block}")


def physical_machine_text() -> str:
    rows = [("NAME", "name", "db-machine-1", "name of the PhysicalMachine (selector.physicalMachines names it)"),
            ("NAMESPACE", "label", "chaos-testing", "its namespace"),
            ("ADDRESS", "url", "http://127.0.0.1:31767", "chaosd's URL as the controller reaches it"),
            ("ROLE", "labelvalue", "database", "a label to select machines by (labelSelectors)")]
    return _header("A machine running chaosd, for PhysicalMachineChaos selectors (selector.physicalMachines or "
                   "labelSelectors) instead of addresses.", "physical-machines/physical-machine", rows) + (
        'apiVersion: chaos-mesh.org/v1alpha1\nkind: PhysicalMachine\nmetadata:\n  name: "${NAME}"\n'
        '  namespace: "${NAMESPACE}"\n  labels:\n    "app.kubernetes.io/part-of": "chaostoolkit-db"\n'
        '    "chaosdb/role": "${ROLE}"\nspec:\n  address: "${ADDRESS}"\n')


def _render_all_chaosmesh() -> dict[str, str]:
    return {f"{p.key}/{fault}.yaml": render_template_text(p, fault) for p in PROFILES.values() for fault in p.faults}


def render_all() -> dict[str, str]:
    """Relative path -> text of every generated template (Chaos Mesh per database, Litmus)."""
    out = _render_all_chaosmesh()
    for fault in LITMUS_FAULTS:
        out[f"litmus/{fault}-setup.yaml"] = litmus_setup_text(fault)
        for db in LITMUS_DB:
            if fault in LITMUS_DB[db].get("faults", LITMUS_FAULTS):
                out[f"litmus/{db}-{fault}-engine.yaml"] = litmus_engine_text(db, fault)
    for fault in PHYSICAL_FAULTS:
        out[f"physical-machines/{fault}.yaml"] = physical_fault_text(fault)
    out["physical-machines/physical-machine.yaml"] = physical_machine_text()
    return {rel: _stamp(mark_defaults(text)) for rel, text in out.items()}


#: true for a user's copy (``chaosdb experiments copy --template``) and for a contributor (the generator is in the
#: source repository, which the installed package does not hold)
GENERATED = ("# Shipped with chaostoolkit-db; a copy made with 'chaosdb experiments copy --template' is yours to edit.\n"
             "# Contributors change it through its generator in the chaostoolkit-db source repository (not part of\n"
             "# the installed package): python -m tools.make_manifests")


def _stamp(text: str) -> str:
    """The generator's command as the last line of the leading comment (above it: the summary and variables)."""
    lines = text.split("\n")
    end = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "\n".join([*lines[:end], GENERATED, *lines[end:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "chaos-mesh-manifests"))
    for path in write_all(Path(ap.parse_args().out)):
        print(path)


if __name__ == "__main__":
    main()
