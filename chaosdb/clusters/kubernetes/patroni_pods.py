"""Patroni + PostgreSQL in pods of the local cluster's real node, with Kubernetes as Patroni's DCS.

Named as the Zalando Postgres Operator names a cluster ``postgres`` (so the bundled templates and the ``postgres``
fake workload's selectors find it): namespace ``postgres``, StatefulSet ``postgres`` (pods ``postgres-0..N-1``,
labels ``application: spilo``, ``cluster-name: postgres``, container ``postgres``, ports 5432 and 8008), and

* Service ``postgres`` without a selector: Patroni keeps its Endpoints on the primary (``use_endpoints``), so the
  primary's address is always one read of the API away;
* Service ``postgres-repl`` selecting ``role: replica`` (Patroni maintains the ``role`` label of each pod);
* headless Service ``postgres-members`` governing the StatefulSet (every pod, ready or not);
* a ServiceAccount with the Role Patroni needs (Endpoints, ConfigMaps, Pods: it labels them, Services);
* a Secret with the superuser's, the replication user's and the application user's passwords (random, made once;
  the host keeps a copy in the cluster folder, mode 600, for the load and the probes);
* local PersistentVolumes on the real node (StorageClass ``chaosdb-local``, one per pod, each bound to its claim),
  so a pod's data survives the pod's deletion, as on a real cluster's disks.

Patroni's timings are the embedded cluster's (``ttl`` 20 s, ``loop_wait`` 2 s, ``retry_timeout`` 5 s; synchronous
replication, so a failover never loses an acknowledged commit). PostgreSQL's sockets go to ``/tmp`` (a minimal image
has no ``/var/run/postgresql``).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import yaml

from chaosdb.clusters.kubernetes.realnode.kubelet import REAL_NODE_LABEL
from chaosdb.images.recipes import PATRONI_DATA_DIR, POSTGRES_UID

__all__ = ["NAMESPACE", "NAME", "STORAGE_CLASS", "DATA_MOUNT", "new_passwords", "patroni_objects", "volume_dirs",
           "APP_USER", "APP_DATABASE"]

NAMESPACE = "postgres"
NAME = "postgres"
STORAGE_CLASS = "chaosdb-local"
#: where the data volume is mounted in the pod (PostgreSQL's data folder is ``pgdata`` below it: initdb wants a
#: folder of its own)
DATA_MOUNT = PATRONI_DATA_DIR
APP_USER = "chaosdb"
APP_DATABASE = "chaosdb"
_LABELS = {"application": "spilo", "cluster-name": NAME}
_BIN_DIR = "/usr/lib/postgresql/15/bin"


def new_passwords() -> dict[str, str]:
    """Random passwords for the superuser, the replication user and the application user."""
    return {"superuser": secrets.token_urlsafe(18), "replication": secrets.token_urlsafe(18),
            "app": secrets.token_urlsafe(18)}


def volume_dirs(node_dir: Path, replicas: int) -> list[Path]:
    """The folders of the pods' local volumes on the node (created before the volumes are)."""
    return [Path(node_dir) / "volumes" / f"{NAME}-{i}" for i in range(replicas)]


def _patroni_yaml() -> str:
    """Patroni's configuration file (what the environment does not give: bootstrap, pg_hba, PostgreSQL's
    parameters)."""
    config = {
        "kubernetes": {"labels": _LABELS, "use_endpoints": True, "role_label": "role",
                       "ports": [{"name": "postgresql", "port": 5432}]},
        "bootstrap": {
            "dcs": {"ttl": 20, "loop_wait": 2, "retry_timeout": 5, "maximum_lag_on_failover": 33554432,
                    "synchronous_mode": True,
                    "postgresql": {"use_pg_rewind": True, "use_slots": True,
                                   "parameters": {"wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on",
                                                  "max_connections": 100, "max_wal_senders": 10,
                                                  "max_replication_slots": 10, "wal_keep_size": "128MB"}}},
            "initdb": [{"encoding": "UTF8"}, "data-checksums"]},
        "postgresql": {
            "data_dir": f"{DATA_MOUNT}/pgdata", "bin_dir": _BIN_DIR, "pgpass": "/tmp/pgpass",
            "parameters": {"unix_socket_directories": "/tmp"},
            "pg_hba": ["local all all trust", "local replication all trust",
                       "host all all 127.0.0.1/32 scram-sha-256", "host replication all 127.0.0.1/32 scram-sha-256",
                       "host replication replicator 0.0.0.0/0 scram-sha-256",
                       "host all all 0.0.0.0/0 scram-sha-256"]},
        "watchdog": {"mode": "off"},
    }
    return yaml.safe_dump(config, sort_keys=False)


