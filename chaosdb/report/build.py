"""Build a run's report: ``metrics.json``, ``report.md``, a self-contained ``report.html`` and PNGs.

``report.html`` embeds its images as data URIs and loads nothing from anywhere (no
CDN, no fonts, no scripts): it works offline and can be mailed as one file. The PNGs
are also written beside it for the Markdown report.

Secrets: the experiment's inline configuration and secret values, and passwords inside
DSNs, are masked (``***``) in every output, whatever field they appear in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.redact import redact, redact_dsn
from chaosdb.experiment.verdict import verdict_of
from chaosdb.load.observer import read_events
from chaosdb.report.data import Samples, load_samples
from chaosdb.report.definitions import DEFINITIONS, DEFINITIONS_TITLE
from chaosdb.report.findings import (
    availability_line,
    not_recovered_flag,
    outage_sentence,
    restore_lines,
    throughput_recovery,
)
from chaosdb.report.histories import HISTORY_HEADER, history_rows, history_section, history_sentences
from chaosdb.report.html import render_page
from chaosdb.report.journal import JournalInfo, read_journal
from chaosdb.report.metrics import compute_metrics, sample_sets
from chaosdb.report.operations import measure_operations, operation_spans, operations_from_journal
from chaosdb.report.plots import ecdf_png, timeline_png
from chaosdb.report.spans import MAX_SHOWN, SHOWN_EVENTS, effects, events_from, fault_spans, timeline_events
from chaosdb.report.tolerance import tolerance_in_words

__all__ = ["build_report", "build_journal_report", "render_markdown", "render_html", "format_value", "recovery_lines", "load_workers_of",
           "effect_rows", "span_rows", "HEADLINE_GUIDE", "event_rows", "EVENT_HEADER", "definition_rows",
           "load_worker_lines"]

SCHEMA_VERSION = 1


def format_value(v: Any, digits: int = 1) -> str:
    """A number as the reports print it (``–`` for none)."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def _pct_change(new: Any, old: Any) -> str:
    if new is None or not old:
        return "–"
    return f"{(new / old - 1) * 100:+.0f} %"


def _scrub(value: Any, secrets: list[str]) -> Any:
    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return redact_dsn(v) if "://" in v or "password=" in v.lower() else v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return redact(walk(value), secrets)


def _summary_rows(m: dict[str, Any]) -> list[list[str]]:
    b, i = m.get("baseline") or {}, m.get("impact") or {}
    rows = []
    for label, key in (("mean (ms)", "mean_ms"), ("σ (ms)", "std_ms"), ("p50 (ms)", "p50_ms"), ("p95 (ms)", "p95_ms"),
                       ("p99 (ms)", "p99_ms"), ("max (ms)", "max_ms"), ("throughput (tx/s)", "throughput_tps")):
        rows.append([label, format_value(b.get(key)), format_value(i.get(key)), _pct_change(i.get(key), b.get(key))])
    rows.append(["error rate", format_value((b.get("error_rate") or 0) * 100, 2) + " %",
                 format_value((i.get("error_rate") or 0) * 100, 2) + " %" if i else "–", ""])
    rows.append(["attempts", format_value(b.get("count")), format_value(i.get("count")), ""])
    return rows


