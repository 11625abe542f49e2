"""One name, one meaning: the same cluster state read through every CockroachDB channel gives the same range
fields (``replicas``, ``ranges``, ``leaseholders``, ``leaders``, ``ranges_unavailable``,
``ranges_underreplicated``).

The state is rendered in each channel's real output format: the CLI's ``node status --all --format=csv``
(columns and a row template from the recorded v22.1 output in ``tests/data/cockroach``, where the CLI's
``ranges`` column equals ``gossiped_replicas``: it is the sum of the store metric ``replicas``), the rows our
SQL channel's query selects (column names read from the query itself), and ``/_status/vars`` store-level series
(``{store, node_id}`` labels, two stores per node) beside ``/api/v2/nodes/``.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from chaosdb.cockroach.channels import NODE_STATUS_SQL
from chaosdb.cockroach.records import (
    RANGE_FIELDS,
    normalise_api_nodes,
    normalise_cli_rows,
    parse_cli_output,
    range_metrics,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "cockroach"
RECORDED = (DATA / "node_status_all_csv_v22.1_with_decommissioned.csv").read_text()

# per node: replicas held, ranges counted (one replica of each range counts it), leases, Raft leaders, problems
STATE = {
    1: {"replicas": 210, "ranges": 71, "leaseholders": 69, "leaders": 70, "ranges_unavailable": 0,
        "ranges_underreplicated": 3},
    2: {"replicas": 205, "ranges": 68, "leaseholders": 70, "leaders": 68, "ranges_unavailable": 1,
        "ranges_underreplicated": 0},
    3: {"replicas": 199, "ranges": 66, "leaseholders": 66, "leaders": 67, "ranges_unavailable": 0,
        "ranges_underreplicated": 2},
}


def _cli_csv() -> str:
    rows = list(csv.DictReader(RECORDED.splitlines()))
    template = rows[0]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(template))
    writer.writeheader()
    for nid, st in STATE.items():
        writer.writerow({**template, "id": nid, "ranges": st["replicas"], "gossiped_replicas": st["replicas"],
                         "replicas_leaseholders": st["leaseholders"], "replicas_leaders": st["leaders"],
                         "ranges_unavailable": st["ranges_unavailable"],
                         "ranges_underreplicated": st["ranges_underreplicated"]})
    return out.getvalue()


def _sql_columns() -> list[str]:
    select = NODE_STATUS_SQL.split("FROM crdb_internal.gossip_liveness")[0].split("SELECT", 1)[1]
    columns = []
    for item in re.split(r",\s*(?![^()]*\))", select):
        item = item.strip()
        alias = re.search(r"\bAS\s+(\w+)$", item)
        columns.append(alias.group(1) if alias else item.split(".")[-1])
    return columns


def _sql_rows() -> list[dict[str, str]]:
    """What sql_node_status hands the normaliser: every column the query selects, values as strings."""
    columns = _sql_columns()
    assert {"ranges", "store_ranges", "replicas_leaseholders", "replicas_leaders", "ranges_unavailable",
            "ranges_underreplicated"} <= set(columns), columns
    rows = []
    for nid, st in STATE.items():
        values = {"id": nid, "ranges": st["replicas"], "store_ranges": st["ranges"],
                  "replicas_leaseholders": st["leaseholders"], "replicas_leaders": st["leaders"],
                  "ranges_unavailable": st["ranges_unavailable"], "ranges_underreplicated": st["ranges_underreplicated"],
                  "is_live": "true", "is_available": "true", "membership": "active", "is_decommissioning": "false",
                  "is_draining": "false"}
        rows.append({c: (str(values[c]) if c in values else None) for c in columns})
    return rows


def _vars_text() -> str:
    series = {"replicas": "replicas", "ranges": "ranges", "replicas_leaseholders": "leaseholders",
              "replicas_leaders": "leaders", "ranges_unavailable": "ranges_unavailable",
              "ranges_underreplicated": "ranges_underreplicated"}
    lines = []
    for nid, st in STATE.items():
        for name, key in series.items():
            first = st[key] // 2
            lines.append(f'{name}{{store="{2 * nid - 1}",node_id="{nid}"}} {first}')
            lines.append(f'{name}{{store="{2 * nid}",node_id="{nid}"}} {st[key] - first}')
    return "\n".join(lines) + "\n"


def _fields(records: list[dict]) -> dict[int, dict]:
    return {r["id"]: {k: r[k] for k in RANGE_FIELDS} for r in records}


def test_every_channel_gives_the_same_range_fields():
    cli = _fields(parse_cli_output(_cli_csv(), "csv"))
    sql = _fields(normalise_cli_rows(_sql_rows()))
    body = {"nodes": [{"node_id": nid, "liveness_status": 3} for nid in STATE]}
    http = _fields(normalise_api_nodes(body, range_metrics(_vars_text())))
    assert sql == STATE
    assert http == STATE
    # the CLI prints no store metric "ranges": unknown there, never the replica count under that name
    assert cli == {nid: {**st, "ranges": None} for nid, st in STATE.items()}


def test_the_recorded_cli_ranges_column_is_the_replica_count():
    for row in csv.DictReader(RECORDED.splitlines()):
        if row["ranges"] != "NULL":
            assert row["ranges"] == row["gossiped_replicas"]
