"""A report that cannot contradict itself (issue 43, item 8 and the report's part of item 9): each numbered fault
a tester found in the reports of the shipped experiments, on synthetic runs whose truth is known.

1. the verdict line names the outage; a throughput that never recovered is flagged beside it;
2. the restore and the later disturbances are said in words that agree;
3. a fault ends with whatever ended it (a rollback of an interrupted run, its timer, a restoring action);
4. one availability, time-based, that cannot read 100 % while throughput collapsed;
5. the timeline's events are the table's events (numbers, times, words);
6. the timeline's labels do not overlap and stay in their panel, the legend covers no data, the recovery and the
   fault bands are both visible;
7. tolerances in words;
8. every pointer of a generated report resolves for a user who installed the package only.

:func:`synthetic_run` writes a run folder (journal.json, samples/ with events.jsonl) that the browser test
(tests/integration/test_report_browser.py) reuses.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chaosdb.report.build import build_report, event_rows, recovery_lines
from chaosdb.report.plots import MAX_LANES
from chaosdb.report.spans import fault_spans, timeline_events
from chaosdb.report.tolerance import tolerance_in_words

T0 = 1_800_000_000.0
FAULT = T0 + 60.0
CLIENTS = 8


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def _closed_loop(end: float, latency_ms, outcome_of, seed: int = 5, wait_ms=lambda t: 0.0
                 ) -> list[tuple[float, float, str, str]]:
    """CLIENTS closed-loop clients from T0 to *end*: each starts its next transaction *wait_ms(t)* after the last one
    came back. *latency_ms(t, rng)* and *outcome_of(t)* say what a transaction started at t does."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(CLIENTS):
        t = T0 + c * 0.001
        while t < end:
            lat = float(latency_ms(t, rng))
            rows.append((t, lat, "new_order" if rng.random() < 0.5 else "payment", outcome_of(t)))
            t += (lat + wait_ms(t)) / 1000.0 + 0.0001
    rows.sort()
    return rows


def _healthy(rng) -> float:
    return max(5.0, rng.normal(20.0, 2.0))  # 8 clients at ~20 ms: ~400 tx/s


#: what the database said: a failover, then a stale answer that names the old leader on the old timeline at 40 s
EVENTS = [
    (-50.0, None, "patroni", "observed", {"leader": "node1", "term": 1, "term_name": "timeline"}),
    (0.5, 0.0, "etcd", "member_left", {"member": "node1", "state": "no answer"}),
    (19.8, 19.3, "patroni", "leader_lost", {"from": "node1"}),
    (19.8, 19.3, "patroni", "member_left", {"member": "node1", "state": "gone from the member list"}),
    (20.3, 19.8, "patroni", "leader_elected", {"to": "node2", "from": None}),
    (21.3, 20.8, "patroni", "term_changed", {"term": "timeline", "from": 1, "to": 2}),
    (30.5, 30.0, "etcd", "member_rejoined", {"member": "node1", "state": "healthy"}),
    (40.0, 39.5, "patroni", "leader_elected", {"to": "node1", "from": "node2"}),
    (40.0, 39.5, "patroni", "term_changed", {"term": "timeline", "from": 2, "to": 1}),
    (40.5, 40.0, "patroni", "leader_elected", {"to": "node2", "from": "node1"}),
    (48.0, 47.5, "patroni", "member_rejoined", {"member": "node1", "state": "streaming"}),
    (48.0, 47.5, "patroni", "replicas_converged", {}),
]

HYPOTHESIS = [
    ("p99-vs-baseline", {"type": "range", "range": [0, 3]}, 1.2),
    ("error-rate", {"type": "range", "range": [0, 0.01]}, 0.0),
    ("consistent", True, True),
    ("lost-writes", 0, 0),
    ("status-line", {"type": "regex", "pattern": "^ok", "target": "stdout"}, {"stdout": "ok"}),
    ("members", {"type": "jsonpath", "path": "$.members[*]", "count": 3}, {"members": [1, 2, 3]}),
]


def _action(name: str, func: str, start: float, end: float, output: Any = None, status: str = "succeeded",
            module: str = "chaosdb.embedded.actions") -> dict[str, Any]:
    return {"activity": {"type": "action", "name": name, "provider": {"type": "python", "module": module,
                                                                       "func": func}},
            "start": _iso(start), "end": _iso(end), "status": status, "output": output}