def _tx_rows(m: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, e in sorted(m["by_transaction"].items()):
        b, i = e.get("baseline") or {}, e.get("impact") or {}
        rows.append([name, format_value(e["attempts"]), format_value(b.get("p50_ms")), format_value(b.get("p99_ms")), format_value(i.get("p50_ms")),
                     format_value(i.get("p99_ms")), format_value(e["failure_rate"] * 100, 2) + " %",
                     ", ".join(f"{k} {v}" for k, v in sorted(e["outcomes"].items()))])
    return rows


TX_HEADER = ["transaction", "attempts", "baseline p50", "baseline p99", "impact p50", "impact p99", "failed",
             "outcomes"]


OPS_HEADER = ["operation", "node", "start (s)", "took (s)", "serving after (s)", "healthy after (s)", "attempts",
              "failed", "p99 (ms)", "tx/s vs baseline", "no commit (s)", "disturbed (s)"]


def _ops_rows(m: dict[str, Any]) -> list[list[str]]:
    """One row per operation, then one per node of a rolling restart (its steps)."""
    zero = m.get("first_fault_ts") or m["first_ts"]

    def row(label: str, node: Any, item: dict[str, Any], took: Any) -> list[str]:
        load = item.get("load") or {}
        start = item.get("start_ts")
        return [label, format_value(node), format_value(start - zero if start is not None else None), format_value(took),
                format_value(item.get("serving_s")), format_value(item.get("healthy_s")), format_value(load.get("attempts")),
                format_value(load.get("failed")), format_value(load.get("p99_ms")),
                format_value(load.get("throughput_vs_baseline"), 2), format_value(load.get("no_commit_s")),
                format_value(load.get("disturbed_s"))]

    rows = []
    for op in m.get("operations") or []:
        label = f"{op['action']} ({op['activity']})" + (" [rollback]" if op.get("rollback") else "")
        if op["status"] != "succeeded":
            label += f" [{op['status']}]"
        rows.append(row(label, op.get("node"), op, op.get("total_s", op.get("seconds"))))
        for st in op.get("steps") or []:
            took = (st["end_ts"] - st["start_ts"]) if st.get("end_ts") is not None and st.get("start_ts") else None
            what = "  restart" + (f" after switchover to {st['switchover_to']}" if st.get("switchover_to") else "")
            rows.append(row(what, st.get("node"), st, took))
    return rows


def recovery_lines(m: dict[str, Any]) -> list[str]:
    """The degradation and recovery findings of a run's metrics, one sentence each."""
    r = m.get("recovery") or {}
    d = m.get("degradation") or {}
    lines: list[str] = []
    scope = f", {r['scope']}" if r.get("scope") else ""
    if r.get("duration_s") is not None:
        lines.append(f"Recovery from the fault: **{r['duration_s']:.1f} s** (rule '{r['rule']}', threshold "
                     f"{r['threshold_ms']:.1f} ms = baseline mean + 2σ; from the first disturbed transaction's start "
                     f"to the first healthy start after the last disturbed one{scope})")
        if r.get("client_visible_s") is not None:
            lines.append(f"Clients saw it for {r['client_visible_s']:.1f} s (until the last disturbed transaction "
                         "came back)")
    else:
        lines.append(f"Recovery from the fault: not measured: {r.get('reason')}"
                     + (f" (at least {r['lower_bound_s']:.1f} s)" if r.get("lower_bound_s") is not None else ""))
    lines += restore_lines(m)
    if r.get("unavailability_s") is not None:
        lines.append(f"Longest span without a commit: **{r['unavailability_s']:.1f} s**")
    if "time_to_baseline_throughput_s" in r:
        ttb = r["time_to_baseline_throughput_s"]
        lines.append("Back to 95 % of baseline throughput: " + (f"**{ttb:.1f} s** after the first fault"
                                                                 if ttb is not None else "**never during the run**"))
    if r.get("duration_s") is not None or r.get("unavailability_s") is not None:
        lines.append(HEADLINE_GUIDE)
    said = availability_line(m) if d else None
    if said:
        lines.append(said)
    return lines + load_worker_lines(m)


#: which number answers which question (said under the headline of every report with a fault)
HEADLINE_GUIDE = ("Which number answers what: *recovery from the fault* is how long users were disturbed after the "
                  "fault hit (the thesis's rule); *no commit for* is the longest outage inside it; *back to 95 % of "
                  "baseline throughput* is when capacity returned; *after the restore* is the separate dip when the "
                  "node came back")


def effect_rows(m: dict[str, Any]) -> list[list[str]]:
    """step, source, at (s), resolution (s), detail: what the database did after the first fault."""
    rows = []
    for e in m.get("effects") or []:
        detail = ", ".join(f"{k} {e[k]}" for k in ("member", "leader", "previous", "state") if e.get(k))
        rows.append([e["step"], str(e.get("source") or ""), format_value(e.get("at_s")),
                     format_value(e.get("resolution_s")), detail])
    return rows


EFFECT_HEADER = ["what the database did", "seen by", "at (s)", "± (s)", "detail"]
EVENT_HEADER = ["#", "at (s)", "± (s)", "seen by", "what the database said"]


def event_rows(m: dict[str, Any]) -> list[list[str]]:
    """#, at (s), ± (s), seen by, what: one row per numbered line of the timeline (``timeline_events``), with the
    number, time and words the timeline shows."""
    return [[str(e["n"]), format_value(e["at_s"]), format_value(e.get("resolution_s")), ", ".join(e["sources"]),
             e["label"]] for e in m.get("timeline_events") or []]


def _events_not_drawn(m: dict[str, Any]) -> str | None:
    """A sentence when the run had more database events than the timeline draws."""
    shown = [e for e in m.get("events") or [] if e.get("event") in SHOWN_EVENTS and e.get("at_s") is not None]
    drawn = sum(len(e["events"]) for e in m.get("timeline_events") or [])
    if len(shown) <= drawn:
        return None
    return (f"The timeline draws the first {MAX_SHOWN} lines of events; {len(shown) - drawn} later event(s) are in "
            "metrics.json (`events`) only.")


def definition_rows() -> list[list[str]]:
    """figure, metrics.json key, definition: the report's section "How the numbers are defined"."""
    return [[figure, key, text] for figure, key, text in DEFINITIONS]
SPAN_HEADER = ["fault", "from (s)", "to (s)", "in effect (s)", "ended by"]


def span_rows(m: dict[str, Any]) -> list[list[str]]:
    """The report's table of fault spans: name, start and end since the first fault, seconds, what ended it."""
    zero = m.get("first_fault_ts") or m.get("first_ts") or 0.0
    return [[sp["name"], format_value(sp["start_ts"] - zero), format_value(sp["end_ts"] - zero),
             format_value(sp["seconds"]), sp["ended_by"]] for sp in m.get("fault_spans") or []]


def load_workers_of(load: dict[str, Any], zero: float | None) -> dict[str, Any] | None:
    """The load's master/worker record for the metrics (None for a single-process load): how many workers
    connected and which left before the load was stopped, with times from *zero* (the first fault)."""
    workers = load.get("workers")
    if not workers:
        return None

    def rel(ts: Any) -> float | None:
        return round(float(ts) - zero, 3) if isinstance(ts, (int, float)) and zero is not None else None

    lost = [{"id": w.get("id"), "index": w.get("index"), "how": w.get("gone"), "at_s": rel(w.get("gone_ts")),
             "last_samples_at_s": rel(w.get("last_batch_ts")), "samples": w.get("samples")}
            for w in load.get("workers_lost") or []]
    return {"connected": len(workers), "lost": lost}


def load_worker_lines(m: dict[str, Any]) -> list[str]:
    """A worker of the load that left mid-run, said next to the recovery: the load it carried went with it."""
    lw = m.get("load_workers") or {}
    lines = []
    for w in lw.get("lost") or []:
        how = "stopped sending heartbeats" if w["how"] == "lost" else "quit"
        at = f" at {w['at_s']:.1f} s" if w.get("at_s") is not None else ""
        last = (f"; its transactions after {w['last_samples_at_s']:.1f} s are not in the samples"
                if w.get("last_samples_at_s") is not None else "")
        lines.append(f"**Load worker lost**: worker {w.get('index')} ({w.get('id')}) {how}{at}, one of "
                     f"{lw['connected']}; its users were not replaced{last}. Throughput after that counts the "
                     "remaining workers only")
    return lines


def _hypothesis_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not checked"
    if row.get("error"):
        return f"✗ failed: {row['error']}"
    value = row.get("output")
    shown = f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
    # a probe the hypothesis skipped after an earlier one failed, run anyway by the verdict control
    late = " (run after the hypothesis stopped)" if row.get("skipped_then_run") else ""
    return ("✓ " if row.get("met") else "✗ ") + shown + late


def _hypothesis_rows(v: dict[str, Any]) -> list[list[str]]:
    """probe, tolerance, before, after: every hypothesis result of the run."""
    before = {r["name"]: r for r in (v.get("hypothesis") or {}).get("before") or []}
    after = {r["name"]: r for r in (v.get("hypothesis") or {}).get("after") or []}
    rows = []
    for name in dict.fromkeys([*before, *after]):
        tol = (before.get(name) or after.get(name) or {}).get("tolerance")
        rows.append([name, tolerance_in_words(tol), _hypothesis_cell(before.get(name)),
                     _hypothesis_cell(after.get(name))])
    return rows


HYPOTHESIS_HEADER = ["probe", "tolerance", "before the method", "after the method"]
FAULT_HEADER = ["activity", "kind", "start (s)", "returned (s)", "status"]


def _fault_rows(faults: list[dict[str, Any]], zero: float) -> list[list[str]]:
    """activity, kind, start and the time its call returned in seconds from *zero*, status: every fault and
    rollback of the run (how long a fault was in effect is the table of fault spans)."""
    def returned(f: dict[str, Any]) -> float:
        return f.get("returned_ts") or f["end_ts"] or zero

    return [[f["name"], "rollback" if f["rollback"] else ("restore" if f.get("restores") else f["type"]),
             format_value((f["start_ts"] or zero) - zero), format_value(returned(f) - zero), f["status"]]
            for f in faults]


def _markdown_table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> list[str]:
    """A Markdown table; *align*: each column's separator cell (``---`` by default, ``---:`` to the right)."""
    seps = align or ["---"] * len(header)
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(seps) + " |"] + [f"| {' | '.join(r)} |" for r in rows]


