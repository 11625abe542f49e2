"""CockroachDB node status: contract tests against recorded real outputs, a stand-in CLI on PATH and a
local HTTP stand-in (no CockroachDB can run here); opt-in checks against a real cluster via CHAOSDB_COCKROACH_URL."""

from __future__ import annotations

import csv
import json
import os
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chaosdb.cockroach import channels, probes
from chaosdb.cockroach.records import parse_cli_output, range_metrics
from chaosdb.core.errors import ChaosDBError

DATA = Path(__file__).resolve().parents[1] / "data" / "cockroach"
CSV_DECOM = (DATA / "node_status_all_csv_v22.1_with_decommissioned.csv").read_text()


def test_csv_with_dead_and_decommissioned_nodes():
    nodes = parse_cli_output(CSV_DECOM, "csv")
    assert [n["id"] for n in nodes] == [1, 2, 3, 4, 6]
    n1, n3 = nodes[0], nodes[2]
    assert n1["address"] == "[fd00:1122:3344:101::3]:32221" and n1["build"] == "v22.1.22-29-g865aff1595"
    assert n1["is_live"] and n1["is_available"] and n1["membership"] == "active" and n1["draining"] is False
    # the CLI's "ranges" column is the sum of the store metric replicas (the same 210 as gossiped_replicas);
    # the store metric ranges is not printed by the CLI
    assert (n1["replicas"], n1["leaseholders"], n1["leaders"], n1["ranges_unavailable"]) == (210, 41, 41, 0)
    assert n1["gossiped_replicas"] == 210 and n1["ranges"] is None
    assert n1["started_at"] == "2025-05-30T21:10:26.237011+00:00"
    assert n3["address"] is None and n3["build"] is None and n3["replicas"] is None  # NULLs, not "NULL"
    assert not n3["is_live"] and n3["membership"] == "decommissioned" and n3["decommissioning"] is True


def test_json_and_ndjson_give_the_same_records_as_csv():
    rows = list(csv.DictReader(CSV_DECOM.splitlines()))
    # v23.2+ --format=json: every value a string, keys sorted, NULL as "NULL"
    as_json = "[" + ",\n  ".join(json.dumps(dict(sorted(r.items()))) for r in rows) + "\n]\n"
    as_ndjson = "\n".join(json.dumps(dict(sorted(r.items()))) for r in rows) + "\n"
    assert parse_cli_output(as_json, "json") == parse_cli_output(CSV_DECOM, "csv")
    assert parse_cli_output(as_ndjson, "ndjson") == parse_cli_output(CSV_DECOM, "csv")


def _table(i: int) -> str:
    return (DATA / "docs_v25.4_node_status_decommission_table_format.txt").read_text().split("# command")[i] \
        .split("\n", 1)[1]


def test_table_format_with_draining_and_dead_nodes():
    draining = parse_cli_output(_table(1), "table")
    assert [n["draining"] for n in draining] == [True, False, False]
    assert draining[0]["gossiped_replicas"] == 73
    dead = parse_cli_output(_table(3), "table")
    assert dead[0]["is_live"] is False and dead[0]["membership"] == "active"


def _cli_config(**extra):
    return {"cockroach_channel": "cli", "cockroach_insecure": True, **extra}


