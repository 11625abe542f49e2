"""The local fault engine on the real embedded cluster: effects measured, rollbacks leave nothing.

Needs root (cgroups, iptables) and the iptables command; skipped otherwise with the reason.
Every test ends with the residue probe finding nothing (the ``no_residue`` fixture).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest

from chaosdb.clusters.postgres_ha import cluster as lc
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.results import record_problems
from chaosdb.embedded.processes import cpu_time_s, node_processes
from chaosdb.faults import actions, probes
from tests.chaosrun import ChaosRun
from tests.polling import poll

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="faults change cgroups and packet filters: root only"),
    pytest.mark.skipif(not (shutil.which("iptables") or os.path.exists("/usr/sbin/iptables")),
                       reason="iptables is not installed (apt-get install iptables)"),
]


@pytest.fixture
def no_residue(healthy, config):
    from chaosdb.faults.engine import take_timer_results

    take_timer_results()  # results of earlier timed faults are reported once, by the next rollback
    assert probes.no_fault_residue(), probes.fault_residue()
    yield healthy
    poll(lambda: probes.fault_residue()["clean"], 30)  # a timer that has just reverted may still be exiting
    left = probes.fault_residue()
    if not left["clean"]:
        actions.cleanup_faults()
    assert left["clean"], f"fault residue after the test: {left}"


def _leader(layout) -> str:
    return lc.status(layout)["leader"]


def _node_conn(layout, name: str) -> psycopg.Connection:
    return psycopg.connect(layout.node_dsn(name), autocommit=True)


def _retrans() -> int:
    lines = [ln.split() for ln in open("/proc/net/snmp") if ln.startswith("Tcp:")]
    return int(lines[1][lines[0].index("RetransSegs")])


def _rtts_on(c, n: int, sql: str) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        c.execute(sql).fetchall()
        out.append(time.perf_counter() - t)
    return out


def _query_rtts(dsn: str, n: int = 15, sql: str = "select 1") -> list[float]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return _rtts_on(c, n, sql)


# ---------------------------------------------------------------------------
# CPU and memory


def test_cpu_quota_throttles_the_node_to_about_its_quota(no_residue, config):
    layout = no_residue
    leader = _leader(layout)
    conn = _node_conn(layout, leader)
    pid = conn.execute("select pg_backend_pid()").fetchone()[0]
    def spin():
        try:
            conn.execute("set statement_timeout = '20s'")
            conn.execute("select count(*) from generate_series(1, 4000000000)")
        except psycopg.Error:
            pass

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    time.sleep(0.5)
    # rates divide by the wall time measured around the reads: on a busy machine a sleep lasts longer than asked
    w0, c0 = time.monotonic(), cpu_time_s([pid])
    time.sleep(3.0)
    free_rate = (cpu_time_s([pid]) - c0) / (time.monotonic() - w0)
    assert free_rate > 0, "the busy backend got no CPU at all before the fault"
    # the quota is set from what this backend got unthrottled (a busy machine gives it less than a core):
    # a quarter of that, for the whole node (this backend is one of its processes)
    period_s = 0.5
    quota_s = round(max(0.002, free_rate / 4 * period_s), 4)
    quota_rate = quota_s / period_s
    rec = actions.limit_cpu(target=leader, quota_s=quota_s, period_s=period_s, configuration=config)
    assert pid in rec["cgroups"][0]["pids"] and not record_problems(rec), rec
    time.sleep(period_s + 0.1)  # let the current period run out
    w1, c1 = time.monotonic(), cpu_time_s([pid])
    time.sleep(4.0)
    limited_rate = (cpu_time_s([pid]) - c1) / (time.monotonic() - w1)
    reverted = actions.revert_faults(configuration=config)
    assert reverted["targets"] == [{"name": leader}] and not record_problems(reverted), reverted
    done = reverted["reverted"]
    conn.cancel()
    t.join(10)
    conn.close()
    # the kernel caps the node at the quota (edges of the 4 s window: at most one period's quota more)
    assert limited_rate <= quota_rate * 1.25, f"throttled backend used {limited_rate:.3f} CPU s/s (quota {quota_rate:.3f})"
    assert limited_rate < free_rate / 2, (f"throttled backend used {limited_rate:.3f} CPU s/s, unthrottled "
                                          f"{free_rate:.3f}: the quota did not slow it down")
    assert limited_rate > 0, "the throttled backend got no CPU at all: a quota throttles, it does not stop"
    stats = done[0]["stats"]["cgroups"][leader]
    assert stats["throttled_periods"] >= 4 and stats["throttled_s"] > 0
    # every process is back where it was: none is left in a chaosdb group
    node = layout.node(leader)
    for p in node_processes(node.path, node.data_dir):
        try:
            groups = Path(f"/proc/{p.pid}/cgroup").read_text()
        except FileNotFoundError:
            continue  # a short-lived process (a health-check connection's backend) ended since the listing
        assert "/chaosdb/" not in groups, f"pid {p.pid} ({p.kind}) is still in a chaosdb group"


def test_memory_limit_caps_usage_and_reports_pressure(no_residue, config):
    layout = no_residue
    st = lc.status(layout)
    replica = next(n["name"] for n in st["nodes"] if n["name"] != st["leader"])
    limit_mb = 64
    # the PostgreSQL processes only: etcd's footprint depends on what ran before, and an OOM-killed etcd member
    # is another test
    rec = actions.limit_memory(target=replica, limit_mb=limit_mb, components=["postgres"], configuration=config)
    path = rec["cgroups"][0]["path"]
    # a big in-memory sort on a backend of that node (forked after the fault: born inside the limit)
    err = None
    try:
        with _node_conn(layout, replica) as c:
            c.execute("set work_mem = '1GB'; set statement_timeout = '60s'")
            c.execute("select count(*) from (select md5(g::text) m from generate_series(1, 3000000) g "
                      "order by 1) s").fetchone()
    except psycopg.Error as exc:
        err = exc  # the OOM killer took the backend: the expected outcome of the pressure
    active = probes.active_faults()
    stats = active[0]["stats"]["cgroups"][replica]
    done = actions.revert_faults(configuration=config)["reverted"]
    assert not os.path.exists(path)
    final = done[0]["stats"]["cgroups"][replica]
    assert stats["max_usage_bytes"] <= limit_mb * 1024 * 1024 + 64 * 1024, stats  # (charged in pages)
    assert stats["max_usage_bytes"] >= 0.9 * limit_mb * 1024 * 1024, stats  # the sort pushed usage to the cap
    # what happened on pressure is reported: here the kernel OOM-kills the backend (the server closes the
    # connection); newer kernels no longer count v1 failcnt, so limit_hits may stay 0
    assert err is not None and final["oom_kills"] >= 1, (str(err), str(final))
    lc.wait_healthy(layout, timeout=90)  # a killed backend makes PostgreSQL restart its backends


# ---------------------------------------------------------------------------
# network


def test_partition_of_the_leader_elects_another_and_peers_lose_it(no_residue, config):
    layout = no_residue
    leader = _leader(layout)
    rec = actions.partition_node(target="leader", scope="peers", configuration=config)
    assert rec["targets"][0]["name"] == leader
    peers = [n for n in layout.nodes if n.name != leader]
    new_leader = None
    lost_from_peers = False
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and not (new_leader and lost_from_peers):
            time.sleep(2)
            # a peer's Patroni: the partitioned member is no longer a running member in its view (its API may be
            # slow to answer while the DCS re-elects: a poll that times out is just tried again)
            try:
                with urllib.request.urlopen(f"{peers[0].api_url}/cluster", timeout=3) as r:
                    members = {m["name"]: m for m in json.load(r)["members"]}
            except (OSError, ValueError):
                continue
            lost_from_peers = leader not in members or members[leader].get("state") not in ("running", "streaming")
            if members.get(peers[0].name, {}).get("role") == "leader" or \
                    members.get(peers[1].name, {}).get("role") == "leader":
                new_leader = next(n for n, m in members.items() if m.get("role") == "leader")
    finally:
        done = actions.revert_faults(configuration=config)["reverted"]
    assert new_leader and new_leader != leader, "no other node became leader while the leader was partitioned"
    assert lost_from_peers
    # every packet of the client's connections to the target goes through the fault's first rule (for bursty
    # loss it jumps to the Gilbert chains, dropped or not): none there means the fault missed this traffic
    assert done[0]["stats"]["packets_matched"] > 0, done
    lc.wait_healthy(layout, timeout=120)


def test_partitioned_etcd_member_loses_quorum_while_clients_still_reach_it(no_residue, config):
    layout = no_residue
    target = layout.nodes[2]
    actions.partition_node(target=target.name, scope="peers", configuration=config)
    try:
        healthy = True
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and healthy:
            time.sleep(1)
            try:  # asked by us (a client: not partitioned) the member says whether it has a leader
                with urllib.request.urlopen(f"{target.etcd_client_url}/health", timeout=3) as r:
                    healthy = json.load(r).get("health") == "true"
            except OSError:
                healthy = False
        peer_ok = []
        for n in layout.nodes[:2]:
            with urllib.request.urlopen(f"{n.etcd_client_url}/health", timeout=5) as r:
                peer_ok.append(json.load(r).get("health") == "true")
    finally:
        actions.revert_faults(configuration=config)
    assert not healthy, "the partitioned etcd member still reports health: its peers still reach it"
    assert all(peer_ok), "the majority side lost its etcd quorum"
    lc.wait_healthy(layout, timeout=120)


@pytest.mark.parametrize("kind", ["random", "bursty"])
def test_loss_raises_retransmissions_and_latency(no_residue, config, kind):
    layout = no_residue
    leader = _leader(layout)
    dsn = layout.node_dsn(leader)
    sql = "select repeat('x', 30000)"
    base = _query_rtts(dsn, 40, sql)
    # connect before the loss: what is measured is the queries' latency; a connection set up under 15 % loss
    # can lose its SYNs for longer than connect_timeout (1 s + 2 s retransmissions), which is another effect.
    # Under bursty loss TCP's retransmission backoff can stall one query for minutes: keepalives and
    # tcp_user_timeout bound it (a query that dies that way counts with the time it took), and the loss
    # phase stops after 60 s whatever happens.
    bounded = dict(autocommit=True, keepalives=1, keepalives_idle=3, keepalives_interval=1, keepalives_count=3,
                   tcp_user_timeout=8000)
    conn = psycopg.connect(dsn, **bounded)
    r0 = _retrans()
    if kind == "random":
        actions.lose_packets(target=leader, loss_percent=15, scope="clients", configuration=config)
    else:
        actions.lose_packets_in_bursts(target=leader, loss_percent=15, mean_burst_packets=4, scope="clients",
                                       configuration=config)
    lossy: list[float] = []
    died = False
    try:
        deadline = time.monotonic() + 60
        while len(lossy) < 40 and time.monotonic() < deadline:
            t = time.perf_counter()
            try:
                conn.execute(sql).fetchall()
            except psycopg.OperationalError:
                conn.close()
                lossy.append(time.perf_counter() - t)
                died = True
                break  # the connection died under the loss: that is latency enough
            lossy.append(time.perf_counter() - t)
    finally:
        done = actions.revert_faults(configuration=config)["reverted"]
        conn.close()
    retrans = _retrans() - r0
    # a connection that died under a burst did so after its retransmissions backed off past tcp_user_timeout (a
    # few, doubling from 200 ms); one that lived through 40 queries under 15 % loss retransmitted many times
    assert retrans >= (1 if died else 5), f"only {retrans} TCP retransmissions with 15 % loss ({len(lossy)} queries)"
    assert sum(lossy) > 5 * sum(base) and max(lossy) >= 0.2, (sum(base), sum(lossy), max(lossy))
    assert done[0]["stats"]["packets_matched"] > 0
    after = _query_rtts(dsn, 20, sql)
    assert max(after) < 0.2


def test_bandwidth_limit_caps_throughput(no_residue, config):
    from chaosdb.faults.traffic import burst_bytes

    layout = no_residue
    leader = _leader(layout)
    dsn = layout.node_dsn(leader)
    sql = "select repeat('x', 50000)"
    t = time.perf_counter()
    _query_rtts(dsn, 20, sql)
    fast = time.perf_counter() - t
    actions.limit_bandwidth(target=leader, rate_kbit=2000, scope="clients", configuration=config)
    try:
        t = time.perf_counter()
        _query_rtts(dsn, 20, sql)  # ~1 MB out of the node
        slow = time.perf_counter() - t
    finally:
        done = actions.revert_faults(configuration=config)["reverted"]
    sent = done[0]["stats"]["tc"][0]["bytes"]
    rate_kbit = (sent - burst_bytes(2000)) * 8 / 1000 / slow  # minus the htb burst allowance
    assert sent > 1_000_000
    assert rate_kbit <= 2000 * 1.15, f"{rate_kbit:.0f} kbit/s through a 2000 kbit/s limit"
    assert slow > 10 * fast


def test_delay_through_the_proxy_adds_latency_and_resets_open_connections(no_residue, config):
    layout = no_residue
    leader = _leader(layout)
    dsn = layout.node_dsn(leader)
    base = statistics.median(_query_rtts(dsn))
    open_conn = psycopg.connect(dsn, autocommit=True)
    rec = actions.delay_traffic(target=leader, delay_ms=40, jitter_ms=0, direction="both", configuration=config)
    try:
        with pytest.raises(psycopg.OperationalError):
            open_conn.execute("select 1")  # reset: it has to reconnect (through the proxy)
        delayed = statistics.median(_query_rtts(dsn))
    finally:
        open_conn.close()
        actions.revert_faults(configuration=config)
    after = statistics.median(_query_rtts(dsn))
    assert "reset 1 existing" in " ".join(rec["notes"]) or "reset" in " ".join(rec["notes"])
    assert base < 0.01 and after < 0.01
    assert 0.075 <= delayed <= 0.14, f"median round trip {delayed * 1000:.1f} ms with 40 ms each way"


# ---------------------------------------------------------------------------
# safety: errors before injection, timed revert from another process, cleanup, 50 cycles


def test_unknown_target_and_quorum_loss_are_refused_before_anything(no_residue, config):
    with pytest.raises(ChaosDBError, match="unknown target"):
        actions.partition_node(target="node9", configuration=config)
    with pytest.raises(ChaosDBError, match="majority|quorum"):
        actions.partition_node(target="any", count=2, configuration=config)
    with pytest.raises(ChaosDBError, match="component"):
        actions.limit_cpu(target="leader", components=["kernel"], configuration=config)
    assert probes.no_fault_residue()


def test_timed_fault_reverts_itself_when_the_injecting_process_is_killed(no_residue, config):
    code = ("import sys, os, signal\n"
            "from chaosdb.faults import actions\n"
            f"r = actions.lose_packets(target='leader', loss_percent=50, duration_s=2, configuration={config!r})\n"
            "print(r['fault_id'], flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    started = time.time()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    fault_id = proc.stdout.strip()
    assert any(f["id"] == fault_id for f in probes.active_faults())
    # the detached reverter ends it; how late it may be on a busy machine is not this test's business
    assert poll(probes.no_fault_residue, timeout=120, every=0.1), probes.fault_residue()
    # the rollback still learns what the fault did (once), and the timer did not end it early
    done = actions.revert_faults(configuration=config)["reverted"]
    assert [(d["id"], d["reverted_by"]) for d in done] == [(fault_id, "timer")]
    assert done[0]["reverted_at"] >= started + 2
    assert done[0]["stats"]["packets_matched"] > 0
    assert actions.revert_faults(configuration=config)["reverted"] == []


def test_cleanup_removes_faults_whose_records_are_lost(no_residue, config):
    from chaosdb.core.faultrecords.records import faults_dir

    st = lc.status(no_residue)
    replica = next(n["name"] for n in st["nodes"] if n["name"] != st["leader"])
    # (a partition from clients hides the node from our own status queries too: inject it last)
    actions.limit_cpu(target=replica, quota_s=0.5, period_s=1.0, configuration=config)
    actions.limit_bandwidth(target=st["leader"], rate_kbit=100000, configuration=config)
    actions.partition_node(target=replica, scope="clients", direction="inbound", configuration=config)
    for f in faults_dir().glob("*.json"):
        f.unlink()  # as if the records were lost: the tagged objects must still be found
    left = probes.fault_residue()
    assert left["iptables"] and left["cgroups"] and left["tc"] and not left["records"]
    proc = subprocess.run([sys.executable, "-m", "chaosdb.cli", "faults", "cleanup", "--all-clusters"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "clean" in proc.stdout
    assert probes.no_fault_residue()


def test_cleanup_of_one_cluster_leaves_the_faults_of_another(no_residue, config):
    """A game day's between-run restore cleans its own cluster: it reverts that cluster's recorded faults and
    nothing else. Another cluster's live fault stays; a fault of this cluster whose record is not here (it lives in
    another records directory, or was lost) is still this cluster's by the tag its chains carry, and goes too."""
    from chaosdb.core.faultrecords.records import faults_dir, load_record
    from chaosdb.faults import engine

    st = lc.status(no_residue)
    replica = next(n["name"] for n in st["nodes"] if n["name"] != st["leader"])
    try:
        other = actions.limit_cpu(target=replica, quota_s=0.5, period_s=1.0, configuration=config)["fault_id"]
        rec = load_record(other)
        assert rec is not None
        rec.cluster_dir = "/var/lib/another-cluster"  # as if another cluster on this machine had injected it
        rec.save()
        mine = actions.limit_bandwidth(target=st["leader"], rate_kbit=100000, configuration=config)["fault_id"]
        unknown = actions.partition_node(target=replica, scope="clients", direction="inbound",
                                         configuration=config)["fault_id"]
        (faults_dir() / f"{unknown}.json").unlink()  # its record lives elsewhere, as far as we can tell
        done = engine.cleanup(config["chaosdb_cluster_dir"])
        assert [r["id"] for r in done["reverted"]] == [mine] and done["kept_other_faults"] == [other], done
        assert done["clean"] and done["swept"] and all(unknown in s for s in done["swept"]), done
        left = probes.fault_residue()
        assert [r["id"] for r in left["records"]] == [other] and any(other in g for g in left["cgroups"]), left
        assert not any(unknown in rule or mine in rule for rule in left["iptables"]), left
    finally:
        everything = actions.cleanup_faults()  # the host-wide sweep removes the one without a record too
    assert everything["clean"], everything
    assert probes.no_fault_residue()