FAULT_ALIGN = ["---", "---", "---:", "---:", "---"]


def render_markdown(title: str, info: JournalInfo, m: dict[str, Any], images: dict[str, str]) -> str:
    """The run's report in Markdown: verdict, hypothesis, headline figures, baseline and impact, plots, transactions,
    what the database did."""
    v = m.get("verdict") or {}
    outage = outage_sentence(m)
    flag = not_recovered_flag(m)
    out = [f"# {title}", "", f"**Verdict: {v.get('sentence', '')}**" + (f" {outage}." if outage else ""), ""]
    if flag:
        out += [f"**⚠ {flag}.**", ""]
    out += [f"Journal: `{Path(info.path).name}` · status **{v.get('status', info.status)}**"
            + (" · **deviated**" if info.deviated else "") + f" · {m['samples']:,} transactions", ""]
    rows = _hypothesis_rows(v)
    if rows:
        out += _markdown_table(HYPOTHESIS_HEADER, rows) + [""]
    out += [f"- {line}" for line in recovery_lines(m)] + [""]
    out += ["## Baseline and impact", "", "| | baseline | impact | change |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {' | '.join(r)} |" for r in _summary_rows(m)] + [""]
    out += ["## Over time", "", f"![timeline]({images['timeline']})", ""]
    if m.get("timeline_events"):
        out += ["Database events (the numbered dotted lines of the timeline):", ""]
        out += _markdown_table(EVENT_HEADER, event_rows(m), ["---:", "---:", "---:", "---", "---"]) + [""]
        more = _events_not_drawn(m)
        out += [more, ""] if more else []
    out += [f"![latency ECDF]({images['ecdf']})", ""]
    out += ["## By transaction", "", "| " + " | ".join(TX_HEADER) + " |", "|" + " --- |" * len(TX_HEADER)]
    out += [f"| {' | '.join(r)} |" for r in _tx_rows(m)] + [""]
    if m.get("effects"):
        out += ["## What the database did: time to each effect of the first fault", ""]
        out += _markdown_table(EFFECT_HEADER, effect_rows(m)) + [""]
    out += ["## Faults and rollbacks", ""]
    if m.get("fault_spans"):
        out += _markdown_table(SPAN_HEADER, span_rows(m)) + [""]
    out += _markdown_table(FAULT_HEADER, _fault_rows(m["faults"], m.get("first_fault_ts") or m["first_ts"]),
                           FAULT_ALIGN)
    if m.get("operations"):
        out += ["", "## Operations under load", "", "| " + " | ".join(OPS_HEADER) + " |", "|" + " --- |" * len(OPS_HEADER)]
        out += [f"| {' | '.join(r)} |" for r in _ops_rows(m)]
    if m.get("history"):
        out += ["", "## Operation history", ""] + [" ".join(history_sentences(m["history"]))]
        rows = [[cell.replace("|", "\\|") for cell in row] for row in history_rows(m["history"])]
        out += ([""] + _markdown_table(HISTORY_HEADER, rows, ["---", "---:", "---"])) if rows else []
    out += ["", f"## {DEFINITIONS_TITLE}", ""]
    out += [f"- **{figure}** (`metrics.json`: {key}): {text}." for figure, key, text in definition_rows()]
    out += ["", "Times are seconds from the first fault. Latency statistics, the tables and both figures are of the "
            "same transactions: those that did not start while the load was paused for an integrity check (the "
            f"grey spans); percentiles are nearest-rank, of successful transactions. Definitions: the section "
            f"\"{DEFINITIONS_TITLE}\" above; `metrics.json` beside this report holds every figure under the key "
            "named there.", ""]
    return "\n".join(out)


