"""Normalised CockroachDB node records, whatever channel they came from.

One record per node::

    id, address, sql_address, build, started_at, updated_at, locality,
    is_live, is_available, draining, membership, decommissioning,
    replicas, ranges, leaseholders, leaders, ranges_unavailable, ranges_underreplicated, gossiped_replicas

One name, one meaning, on every channel (the store metrics of ``crdb_internal.kv_store_status`` and
``/_status/vars``, summed over the node's stores):

* ``replicas``: replicas the node holds (store metric ``replicas``). ``node status --ranges`` prints this sum
  in a column it calls ``ranges``; it is read as ``replicas`` here.
* ``ranges``: ranges this node counts for the cluster (store metric ``ranges``: one replica of each range
  counts it, so the sum over nodes is the cluster's range count). The CLI prints no such column: null there;
  the SQL channel adds it (``store_ranges``), the HTTP channel reads the series.
* ``leaseholders``, ``leaders``: ``replicas.leaseholders``, ``replicas.leaders``.
* ``ranges_unavailable``, ``ranges_underreplicated``: ``ranges.unavailable``, ``ranges.underreplicated``.
* ``gossiped_replicas``: the CLI's ``--decommission`` column (replicas as gossiped; null elsewhere).

Sources and their quirks (CockroachDB's documentation and source; the recorded outputs and their provenance are
in the repository's ``tests/data/cockroach``):

* ``cockroach node status --all --format=csv|tsv|json|ndjson|table``: every value a string;
  ``NULL`` for nodes whose gossip descriptor is gone (dead, decommissioned); JSON (v23.2+) and
  NDJSON (v22.2+) hold strings too, keys sorted; older versions lack ``membership``.
* ``/api/v2/nodes/``: snake_case, ``liveness_status`` an enum (0 UNKNOWN, 1 DEAD, 2 UNAVAILABLE,
  3 LIVE, 4 DECOMMISSIONING, 5 DECOMMISSIONED, 6 DRAINING, 7 STARTING), ``started_at`` in ns.
* ``/_status/vars``: Prometheus text; store-level series carry ``store`` and ``node_id`` labels.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, timezone
from typing import Any, Iterable

from chaosdb.cockroach.sql import parse_sql_table
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.prometheus import parse_prometheus

__all__ = ["normalise_cli_rows", "parse_cli_output", "normalise_api_nodes", "parse_prometheus", "range_metrics",
           "LIVENESS_STATUS", "health_summary", "FIELDS", "RANGE_FIELDS", "parse_decommission_output"]

FIELDS = ("id", "address", "sql_address", "build", "started_at", "updated_at", "locality", "is_live",
          "is_available", "draining", "membership", "decommissioning", "replicas", "ranges", "leaseholders",
          "leaders", "ranges_unavailable", "ranges_underreplicated", "gossiped_replicas")
#: the range fields, the same on every channel
RANGE_FIELDS = ("replicas", "ranges", "leaseholders", "leaders", "ranges_unavailable", "ranges_underreplicated")

LIVENESS_STATUS = {0: "unknown", 1: "dead", 2: "unavailable", 3: "live", 4: "decommissioning",
                   5: "decommissioned", 6: "draining", 7: "starting"}


def _null(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, str) and v.strip() in ("NULL", ""):
        return None
    return v.strip() if isinstance(v, str) else v


def _bool(v: Any) -> bool | None:
    v = _null(v)
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    s = str(v).lower()
    if s in ("true", "t", "1"):
        return True
    if s in ("false", "f", "0"):
        return False
    raise ChaosDBError(f"not a boolean in node status output: {v!r}")


def _int(v: Any) -> int | None:
    v = _null(v)
    if v is None:
        return None
    try:
        return int(float(v))
    except (TypeError, ValueError):
        raise ChaosDBError(f"not a number in node status output: {v!r}") from None


def _ts(v: Any) -> str | None:
    """ISO 8601 UTC from the CLI's ``2025-05-30 21:10:26.237011`` (zone-less = UTC, as the server writes it),
    ``...+00:00`` or ``... +0000 UTC``."""
    v = _null(v)
    if v is None:
        return None
    s = str(v).replace(" UTC", "").strip()
    s = re.sub(r" ([+-]\d{2})(\d{2})$", r"\1:\2", s)
    try:
        dt = datetime.fromisoformat(s.replace(" ", "T", 1))
    except ValueError:
        return s  # keep what the server said rather than guess
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat()


def normalise_cli_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``node status`` (any flags, any version) -> normalised records."""
    out = []
    for row in rows:
        r = {k.strip(): v for k, v in row.items() if k is not None}
        if "id" not in r:
            raise ChaosDBError(f"node status row without an id column: {sorted(r)}")
        membership = _null(r.get("membership"))
        decommissioning = _bool(r.get("is_decommissioning"))
        if membership is None and decommissioning is not None:  # versions before the membership column
            membership = "decommissioning" if decommissioning else "active"
        out.append({
            "id": _int(r["id"]),
            "address": _null(r.get("address")),
            "sql_address": _null(r.get("sql_address")),
            "build": _null(r.get("build")),
            "started_at": _ts(r.get("started_at")),
            "updated_at": _ts(r.get("updated_at")),
            "locality": _null(r.get("locality")),
            "is_live": bool(_bool(r.get("is_live"))),
            "is_available": bool(_bool(r.get("is_available"))),
            "draining": _bool(r.get("is_draining")),
            "membership": membership,
            "decommissioning": decommissioning,
            # the CLI's "ranges" column is the sum of the store metric replicas
            "replicas": _int(r.get("ranges")),
            "ranges": _int(r.get("store_ranges")),  # only the SQL channel has it
            "leaseholders": _int(r.get("replicas_leaseholders")),
            "leaders": _int(r.get("replicas_leaders")),
            "ranges_unavailable": _int(r.get("ranges_unavailable")),
            "ranges_underreplicated": _int(r.get("ranges_underreplicated")),
            "gossiped_replicas": _int(r.get("gossiped_replicas")),
        })
    return sorted(out, key=lambda x: x["id"])


