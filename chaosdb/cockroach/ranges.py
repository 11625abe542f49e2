"""Leaseholders and ranges: which node serves a row, where a table's leases are, ranges per node over time.

* ``SHOW RANGE FROM TABLE t FOR ROW (...)`` (``FROM INDEX t@idx`` for a secondary index) names the range
  and its leaseholder for one row in every supported version.
* A table's leaseholders: ``SHOW RANGES FROM TABLE t`` has ``lease_holder`` before v23.1; from v23.2 only
  ``WITH DETAILS`` adds it (v23.1 has both behaviours behind a setting: try the new, fall back).
* Node ids are mapped to the node's address, SQL address and, on Kubernetes, its pod: the first DNS label
  of a StatefulSet address (``cockroachdb-1.cockroachdb.crdb.svc.cluster.local:26257`` -> ``cockroachdb-1``)
  or ``cockroach_pods`` in the configuration (``{"1": "pod-a", ...}``).
"""

from __future__ import annotations

import re
import time
from typing import Any, Sequence

from chaosdb.cockroach import channels
from chaosdb.cockroach.channels import run_sql
from chaosdb.cockroach.sql import quote_ident, quote_name, row_literal
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.podnames import statefulset_pod
from chaosdb.core.timeutil import now_iso

__all__ = ["parse_id_array", "range_record", "leaseholder_statement", "leaseholder_of_row", "table_ranges",
           "table_ranges_statement", "pod_of", "node_summary", "ranges_per_node", "rebalance_summary",
           "sample_ranges_per_node"]

def parse_id_array(text: Any) -> list[int]:
    """``{1,2,3}`` (SQL INT[] as text) or a list -> [1, 2, 3]."""
    if text is None:
        return []
    if isinstance(text, (list, tuple)):
        return [int(x) for x in text]
    s = str(text).strip().strip("{}[]")
    return [int(x) for x in re.split(r"[,\s]+", s) if x.strip()]


def _int(v: Any) -> int | None:
    if v is None or str(v).strip() in ("", "NULL"):
        return None
    return int(float(v))


def range_record(row: dict[str, Any]) -> dict[str, Any]:
    """One row of SHOW RANGE / SHOW RANGES (any version) -> range_id, lease_holder, replicas, voters, keys."""
    if "range_id" not in row:
        raise ChaosDBError(f"not a SHOW RANGE(S) row (no range_id): {sorted(row)}")
    replicas = parse_id_array(row.get("replicas"))
    voters = parse_id_array(row.get("voting_replicas")) if row.get("voting_replicas") is not None else replicas
    return {
        "range_id": _int(row["range_id"]),
        "lease_holder": _int(row.get("lease_holder")),
        "lease_holder_locality": row.get("lease_holder_locality"),
        "replicas": replicas,
        "voting_replicas": voters,
        "non_voting_replicas": parse_id_array(row.get("non_voting_replicas")),
        "start_key": row.get("start_key"),
        "end_key": row.get("end_key"),
        "range_size_mb": float(row["range_size_mb"]) if row.get("range_size_mb") not in (None, "") else None,
    }


def leaseholder_statement(table: str | Sequence[str], row: Any, index: str | None = None) -> str:
    """``SHOW RANGE FROM TABLE|INDEX ... FOR ROW (...)``: the statement that names a row's range and leaseholder."""
    target = f"INDEX {quote_name(table)}@{quote_ident(index)}" if index else f"TABLE {quote_name(table)}"
    return f"SHOW RANGE FROM {target} FOR ROW {row_literal(row)}"


def pod_of(node: dict[str, Any], configuration: dict[str, Any] | None = None) -> str | None:
    """The pod serving a node on Kubernetes, or None when the address is not a StatefulSet pod's."""
    pods = (configuration or {}).get("cockroach_pods") or {}
    if str(node.get("id")) in {str(k) for k in pods}:
        return str({str(k): v for k, v in pods.items()}[str(node["id"])])
    return statefulset_pod(node.get("address"))