def _fault_of_another_live_run(replica: str, config: dict, pid: int) -> str:
    """A CPU fault recorded as made by the live process *pid* on another cluster of this host."""
    from chaosdb.core.faultrecords.records import load_record
    from chaosdb.core.processes import start_time

    other = actions.limit_cpu(target=replica, quota_s=0.5, period_s=1.0, configuration=config)["fault_id"]
    rec = load_record(other)
    rec.cluster_dir, rec.owner_pid, rec.owner_start = "/var/lib/another-cluster", pid, start_time(pid)
    rec.save()
    return other


def test_a_rollback_reverts_its_own_run_and_its_cluster_orphans_only(no_residue, config):
    """Two game days on one host: a run's rollback (``revert_faults``) undoes the faults its own run made and the
    orphans a crashed run left on its own cluster, never a live run's fault on another cluster (issue 32: a first
    run's rollback removed the second cluster's partition). ``all_clusters`` reverts everything."""
    from chaosdb.core.faultrecords.records import load_record

    st = lc.status(no_residue)
    replica = next(n["name"] for n in st["nodes"] if n["name"] != st["leader"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # the other, live run
    try:
        other = _fault_of_another_live_run(replica, config, sleeper.pid)
        orphan = actions.limit_bandwidth(target=st["leader"], rate_kbit=100000, configuration=config)["fault_id"]
        rec = load_record(orphan)
        rec.owner_pid, rec.owner_start = 999_999, 1  # made by a run of this cluster that is gone
        rec.save()
        mine = actions.partition_node(target=replica, scope="clients", direction="inbound",
                                      configuration=config)["fault_id"]
        done = actions.revert_faults(configuration=config)
        assert sorted(r["id"] for r in done["reverted"]) == sorted([orphan, mine]), done
        assert [r["id"] for r in probes.fault_residue()["records"]] == [other]
        # chaosdb faults cleanup names a cluster: the other cluster's fault survives this cluster's cleanup
        proc = subprocess.run([sys.executable, "-m", "chaosdb.cli", "faults", "cleanup", "--dir",
                               config["chaosdb_cluster_dir"]], capture_output=True, text=True)
        assert proc.returncode == 0 and f"kept 1 fault(s) of other clusters or runs ({other})" in proc.stdout, \
            proc.stdout + proc.stderr
        assert load_record(other) is not None
        everything = actions.revert_faults(all_clusters=True, configuration=config)
        assert [r["id"] for r in everything["reverted"]] == [other]
    finally:
        sleeper.kill()
        sleeper.wait()
        actions.cleanup_faults()
    assert probes.no_fault_residue()


CYCLES = {
    "cpu": lambda c: actions.limit_cpu(target="leader", quota_s=0.5, period_s=1.0, configuration=c),
    "memory": lambda c: actions.limit_memory(target="replica", limit_mb=1024, configuration=c),
    "partition": lambda c: actions.partition_node(target="replica", scope="clients", direction="inbound",
                                                  configuration=c),
    "loss": lambda c: actions.lose_packets(target="leader", loss_percent=1, configuration=c),
    "bursty-loss": lambda c: actions.lose_packets_in_bursts(target="leader", loss_percent=1, configuration=c),
    "bandwidth": lambda c: actions.limit_bandwidth(target="leader", rate_kbit=1_000_000, configuration=c),
    "delay": lambda c: actions.delay_traffic(target="replica", delay_ms=1, ports=["patroni"],
                                             existing_connections="keep", configuration=c),
}


@pytest.mark.parametrize("kind", list(CYCLES))
def test_fifty_inject_revert_cycles_leave_no_residue(no_residue, config, kind):
    for i in range(50):
        rec = CYCLES[kind](config)
        assert rec["kind"] == kind
        assert not probes.no_fault_residue()
        done = actions.revert_faults(configuration=config)["reverted"]
        assert [d["id"] for d in done] == [rec["fault_id"]]
        left = probes.fault_residue()
        assert left["clean"], f"cycle {i}: {left}"


def test_interrupted_chaos_run_leaves_no_fault_behind(no_residue, config, tmp_path):
    """Ctrl-C while a fault without duration is active: chaos run skips the rollbacks, the faults control reverts it."""
    experiment = {
        "version": "1.0.0", "title": "interrupted while a fault is active", "description": "test",
        "configuration": {"chaosdb_cluster_dir": config["chaosdb_cluster_dir"]},
        "controls": [{"name": "local-faults", "provider": {"type": "python", "module": "chaosdb.faults.control"}}],
        "method": [{"type": "action", "name": "lose-1pct", "pauses": {"after": 60},
                    "provider": {"type": "python", "module": "chaosdb.faults.actions", "func": "lose_packets",
                                 "arguments": {"target": "leader", "loss_percent": 1}}}],
        "rollbacks": [{"type": "action", "name": "revert", "provider": {
            "type": "python", "module": "chaosdb.faults.actions", "func": "revert_faults"}}],
    }
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(experiment))
    run = ChaosRun(["--no-log-file", "run", str(path), "--journal-path", str(tmp_path / "journal.json")],
                   cwd=tmp_path)
    # Interrupt during the pause, once the action returned. (A SIGINT that lands inside the action is
    # answered by chaoslib only after the action's pauses.after: its finally block sleeps before re-raising.)
    try:
        assert run.wait_for("Pausing after activity"), "the action never completed: " + run.output[-2000:]
        assert probes.active_faults(), "the fault is not active during the pause"
    finally:
        run.interrupt()
    out = run.output
    assert probes.no_fault_residue(), (probes.fault_residue(), out[-2000:])
    journal = json.loads((tmp_path / "journal.json").read_text())
    assert journal["status"] == "interrupted", journal["status"]
    # chaoslib's default rollback strategy skips rollbacks of an interrupted run: the faults control cleaned up
    assert journal["rollbacks"] == [], journal["rollbacks"]


def _partition_experiment(cluster_dir: str, pause_s: int, samples: str) -> dict:
    return {
        "version": "1.0.0", "title": f"partition a replica of {cluster_dir}", "description": "two game days",
        "configuration": {"chaosdb_cluster_dir": cluster_dir},
        "controls": [{"name": "faults", "provider": {"type": "python", "module": "chaosdb.faults.control"}},
                     {"name": "report", "provider": {"type": "python", "module": "chaosdb.report.control",
                                                     "arguments": {"out_dir": samples}}}],
        "method": [{"type": "action", "name": "partition-a-replica", "pauses": {"after": pause_s},
                    "provider": {"type": "python", "module": "chaosdb.faults.actions", "func": "partition_node",
                                 "arguments": {"target": "replica", "scope": "clients", "direction": "inbound"}}}],
        "rollbacks": [{"type": "action", "name": "revert", "provider": {
            "type": "python", "module": "chaosdb.faults.actions", "func": "revert_faults"}}],
    }


def test_two_game_days_on_one_host_keep_their_faults_and_folders_apart(no_residue, config, tmp_path):
    """Issue 32: two clusters on one host, each with a `chaos run` partitioning one of its replicas at the same time
    (one records folder, as two runs of one user share). The first run's rollback reverts its own partition only;
    the second cluster's partition stays until its own rollback. A third run wanting a folder a live run writes is
    refused before it injects anything."""
    from chaosdb.core.faultrecords.records import load_records
    from chaosdb.embedded.state import load_layout
    from tests.conftest import removed_afterwards

    chaos = str(Path(sys.executable).parent / "chaos")
    with removed_afterwards("chaosdb-second-") as home:
        second = home / "second"
        lc.up(second, "second", nodes=3, address_base="127.0.0.71", timeout=120)
        runs = {}
        try:
            for name, cdir, pause in (("a", config["chaosdb_cluster_dir"], 8), ("b", str(second), 25)):
                path = tmp_path / f"{name}.json"
                path.write_text(json.dumps(_partition_experiment(cdir, pause, str(tmp_path / f"report-{name}"))))
                runs[name] = subprocess.Popen([chaos, "--no-log-file", "run", str(path), "--journal-path",
                                               str(tmp_path / f"{name}.journal.json")], cwd=tmp_path,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            both = poll(lambda: len({r.cluster_dir for r in load_records()}) == 2, 90)
            assert both, [r.summary() for r in load_records()]
            faults = {os.path.realpath(r.cluster_dir): r.id for r in load_records()}
            # a third run wanting b's report folder while b runs: refused before anything is injected
            clash = tmp_path / "c.json"
            clash.write_text(json.dumps(_partition_experiment(str(second), 0, str(tmp_path / "report-b"))))
            third = subprocess.run([chaos, "--no-log-file", "run", str(clash), "--journal-path",
                                    str(tmp_path / "c.journal.json")], cwd=tmp_path, capture_output=True, text=True,
                                   timeout=120)
            assert "is being written by another run" in third.stdout + third.stderr, third.stdout[-2000:]
            assert json.loads((tmp_path / "c.journal.json").read_text())["run"] == []
            out_a = runs["a"].communicate(timeout=120)[0]
            assert runs["a"].returncode == 0, out_a[-3000:]
            left = {os.path.realpath(r.cluster_dir): r.id for r in load_records()}
            assert left == {os.path.realpath(second): faults[os.path.realpath(second)]}, (left, out_a[-2000:])
            journal_a = json.loads((tmp_path / "a.journal.json").read_text())
            reverted = [r["id"] for r in journal_a["rollbacks"][0]["output"]["reverted"]]
            assert reverted == [faults[os.path.realpath(config["chaosdb_cluster_dir"])]], reverted
            out_b = runs["b"].communicate(timeout=180)[0]
            assert runs["b"].returncode == 0, out_b[-3000:]
            assert not load_records()
            # each report, in its own folder, is about its own run's fault only
            for name, cdir in (("a", config["chaosdb_cluster_dir"]), ("b", str(second))):
                copy = json.loads((tmp_path / f"report-{name}" / "journal.json").read_text())
                assert copy["run"][0]["output"]["fault_id"] == faults[os.path.realpath(cdir)], name
                assert (tmp_path / f"report-{name}" / "report.html").exists()
        finally:
            for proc in runs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            lc.down(load_layout(second), purge=True)


def test_after_a_sigkill_the_documented_recovery_removes_exactly_that_runs_leftovers(no_residue, config, tmp_path):
    """`chaos run` SIGKILLed while its partition is active leaves the partition (no rollback ran, and it has no
    timer). `chaosdb faults cleanup --dir <cluster>` reverts exactly that: another run's live fault on another
    cluster stays."""
    import signal as _signal

    from chaosdb.core.faultrecords.records import load_record, load_records

    st = lc.status(no_residue)
    replica = next(n["name"] for n in st["nodes"] if n["name"] != st["leader"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # the other, live run
    try:
        other = _fault_of_another_live_run(replica, config, sleeper.pid)
        path = tmp_path / "killed.json"
        path.write_text(json.dumps(_partition_experiment(config["chaosdb_cluster_dir"], 300,
                                                         str(tmp_path / "report-killed"))))
        run = subprocess.Popen([str(Path(sys.executable).parent / "chaos"), "--no-log-file", "run", str(path)],
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert poll(lambda: any(r.kind == "partition" for r in load_records()), 90)
        killed = next(r.id for r in load_records() if r.kind == "partition")
        run.send_signal(_signal.SIGKILL)
        run.wait()
        assert load_record(killed) is not None  # the partition outlived its run
        proc = subprocess.run([sys.executable, "-m", "chaosdb.cli", "faults", "cleanup", "--dir",
                               config["chaosdb_cluster_dir"], "--json"], capture_output=True, text=True)
        result = json.loads(proc.stdout)
        assert [r["id"] for r in result["reverted"]] == [killed] and result["kept_other_faults"] == [other], result
        assert load_record(other) is not None and not any(killed in rule for rule in probes.fault_residue()["iptables"])
    finally:
        sleeper.kill()
        sleeper.wait()
        actions.cleanup_faults()
    assert probes.no_fault_residue()
