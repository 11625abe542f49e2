"""Certificates of a secure embedded cluster (``chaosdb cluster up --secure``).

One CA per cluster (``<cluster>/tls/ca.key``, ``ca.crt``) signs:

* each node's certificate (``<node>/tls/node.crt``, ``node.key``, owned by the node's user): the server certificate
  of its PostgreSQL, Patroni REST API and etcd (client and peer ports), for the node's address, and the client
  certificate its Patroni and etcd present to the other nodes;
* one client certificate for experiments and this pack's own clients (``<cluster>/tls/client.crt``,
  ``client.key``), readable only by whoever ran ``cluster up``.

The servers accept only clients whose certificate this CA signed: etcd on its client and peer ports
(``--client-cert-auth``, ``--peer-client-cert-auth``), Patroni's REST API (``verify_client: required``).
PostgreSQL accepts TLS connections only (``hostssl``) and checks passwords with scram-sha-256.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from chaosdb.core.pki import cluster_ca, issue
from chaosdb.embedded.state import ClusterLayout, NodeLayout

__all__ = ["ensure_cluster_ca", "ensure_node_certificate", "node_file", "NODE_CERT", "NODE_KEY", "NODE_CA"]

NODE_CERT, NODE_KEY, NODE_CA = "node.crt", "node.key", "ca.crt"


def ensure_cluster_ca(layout: ClusterLayout) -> None:
    """The cluster's CA and the experiments' client certificate (once)."""
    cluster_ca(layout.tls_dir, f"chaosdb {layout.name} cluster CA")


def ensure_node_certificate(layout: ClusterLayout, node: NodeLayout) -> None:
    """*node*'s certificate and a copy of the CA in its own directory, owned by its user (PostgreSQL refuses a key
    another user can read)."""
    d = node.tls_dir
    if (d / NODE_KEY).exists():
        return
    d.mkdir(parents=True, exist_ok=True)
    ca = layout.tls_dir
    hosts = sorted({node.host, "127.0.0.1"})
    issue(ca / "ca.key", ca / "ca.crt", d / NODE_KEY, d / NODE_CERT, node.host, ips=hosts, dns=["localhost"])
    shutil.copyfile(ca / "ca.crt", d / NODE_CA)
    _, uid, gid = layout.node_user(node)
    for p in (d, d / NODE_KEY, d / NODE_CERT, d / NODE_CA):
        if os.geteuid() == 0:
            os.chown(p, uid, gid)
        os.chmod(p, 0o700 if p == d else 0o600)


def node_file(node: NodeLayout, name: str) -> str:
    """The path of a node's TLS file *name* (``server.crt``, ...)."""
    return str(Path(node.tls_dir) / name)
