"""Issue 43, items 1 and 2, on real clusters: a run never stops or purges a cluster it did not create, and a
cluster's live faults go before the cluster does and can always be found again for that cluster.

* A shipped experiment whose control says ``down_after: true, purge: true`` runs against the session's cluster
  (made by ``cluster.up`` as ``chaosdb cluster up`` makes one): it says at the start that it leaves the cluster
  running, and the cluster is there, healthy, afterwards.
* A cluster of its own with a live partition: ``chaosdb faults residue --name`` answers for that cluster alone, its
  chains are found (and removed by ``cleanup --name``) even when their record is lost, the record lives outside the
  clusters' home, and ``chaosdb cluster down --purge`` reverts the partition first, says so, and leaves no rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.integration


def test_a_shipped_experiment_leaves_a_cluster_it_did_not_create_running(tmp_path, healthy, tpcc_db):
    from chaosdb.clusters.postgres_ha import cluster
    from chaosdb.embedded.state import STATE_FILE

    directory = Path(healthy.dir)
    env = {**os.environ, "CHAOSDB_HOME": str(directory.parent), "CHAOSDB_CLUSTER": directory.name,
           "CHAOSDB_REPORT_DIR": str(tmp_path / "run"), "CHAOSDB_BASELINE_S": "5"}
    experiment = json.loads((ROOT / "experiments" / "hang-primary.json").read_text())
    control = next(c for c in experiment["controls"] if c["provider"]["module"] == "chaosdb.clusters.postgres_ha.control")
    assert control["provider"]["arguments"]["down_after"] is True and control["provider"]["arguments"]["purge"] is True
    proc = subprocess.run([str(BIN / "chaos"), "--no-log-file", "run", "--journal-path", str(tmp_path / "j.json"),
                           str(ROOT / "experiments" / "hang-primary.json")], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=900, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert f"cluster {healthy.name} existed before this run (created by 'chaosdb cluster up'): this run uses it " \
           "and leaves it running (down_after and purge: only for a cluster a run creates)" in out, out[-4000:]
    assert "removing cluster" not in out and "stopped and purged" not in out
    journal = json.loads((tmp_path / "j.json").read_text())
    assert journal["chaosdb_cluster"]["may_take_down"] is False
    assert (directory / STATE_FILE).exists(), "the run purged a cluster it did not create"
    health = cluster.wait_healthy(healthy, timeout=120)
    assert health["leader"]


def _chaosdb(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "chaosdb"), *args], capture_output=True, text=True, env=env, timeout=600,
                          stdin=subprocess.DEVNULL)


def test_cluster_down_reverts_its_live_partition_first_and_its_faults_are_found_per_cluster(cluster_root, monkeypatch):
    from chaosdb.core.faultrecords.records import faults_dir, load_record
    from chaosdb.faults import actions, netfilter
    from chaosdb.faults.netfilter import cluster_tag

    home = cluster_root / "ownership-home"  # reachable by the nodes' users, unlike a test's tmp_path
    monkeypatch.delenv("CHAOSDB_FAULTS_DIR", raising=False)  # the default place: outside every cluster's home
    monkeypatch.setenv("CHAOSDB_HOME", str(home))
    env = {**os.environ, "CHAOSDB_HOME": str(home)}
    env.pop("CHAOSDB_FAULTS_DIR", None)
    directory = home / "owned"
    up = _chaosdb(env, "cluster", "up", "--name", "owned", "--address-base", "127.0.0.121", "--timeout", "180")
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
    try:
        assert not str(faults_dir()).startswith(str(home)), "fault records must outlive the clusters' home"
        tag = cluster_tag(directory)
        fault = actions.partition_node(target="replica", cluster="owned")
        fault_id = fault["fault_id"]
        assert netfilter.tagged_rules(tag), "the partition's chains carry the cluster's tag"

        residue = _chaosdb(env, "faults", "residue", "--name", "owned", "--json")
        assert residue.returncode == 1
        found = json.loads(residue.stdout)
        assert [r["id"] for r in found["records"]] == [fault_id] and found["iptables"]
        other = _chaosdb(env, "faults", "residue", "--name", "someone-else", "--json")
        assert other.returncode == 0 and json.loads(other.stdout)["clean"], other.stdout

        # the record lost (a home removed by hand before this fix): its chains are still the cluster's
        record = load_record(fault_id)
        assert record is not None
        saved = record.path.read_text()
        record.path.unlink()
        lost = json.loads(_chaosdb(env, "faults", "residue", "--name", "owned", "--json").stdout)
        assert not lost["records"] and lost["iptables"], lost
        record.path.write_text(saved)  # put it back: cluster down reverts through it

        down = _chaosdb(env, "cluster", "down", "--name", "owned", "--purge")
        assert down.returncode == 0, down.stdout[-2000:] + down.stderr[-2000:]
        assert f"reverted partition fault {fault_id} on " in down.stdout, down.stdout
        assert "data removed" in down.stdout
        assert not netfilter.tagged_rules(tag), "cluster down left the partition's rules on the host"
        assert load_record(fault_id) is None
        after = _chaosdb(env, "faults", "residue", "--name", "owned")
        assert after.returncode == 0 and "clean" in after.stdout, after.stdout
    finally:
        _chaosdb(env, "faults", "cleanup", "--name", "owned")
        _chaosdb(env, "cluster", "down", "--name", "owned", "--purge")
    assert not directory.exists()


def test_a_cluster_left_without_records_gets_its_chains_removed_by_cleanup_for_that_cluster(tmp_path, monkeypatch):
    """A chain of this cluster whose record is gone is removed by ``faults cleanup --name`` and nothing else is."""
    from chaosdb.faults import netfilter
    from chaosdb.faults.netfilter import cluster_tag

    if os.geteuid() != 0:
        pytest.skip("iptables needs root")
    mine, other = cluster_tag(tmp_path / "home" / "a"), cluster_tag(tmp_path / "home" / "b")
    batch = netfilter.Batch()
    for tag in (mine, other):
        chain = netfilter.chain_name("0badc0de", tag)
        batch.chain("filter", chain)
        batch.rule("filter", chain, ["-s", "127.0.0.250", "-j", "DROP"])
        batch.hook("filter", "INPUT", chain, "0badc0de")
    batch.apply()
    env = {**os.environ, "CHAOSDB_HOME": str(tmp_path / "home")}
    try:
        done = _chaosdb(env, "faults", "cleanup", "--name", "a")
        assert done.returncode == 0, done.stdout + done.stderr
        assert not netfilter.tagged_rules(mine)
        assert netfilter.tagged_rules(other), "cleanup of one cluster removed another cluster's chains"
    finally:
        netfilter.remove_tagged(mine)
        netfilter.remove_tagged(other)
    assert not netfilter.tagged_rules(mine) and not netfilter.tagged_rules(other)