@pytest.fixture
def standin_cli(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{DATA / 'standin'}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "argv.log"
    monkeypatch.setenv("STANDIN_ARGV_LOG", str(log))
    return log


def test_cli_channel_through_the_standin(standin_cli):
    nodes = probes.node_status(_cli_config(cockroach_host="localhost:26257"))
    assert nodes == parse_cli_output(CSV_DECOM, "csv")
    argv = standin_cli.read_text().strip().split("\0")
    assert argv[1:] == ["node", "status", "--all", "--format=csv", "--host=localhost:26257", "--insecure"]
    # decommissioned nodes do not make the cluster unhealthy; every active one is live with no bad range
    health = probes.cluster_health(_cli_config())
    assert health["healthy"] and health["problems"] == []


def test_cli_channel_reports_dead_active_nodes_and_cli_errors(standin_cli, monkeypatch, tmp_path):
    # a recorded table with n1 dead but still active: written as CSV for the stand-in to replay
    rows = [{k: ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v)) for k, v in r.items()}
            for r in csv.DictReader(_csv_from_table(_table(3)).splitlines())]
    f = tmp_path / "dead.csv"
    with open(f, "w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    monkeypatch.setenv("STANDIN_NODE_STATUS", str(f))  # absolute: the stand-in replays this file
    health = probes.cluster_health(_cli_config())
    assert not health["healthy"]
    assert "n1 is not live" in health["problems"] and "n1 is draining" in health["problems"]
    with pytest.raises(ChaosDBError, match="certificates"):
        probes.node_status({"cockroach_channel": "cli"})  # neither --insecure nor --certs-dir
    with pytest.raises(ChaosDBError, match="list of arguments"):
        channels.cli_argv({"cockroach_cli_prefix": "kubectl exec pod -- sh -c"}, "node", "status")


def _csv_from_table(text: str) -> str:
    lines = [ln for ln in text.splitlines() if "|" in ln and not set(ln.strip()) <= set("-+")]
    return "\n".join(",".join(c.strip() for c in ln.split("|")) for ln in lines) + "\n"


def test_missing_cli_is_explained(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ChaosDBError, match="not on PATH"):
        probes.node_status(_cli_config())


# ---------------------------------------------------------------------------
# HTTP stand-in


def _vars_text() -> str:
    lines = ["# HELP ranges Number of ranges", "# TYPE ranges gauge"]
    for n in parse_cli_output(CSV_DECOM, "csv"):
        if n["replicas"] is None:
            continue
        n = dict(n, ranges=n["leaseholders"])  # each range is counted by one of its replicas (the leaseholder's)
        for store, share in ((1, 0.5), (2, 0.5)):  # two stores per node: the channel must sum them
            for series, key in (("replicas", "replicas"), ("ranges", "ranges"), ("replicas_leaseholders", "leaseholders"),
                                ("replicas_leaders", "leaders"), ("ranges_unavailable", "ranges_unavailable"),
                                ("ranges_underreplicated", "ranges_underreplicated")):
                lines.append(f'{series}{{store="{store}",node_id="{n["id"]}"}} {n[key] * share}')
    lines.append('sys_uptime{node_id="1"} 1234')
    return "\n".join(lines) + "\n"


class _Standin(BaseHTTPRequestHandler):
    sessions: set[str] = set()
    draining = False

    def log_message(self, *a):  # quiet
        pass

    def _send(self, code: int, body: str, ctype: str = "application/json") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/health":
            if "ready=1" in query and self.draining:
                return self._send(503, json.dumps({"error": "node is shutting down", "code": 14,
                                                   "message": "node is shutting down", "details": []}, indent=2))
            return self._send(200, "{\n\n}")
        if path == "/_status/vars":
            return self._send(200, _vars_text(), "text/plain; version=0.0.4; charset=utf-8")
        if path == "/api/v2/nodes/":
            if self.headers.get("X-Cockroach-API-Session") not in self.sessions:
                return self._send(401, "not authenticated\n", "text/plain")
            nodes = []
            for n in parse_cli_output(CSV_DECOM, "csv"):
                nodes.append({"node_id": n["id"], "address": {"network_field": "tcp", "address_field": n["address"]},
                              "build_tag": n["build"] or "", "started_at": 1748639426237011000,
                              "liveness_status": 5 if n["membership"] == "decommissioned" else 3,
                              "locality": {"tiers": []}})
            return self._send(200, json.dumps({"nodes": nodes, "next": 0}))
        return self._send(404, "not found\n", "text/plain")

    def do_POST(self):
        if self.path == "/api/v2/login/":
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            if form.get("username") == ["root"] and form.get("password") == ["s3cret"]:
                self.sessions.add("sess-1")
                return self._send(200, json.dumps({"session": "sess-1"}))
            return self._send(401, "the provided credentials did not match any account on the server\n",
                              "text/plain")
        return self._send(404, "not found\n", "text/plain")


@pytest.fixture
def http_standin():
    _Standin.sessions = set()
    _Standin.draining = False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Standin)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_channel_logs_in_and_sums_store_metrics(http_standin):
    cfg = {"cockroach_channel": "http", "cockroach_http_url": http_standin}
    nodes = probes.node_status(cfg, {"cockroach_username": "root", "cockroach_password": "s3cret"})
    by_id = {n["id"]: n for n in nodes}
    assert sorted(by_id) == [1, 2, 3, 4, 6]
    assert by_id[1]["replicas"] == 210 and by_id[1]["ranges"] == 41 and by_id[1]["leaseholders"] == 41
    assert by_id[1]["is_live"]
    assert by_id[3]["membership"] == "decommissioned" and not by_id[3]["is_live"] and by_id[3]["replicas"] is None
    assert probes.cluster_is_healthy(configuration=cfg,
                                     secrets={"cockroach_username": "root", "cockroach_password": "s3cret"})
    with pytest.raises(ChaosDBError, match="cockroach_username and cockroach_password"):
        probes.node_status(cfg, {})
    with pytest.raises(ChaosDBError, match="login .* failed .*HTTP 401"):
        probes.node_status(cfg, {"cockroach_username": "root", "cockroach_password": "wrong"})