def synthetic_run(folder: Path, kind: str = "kill") -> Path:
    """A run folder like the report control writes (journal.json, samples/samples-1.csv, samples/events.jsonl);
    returns the journal's path.

    * ``kill``: the primary's node is killed at 60 s (every attempt fails fast for 20 s), restarted at 75 s (while
      the disturbance goes on), a second dip at 115-120 s; throughput then stays at about 250 tx/s against a
      baseline of about 400: it never recovers;
    * ``hang``: the primary is suspended for 10 s by a timed fault, closed-loop clients are held (every attempt
      succeeds, late), the run is interrupted at 65.3 s and the rollback resumes the node then; the samples go on
      to 110 s (the load ran until the controls ended);
    * ``partition``: a timed 40 s partition, no commit for 22 s, throughput back after it.
    """
    samples = folder / "samples"
    samples.mkdir(parents=True)
    stop = T0 + 150.0
    if kind == "kill":
        def lat(t, rng):
            if FAULT <= t < FAULT + 20.0:
                return 100.0  # a fast connection error, then the client's back-off
            if T0 + 115.0 <= t < T0 + 120.0:
                return 400.0
            return _healthy(rng)

        def outcome(t):
            return "conn_error" if FAULT <= t < FAULT + 20.0 else "committed"

        def wait(t):  # after the outage the clients get through at ~250 tx/s: healthy latency, fewer commits
            return 12.0 if t >= FAULT + 20.0 else 0.0
    elif kind == "hang":
        stop = T0 + 110.0

        def lat(t, rng):
            if FAULT <= t < FAULT + 5.3:
                return (FAULT + 5.3 - t) * 1000.0 + _healthy(rng)  # held until the rollback resumed the node
            return _healthy(rng)

        def outcome(t):
            return "committed"
    elif kind == "partition":
        def lat(t, rng):
            if FAULT <= t < FAULT + 22.0:
                return (FAULT + 22.0 - t) * 1000.0 + _healthy(rng)
            return _healthy(rng)

        def outcome(t):
            return "committed"
    else:
        raise ValueError(kind)
    rows = _closed_loop(stop, lat, outcome, wait_ms=wait if kind == "kill" else (lambda t: 0.0))
    (samples / "samples-1.csv").write_text("start_ts,latency_ms,name,outcome\n" + "".join(
        f"{t:.6f},{ms:.3f},{name},{out}\n" for t, ms, name, out in rows if t < stop))
    events = EVENTS if kind == "kill" else EVENTS[:7]
    (samples / "events.jsonl").write_text("".join(json.dumps(
        {"ts": round(FAULT + at, 3), "since_ts": None if since is None else round(FAULT + since, 3), "source": src,
         "event": ev, **more}) + "\n" for at, since, src, ev, more in events))
    node = {"name": "node1", "node": "node1", "roles": ["leader"]}
    status = "completed"
    rollbacks: list[dict[str, Any]] = []
    if kind == "kill":
        run = [_action("kill-the-primary-node", "kill_node", FAULT, FAULT + 0.2, {"targets": [node]}),
               _action("restart-the-killed-node", "restart_nodes", FAULT + 15.0, FAULT + 21.0,
                       {"targets": [{"name": "node1"}]})]
        rollbacks = [_action("resume-any-suspended-node", "resume_nodes", T0 + 148.0, T0 + 148.1,
                             {"targets": [], "resumed": {}})]
    elif kind == "hang":
        status = "interrupted"
        run = [_action("hang-the-primary-node-10s", "suspend_node", FAULT, FAULT + 0.3,
                       {"targets": [node], "fault_id": "f-hang", "reverts_at": FAULT + 10.4})]
        rollbacks = [_action("resume-any-suspended-node", "resume_nodes", FAULT + 5.3, FAULT + 5.32,
                             {"targets": [{"name": "node1"}], "resumed": {"node1": [101, 102]}}),
                     _action("make-sure-every-node-runs", "restart_nodes", FAULT + 5.33, FAULT + 5.4,
                             {"targets": [], "started": {}})]
    else:
        run = [_action("partition-the-leader-40s", "partition_node", FAULT, FAULT + 0.1,
                       {"targets": [node], "fault_id": "f-part", "reverts_at": FAULT + 40.0},
                       module="chaosdb.faults.actions")]
        rollbacks = [_action("revert-every-local-fault", "revert_faults", T0 + 140.0, T0 + 140.1,
                             {"targets": [{"name": "node1"}], "reverted": [
                                 {"id": "f-part", "targets": ["node1"], "reverted_by": "timer",
                                  "reverted_at": FAULT + 40.1}]}, module="chaosdb.faults.actions")]
    probes = [{"activity": {"type": "probe", "name": name, "tolerance": tol}, "status": "succeeded",
               "output": out, "tolerance_met": True} for name, tol, out in HYPOTHESIS]
    journal = {
        "chaoslib-version": "1.44.0", "experiment": {"title": f"synthetic {kind}"}, "status": status,
        "deviated": False, "start": _iso(T0), "end": _iso(stop),
        "steady_states": {"before": {"steady_state_met": True, "probes": probes},
                          "after": None if kind == "hang" else {"steady_state_met": True, "probes": probes}},
        "run": run, "rollbacks": rollbacks,
        "chaosdb_load": {"samples_dir": str(samples), "warmup_end_ts": T0 + 10.0, "stop_ts": stop, "pauses": [],
                         "events": {"sources": ["patroni:patroni", "etcd:etcd"]}},
    }
    path = folder / "journal.json"
    path.write_text(json.dumps(journal))
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The report of each synthetic run: metrics, what was drawn, and the Markdown and HTML texts."""
    out = {}
    for kind in ("kill", "hang", "partition"):
        folder = tmp_path_factory.mktemp(kind)
        result = build_report(synthetic_run(folder, kind), out_dir=folder / "report")
        out[kind] = {**result, "md": (folder / "report" / "report.md").read_text(),
                     "html": (folder / "report" / "report.html").read_text(), "dir": folder / "report"}
    return out


# 1. the verdict line names the outage; a throughput that never recovered is flagged beside it


def test_the_verdict_line_names_the_outage_and_flags_a_throughput_that_never_recovered(reports):
    kill = reports["kill"]
    m, md = kill["metrics"], kill["md"]
    assert m["verdict"]["ok"] is True  # the hypothesis held: the verdict is green ...
    verdict = md.splitlines()[2]
    assert verdict.startswith("**Verdict: The steady-state hypothesis held")
    gap = m["recovery"]["unavailability_s"]
    assert 19.0 < gap < 21.0
    assert f"Outage: users disturbed for {m['recovery']['duration_s']:.1f} s" in verdict
    assert f"no commit for {gap:.1f} s" in verdict and f"availability {m['degradation']['availability'] * 100:.1f} %" \
        in verdict
    # ... and beside it, the throughput that stayed at ~250 tx/s against a baseline of ~400
    t = m["throughput_recovery"]
    assert t["recovered"] is False and m["recovery"]["time_to_baseline_throughput_s"] is None
    assert 350 < t["baseline_tps"] < 450 and 200 < t["median_tps"] < 300 and t["max_tps"] < 300
    flag = md.splitlines()[4]
    assert flag.startswith("**⚠ Throughput did not recover:") and f"baseline of {t['baseline_tps']:,.0f} tx/s" in flag
    assert f"it ran at {t['median_tps']:,.0f} tx/s" in flag and f"{t['min_tps']:,.0f}–{t['max_tps']:,.0f} tx/s" in flag
    assert 'id="throughput-not-recovered"' in kill["html"] and 'id="outage"' in kill["html"]
    # a throughput that came back is not flagged
    part = reports["partition"]
    assert part["metrics"]["throughput_recovery"]["recovered"] is True
    assert "Throughput did not recover" not in part["md"] and "throughput-not-recovered" not in part["html"]
    assert "Outage: users disturbed" in part["md"].splitlines()[2]


# 2. the restore and the later disturbances agree


def test_a_restore_inside_the_disturbance_and_later_disturbances_are_said_without_contradiction(reports):
    m = reports["kill"]["metrics"]
    r = m["recovery"]
    zero = m["first_fault_ts"]
    assert r["spans_restore"] is True and r["restore_ts"] == pytest.approx(FAULT + 15.0)
    lines = recovery_lines(m)
    assert not any("not a separate disturbance" in line for line in lines), lines
    restore = next(line for line in lines if "restart-the-killed-node" in line and "at 15.0 s" in line)
    assert "part of the fault's disturbance above" in restore
    later = next(line for line in lines if line.startswith("Later disturbances"))
    assert f"ended at {r['end_ts'] - zero:.1f} s" in later
    onsets = [float(x) for x in re.findall(r"from (\d+\.\d) s", later)]
    assert onsets and all(o >= r["end_ts"] - zero - 0.05 for o in onsets), (onsets, r["end_ts"] - zero)
    assert any(abs(o - 55.0) < 1.0 for o in onsets)  # the dip at 115 s of the run, 55 s after the fault


def test_a_restore_after_the_run_ended_is_not_called_undisturbed():
    from chaosdb.report.findings import restore_lines

    m = {"first_fault_ts": 100.0, "end_ts": 111.0, "faults": [],
         "recovery": {"restore_ts": 110.5, "restore_by": "its timed revert", "quiet_s": 5.0,
                      "after_restore": {"duration_s": None, "restore_ts": 110.5, "reason": "no run"}}}
    assert restore_lines(m) == ["After the fault's timed revert at 10.5 s: the run ended 0.5 s later, too soon to "
                                "say whether it disturbed"]


# 3. a fault ends with whatever ended it


def test_an_interrupted_runs_fault_ends_when_its_rollback_resumed_the_node(reports):
    hang = reports["hang"]
    m, md = hang["metrics"], hang["md"]
    (span,) = m["fault_spans"]
    assert span["end_ts"] == pytest.approx(FAULT + 5.3) and span["ended_by"] == "rollback 'resume-any-suspended-node'"
    assert hang["drawn"]["timeline"]["faults"] == [{"name": "hang-the-primary-node-10s", "start": 0.0,
                                                    "end": pytest.approx(5.3)}]
    assert "| hang-the-primary-node-10s | 0.0 | 5.3 | 5.3 | rollback 'resume-any-suspended-node' |" in md
    assert "timed revert" not in md.split("## Faults and rollbacks")[1].split("| activity |")[0]
    # the restore that divides the recovery is the rollback, and the fault's timer (due at 10.4 s) is not it
    assert m["recovery"]["restore_ts"] == pytest.approx(FAULT + 5.3)
    # the faults table shows when the call returned, not when the timer was due
    assert "| hang-the-primary-node-10s | action | 0.0 | 0.3 | succeeded |" in md


def _fault(name, start, end, **kw):
    return {"name": name, "start_ts": start, "end_ts": end, "status": "succeeded", "rollback": False,
            "restores": False, "returned_ts": kw.pop("returned", None), **kw}


def test_a_fault_span_ends_with_the_revert_its_record_names_or_its_timer_not_with_an_unrelated_rollback():
    timed = _fault("delay", 0.0, 30.0, returned=0.1, timed=True, fault_id="a", reverts_at=30.0, targets=["n1"])
    # revert_faults in the method undid this fault's record at 12.3 s
    revert = _fault("revert", 12.0, 12.5, restores=True, targets=["n1"],
                    reverted=[{"id": "a", "targets": ["n1"], "by": "action", "at": 12.3}])
    (span,) = fault_spans([timed, revert])
    assert (span["end_ts"], span["ended_by"]) == (12.3, "restoring action 'revert'")
    # the rollback only reports what the timer did: the timer ended it, when it did
    late = _fault("rollback", 50.0, 50.1, rollback=True, restores=True, targets=["n1"],
                  reverted=[{"id": "a", "targets": ["n1"], "by": "timer", "at": 30.2}])
    (span,) = fault_spans([timed, late])
    assert (span["end_ts"], span["ended_by"]) == (30.2, "its timed revert")
    # a kill: the rollback that resumed no node did not end it, the one that restarted its node did
    kill = _fault("kill", 0.0, 0.2, returned=0.2, targets=["n1"])
    resumed_none = _fault("resume", 5.0, 5.1, rollback=True, restores=True, targets=[])
    restarted = _fault("restart", 5.2, 9.0, rollback=True, restores=True, targets=["n1"])
    other = _fault("restart-other", 4.0, 4.5, restores=True, targets=["n2"])
    (span,) = fault_spans([kill, other, resumed_none, restarted])
    assert (span["end_ts"], span["ended_by"]) == (5.2, "rollback 'restart'")


# 4. one availability, time-based


def test_availability_cannot_read_100_percent_while_throughput_collapsed(reports):
    for kind in ("hang", "partition"):
        m = reports[kind]["metrics"]
        d, a = m["degradation"], m["availability"]
        # every attempt succeeded (clients were held, not refused) ...
        assert d["success_ratio"] == 1.0
        # ... yet the seconds without commits are unavailable: one definition, time-based
        assert d["availability"] == a["ratio"] < 1.0
        assert a["baseline_ratio"] == 1.0 and a["slice_s"] == 1.0 and a["fraction"] == 0.5
        assert a["unavailable_s"] >= (5.0 if kind == "hang" else 21.0)
        # the bound the definition gives: a drop of D leaves at most (1 - D) / 0.5 of the slices available
        assert a["ratio"] <= (1 - d["throughput_pct"] / 100) / a["fraction"] + 1.0 / a["slices"]
    # the report says the definition where it gives the number, with the throughput drop and the attempts beside it
    line = next(x for x in reports["partition"]["md"].splitlines() if x.startswith("- Availability **"))
    assert "slices of 1 s" in line and "at least 50 % of the baseline's rate" in line
    assert "below the baseline's" in line and "100.00 % of the attempts succeeded" in line


def test_availability_of_a_throughput_collapse_is_low_by_construction():
    """88 % fewer commits for the whole impact: no slice reaches half the baseline's rate."""
    from chaosdb.report.metrics import availability
    from tests.unit.test_report_metrics import trace

    s, f0 = trace(rate=400.0, duration=120.0, fault_at=60.0)
    keep = (s.ts < f0) | (np.arange(len(s)) % 25 < 3)  # 12 % of the transactions after the fault
    thin = s.subset(keep)
    a = availability(thin, f0, f0 + 59.0, 400.0)
    assert a["ratio"] == 0.0 and a["slices"] == 59


