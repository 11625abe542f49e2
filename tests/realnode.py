"""What the real-node test modules share: the runtime they need, the cluster they bring up (a local Kubernetes with
one real node, no fake nodes, Patroni in two pods) and taken down whatever happens, and a few reads of its objects.

One real node runs on a machine at a time (it owns 10.96.0.1): the modules using this are one work group of the
test scheduler (``tests/conftest.py``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chaosdb.clusters.kubernetes import cluster as localkube
from chaosdb.clusters.kubernetes.realnode import node as realnode
from chaosdb.k8s import api

__all__ = ["require_runtime", "real_node_cluster", "pods", "jobs"]


def _missing_runtime() -> str:
    for program in ("containerd", "ctr", "mmdebstrap"):
        if not any(os.access(Path(d) / program, os.X_OK) for d in os.environ.get("PATH", "").split(":")):
            return program
    return "" if os.geteuid() == 0 else "root"


def require_runtime() -> None:
    """Skip the module without containerd, ctr, mmdebstrap or root (fail when real servers are required)."""
    missing = _missing_runtime()
    if missing:
        why = f"a real node needs {missing} (apt-get install -y containerd runc containernetworking-plugins mmdebstrap)"
        if os.environ.get("CHAOSDB_REQUIRE_REAL_SERVERS"):
            pytest.fail(why)
        pytest.skip(why)


@contextmanager
def real_node_cluster(directory: Path, name: str, address: str, bin_dir: str, **up: Any) -> Iterator[dict[str, Any]]:
    """``up`` a local Kubernetes in *directory* with one real node and no fake nodes, Patroni in two pods (*up*: more
    arguments of ``up``); yields ``up``'s result with ``dir``, ``layout``, ``node`` (the
    :class:`~chaosdb.clusters.kubernetes.realnode.node.RealNode`) and ``pods_address`` (where pods reach the
    Patroni cluster's Services). Down and purged afterwards, whatever happened."""
    res = localkube.up(directory, name, address=address, nodes=0, workload_names=["postgres"], replicas=2,
                       bin_dir=bin_dir, real_nodes=1, **{"timeout": 600, **up})
    api.reset_clients()
    try:
        layout = json.loads((directory / localkube.STATE_FILE).read_text())
        yield {**res, "dir": directory, "layout": layout, "node": realnode.RealNode(**layout["real_nodes"][0]),
               "pods_address": localkube.service_addresses(layout)["pods"]}
    finally:
        localkube.down(directory, purge=True)
        api.reset_clients()


def pods(cfg: dict, namespace: str, selector: str = "") -> list[dict]:
    """The pods of *namespace* (matching the label *selector*), as JSON."""
    return api.call_json("listing pods", api.core_v1(cfg).list_namespaced_pod, namespace,
                         label_selector=selector)["items"]


def jobs(cfg: dict, namespace: str) -> list[dict]:
    """The Jobs of *namespace*, as JSON."""
    from kubernetes import client  # noqa: PLC0415 - the k8s extra

    return api.call_json("listing jobs", client.BatchV1Api(api.api_client(cfg)).list_namespaced_job,
                         namespace).get("items") or []