def test_readiness_while_draining_and_when_down(http_standin):
    assert probes.node_is_ready(http_standin) == {"ready": True, "status": 200, "reason": None}
    _Standin.draining = True
    assert probes.node_is_ready(http_standin) == {"ready": False, "status": 503, "reason": "node is shutting down"}
    down = probes.node_is_ready("http://127.0.0.1:9")  # nothing listens: a down node refuses the connection
    assert down["ready"] is False and down["status"] is None and down["reason"]


def test_prometheus_parser_keeps_tenants_apart():
    text = ('ranges{store="1",node_id="1",tenant="system"} 10\nranges{store="1",node_id="1",tenant="demoapp"} 99\n'
            '...\n# TYPE x gauge\n')
    assert range_metrics(text) == {1: {"ranges": 10.0}}


def test_prometheus_text_with_escapes_timestamps_and_special_values():
    from chaosdb.core.prometheus import parse_prometheus

    text = ('# HELP sql_conns open connections\n# TYPE sql_conns gauge\n'
            'sql_conns{node_id="1",note="say \\"hi\\"\\nthen go"} 3 1700000000000\n'
            'latency_bucket{le="+Inf"} +Inf\nidle NaN\n')
    samples = parse_prometheus(text)
    assert samples[0] == ("sql_conns", {"node_id": "1", "note": 'say "hi"\nthen go'}, 3.0)
    assert samples[1][0] == "latency_bucket" and samples[1][1] == {"le": "+Inf"} and samples[1][2] == float("inf")
    assert samples[2][0] == "idle" and samples[2][2] != samples[2][2]  # NaN
    with pytest.raises(ChaosDBError, match="not in the Prometheus text format"):
        parse_prometheus('broken{node_id="1" 3\n')


# ---------------------------------------------------------------------------
# opt-in: a real cluster


@pytest.mark.skipif(not os.environ.get("CHAOSDB_COCKROACH_URL"), reason="set CHAOSDB_COCKROACH_URL (postgresql://root@host:26257/"
                    "defaultdb?sslmode=disable) to run against a real CockroachDB")
def test_real_cluster_over_sql():
    cfg = {"cockroach_channel": "sql", "cockroach_url": os.environ["CHAOSDB_COCKROACH_URL"]}
    nodes = probes.node_status(cfg)
    assert nodes and any(n["is_live"] for n in nodes)
    assert all(n["ranges"] is not None for n in nodes if n["is_live"])


# ---------------------------------------------------------------------------
# contract tests: recorded outputs of decommission, drain, SHOW RANGE(S), health


def _sections(name: str) -> list[str]:
    import re
    parts = re.split(r"^# (?:command|sql)[^\n]*\n", (DATA / name).read_text(), flags=re.M)
    return parts[1:]