# 5. the timeline's events are the table's events


def test_the_timelines_events_are_exactly_the_tables_events(reports):
    kill = reports["kill"]
    m, drawn = kill["metrics"], kill["drawn"]["timeline"]
    shown = m["timeline_events"]
    # every annotated event of the run is in the table, the stale answer at 40 s included
    kinds = [e for e in m["events"] if e["event"] not in ("observed", "replicas_behind")]
    assert sum(len(e["events"]) for e in shown) == len(kinds)
    stale = [e for e in shown if e["at_s"] == 40.0]
    assert len(stale) == 1 and "patroni: node1 leads" in stale[0]["label"]
    # a timeline never goes back: the answer that said so is named stale, where the table and the figure say it
    assert "patroni: timeline 1 (older than timeline 2: a stale answer)" in stale[0]["label"]
    assert "stale" not in " ".join(e["label"] for e in shown if e is not stale[0])
    rows = event_rows(m)
    assert [(d["n"], d["at"], d["label"]) for d in drawn["events"]] == [(e["n"], e["at_s"], e["label"]) for e in shown]
    assert [r[0] for r in rows] == [str(d["n"]) for d in drawn["events"]]
    assert [r[4] for r in rows] == [d["label"] for d in drawn["events"]]
    # the Markdown table holds the same rows
    table = [line for line in kill["md"].split("Database events")[1].split("![latency ECDF]")[0].splitlines()
             if line.startswith("| ") and not line.startswith(("| #", "| ---"))]
    assert [[c.strip() for c in line.strip("|").split("|")] for line in table] == rows
    # one line per observer answer: its time is every one of its events' time
    for e in shown:
        at = [x["at_s"] for x in m["events"] if x["event"] in e["events"] and abs(x["at_s"] - e["at_s"]) < 0.06]
        assert at and max(at) - min(at) < 0.06