def render_html(title: str, info: JournalInfo, m: dict[str, Any], png: dict[str, Path]) -> str:
    """The run's report as one self-contained HTML page (plots inlined; ``templates/run.html``)."""
    r, d = m.get("recovery") or {}, m.get("degradation") or {}
    v = m.get("verdict") or {}
    status = str(v.get("status", info.status))
    after = r.get("after_restore") or {}
    if after.get("duration_s") is not None:
        after_restore = f"{after['duration_s']:.1f} s"
    elif r.get("spans_restore"):
        after_restore = "part of the recovery"
    elif after.get("restore_ts") is not None and after.get("onset_ts") is None \
            and float(m.get("end_ts") or 0.0) - float(after["restore_ts"]) >= float(r.get("quiet_s") or 5.0):
        after_restore = "none"
    else:
        after_restore = "–"
    kpis = [("recovery from the fault", f"{r['duration_s']:.1f} s" if r.get("duration_s") is not None else "–"),
            ("after the restore", after_restore),
            ("no commit for", f"{r['unavailability_s']:.1f} s" if r.get("unavailability_s") is not None else "–"),
            ("throughput drop", f"{d['throughput_pct']:.1f} %" if d.get("throughput_pct") is not None else "–"),
            ("p99 increase", f"{d['p99_increase_pct']:.0f} %" if d.get("p99_increase_pct") is not None else "–"),
            ("availability (time-based)",
             f"{d['availability'] * 100:.1f} %" if d.get("availability") is not None else "–"),
            ("attempts that succeeded",
             f"{d['success_ratio'] * 100:.2f} %" if d.get("success_ratio") is not None else "–")]
    return render_page(
        "run.html", title=title, status=status, deviated=info.deviated, sentence=str(v.get("sentence", "")),
        status_class="ok" if v.get("ok", status == "completed" and not info.deviated) else "bad",
        samples=m["samples"], journal=Path(info.path).name, hypothesis_header=HYPOTHESIS_HEADER,
        hypothesis=_hypothesis_rows(v), kpis=kpis, outage=outage_sentence(m) or "", flag=not_recovered_flag(m) or "",
        event_header=EVENT_HEADER, events=event_rows(m), events_not_drawn=_events_not_drawn(m) or "",
        definitions_title=DEFINITIONS_TITLE, definitions=definition_rows(),
        recovery_lines=[line.replace("**", "").replace("*", "") for line in recovery_lines(m)],
        summary=_summary_rows(m), images={"timeline": png["timeline"], "ecdf": png["ecdf"]},
        tx_header=TX_HEADER, transactions=_tx_rows(m), effect_header=EFFECT_HEADER,
        effects=effect_rows(m) if m.get("effects") else [], span_header=SPAN_HEADER,
        spans=span_rows(m) if m.get("fault_spans") else [], fault_header=FAULT_HEADER,
        faults=_fault_rows(m["faults"], m.get("first_fault_ts") or m["first_ts"]), ops_header=OPS_HEADER,
        operations=_ops_rows(m) if m.get("operations") else [],
        history=history_sentences(m["history"]) if m.get("history") else [], history_header=HISTORY_HEADER,
        history_rows=history_rows(m["history"]) if m.get("history") else [])


