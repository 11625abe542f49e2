"""Operation histories recorded on the real embedded cluster and checked (issue: anomalies, not only lost writes).

* PostgreSQL's isolation levels as a reference: with contention, a list-append history run under repeatable read
  (PostgreSQL's snapshot isolation) shows G2-item against serializable and is valid against snapshot isolation;
  under serializable it is valid against serializable; under read committed it is valid against read committed and
  shows what read committed permits (and serializable forbids).
* Replication under a primary kill: the primary is cut from its peers for a few seconds (the replicas fall behind
  while its clients still reach it), its node is killed and the partition healed; with asynchronous replication the commits acknowledged in
  those seconds vanish at the failover and the checker names them, with synchronous replication the commits wait
  for the standby and nothing is lost. An oracle apart from the checker (every acknowledged append against the
  database's final lists) says which is true.
* etcd's register stays linearizable through a leader kill and a partition of a member.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chaosdb.experiment.context import end_run
from chaosdb.history.check import check_history
from chaosdb.history.consistency import prohibited_anomalies
from chaosdb.history.recording import read_history
from chaosdb.load import runner

pytestmark = pytest.mark.usefixtures("pg_cluster")

#: what read committed permits of the cycles (Adya: PL-2 forbids G0, G1a, G1b, G1c)
#: how long at least the primary is cut from its peers before its node is killed: a connection opened before a partition
#: is cut once its opener's next packet marks it (a replica's status message: the embedded cluster's
#: wal_receiver_status_interval, 1 s; the test waits until the primary has heard from no replica for 2 s), and the primary
#: stops serving once it cannot renew its leader key (Patroni's retry_timeout, 5 s)
PARTITION_S = 5
READ_COMMITTED_PERMITS = {"G-single-item", "G-nonadjacent-item", "G2-item", "lost-update"}


def _run(config: dict, samples: Path, workload: str = "list-append", isolation: str = "serializable",
         seconds: float = 8.0, **options) -> dict:
    return runner.start_load(configuration=config, workload=workload, users=8, warmup_s=0, baseline_s=seconds,
                             samples_dir=str(samples), isolation=isolation, observe="none", **options)


def _stop() -> dict:
    try:
        return runner.stop_load()
    finally:
        end_run()


def _load(config: dict, samples: Path, **kw) -> dict:
    _run(config, samples, **kw)
    return _stop()


def _summary(result: dict) -> str:
    return json.dumps({k: result.get(k) for k in ("valid", "anomaly_types", "info", "operations", "not")})


def test_postgresql_isolation_levels_are_what_the_checker_says(healthy, config, tmp_path):
    repeatable = tmp_path / "repeatable-read"
    _load(config, repeatable, isolation="repeatable_read", keys=4, key_window_s=3)
    as_serializable = check_history(repeatable, consistency_model="serializable")
    assert as_serializable["valid"] is False and "G2-item" in as_serializable["anomaly_types"], \
        _summary(as_serializable)
    example = as_serializable["anomalies"]["G2-item"][0]
    assert example["explanation"] and "served_by" in example, example
    as_si = check_history(repeatable, consistency_model="snapshot-isolation")
    assert as_si["valid"] is True, _summary(as_si)

    serializable = tmp_path / "serializable"
    _load(config, serializable, isolation="serializable", keys=4, key_window_s=3)
    result = check_history(serializable, consistency_model="serializable")
    assert result["valid"] is True and result["transactions"] >= 20, _summary(result)  # many abort: 40001

    committed = tmp_path / "read-committed"
    _load(config, committed, isolation="read_committed", keys=4, key_window_s=3)
    as_rc = check_history(committed, consistency_model="read-committed")
    # what read committed permits shows (read skew, write skew, non-repeatable reads in a transaction), nothing
    # it forbids (G0, G1a, G1b, G1c)
    assert as_rc["valid"] is True and as_rc["anomaly_types"], _summary(as_rc)
    assert not set(as_rc["anomaly_types"]) & prohibited_anomalies("read-committed"), _summary(as_rc)
    as_ser = check_history(committed, consistency_model="serializable")
    assert as_ser["valid"] is False, _summary(as_ser)


def test_rw_register_under_serializable_is_valid(healthy, config, tmp_path):
    samples = tmp_path / "rw"
    _load(config, samples, workload="rw-register", isolation="serializable", keys=4, key_window_s=3, seconds=3)
    result = check_history(samples, consistency_model="serializable")
    assert result["model"] == "rw-register" and result["valid"] is True, _summary(result)


def _acknowledged_appends(ops: list[dict]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for op in ops:
        if op["type"] == "ok" and op["f"] == "txn":
            for f, k, v in op["value"]:
                if f == "append":
                    out.setdefault(k, set()).add(v)
    return out


def _final_lists(dsn: str, keys: list[int]) -> dict[int, list[int]]:
    import psycopg

    with psycopg.connect(dsn, connect_timeout=10, target_session_attrs="read-write") as conn:
        rows = conn.execute("SELECT k, v FROM chaosdb_list_append WHERE k = ANY(%s)", (keys,)).fetchall()
    return {k: [int(x) for x in v.split(",")] for k, v in rows}


def _primary_view(layout, leader: str) -> tuple[str, dict[str, float], str]:
    """The primary's current WAL position and, for each replica streaming from it, the seconds since it last heard
    from that replica (``pg_stat_replication.reply_time``), and why the position is missing: ('', {}, why) when it
    does not answer or is in recovery."""
    import psycopg

    try:
        with psycopg.connect(layout.node_dsn(leader), connect_timeout=2) as conn:
            lsn = conn.execute("SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn() END"
                               ).fetchone()[0]
            rows = conn.execute("SELECT application_name, extract(epoch FROM now() - reply_time) "
                                "FROM pg_stat_replication").fetchall()
    except psycopg.Error as exc:
        return "", {}, f"{type(exc).__name__}: {str(exc).strip()}"
    return ((str(lsn) if lsn is not None else ""), {str(n): float(s) for n, s in rows if s is not None},
            "" if lsn is not None else "in recovery")


#: what a primary that Patroni is demoting answers (it shuts PostgreSQL down and starts it again as a replica)
DEMOTING = ("shutting down", "starting up", "not yet accepting connections", "in recovery")


def _replication_cut(layout, leader: str, synchronous: bool, seen: list[str], timeout_s: float = 15.0) -> str:
    """``"cut"`` once the primary has stopped hearing from its replicas (each reports every second,
    wal_receiver_status_interval; none heard for 2 s, or its stream gone, means the partition cut it: a connection
    opened before the partition is cut once its opener's next packet marks it); with asynchronous replication, while
    the primary's own WAL has moved on under the load since the partition. With synchronous replication the
    primary's commits wait instead. The primary's side is asked because a replica's received position can go on
    moving for seconds after the cut while it reads what had reached its socket before. ``"demoted"`` when Patroni
    demotes the primary first: it does so as soon as a read of etcd fails, and from a partitioned node that read
    fails at once or only after retry_timeout depending on the member it was talking to. ``""`` when neither
    happened within *timeout_s*. Every reading goes into *seen*, for the message of a failure."""
    replicas = [n.name for n in layout.nodes if n.name != leader]
    t0 = time.monotonic()
    first, _, why = _primary_view(layout, leader)
    seen.append(f"0.0s wal {first or '- (' + why + ')'}")
    while time.monotonic() < t0 + timeout_s:
        if any(state in why for state in DEMOTING):
            return "demoted"
        time.sleep(0.5)
        lsn, silent_s, why = _primary_view(layout, leader)
        seen.append(f"{time.monotonic() - t0:.1f}s wal {lsn or '- (' + why + ')'}, "
                    f"seconds since each replica was heard: {silent_s}")
        cut = bool(lsn) and all(silent_s.get(r, float("inf")) > 2.0 for r in replicas)
        if cut and (synchronous or bool(first and lsn != first)):
            return "cut"
    return ""


def _failover_run(layout, config: dict, samples: Path, synchronous: bool, attempts: int = 3) -> tuple[dict, int]:
    """The load, the primary cut from its peers for :data:`PARTITION_S` (its WAL stops reaching the replicas; its
    clients still reach it), the primary's node killed, the failover, the partition healed, 10 s of load after it;
    returns the checker's result and the oracle's count of lost acknowledged appends. When Patroni demoted the
    partitioned primary before the cut was seen (no commit acknowledged by it alone), the partition is healed, the
    cluster waited for, and the scenario tried again, up to *attempts* times; the history keeps every attempt."""
    from chaosdb.clusters.postgres_ha import cluster
    from chaosdb.embedded import actions as node_actions
    from chaosdb.faults import actions as faults

    _run(config, samples, isolation="serializable", keys=8, key_window_s=1, seconds=3)
    try:
        patroni = cluster.patroni_client(layout)
        tried: list[str] = []
        for attempt in range(1, attempts + 1):
            timeline = patroni.leader().timeline
            leader = patroni.leader().name
            outcome = ""
            faults.partition_node(target="leader", scope="peers", configuration=config)
            try:
                seen: list[str] = []
                outcome = _replication_cut(layout, leader, synchronous, seen)
                if outcome == "demoted" and attempt < attempts:
                    tried.append(f"attempt {attempt}: Patroni demoted {leader} first:\n" + "\n".join(seen))
                    continue  # the partition is reverted below
                time.sleep(PARTITION_S - 2)  # commits acknowledged by the primary alone
                record = node_actions.kill_node(target="leader", allow_quorum_loss=True, configuration=config)
                assert outcome == "cut", (f"the partition of {leader} did not stop its replicas' WAL within 15 s "
                                          f"({outcome or 'still heard'}):\n" + "\n".join(tried + seen))
                # healed only once a replica's promotion has finished: the dead node's kernel would otherwise
                # still deliver the WAL it held
                patroni.wait_for_leader(120, not_named=record["targets"][0]["name"], newer_than_timeline=timeline)
                break
            finally:
                faults.revert_faults(configuration=config)
                if outcome == "demoted" and attempt < attempts:
                    cluster.wait_healthy(layout, timeout=120)
        time.sleep(10)
    finally:
        _stop()
    ops = read_history(samples)
    acknowledged = _acknowledged_appends(ops)
    final = _final_lists(layout.dsn(), sorted(acknowledged))
    lost = sum(len(values - set(final.get(k, []))) for k, values in acknowledged.items())
    return check_history(samples, consistency_model="strict-serializable"), lost


def test_a_primary_kill_loses_acknowledged_appends_only_with_asynchronous_replication(healthy, config, tmp_path):
    from chaosdb.clusters.postgres_ha import cluster
    from chaosdb.gameday import cluster_steps

    d = Path(healthy.dir)
    synchronous, lost = _failover_run(healthy, config, tmp_path / "sync", synchronous=True)
    assert lost == 0 and synchronous["valid"] is True, (lost, _summary(synchronous))
    for n in healthy.nodes:
        cluster.start_node(healthy, n.name)
    cluster.wait_healthy(healthy, timeout=120)
    cluster_steps.set_synchronous_standbys(d, 0)
    try:
        asynchronous, lost = _failover_run(healthy, config, tmp_path / "async", synchronous=False)
    finally:
        for n in healthy.nodes:
            cluster.start_node(healthy, n.name)
        cluster_steps.restore_replication(d, "sync")  # waits for the synchronous standby the fixture expects
        cluster.wait_healthy(healthy, timeout=120)
    # the oracle and the checker agree: acknowledged appends lost at the failover make the history invalid
    assert lost > 0, "no acknowledged append was lost: the replicas did not fall behind"
    assert asynchronous["valid"] is False, (lost, _summary(asynchronous))
    named = asynchronous["anomalies"]
    assert any("served_by" in e for examples in named.values() for e in examples), named


def test_etcd_register_stays_linearizable_through_a_leader_kill_and_a_partition(healthy, config, tmp_path):
    from chaosdb.clusters.postgres_ha import cluster
    from chaosdb.embedded import actions as node_actions
    from chaosdb.faults import actions as faults

    samples = tmp_path / "register"
    _run(config, samples, workload="register-etcd", seconds=3)
    try:
        killed = node_actions.kill_etcd_member(target="etcd-leader", configuration=config)["targets"][0]["name"]
        time.sleep(6)
        cluster.start_node(healthy, killed)
        cluster.wait_healthy(healthy, timeout=90)
        faults.partition_node(target="etcd-leader", scope="peers", configuration=config)
        time.sleep(8)
        faults.revert_faults(configuration=config)
        time.sleep(4)
    finally:
        faults.revert_faults(configuration=config)
        _stop()
    ops = read_history(samples)
    troubled = sum(1 for op in ops if op["type"] in ("info", "fail") and op["f"] != "cas")
    assert troubled > 0, "no operation failed or timed out: the faults did not reach the clients"
    result = check_history(samples)
    assert result["model"] == "cas-register" and result["valid"] is True, _summary(result)
