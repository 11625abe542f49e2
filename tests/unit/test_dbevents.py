"""The events between two answers of a database (chaosdb.core.dbevents) and the fault spans of a journal
(chaosdb.report.spans): pure functions, checked on hand-made answers."""

from __future__ import annotations

from chaosdb.core.dbevents import View, carry, changes, label_of
from chaosdb.report.spans import fault_spans


def _view(leader, up, term=1, converged=True):
    return View("patroni", leader, {n: {"up": u, "state": "running" if u else "stopped"} for n, u in up.items()},
                term=term, term_name="timeline", converged=converged)


def test_a_failover_seen_answer_by_answer():
    a = _view("node1", {"node1": True, "node2": True, "node3": True})
    first = changes(None, a, None, 10.0)
    assert [e["event"] for e in first] == ["observed"] and first[0]["leader"] == "node1"
    # node1 dies: Patroni still lists it until its key expires, then drops it; node2 is promoted, timeline 2
    b = carry(a, _view(None, {"node2": True, "node3": True}, term=None, converged=True))
    assert b.members["node1"] == {"up": False, "state": "gone from the member list"}
    assert b.converged is False and b.term == 1  # survivors agreeing is not convergence; the term is kept
    ev = changes(a, b, 10.0, 10.5)
    assert [(e["event"], e.get("member") or e.get("from")) for e in ev] == [
        ("leader_lost", "node1"), ("member_left", "node1"), ("replicas_behind", None)]
    assert all(e["since_ts"] == 10.0 and e["ts"] == 10.5 for e in ev)
    c = carry(b, _view("node2", {"node2": True, "node3": True}, term=2))
    ev = changes(b, c, 10.5, 11.0)
    assert [e["event"] for e in ev] == ["leader_elected", "term_changed"]
    assert ev[0]["to"] == "node2" and ev[0]["from"] is None and (ev[1]["from"], ev[1]["to"]) == (1, 2)
    d = carry(c, _view("node2", {"node1": True, "node2": True, "node3": True}, term=2))
    ev = changes(c, d, 11.0, 11.5)
    assert [(e["event"], e.get("member")) for e in ev] == [("member_rejoined", "node1"), ("replicas_converged", None)]
    assert label_of(ev[0]) == "node1 rejoined" and label_of(ev[1]) == "patroni: replicas caught up"


def test_a_leader_handed_over_directly_is_one_election():
    a = _view("node1", {"node1": True, "node2": True})
    ev = changes(a, _view("node2", {"node1": True, "node2": True}), 1.0, 2.0)
    assert [(e["event"], e["from"], e["to"]) for e in ev] == [("leader_elected", "node1", "node2")]


def _fault(name, start, end, **kw):
    return {"name": name, "start_ts": start, "end_ts": end, "status": "succeeded", "rollback": False,
            "restores": False, **kw}


def test_a_fault_lasts_until_the_restoring_action_not_until_its_own_action_returns():
    faults = [_fault("kill", 100.0, 100.2), _fault("wait", 101.0, 120.0, restores=True, waits=True),
              _fault("restart", 130.0, 135.0, restores=True), _fault("switch", 140.0, 141.0, operator=True),
              _fault("delay", 150.0, 180.0, timed=True), _fault("broken", 190.0, 190.1, status="failed")]
    spans = fault_spans(faults)
    assert [(s["name"], s["start_ts"], s["end_ts"]) for s in spans] == [("kill", 100.0, 130.0),
                                                                      ("delay", 150.0, 180.0)]
    assert spans[0]["ended_by"] == "restoring action 'restart'" and spans[1]["ended_by"] == "its timed revert"
    # nothing restored it: the action's own end
    assert fault_spans([_fault("kill", 1.0, 1.5)])[0]["ended_by"] == "the action's end"


def test_cockroachdb_node_status_as_recorded_becomes_a_view(monkeypatch):
    """The node status a real CockroachDB v22.1 printed (tests/data/cockroach), through the adapter: a node that
    stops being live is a member that left."""
    from pathlib import Path

    from chaosdb.cockroach import channels
    from chaosdb.cockroach.adapter import ADAPTER
    from chaosdb.cockroach.records import normalise_cli_rows, parse_cli_output

    text = (Path(__file__).parents[1] / "data" / "cockroach" / "node_status_all_csv_v22.1_single.csv").read_text()
    nodes = normalise_cli_rows(parse_cli_output(text))
    monkeypatch.setattr(channels, "node_status", lambda cfg, secrets=None: nodes)
    cfg = {"cockroach_url": "postgresql://root@127.0.0.1:26257/defaultdb"}
    assert ADAPTER.sources(cfg) == ("cockroach",) and ADAPTER.sources({}) == ()
    live = ADAPTER.view("cockroach", cfg, None)
    assert live.leader is None and live.converged is True
    assert live.members == {"n5": {"up": True, "state": "active", "leaseholders": nodes[0]["leaseholders"]}}
    nodes = [{**n, "is_live": False, "liveness_status": "dead"} for n in nodes]
    dead = carry(live, ADAPTER.view("cockroach", cfg, None))
    assert [(e["event"], e.get("member")) for e in changes(live, dead, 1.0, 2.0)] == [
        ("member_left", "n5"), ("replicas_behind", None)]


def test_a_run_watches_the_database_first_then_the_store_it_keeps_its_state_in():
    """The report counts the first commit after the election of the first source watched: Patroni's, not its
    etcd's (etcd elects its own leader, at another moment)."""
    from chaosdb.core.adapters import watched_sources

    found = [(a.name, s) for a, s in watched_sources({"chaosdb_cluster_dir": "/nowhere"})]
    assert found == [("patroni", "patroni"), ("etcd", "etcd")]
    both = [(a.name, s) for a, s in watched_sources({"etcd_urls": "http://127.0.0.1:1", "patroni_urls": "x",
                                                     "pd_url": "http://127.0.0.1:2"})]
    assert both.index(("patroni", "patroni")) < both.index(("etcd", "etcd"))
    assert both.index(("tikv", "pd")) < both.index(("etcd", "etcd"))