def _first_fault_ended(spans: list[dict[str, Any]], fault_start: float | None) -> tuple[float | None, str] | None:
    """When the first fault was ended and by what (its span): the restore that divides the recovery from the fault
    from the disturbance after it; ``(None, "")`` when nothing ended it but its own action; None when the first
    fault has no span (an operator action: the first restoring action after it is the restore)."""
    first = [sp for sp in spans if fault_start is not None and abs(sp["start_ts"] - fault_start) < 1e-6]
    if not first:
        return None
    if first[0]["ended_by"] == "the action's end" or first[0]["end_ts"] <= first[0]["start_ts"]:
        return None, ""
    return float(first[0]["end_ts"]), str(first[0]["ended_by"])


def build_report(journal_path: Path | str, samples: Path | str | None = None, out_dir: Path | str | None = None,
                 rule: str = "runs", journal_name: str | None = None, window_s: float = 5.0) -> dict[str, Any]:
    """Compute the metrics of one run and write metrics.json, report.md, report.html and PNGs. The metrics
    name the journal as *journal_name* when given (the copy a person can open), else *journal_path*; the
    timeline's windows are *window_s* seconds wide. The database's events come from ``events.jsonl`` in the
    samples folder (:mod:`chaosdb.load.observer`), so the folder alone rebuilds the report."""
    if not float(window_s) > 0:
        raise ChaosDBError(f"window_s must be a number of seconds > 0, not {window_s!r}")
    info, journal = read_journal(journal_path)
    location = samples or info.load.get("samples_dir")
    if not location:
        return _journal_report(info, journal, Path(out_dir) if out_dir else Path(journal_path).parent / "report",
                               journal_name)
    location = Path(location)
    if not location.is_absolute() and not location.exists():
        location = Path(journal_path).parent / location
    if not samples and not location.exists() and (Path(journal_path).parent / "samples").is_dir():
        # a report folder copied elsewhere: its journal names where the samples were, they are beside it now
        location = Path(journal_path).parent / "samples"
    data: Samples = load_samples(location)
    out = Path(out_dir) if out_dir else Path(journal_path).parent / "report"
    out.mkdir(parents=True, exist_ok=True)
    faults = [a.as_dict() for a in info.faults] + [a.as_dict() for a in info.rollbacks if a.kind == "action"]
    # an action that failed injected nothing (or nothing it could vouch for): listed, never drawn or measured
    injected = [f for f in faults if f["status"] != "failed"]
    # the operator actions are measured on the samples as recorded: only the rows around them are kept
    ops = operations_from_journal(journal)
    ops_samples = data.touching(operation_spans(ops))
    sources = data.sources
    # one split of the samples (pauses of the load taken out) for the tables and both figures
    sets = sample_sets(data, injected, info.load.get("warmup_end_ts"), info.load.get("stop_ts"),
                       info.load.get("pauses") or [])
    del data  # with pauses, sets.samples is a copy: a long run's samples are not held twice
    spans = fault_spans(injected)
    m = compute_metrics(sets.samples, injected, baseline_start=info.load.get("warmup_end_ts"),
                        end_ts=info.load.get("stop_ts"), pauses=info.load.get("pauses") or [], rule=rule, sets=sets,
                        window_s=float(window_s), restore=_first_fault_ended(spans, sets.fault_start))
    m["window_s"] = float(window_s)
    m["faults"] = faults
    m["fault_spans"] = spans
    events = read_events(location) if location.is_dir() else []
    m["events"] = events_from(events, m.get("first_fault_ts"))
    m["timeline_events"] = timeline_events(m["events"])
    watched = (info.load.get("events") or {}).get("sources") or []
    m["effects"] = effects(events, m.get("first_fault_ts"), sets.samples,
                           str(watched[0]).rpartition(":")[2] if watched else None)
    m["operations"] = measure_operations(ops, ops_samples, info.load.get("pauses") or [],
                                         (m.get("baseline") or {}).get("throughput_tps"),
                                         (m.get("recovery") or {}).get("disturbances") or [], m.get("end_ts"))
    history = history_section(location, info.load.get("settings") or {})
    if history is not None:
        m["history"] = history
    workers = load_workers_of(info.load, m.get("first_fault_ts") or m.get("first_ts"))
    if workers is not None:
        m["load_workers"] = workers
    m["throughput_recovery"] = throughput_recovery(m)
    m["verdict"] = verdict_of(journal).as_dict()
    m["schema_version"] = SCHEMA_VERSION
    m["run"] = {"title": info.title, "status": m["verdict"]["status"], "deviated": info.deviated,
                "journal": journal_name or info.path,
                "samples": [str(p) for p in sources], "chaoslib_version": info.chaoslib_version,
                "load_settings": info.load.get("settings", {})}
    m = _scrub(m, info.secrets)
    title = _scrub(info.title, info.secrets)
    pngs = {"timeline": out / "timeline.png", "ecdf": out / "latency_ecdf.png"}
    drawn = {"timeline": timeline_png(m, injected, pngs["timeline"], title)}
    # the ECDF holds exactly the transactions the tables count
    drawn["ecdf"] = ecdf_png(sets.successful_ms("baseline"), sets.successful_ms("impact"), pngs["ecdf"],
                             "latency ECDF: baseline vs impact")
    (out / "metrics.json").write_text(json.dumps(m, indent=2) + "\n")
    md = render_markdown(title, info, m, {k: p.name for k, p in pngs.items()})
    (out / "report.md").write_text(_scrub(md, info.secrets))
    (out / "report.html").write_text(_scrub(render_html(title, info, m, pngs), info.secrets))
    return {"out_dir": str(out), "metrics": m, "drawn": drawn, "files": sorted(p.name for p in out.iterdir())}


