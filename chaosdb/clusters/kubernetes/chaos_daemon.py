"""Chaos Mesh's chaos-daemon on the local cluster's real nodes: a DaemonSet and the headless Service through whose
EndpointSlices the controller finds the daemon of a target pod's node.

The controller (run on this machine, ``SECURITY_MODE=false``) looks in namespace ``chaos-mesh`` for EndpointSlices
of ``chaos-daemon`` whose endpoint is on the target pod's node and calls its gRPC port 31767 at the daemon pod's
address. The daemon listens on every address of its pod with no flag to change it, so it runs in the pod network
(not ``hostNetwork``): hostPID (it enters target containers' namespaces), privileged, the node's containerd socket
mounted (``--runtime containerd --runtime-socket-path``), the host's ``/sys`` at ``/host-sys``. Only real nodes run it
(kwok's fake pods have nothing to enter).
"""

from __future__ import annotations

from typing import Any

from chaosdb.clusters.kubernetes.realnode.kubelet import REAL_NODE_LABEL

__all__ = ["NAMESPACE", "GRPC_PORT", "HTTP_PORT", "SOCKET_IN_POD", "chaos_daemon_objects"]

NAMESPACE = "chaos-mesh"
GRPC_PORT = 31767
HTTP_PORT = 31766
#: where the node's containerd socket is mounted in the daemon's container
SOCKET_IN_POD = "/run/containerd/containerd.sock"
_LABELS = {"app.kubernetes.io/name": "chaos-mesh", "app.kubernetes.io/instance": "chaos-mesh",
           "app.kubernetes.io/component": "chaos-daemon"}


def chaos_daemon_objects(image: str, containerd_socket: str) -> list[dict[str, Any]]:
    """The DaemonSet (on real nodes only) and the headless Service of chaos-daemon, with *image* (built here,
    never pulled) and the node's containerd socket path on the host."""
    key, value = REAL_NODE_LABEL
    container = {
        "name": "chaos-daemon", "image": image, "imagePullPolicy": "Never",
        "command": ["/usr/local/bin/chaos-daemon", "--runtime", "containerd", "--runtime-socket-path", SOCKET_IN_POD,
                    "--http-port", str(HTTP_PORT), "--grpc-port", str(GRPC_PORT)],
        "env": [{"name": "TZ", "value": "UTC"}],
        "securityContext": {"privileged": True},
        "ports": [{"name": "grpc", "containerPort": GRPC_PORT}, {"name": "http", "containerPort": HTTP_PORT}],
        "volumeMounts": [{"name": "containerd-socket", "mountPath": SOCKET_IN_POD},
                         {"name": "host-sys", "mountPath": "/host-sys"}],
        "readinessProbe": {"tcpSocket": {"port": GRPC_PORT}, "periodSeconds": 2},
    }
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "chaos-daemon", "namespace": NAMESPACE, "labels": _LABELS},
        "spec": {"selector": {"matchLabels": _LABELS}, "template": {
            "metadata": {"labels": _LABELS},
            "spec": {"hostPID": True, "hostIPC": True, "nodeSelector": {key: value},
                     "terminationGracePeriodSeconds": 5, "containers": [container],
                     "volumes": [{"name": "containerd-socket", "hostPath": {"path": containerd_socket,
                                                                            "type": "Socket"}},
                                 {"name": "host-sys", "hostPath": {"path": "/sys"}}]}}}}
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "chaos-daemon", "namespace": NAMESPACE, "labels": _LABELS},
        "spec": {"clusterIP": "None", "selector": _LABELS,
                 "ports": [{"name": "grpc", "port": GRPC_PORT, "targetPort": GRPC_PORT},
                           {"name": "http", "port": HTTP_PORT, "targetPort": HTTP_PORT}]}}
    return [daemonset, service]