# 6. the timeline's layout


def _figure(metrics: dict[str, Any], faults: list[dict[str, Any]]):
    from chaosdb.report.plots import pyplot, timeline_figure

    fig, drawn = timeline_figure(metrics, faults, metrics.get("run", {}).get("title", "t"))
    fig.canvas.draw()
    return pyplot(), fig, drawn


def _crowded(metrics: dict[str, Any]) -> dict[str, Any]:
    """The kill run's metrics with 30 more events, some 0.2 s apart, some near the right edge, long labels."""
    extra = []
    for i in range(30):
        at = 21.0 + i * (0.2 if i < 15 else 1.7)
        extra.append({"ts": FAULT + at, "at_s": at, "since_ts": FAULT + at - 0.5, "source": "patroni",
                      "event": "member_left" if i % 2 else "member_rejoined", "member": f"a-rather-long-name-{i}"})
    extra.append({"ts": FAULT + 89.5, "at_s": 89.5, "source": "etcd", "event": "leader_elected", "to": "node3"})
    events = sorted(metrics["events"] + extra, key=lambda e: e["at_s"])
    return {**metrics, "events": events, "timeline_events": timeline_events(events)}


@pytest.mark.parametrize("crowded", [False, True])
def test_event_labels_do_not_overlap_stay_in_their_panel_and_the_legend_covers_no_data(reports, crowded):
    kill = reports["kill"]
    metrics = _crowded(kill["metrics"]) if crowded else kill["metrics"]
    plt, fig, drawn = _figure(metrics, kill["metrics"]["faults"])
    try:
        renderer = fig.canvas.get_renderer()
        labels = [t for ax in fig.axes for t in ax.texts if t.get_gid() == "event-label"]
        strip = next(ax for ax in fig.axes if any(t.get_gid() == "event-label" for t in ax.texts))
        assert len(drawn["events"]) == len(metrics["timeline_events"])
        assert sorted(t.get_text() for t in labels) == sorted({d["text"] for d in drawn["events"]})
        boxes = [t.get_window_extent(renderer) for t in labels]
        frame = strip.get_window_extent(renderer)
        for box, text in zip(boxes, labels, strict=True):
            assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, text.get_text()
            assert frame.y0 - 0.5 <= box.y0 and box.y1 <= frame.y1 + 0.5, text.get_text()
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), (a, b)
        # every event's number (the table's) is on the figure: with its words (the number next to its line), alone,
        # or in the range of the lines too close to tell apart
        for event in drawn["events"]:
            words, n = event["text"], event["n"]
            ranged = re.fullmatch(r"(\d+)–(\d+)", words or "")
            assert words in (f"{n} {event['label']}", f"{event['label']} {n}", str(n)) or (
                ranged and int(ranged[1]) <= n <= int(ranged[2])), (n, words)
        if crowded:
            assert any(re.fullmatch(r"\d+–\d+", t.get_text()) for t in labels)  # 15 events in 3 s
            assert drawn["lanes"] <= 2 * MAX_LANES  # numbers alone take the lanes the words could not
        else:
            assert all(d["text"].startswith(f"{d['n']} ") or d["text"].endswith(f" {d['n']}")
                       for d in drawn["events"])  # the run's own events all have room for their words
        # the legend is outside every panel: it covers neither the baseline's lines nor anything else
        legend = fig.legends[0].get_window_extent(renderer)
        for ax in fig.axes:
            assert not legend.overlaps(ax.get_window_extent(renderer)), ax.get_ylabel()
        # every label is inside the figure
        figure = fig.bbox
        assert all(figure.x0 <= b.x0 and b.x1 <= figure.x1 for b in boxes + [legend])
    finally:
        plt.close(fig)