NO_LOAD = ("This run had no load: the journal names no samples (no load control in the experiment) and none were "
           "given, so there are no degradation or recovery figures. Add the load control to the experiment (module "
           "chaosdb.load.control; the shipped experiments that 'chaosdb experiments copy DIR' writes out show how) "
           "or pass --samples to 'chaosdb report' to get them.")


def build_journal_report(journal_path: Path | str, out_dir: Path | str | None = None,
                         journal_name: str | None = None) -> dict[str, Any]:
    """The report of a run without load samples (a Kubernetes or PD experiment run without the load control):
    the verdict, every hypothesis result, and the faults and rollbacks with their times and outcomes, in
    metrics.json (``samples``: 0), report.md and report.html; it says plainly that no figures can be measured."""
    info, journal = read_journal(journal_path)
    return _journal_report(info, journal, Path(out_dir) if out_dir else Path(journal_path).parent / "report",
                           journal_name)


def _journal_report(info: JournalInfo, journal: dict[str, Any], out: Path, journal_name: str | None) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    faults = [a.as_dict() for a in info.faults] + [a.as_dict() for a in info.rollbacks if a.kind == "action"]
    starts = [f["start_ts"] for f in faults if f["start_ts"] and f["status"] != "failed" and not f["rollback"]]
    first_fault = min(starts) if starts else None
    v = verdict_of(journal).as_dict()
    m: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "samples": 0, "first_fault_ts": first_fault,
                         "faults": faults, "verdict": v, "no_load": NO_LOAD,
                         "run": {"title": info.title, "status": v["status"], "deviated": info.deviated,
                                 "journal": journal_name or info.path, "samples": [],
                                 "chaoslib_version": info.chaoslib_version, "load_settings": {}}}
    m = _scrub(m, info.secrets)
    title = _scrub(info.title, info.secrets)
    fault_rows = _fault_rows(m["faults"], first_fault or info.start or 0.0)
    hyp = _hypothesis_rows(v)
    status = str(v.get("status", info.status))
    md = [f"# {title}", "", f"**Verdict: {v.get('sentence', '')}**", "",
          f"Journal: `{Path(info.path).name}` · status **{status}**" + (" · **deviated**" if info.deviated else ""),
          "", NO_LOAD, ""]
    if hyp:
        md += _markdown_table(HYPOTHESIS_HEADER, hyp) + [""]
    md += ["## Faults and rollbacks", ""] + _markdown_table(FAULT_HEADER, fault_rows, FAULT_ALIGN)
    md += ["", "Times are seconds from the first fault.", ""]
    page = render_page("journal.html", title=title, status=status, deviated=info.deviated,
                       sentence=str(v.get("sentence", "")), status_class="ok" if v.get("ok") else "bad",
                       journal=Path(info.path).name, no_load=NO_LOAD, hypothesis_header=HYPOTHESIS_HEADER,
                       hypothesis=hyp, fault_header=FAULT_HEADER, faults=fault_rows)
    (out / "metrics.json").write_text(json.dumps(m, indent=2) + "\n")
    (out / "report.md").write_text(_scrub("\n".join(md), info.secrets))
    (out / "report.html").write_text(_scrub(page, info.secrets))
    return {"out_dir": str(out), "metrics": m, "drawn": {}, "files": sorted(p.name for p in out.iterdir())}