def _env() -> list[dict[str, Any]]:
    def field(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    def secret(name: str, key: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": f"{NAME}-credentials", "key": key}}}

    return [field("POD_IP", "status.podIP"), field("PATRONI_NAME", "metadata.name"),
            field("PATRONI_KUBERNETES_NAMESPACE", "metadata.namespace"),
            {"name": "PATRONI_KUBERNETES_POD_IP", "value": "$(POD_IP)"},
            {"name": "PATRONI_SCOPE", "value": NAME},
            {"name": "PATRONI_RESTAPI_LISTEN", "value": "0.0.0.0:8008"},
            {"name": "PATRONI_RESTAPI_CONNECT_ADDRESS", "value": "$(POD_IP):8008"},
            {"name": "PATRONI_POSTGRESQL_LISTEN", "value": "0.0.0.0:5432"},
            {"name": "PATRONI_POSTGRESQL_CONNECT_ADDRESS", "value": "$(POD_IP):5432"},
            {"name": "PATRONI_SUPERUSER_USERNAME", "value": "postgres"},
            secret("PATRONI_SUPERUSER_PASSWORD", "superuser"),
            {"name": "PATRONI_REPLICATION_USERNAME", "value": "replicator"},
            secret("PATRONI_REPLICATION_PASSWORD", "replication")]


def patroni_objects(image: str, node_name: str, node_dir: Path, replicas: int,
                    passwords: dict[str, str]) -> list[dict[str, Any]]:
    """Every object of the Patroni cluster (see the module's documentation); *image* is the Patroni + PostgreSQL
    image built here (never pulled), *node_name* the real node its local volumes live on."""
    key, value = REAL_NODE_LABEL
    meta = {"namespace": NAMESPACE, "labels": _LABELS}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": STORAGE_CLASS},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
         "reclaimPolicy": "Retain"},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, **meta}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": f"{NAME}-patroni", **meta},
         "rules": [{"apiGroups": [""], "resources": ["configmaps", "endpoints"],
                    "verbs": ["create", "get", "list", "patch", "update", "watch", "delete", "deletecollection"]},
                   {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch", "update", "watch"]},
                   {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{NAME}-patroni", **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{NAME}-patroni"},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{NAME}-credentials", **meta},
         "type": "Opaque", "stringData": dict(passwords)},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{NAME}-patroni-config", **meta},
         "data": {"patroni.yml": _patroni_yaml()}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, **meta},
         "spec": {"ports": [{"name": "postgresql", "port": 5432, "targetPort": 5432}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{NAME}-repl", **meta},
         "spec": {"selector": {**_LABELS, "role": "replica"},
                  "ports": [{"name": "postgresql", "port": 5432, "targetPort": 5432}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{NAME}-members", **meta},
         "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": _LABELS,
                  "ports": [{"name": "postgresql", "port": 5432}, {"name": "patroni", "port": 8008}]}},
    ]
    for i, folder in enumerate(volume_dirs(node_dir, replicas)):
        objects.append({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"{NAMESPACE}-{NAME}-{i}", "labels": {"chaosdb.io/volume": "local"}},
            "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": STORAGE_CLASS,
                     "local": {"path": str(folder)},
                     "claimRef": {"namespace": NAMESPACE, "name": f"pgdata-{NAME}-{i}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}]}}}})
    container = {
        "name": "postgres", "image": image, "imagePullPolicy": "Never",
        "command": ["patroni", "/etc/patroni/patroni.yml"], "env": _env(),
        "ports": [{"name": "postgresql", "containerPort": 5432}, {"name": "patroni", "containerPort": 8008}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8008}, "periodSeconds": 2, "timeoutSeconds": 2,
                           "failureThreshold": 3},
        "volumeMounts": [{"name": "pgdata", "mountPath": DATA_MOUNT},
                         {"name": "patroni-config", "mountPath": "/etc/patroni", "readOnly": True}],
    }
    prepare = {"name": "prepare-data", "image": image, "imagePullPolicy": "Never",
               "securityContext": {"runAsUser": 0},
               "command": ["/bin/sh", "-c", f"chown {POSTGRES_UID}:{POSTGRES_UID} {DATA_MOUNT} && chmod 0700 {DATA_MOUNT}"],
               "volumeMounts": [{"name": "pgdata", "mountPath": DATA_MOUNT}]}
    objects.append({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": NAME, **meta},
        "spec": {"serviceName": f"{NAME}-members", "replicas": replicas, "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": _LABELS}, "updateStrategy": {"type": "RollingUpdate"},
                 "template": {"metadata": {"labels": _LABELS}, "spec": {
                     "serviceAccountName": NAME, "nodeSelector": {key: value},
                     "terminationGracePeriodSeconds": 10, "initContainers": [prepare], "containers": [container],
                     "volumes": [{"name": "patroni-config", "configMap": {"name": f"{NAME}-patroni-config"}}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "pgdata"}, "spec": {
                     "accessModes": ["ReadWriteOnce"], "storageClassName": STORAGE_CLASS,
                     "resources": {"requests": {"storage": "1Gi"}}}}]}})
    return objects