def node_summary(node: dict[str, Any] | None, node_id: int | None,
                 configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """A node as a role target's answer gives it: id, addresses, pod and liveness (Nones for a node the cluster does not
    list)."""
    if node is None:
        return {"id": node_id, "address": None, "sql_address": None, "pod": None, "is_live": None}
    return {"id": node["id"], "address": node.get("address"), "sql_address": node.get("sql_address"),
            "pod": pod_of(node, configuration), "is_live": node.get("is_live")}


def leaseholder_of_row(configuration: dict[str, Any], secrets: dict[str, Any] | None, table: str | Sequence[str],
                       row: Any, index: str | None = None) -> dict[str, Any]:
    """The range holding *row* of *table* (or *index*), its leaseholder and replicas, as CockroachDB answers now."""
    statement = leaseholder_statement(table, row, index)
    rows = run_sql(configuration, statement)
    if not rows:
        raise ChaosDBError(f"{statement} returned no range: does the table exist and is the row its primary key?")
    rec = range_record(rows[0])
    if rec["lease_holder"] is None:
        raise ChaosDBError(f"range r{rec['range_id']} reports no leaseholder right now (lease in transfer?); retry")
    nodes = {n["id"]: n for n in channels.node_status(configuration, secrets)}
    rec["node"] = node_summary(nodes.get(rec["lease_holder"]), rec["lease_holder"], configuration)
    rec["followers"] = [node_summary(nodes.get(r), r, configuration) for r in rec["replicas"]
                        if r != rec["lease_holder"]]
    rec["statement"] = statement
    return rec


def table_ranges_statement(table: str | Sequence[str], show_ranges: str) -> str:
    """``SHOW RANGES FROM TABLE`` in the form the server's version speaks (``WITH DETAILS`` since 23.1)."""
    base = f"SHOW RANGES FROM TABLE {quote_name(table)}"
    return base if show_ranges == "legacy" else base + " WITH DETAILS"


def table_ranges(configuration: dict[str, Any], table: str | Sequence[str]) -> list[dict[str, Any]]:
    """Every range of a table with its leaseholder, whatever the version's SHOW RANGES looks like."""
    mode = channels.cluster_version(configuration).show_ranges
    try:
        rows = run_sql(configuration, table_ranges_statement(table, "details" if mode == "either" else mode))
    except ChaosDBError:
        if mode != "either":
            raise
        rows = run_sql(configuration, table_ranges_statement(table, "legacy"))
    return [range_record(r) for r in rows]


def ranges_per_node(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Node records -> ``{"at", "nodes": {id: {ranges, leaseholders, replicas, is_live, membership}}}``."""
    return {"at": now_iso(), "nodes": {
        str(n["id"]): {"ranges": n.get("ranges"), "leaseholders": n.get("leaseholders"),
                       "replicas": n.get("replicas"), "is_live": n.get("is_live"), "membership": n.get("membership")}
        for n in nodes if n.get("membership") != "decommissioned"}}


def rebalance_summary(samples: list[dict[str, Any]], key: str = "replicas", tolerance: float = 0.1
                      ) -> dict[str, Any]:
    """How balanced the live nodes are at each sample (max/min deviation from the mean of *key*), and
    the first sample from which every later one stays within ``tolerance`` (0.1 = ±10 %)."""
    spreads: list[float | None] = []
    for s in samples:
        vals = [v[key] for v in s["nodes"].values() if v.get("is_live") and v.get(key) is not None]
        if not vals or sum(vals) == 0:
            spreads.append(None)
            continue
        mean = sum(vals) / len(vals)
        spreads.append(round(max(abs(v - mean) for v in vals) / mean, 4))
    balanced_from = None
    for i in range(len(spreads) - 1, -1, -1):
        spread = spreads[i]
        if spread is None or spread > tolerance:
            break
        balanced_from = i
    t0 = samples[0]["t"] if samples else 0.0
    return {
        "key": key, "tolerance": tolerance, "spread": spreads,
        "balanced": balanced_from is not None,
        "balanced_after_s": None if balanced_from is None else round(samples[balanced_from]["t"] - t0, 3),
        "final": samples[-1]["nodes"] if samples else {},
    }


def sample_ranges_per_node(configuration: dict[str, Any], secrets: dict[str, Any] | None, duration_s: float,
                           interval_s: float, key: str = "replicas", tolerance: float = 0.1,
                           stop_when_balanced: bool = False) -> dict[str, Any]:
    """Sample the replicas (or leases) per node every *interval_s* for *duration_s*, and say whether and when they were
    balanced within *tolerance*."""
    if duration_s <= 0 or interval_s <= 0:
        raise ChaosDBError("duration_s and interval_s must be positive")
    if not 0 < tolerance < 1:
        raise ChaosDBError("tolerance is a fraction of the mean, between 0 and 1 (0.1 = ±10 %)")
    start = time.monotonic()
    samples: list[dict[str, Any]] = []
    errors = []
    while True:
        t = time.monotonic() - start
        try:
            s = ranges_per_node(channels.node_status(configuration, secrets))
            s["t"] = round(t, 3)
            samples.append(s)
        except ChaosDBError as exc:  # a node or the gateway may be down in the middle of a scale-out
            errors.append({"t": round(t, 3), "error": str(exc)})
        if stop_when_balanced and samples and rebalance_summary(samples[-1:], key, tolerance)["balanced"]:
            break
        if t + interval_s > duration_s:
            break
        time.sleep(max(0.0, start + t + interval_s - time.monotonic()))
    if not samples:
        raise ChaosDBError(f"no node status could be read in {duration_s:g} s: {errors[-1]['error']}")
    out = rebalance_summary(samples, key, tolerance)
    out.update({"samples": samples, "errors": errors})
    return out
