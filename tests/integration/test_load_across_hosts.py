"""Master/worker load across hosts: the database, the master and two workers each in a network namespace of its
own, joined by veth pairs on a bridge (``tests/netns_hosts.py``); the database is the real embedded cluster
behind HAProxy (Patroni's ``/primary`` check) on its host's address. A worker's link is cut mid-run
(``ip link set ... down``): the master reports it lost, the other worker goes on, every sample reaches the master
once, and nothing is left afterwards (no process, no namespace)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from chaosdb.embedded.processes import pid_alive
from chaosdb.workloads.samples import read_samples, sample_files
from tests.netns_hosts import MASTER, WORKERS, Hosts, database_host, leftover_namespaces, run_load

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]


@pytest.fixture
def haproxy():
    if not shutil.which("haproxy"):
        if os.environ.get("CHAOSDB_REQUIRE_REAL_SERVERS"):
            pytest.fail("haproxy is not installed (.ci/run installs it)")
        pytest.skip("haproxy is not installed")


def test_a_worker_cut_off_its_network_is_reported_lost_and_the_other_goes_on(haproxy):
    root = Path(tempfile.mkdtemp(prefix="chaosdb-test-hosts-"))
    os.chmod(root, 0o755)
    before = leftover_namespaces()
    try:
        with Hosts() as hosts:
            hosts.add(MASTER, 10)
            for i, name in enumerate(WORKERS[:2]):
                hosts.add(name, 11 + i)
            with database_host(hosts, root, warehouses=1) as db:
                result = run_load(hosts, db, root, workers=2, users=8, seconds=20, warmup=3, cut_at_s=4,
                                  after_s=15)
                haproxy_pid, tags = db["haproxy"].pid, hosts.tag
            record, samples = result["record"], result["samples"]
            # the master was given no DSN; the workers reached the database through its host's address
            assert record["settings"]["remote_workers"] == 2 and record["settings"]["workers"] == 0
            lost = record["workers_lost"]
            assert len(lost) == 1 and lost[0]["gone"] == "lost" and lost[0]["mid_run"], record["workers"]
            cut = result["cut_ts"]
            assert cut - 1 <= lost[0]["gone_ts"] and lost[0]["last_batch_ts"] <= cut + 1, (lost, cut)
            stayed = [w for w in record["workers"] if w["gone"] != "lost"]
            assert len(stayed) == 1
            # every sample once, each worker its own file at the master, terminals disjoint
            files = sample_files(samples)
            assert len(files) == 2
            terminals = [{s.terminal for s in read_samples(f)} for f in files]
            assert all(terminals) and not terminals[0] & terminals[1]
            rows = list(read_samples(samples))
            assert len(rows) == record["transactions"] == sum(w["samples"] for w in record["workers"])
            # the other worker went on after the loss was reported
            after = [s for s in rows if s.start_ts > lost[0]["gone_ts"] + 1 and s.outcome == "committed"]
            assert len(after) > 50
            # nothing of the cut-off worker's later transactions reached the master
            cut_file = next(f for f in files if lost[0]["id"] in f.name)
            assert all(s.start_ts <= cut + 1 for s in read_samples(cut_file))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert leftover_namespaces() == before
    assert not any(Path(f"/run/netns/{tags}-{h}").exists() for h in ("sw", "db", "m", "w1", "w2"))
    assert not pid_alive(haproxy_pid) and not pid_alive(record["pid"])