def parse_cli_output(text: str, fmt: str = "csv") -> list[dict[str, Any]]:
    """``cockroach node status`` output in *fmt* -> normalised records."""
    if fmt in ("csv", "tsv"):
        rows = list(csv.DictReader(io.StringIO(text), delimiter="," if fmt == "csv" else "\t"))
    elif fmt == "json":
        try:
            rows = json.loads(text)
        except ValueError as exc:
            raise ChaosDBError(f"node status --format=json returned no JSON: {exc}") from None
    elif fmt == "ndjson":
        rows = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    elif fmt == "table":
        rows = parse_sql_table(text)
    else:
        raise ChaosDBError(f"unsupported node status format {fmt!r} (csv, tsv, json, ndjson, table)")
    return normalise_cli_rows(rows)


def _addr(a: Any) -> str | None:
    if isinstance(a, dict):
        return a.get("address_field") or a.get("addressField")
    return _null(a)


def _ns_iso(ns: Any) -> str | None:
    """The API's nanoseconds since the epoch (int or string; 0 = unknown) -> ISO 8601 UTC."""
    if ns in (None, "", 0, "0"):
        return None
    return datetime.fromtimestamp(int(ns) / 1e9, tz=timezone.utc).isoformat()


def liveness_name(value: Any) -> str:
    """``NodeLivenessStatus`` as the API gives it (an int, or its name: ``3``, ``"3"``, ``"NODE_STATUS_LIVE"``,
    ``"LIVE"``) -> ``live``, ``dead``, ..."""
    if isinstance(value, str) and not value.strip().isdigit():
        name = value.strip().lower().removeprefix("node_status_")
        return name if name in LIVENESS_STATUS.values() else "unknown"
    try:
        return LIVENESS_STATUS.get(int(value), "unknown")
    except (TypeError, ValueError):
        return "unknown"