def test_the_recovery_band_and_the_fault_band_are_both_visible(reports):
    from matplotlib.colors import to_rgba

    kill = reports["kill"]
    m = kill["metrics"]
    plt, fig, drawn = _figure(m, m["faults"])
    try:
        assert drawn["recovery"] and drawn["faults"]
        assert drawn["recovery"]["start"] < drawn["faults"][0]["end"]  # they overlap: the case of the issue
        for ax in fig.axes[:2]:  # latency and throughput panels
            fault = [p for p in ax.patches if p.get_gid() == "fault"]
            recovery = [p for p in ax.patches if p.get_gid() == "recovery"]
            assert fault and recovery
            for p in fault + recovery:
                assert p.get_visible() and p.get_facecolor()[3] > 0.05
            # the recovery is drawn over the fault, see-through, with its own edges
            assert min(p.get_zorder() for p in recovery) > max(p.get_zorder() for p in fault)
            assert all(p.get_facecolor()[3] < 0.5 for p in recovery)
            assert all(p.get_linewidth() > 0 and p.get_edgecolor()[3] > 0.5 for p in recovery)
            assert to_rgba(recovery[0].get_facecolor())[:3] != to_rgba(fault[0].get_facecolor())[:3]
            # both are drawn below the data
            assert max(p.get_zorder() for p in recovery) < min(line.get_zorder() for line in ax.lines
                                                                 if line.get_label() in ("p99", "committed tx/s"))
    finally:
        plt.close(fig)


