"""Integrity probes for after the chaos: consistency, lost acknowledged writes, replica convergence.

* ``tpcc_consistency`` / ``tpcc_is_consistent``: the twelve TPC-C consistency conditions (clause 3.3.2.1-12;
  11 only in the districts where it applies, see :mod:`chaosdb.workloads.tpcc.consistency`) on one snapshot of
  the primary (REPEATABLE READ), so they can run while the load goes on; a broken one is named with the
  warehouses and districts where it breaks.
* ``acknowledged_writes`` / ``lost_acknowledged_writes``: every New-Order the
  client saw commit must be in the database; ambiguous commits are counted
  apart (either result is correct for them).
* ``replica_convergence`` / ``replicas_converged``: once the cluster is healthy,
  every replica replays up to the primary's WAL position and holds the same
  TPC-C rows (per-table checksums). Rows keep changing while the load runs, so
  the check pauses the load started by :mod:`chaosdb.load.control` (SIGSTOP,
  at most ``timeout_s``) and records the pause in the journal so that reports
  leave it out.

The DSN is resolved like the load control's (argument ``dsn``, secret ``load_dsn``,
``CHAOSDB_LOAD_DSN``, embedded cluster).
"""

import logging
import os
import signal
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.redact import redact
from chaosdb.core.timeutil import iso_from_epoch
from chaosdb.core.tls import credentials
from chaosdb.load import state as load_state
from chaosdb.load.dsn import etcd_endpoints, etcd_tls, resolve_dsn
from chaosdb.postgres.endpoints import patroni_client
from chaosdb.workloads.kv import lost_acknowledged_puts
from chaosdb.workloads.samples import read_samples
from chaosdb.workloads.tpcc import consistency

__all__ = ["tpcc_consistency", "tpcc_is_consistent", "acknowledged_writes", "lost_acknowledged_writes",
           "replica_convergence", "replicas_converged"]


def _connect(dsn: str, **kw: Any):
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    try:
        return psycopg.connect(dsn, connect_timeout=5, **kw)
    except psycopg.Error as exc:
        raise ChaosDBError(f"cannot connect for the integrity check: {redact(str(exc), [dsn])}") from None


def tpcc_consistency(conditions: List[int] = None, dsn: str = "", configuration: Configuration = None,
                     secrets: Secrets = None) -> Dict[str, Any]:
    """TPC-C consistency conditions of clause 3.3.2 (default all twelve) on one snapshot of the primary: per
    condition whether it holds, how many rows break it, the warehouses and districts they are in and a few
    examples (found and expected values); ``failed`` and ``summary`` name the broken ones."""
    wanted = [int(c) for c in (conditions or consistency.ALL_CONDITIONS)]
    if any(c not in consistency.CONDITIONS for c in wanted):
        raise ChaosDBError(f"conditions must be among {sorted(consistency.CONDITIONS)}")
    with _connect(resolve_dsn(dsn, configuration, secrets), target_session_attrs="read-write") as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return consistency.check_conditions(conn, wanted)


def tpcc_is_consistent(conditions: List[int] = None, dsn: str = "", configuration: Configuration = None,
                       secrets: Secrets = None) -> bool:
    """True when every chosen TPC-C consistency condition (default all twelve) holds; the log names the broken
    ones with their warehouses and districts."""
    result = tpcc_consistency(conditions, dsn, configuration, secrets)
    if not result["ok"]:
        logging.getLogger("chaostoolkit").warning("chaosdb: TPC-C consistency: %s", result["summary"])
    return bool(result["ok"])


def acknowledged_writes(samples: str = "", dsn: str = "", configuration: Configuration = None,
                        secrets: Secrets = None) -> Dict[str, Any]:
    """Ledger check: of the New-Orders the client saw commit, how many are missing from the
    database (must be 0); ambiguous commits are reported apart with how many are present."""
    location = load_state.samples_dir_for(samples, configuration)
    committed: list[Any] = []
    ambiguous: list[Any] = []
    for s in read_samples(location):
        if s.name == "new_order" and s.key:
            (committed if s.outcome == "committed" else ambiguous if s.outcome == "ambiguous" else []).append(s.key)
    with _connect(resolve_dsn(dsn, configuration, secrets), target_session_attrs="read-write") as conn:
        result = consistency.check_ledger(conn, committed, ambiguous)
    result["samples"] = str(location)
    return result


def lost_acknowledged_writes(samples: str = "", dsn: str = "", configuration: Configuration = None,
                             secrets: Secrets = None) -> int:
    """Number of acknowledged New-Orders missing from the database (tolerance: 0)."""
    return int(acknowledged_writes(samples, dsn, configuration, secrets)["missing"])


def kv_acknowledged_writes(samples: str = "", dsn: str = "", configuration: Configuration = None,
                           secrets: Secrets = None) -> Dict[str, Any]:
    """Ledger check of the etcd KV load (``ycsb-etcd``): for every key, the highest revision a put was
    acknowledged with must be at most the key's ``mod_revision`` now (the acknowledged write, or a later
    one, survived). ``missing`` must be 0; ambiguous puts are counted apart."""

    location = load_state.samples_dir_for(samples, configuration)
    acked: Dict[str, int] = {}
    ambiguous = 0
    for s in read_samples(location):
        if s.name != "update":
            continue
        if s.outcome == "committed" and "@" in s.key:
            name, rev = s.key.rsplit("@", 1)
            acked[name] = max(acked.get(name, 0), int(rev))
        elif s.outcome == "ambiguous":
            ambiguous += 1
    result = lost_acknowledged_puts(dsn or etcd_endpoints(configuration), acked, tls=etcd_tls(configuration),
                                    auth=credentials("etcd", secrets))
    result.update({"acknowledged_puts_keys": len(acked), "ambiguous_puts": ambiguous, "samples": str(location)})
    return result


