"""Opt-in: the CockroachDB activities against a real cluster / a real binary (none can run on CI here).

* ``CHAOSDB_COCKROACH_URL`` (e.g. ``postgresql://root@host:26257/defaultdb?sslmode=disable``) plus, for the CLI
  checks, ``CHAOSDB_COCKROACH_HOST`` and ``CHAOSDB_COCKROACH_INSECURE=true`` or ``CHAOSDB_COCKROACH_CERTS_DIR``: read-only probes
  (node status over SQL and CLI agree, leaseholder lookup, table leaseholders).
* ``CHAOSDB_REAL_COCKROACH_BIN`` (a cockroach binary): a 3-node local cluster is created in a temp dir, a
  node killed and restarted, a node drained, and everything removed.
"""

from __future__ import annotations

import os
import shutil

import pytest

from chaosdb.cockroach import actions, probes
from chaosdb.cockroach.channels import run_sql

URL = os.environ.get("CHAOSDB_COCKROACH_URL")
BIN = os.environ.get("CHAOSDB_REAL_COCKROACH_BIN")


@pytest.mark.skipif(not URL, reason="set CHAOSDB_COCKROACH_URL to run against a real CockroachDB")
def test_probes_against_a_real_cluster():
    sql_cfg = {"cockroach_channel": "sql", "cockroach_url": URL}
    nodes = probes.node_status(sql_cfg)
    assert nodes and any(n["is_live"] for n in nodes)
    run_sql(sql_cfg, "CREATE TABLE IF NOT EXISTS chaosdb_probe (id INT PRIMARY KEY, v STRING)")
    run_sql(sql_cfg, "UPSERT INTO chaosdb_probe VALUES (1, 'x')")
    lh = probes.leaseholder_of_row("chaosdb_probe", [1], configuration=sql_cfg)
    assert lh["lease_holder"] in {n["id"] for n in nodes} and lh["node"]["address"]
    leases = probes.table_leaseholders("chaosdb_probe", configuration=sql_cfg)
    assert sum(leases["leases_by_node"].values()) == len(leases["ranges"]) >= 1
    if shutil.which(os.environ.get("CHAOSDB_COCKROACH_BIN", "cockroach")) and os.environ.get("CHAOSDB_COCKROACH_HOST"):
        cli_cfg = {"cockroach_channel": "cli", "cockroach_host": os.environ["CHAOSDB_COCKROACH_HOST"],
                   "cockroach_insecure": os.environ.get("CHAOSDB_COCKROACH_INSECURE", ""),
                   "cockroach_certs_dir": os.environ.get("CHAOSDB_COCKROACH_CERTS_DIR", ""),
                   "cockroach_bin": os.environ.get("CHAOSDB_COCKROACH_BIN", "cockroach")}
        assert {n["id"] for n in probes.node_status(cli_cfg)} == {n["id"] for n in nodes}


@pytest.mark.skipif(not BIN, reason="set CHAOSDB_REAL_COCKROACH_BIN to a cockroach binary to run a local cluster")
def test_real_local_cluster_kill_restart_drain(tmp_path, monkeypatch):
    from chaosdb.clusters.cockroach import localcluster

    monkeypatch.setenv("CHAOSDB_HOME", str(tmp_path / "home"))
    d = tmp_path / "crdb"
    try:
        res = localcluster.up(d, "crdb", nodes=3, address_base="127.0.33.1", cockroach_bin=BIN, timeout=180)
        cfg = res["configuration"]
        assert res["live_nodes"] == 3
        actions.wait_until_healthy(timeout_s=300, interval_s=2, configuration=cfg)
        killed = actions.kill_node(3, signal="KILL", configuration=cfg)
        assert killed["exited"]
        back = actions.restart_killed_nodes(timeout_s=120, configuration=cfg)
        assert back["restarted"][0]["back"]["status"]["is_live"]
        drained = actions.drain_node(2, drain_wait_s=30, configuration=cfg)
        assert drained["ok"] and drained["remaining"][-1] == 0
        actions.restart_node(2, timeout_s=120, configuration=cfg)
        actions.wait_until_healthy(timeout_s=300, interval_s=2, configuration=cfg)
    finally:
        localcluster.down(d, purge=True)