# 7. tolerances in words


@pytest.mark.parametrize("tolerance,words", [
    ({"type": "range", "range": [0, 3]}, "between 0 and 3"),
    ({"type": "range", "range": [0, 0.01]}, "between 0 and 0.01"),
    ({"type": "range", "range": [0.5, 2.0], "target": "ratio"}, "its 'ratio' between 0.5 and 2"),
    ([1, 5], "between 1 and 5"),
    ([200, 201, 204], "one of 200, 201, 204"),
    (True, "true"),
    (False, "false"),
    (0, "equal to 0"),
    ("ok", "equal to 'ok'"),
    ({"type": "regex", "pattern": "^ok", "target": "stdout"}, "its 'stdout' matches the regular expression ^ok"),
    ({"type": "jsonpath", "path": "$.members[*]", "count": 3}, "JSON path $.members[*] finds 3 value(s)"),
    ({"type": "jsonpath", "path": "$.leader", "expect": "node1"}, "JSON path $.leader finds exactly 'node1'"),
    ({"type": "jsonpath", "path": "$.up"}, "JSON path $.up finds at least one value"),
    ({"type": "probe", "name": "check", "provider": {"type": "python", "func": "accepts"}},
     "probe 'check' (accepts) accepts it"),
    (None, "–"),
])
def test_tolerances_are_said_in_words(tolerance, words):
    assert tolerance_in_words(tolerance) == words


