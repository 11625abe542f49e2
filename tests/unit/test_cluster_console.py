"""What ``chaosdb cluster status`` and ``down`` say about the embedded cluster: the user each node really runs
as (as root, one per node), and the steps of a stop as they happen (no silent quarter-minute)."""

from __future__ import annotations

import io
import logging
import os
import pwd
from pathlib import Path
from types import SimpleNamespace

from chaosdb.clusters.postgres_ha import cluster, cluster_command
from chaosdb.core.console import PROGRESS, show_progress
from chaosdb.core.errors import ChaosDBError
from chaosdb.embedded.layout import plan_layout
from chaosdb.embedded.runtime import RunAs

ME = RunAs(pwd.getpwuid(os.geteuid()).pw_name, os.geteuid(), os.getegid())


def _layout(directory: Path, users: list[RunAs] | None = None):
    return plan_layout("whl", directory, nodes=3, run_as=ME, users=users)


def _status(layout) -> dict:
    return {"cluster": layout.name, "dir": layout.dir, "kind": "postgres-ha", "run_as": layout.run_as,
            "replication": "sync", "leader": "node1", "etcd_leader": "node1", "healthy": True, "dsn": "postgresql://x",
            "nodes": [{"name": n.name, "host": n.host, "pg_port": n.pg_port, "role": "leader" if i == 0 else "replica",
                       "state": "running" if i == 0 else "streaming", "lag_bytes": 0, "timeline": 1,
                       "etcd": {"healthy": True, "leader": i == 0}, "pids": {"etcd": 10 + i}, "suspended": False}
                      for i, n in enumerate(layout.nodes)]}


def test_status_names_the_user_of_each_node_when_each_has_its_own(tmp_path, monkeypatch, capsys):
    users = [RunAs(f"chaosdb-whl-n{i}", 60000 + i, 60000 + i) for i in (1, 2, 3)]
    layout = _layout(tmp_path, users)
    monkeypatch.setattr(cluster_command, "load_layout", lambda directory: layout)
    monkeypatch.setattr(cluster, "status", _status)
    st = cluster_command.status(SimpleNamespace(), tmp_path)
    assert [n["user"] for n in st["nodes"]] == ["chaosdb-whl-n1", "chaosdb-whl-n2", "chaosdb-whl-n3"]
    cluster_command.show_status(st)
    out = capsys.readouterr().out
    assert "each node runs as its own user" in out and f"runs as {ME.user}" not in out
    rows = {line.split()[0]: line for line in out.splitlines()[3:6]}
    assert [rows[f"node{i}"].split()[-2] for i in (1, 2, 3)] == ["chaosdb-whl-n1", "chaosdb-whl-n2", "chaosdb-whl-n3"]


def test_status_says_the_one_user_when_every_node_shares_it(tmp_path, monkeypatch, capsys):
    layout = _layout(tmp_path)
    monkeypatch.setattr(cluster_command, "load_layout", lambda directory: layout)
    monkeypatch.setattr(cluster, "status", _status)
    cluster_command.show_status(cluster_command.status(SimpleNamespace(), tmp_path))
    assert f"runs as {ME.user})" in capsys.readouterr().out


def test_down_says_each_step_as_it_goes(tmp_path, monkeypatch):
    layout = _layout(tmp_path / "whl")
    (tmp_path / "whl" / "node1").mkdir(parents=True)
    stopped = []

    def no_patroni(*args, **kwargs):
        raise ChaosDBError("no Patroni answers")

    def stop_node(layout, name, graceful, timeout, components):
        stopped.append((name, components))
        PROGRESS.info("(stop_node %s %s)", name, components[0])
        return {"sigkilled": False}

    monkeypatch.setattr(cluster, "run_as_of", lambda layout: ME)
    monkeypatch.setattr(cluster, "patroni_client", no_patroni)
    monkeypatch.setattr(cluster, "stop_node", stop_node)
    monkeypatch.setattr(cluster, "node_processes", lambda path, data_dir: [])
    monkeypatch.setattr(cluster, "stop_chaosd", lambda directory: {"stopped": False})
    out = io.StringIO()
    handler = show_progress(out)
    try:
        result = cluster.down(layout, purge=True, timeout=30)
    finally:
        PROGRESS.removeHandler(handler)
        PROGRESS.setLevel(logging.NOTSET)
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines[0].startswith("stopping cluster whl: Patroni and PostgreSQL on node1, node2, node3")
    etcd = lines.index("stopping etcd on node1, node2, node3")
    assert all("patroni" in line for line in lines[1:etcd]) and all("etcd" in line for line in lines[etcd + 1:-1])
    assert lines[-1] == f"every process stopped; removing {tmp_path / 'whl'} (data, logs, the staged runtime)"
    assert result["purged"] and not (tmp_path / "whl").exists() and len(stopped) == 6