def test_recorded_decommission_outputs():
    from chaosdb.cockroach.records import parse_decommission_output
    done = parse_decommission_output((DATA / "node_decommission_csv_done_with_note.txt").read_text())
    assert done["nodes"] == [{"id": 6, "is_live": False, "replicas": 0, "decommissioning": True,
                              "membership": "decommissioned", "draining": False}]
    assert done["note"].startswith("No more data reported on target nodes")
    running = parse_decommission_output((DATA / "node_decommission_csv_in_progress.csv").read_text())
    assert running["note"] is None and running["nodes"][0]["replicas"] == 24
    progress, complete, dead, recommission = (parse_decommission_output(t) for t in
                                              _sections("docs_v25.4_node_decommission_recommission_output.txt"))
    assert [(n["id"], n["replicas"]) for n in progress["nodes"]] == [(4, 39), (5, 34)] and not progress["note"]
    assert [n["replicas"] for n in complete["nodes"]] == [0, 0] and complete["note"]
    assert dead["nodes"][0]["is_live"] is False and dead["nodes"][0]["membership"] == "decommissioning"
    assert recommission["nodes"][0]["membership"] == "active" and recommission["nodes"][0]["draining"] is True
    # repeated updates (as printed while replicas move) and a stall report: the last status counts
    text = (DATA / "node_decommission_csv_in_progress.csv").read_text() + "..\npossible decommission stall " \
        "detected; reporting decommissioning replicas\nn6 still has replica id 3 for range r12\n" + \
        (DATA / "node_decommission_csv_done_with_note.txt").read_text()
    merged = parse_decommission_output(text)
    assert merged["updates"] == 2 and merged["nodes"][0]["membership"] == "decommissioned"
    assert merged["stalled_replicas"] == [{"node": 6, "replica": 3, "range": 12}]
    with pytest.raises(ChaosDBError, match="no decommission status"):
        parse_decommission_output("ERROR: node does not exist\n")


def test_recorded_drain_progress():
    from chaosdb.cockroach.actions import _remaining
    stderr = _sections("docs_v25.4_node_drain_output_and_logs.txt")[0]
    assert _remaining(stderr) == [50, 0] and stderr.strip().endswith("ok")


def test_recorded_show_range_for_row_and_show_ranges():
    from chaosdb.cockroach.ranges import range_record
    from chaosdb.cockroach.sql import parse_sql_table
    table_row, index_row = (parse_sql_table(t) for t in _sections("docs_v25.4_show_range_for_row.txt"))
    rec = range_record(table_row[0])
    assert (rec["range_id"], rec["lease_holder"], rec["replicas"]) == (57, 1, [1])
    assert rec["lease_holder_locality"] == "region=us-east1,az=b"
    idx = range_record(index_row[0])
    assert idx["range_id"] == 53 and idx["start_key"] is None  # NULL keys for an index row
    sections = _sections("docs_v25.4_show_ranges_outputs.txt")
    plain, details = parse_sql_table(sections[3]), parse_sql_table(sections[4])
    assert [range_record(r)["lease_holder"] for r in plain] == [None, None, None]  # v23.2+: only WITH DETAILS
    assert [range_record(r)["lease_holder"] for r in details] == [2, 8, 5]
    assert [range_record(r)["replicas"] for r in plain][0] == [2, 5, 7]


def test_recorded_health_bodies():
    from chaosdb.cockroach.records import health_summary
    text = (DATA / "docs_v25.4_health_endpoints.md").read_text()
    body = text.split("HTTP/1.1 503 Service Unavailable", 1)[1].split("~~~", 1)[0]
    assert health_summary(503, body) == {"ready": False, "status": 503, "reason": "node is not healthy"}
    assert health_summary(200, "{\n\n}") == {"ready": True, "status": 200, "reason": None}
    v2 = "An internal server error has occurred. Please check your CockroachDB logs for more details.\n"
    assert health_summary(500, v2)["reason"].startswith("An internal server error")


def test_liveness_status_as_int_or_name():
    from chaosdb.cockroach.records import liveness_name, normalise_api_nodes
    assert [liveness_name(v) for v in (3, "3", "NODE_STATUS_DECOMMISSIONED", "DRAINING", 42, None)] == \
        ["live", "live", "decommissioned", "draining", "unknown", "unknown"]
    nodes = normalise_api_nodes({"nodes": [{"node_id": 2, "liveness_status": "NODE_STATUS_DEAD"}]})
    assert nodes[0]["is_live"] is False and nodes[0]["membership"] == "active"