def test_the_report_prints_no_tolerance_as_raw_json(reports):
    md = reports["kill"]["md"]
    assert '{"type"' not in md and '{&#34;type' not in reports["kill"]["html"]
    assert "| p99-vs-baseline | between 0 and 3 |" in md and "| consistent | true |" in md
    assert "| status-line | its 'stdout' matches the regular expression ^ok |" in md


# 8. every pointer of a generated report resolves for a user who installed the package only


def test_every_pointer_a_generated_report_makes_resolves_in_the_installed_package(reports, tmp_path):
    from tests.unit.test_shipped_pointers import dangling

    for kind, r in reports.items():
        for path in sorted(Path(r["dir"]).iterdir()):
            if path.suffix in (".md", ".html", ".json"):
                found = dangling(path.read_text(), path)
                assert not found, (kind, path.name, found)
        assert "README" not in r["md"] and "README" not in r["html"]
        assert "## How the numbers are defined" in r["md"] and 'id="definitions"' in r["html"]
        assert 'the section "How the numbers are defined" above' in r["md"]
    # the report of a run without load points at what the package has
    journal = json.loads((reports["kill"]["dir"].parent / "journal.json").read_text())
    del journal["chaosdb_load"]
    bare = tmp_path / "journal.json"
    bare.write_text(json.dumps(journal))
    result = build_report(bare, out_dir=tmp_path / "bare")
    assert "chaosdb experiments copy" in result["metrics"]["no_load"]
    for path in (tmp_path / "bare").iterdir():
        assert not dangling(path.read_text(), path), path.name


def test_every_pointer_in_the_reporters_messages_templates_and_commands_resolves():
    from chaosdb.cli import build_parser
    from tests.unit.test_shipped_pointers import PACKAGE, _messages, _parsers, dangling

    found = []
    for path in sorted((PACKAGE / "report").rglob("*")):
        if path.suffix == ".py":
            found += [f"{path.name}:{line}: {d}" for line, text in _messages(path) for d in dangling(text, path)]
        elif path.suffix in (".html", ".css"):
            found += [f"{path.name}: {d}" for d in dangling(path.read_text(), path)]
    found += [f"{' '.join(words)}: {d}" for words, parser in _parsers(build_parser()) if "report" in words
              for d in dangling(parser.format_help())]
    assert not found, "\n".join(found)