def normalise_api_nodes(body: dict[str, Any], metrics: dict[int, dict[str, float]] | None = None
                        ) -> list[dict[str, Any]]:
    """``GET /api/v2/nodes/`` -> normalised records (range counts from ``/_status/vars`` when given)."""
    metrics = metrics or {}
    out = []
    for n in body.get("nodes") or []:
        nid = int(n["node_id"])
        status = liveness_name(n.get("liveness_status", 0))
        tiers = ((n.get("locality") or {}).get("tiers")) or []
        m = metrics.get(nid, {})
        out.append({
            "id": nid, "address": _addr(n.get("address")), "sql_address": _addr(n.get("sql_address")),
            "build": n.get("build_tag"), "started_at": _ns_iso(n.get("started_at")),
            "updated_at": _ns_iso(n.get("updated_at")),
            "locality": ",".join(f"{t['key']}={t['value']}" for t in tiers) or None,
            "is_live": status in ("live", "decommissioning", "draining"),
            "is_available": status in ("live", "decommissioning", "draining"),
            "draining": status == "draining",
            "membership": {"decommissioning": "decommissioning", "decommissioned": "decommissioned"}.get(
                status, "active" if status != "unknown" else None),
            "decommissioning": status in ("decommissioning", "decommissioned"),
            "liveness_status": status,
            "replicas": _int(m.get("replicas")), "ranges": _int(m.get("ranges")),
            "leaseholders": _int(m.get("replicas_leaseholders")), "leaders": _int(m.get("replicas_leaders")),
            "ranges_unavailable": _int(m.get("ranges_unavailable")),
            "ranges_underreplicated": _int(m.get("ranges_underreplicated")), "gossiped_replicas": None,
        })
    return sorted(out, key=lambda x: x["id"])




RANGE_SERIES = ("ranges", "ranges_unavailable", "ranges_underreplicated", "replicas", "replicas_leaders",
                "replicas_leaseholders")


def range_metrics(text: str, tenant: str = "system") -> dict[int, dict[str, float]]:
    """Per node id, the sum over its stores of the range series of ``/_status/vars``."""
    out: dict[int, dict[str, float]] = {}
    for name, labels, value in parse_prometheus(text):
        if name not in RANGE_SERIES or "node_id" not in labels:
            continue
        if labels.get("tenant", tenant) != tenant:
            continue
        node = out.setdefault(int(labels["node_id"]), {})
        node[name] = node.get(name, 0.0) + value
    return out


def health_summary(status_code: int, body: str) -> dict[str, Any]:
    """``/health?ready=1``: 200 = ready; 503 (or v2's 500) with the server's reason."""
    reason = None
    if status_code != 200:
        try:
            data = json.loads(body)
            reason = data.get("message") or data.get("error")
        except ValueError:
            reason = body.strip() or None
    return {"ready": status_code == 200, "status": status_code, "reason": reason}


DECOMMISSION_NOTE = "No more data reported on target nodes"


def parse_decommission_output(text: str) -> dict[str, Any]:
    """``node decommission`` / ``recommission`` output (``--format=csv`` or the table format): the status
    is printed again whenever it changes (dots between polls), then the closing note. Returns the last
    status per node, how many updates were printed and whether the closing note was seen."""
    blocks: list[list[str]] = []
    note = None
    for raw in text.splitlines():
        if raw.strip().startswith(DECOMMISSION_NOTE):
            note = raw.strip()
            continue
        line = raw.strip().strip(".")  # a dot is printed per poll without change
        if not line:
            continue
        if line.startswith("possible decommission stall") or re.match(r"n\d+ still has replica", line):
            continue
        if line.replace(" ", "").startswith(("id,is_live", "id|is_live")):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    if not blocks:
        raise ChaosDBError(f"no decommission status in the output: {text.strip()[:200]!r}")
    last = "\n".join(blocks[-1])
    rows = parse_sql_table(last) if "|" in blocks[-1][0] else list(csv.DictReader(io.StringIO(last)))
    nodes = []
    for r in rows:
        r = {k.strip(): v for k, v in r.items() if k}
        membership = _null(r.get("membership"))
        decom = _bool(r.get("is_decommissioning"))
        nodes.append({"id": _int(r["id"]), "is_live": bool(_bool(r.get("is_live"))),
                      "replicas": _int(r.get("replicas")), "decommissioning": decom,
                      "membership": membership or ("decommissioning" if decom else "active"),
                      "draining": _bool(r.get("is_draining"))})
    stalls = re.findall(r"n(\d+) still has replica id (\d+) for range r(\d+)", text)
    return {"nodes": sorted(nodes, key=lambda n: n["id"]), "updates": len(blocks), "note": note,
            "stalled_replicas": [{"node": int(a), "replica": int(b), "range": int(c)} for a, b, c in stalls]}
