"""YCSB workload A on the embedded cluster's etcd (a real Raft key-value store): loading, Locust, samples in the
SQL workloads' format, and the acknowledged-put check."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaosdb.load import integrity
from chaosdb.workloads import kv
from chaosdb.workloads.samples import Sample, SampleWriter, read_samples

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True, scope="module")
def clean_etcd_afterwards(pg_cluster):
    """The session cluster's etcd is Patroni's DCS: leave it as small as it was for the tests that follow."""
    yield
    kv.clear_etcd(",".join(pg_cluster.etcd_urls))


def test_ycsb_on_etcd_load_locust_and_acknowledged_puts(pg_cluster, tmp_path, healthy):
    endpoints = ",".join(pg_cluster.etcd_urls)
    kv.clear_etcd(endpoints)
    first = kv.load_etcd(endpoints, 1500)
    assert first == {**first, "records": 1500, "inserted": 1500}
    assert kv.load_etcd(endpoints, 1500)["inserted"] == 0
    samples = tmp_path / "samples"
    env = dict(os.environ, CHAOSDB_LOAD_DSN=endpoints)
    run = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(Path(__file__).parents[2] / "load" / "ycsb.py"), "--headless",
         "-u", "4", "-r", "4", "-t", "8s", "--only-summary", "--ycsb-records", "1500", "--ycsb-backend", "etcd",
         "--chaosdb-samples-dir", str(samples)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = list(read_samples(samples))
    kinds = collections.Counter(s.name for s in rows)
    assert set(kinds) == {"read", "update"} and 0.4 < kinds["read"] / len(rows) < 0.6 and len(rows) > 200
    assert all(s.outcome == "committed" for s in rows)
    updates = [s for s in rows if s.name == "update"]
    assert all(s.key.startswith("user") and int(s.key.rsplit("@", 1)[1]) > 0 for s in updates)
    # the clients spread over the members
    check = integrity.kv_acknowledged_writes(samples=str(samples), dsn=endpoints)
    assert check["missing"] == 0 and check["keys_checked"] == check["acknowledged_puts_keys"] > 0
    # the check does detect a lost write: a put acknowledged at a revision the key never reached
    forged = tmp_path / "forged"
    w = SampleWriter(forged / "samples-1.csv")
    w.add(Sample(1.0, 1.0, "update", "committed", "", 0, 0, f"user1@{10 ** 12}"))
    w.close()
    lost = integrity.kv_acknowledged_writes(samples=str(forged), dsn=endpoints)
    assert lost["missing"] == 1 and lost["lost"][0]["key"] == "user1"


def test_etcd_backend_outcomes_when_members_are_unreachable():
    from chaosdb.workloads.ycsb import Operation
    backend = kv.EtcdBackend("http://127.0.0.1:9,http://127.0.0.1:10", client=0, seed=1, timeout=1)
    s = backend.execute(Operation("update", "user1", 0, "x"), 3)
    assert s.outcome == "conn_error" and s.name == "update" and s.terminal == 3 and s.key == ""
    assert backend.kv.index == 1  # moved to the next endpoint
    assert kv.parse_endpoints("https://secure:2379") == [("secure", 2379)]  # TLS: tests/unit/test_tls.py and the
    with pytest.raises(Exception, match="use http://host:port or https://host:port"):  # secure cluster's KV load
        kv.parse_endpoints("ftp://x:2379")
    with pytest.raises(Exception, match="mix http:// and https://"):
        kv.EtcdKV.of("http://a:2379,https://b:2379")