def kv_lost_acknowledged_writes(samples: str = "", dsn: str = "", configuration: Configuration = None,
                                secrets: Secrets = None) -> int:
    """Number of keys whose acknowledged put is missing from etcd (tolerance: 0)."""
    return int(kv_acknowledged_writes(samples, dsn, configuration, secrets)["missing"])


@contextmanager
def _load_paused(enabled: bool) -> Iterator[None]:
    record, proc = load_state.current(), load_state.process()
    active = enabled and record.get("running") and proc is not None and proc.poll() is None
    if not active or proc is None:
        yield
        return
    remote = int((record.get("settings") or {}).get("remote_workers") or 0)
    if remote:
        raise ChaosDBError(f"the load has {remote} remote worker(s), which cannot be paused from here: their writes "
                           "would keep the replicas from converging. Set pause_load to false and stop the load "
                           "first, or run the load's workers on this machine (workers instead of remote_workers)")
    groups = load_state.pause_group()
    start = time.time()
    load_state.progress().paused("the integrity check")  # the progress lines say so, not "no transactions"
    for pgid in groups:
        os.killpg(pgid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        load_state.progress().resumed()
        end = time.time()
        record.setdefault("pauses", []).append({"reason": "replica convergence check", "start_ts": round(start, 6),
                                                "end_ts": round(end, 6), "started_at": iso_from_epoch(start),
                                                "ended_at": iso_from_epoch(end)})


def _node_dsns(base: str, configuration: Configuration, secrets: Secrets) -> Dict[str, str]:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415 - needs the postgres extra

    members = patroni_client(configuration, secrets).members()
    params = conninfo_to_dict(base)
    params.pop("target_session_attrs", None)
    params.pop("load_balance_hosts", None)
    return {m.name: make_conninfo("", **dict(params, host=m.host, port=str(m.port))) for m in members
            if m.host and m.port}


def _quiesce(primary: Any, seconds: float = 5.0) -> None:
    """Wait (at most *seconds*) until no other client backend on the primary runs a statement."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        busy = primary.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                               "AND state = 'active' AND pid <> pg_backend_pid()").fetchone()[0]
        if not busy:
            return
        time.sleep(0.05)


def _compare_once(base: str, nodes: Dict[str, str], deadline: float, quiesce: bool) -> Dict[str, Any]:
    result: Dict[str, Any] = {"nodes": {}}
    with _connect(base, target_session_attrs="read-write", autocommit=True) as primary:
        primary_host = str(primary.info.host)
        if quiesce:
            _quiesce(primary)
        primary_sums = consistency.table_checksums(primary)
        # read after the checksums: every commit they include is at or before this position
        lsn = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    result["primary_lsn"] = lsn
    for name, node_dsn in sorted(nodes.items()):
        with _connect(node_dsn, autocommit=True) as conn:
            if not conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
                result["primary"] = name
                result["nodes"][name] = {"role": "primary", "match": True}
                continue
            while True:
                caught_up = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]
                if caught_up or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if not caught_up:
                result["nodes"][name] = {"role": "replica", "caught_up": False, "match": False}
                continue
            sums = consistency.table_checksums(conn)
            differ = sorted(t for t in primary_sums if sums.get(t) != primary_sums[t])
            result["nodes"][name] = {"role": "replica", "caught_up": True, "match": not differ,
                                     "differing_tables": differ}
    result.setdefault("primary", primary_host)
    return result


def replica_convergence(timeout_s: float = 60.0, pause_load: bool = True, dsn: str = "",
                        configuration: Configuration = None, secrets: Secrets = None) -> Dict[str, Any]:
    """Per-table checksums of the TPC-C tables on the primary and on every replica once each has
    replayed up to the primary's WAL position (the load paused meanwhile); ``ok`` when all match."""
    base = resolve_dsn(dsn, configuration, secrets)
    nodes = _node_dsns(base, configuration, secrets)
    deadline = time.monotonic() + timeout_s
    with _load_paused(pause_load):
        # a paused client may have sent COMMIT just before it stopped: let the primary finish every
        # statement in flight, and compare again when the first comparison races a late commit
        for attempt in range(1, 4):
            result = _compare_once(base, nodes, deadline, quiesce=pause_load)
            result["attempts"] = attempt
            if all(v["match"] for v in result["nodes"].values()) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    replicas = [v for v in result["nodes"].values() if v["role"] == "replica"]
    result["replicas"] = len(replicas)
    result["ok"] = bool(replicas) and all(v["match"] for v in replicas)
    return result


def replicas_converged(timeout_s: float = 60.0, pause_load: bool = True, dsn: str = "",
                       configuration: Configuration = None, secrets: Secrets = None) -> bool:
    """True when every replica caught up with the primary and holds the same TPC-C data."""
    result = replica_convergence(timeout_s, pause_load, dsn, configuration, secrets)
    if not result["ok"]:
        logging.getLogger("chaostoolkit").warning("chaosdb: replicas have not converged: %s", result)
    return bool(result["ok"])


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
def _conditions(value: Any) -> None:
    if value and not set(value) <= set(consistency.CONDITIONS):
        raise ChaosDBError(f"conditions must be among {sorted(consistency.CONDITIONS)}")


check_arguments(globals(), conditions=_conditions, extras=("postgres",))
