"""The aggregated game-day report: ``summary.json``, ``report.md`` and a self-contained ``report.html``.

Per scenario (and per sweep value) over its finished runs:

* latency of the impact window: median and spread (min, quartiles, max) of each run's p50/p95/p99;
* recovery time distribution (each run's ``recovery.duration_s`` from the reporter; runs that never
  recovered within the run are counted apart, never averaged in as a number);
* ``manifested``: fraction of runs in which the fault showed (a disturbance of at least 0.5 s, one
  that never ended, or failed attempts);
  ``hypothesis_failed``: fraction whose journal deviated (or failed/aborted) -- together the
  "flakiness" of a setting;
* error rate, throughput (baseline, impact, drop) and unavailability medians.

Across scenarios: the thesis's Table 6.1 (``chaosdb.report.compare``: medians of mean/σ/p50/p95/p99
with the change against the median baseline, and the median recovery), sweep curves (metric vs
intensity), and for suites with ``upb`` scenarios the T[K][F] matrix and the UPB indices
(T[K][0] = median baseline throughput of the runs at K, T[K][F] = median throughput of the runs
with F failed nodes while those nodes were down: the 5 s windows between the end of the fault
action and the next action).
"""

from __future__ import annotations

import base64
import html
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from chaosdb.core.errors import ChaosDBError
from chaosdb.gameday.runner import DONE_STATES, read_manifest
from chaosdb.report.build import format_value as _f
from chaosdb.report.compare import compare, render_compare_markdown
from chaosdb.report.plots import pyplot
from chaosdb.report.upb import render_upb_markdown, upb_indices

__all__ = ["aggregate", "write_report", "spread", "METRICS"]

#: metric name -> (where in a run's metrics.json, True when higher is worse)
METRICS: dict[str, tuple[tuple[str, str], bool]] = {
    "p50_ms": (("impact", "p50_ms"), True),
    "p95_ms": (("impact", "p95_ms"), True),
    "p99_ms": (("impact", "p99_ms"), True),
    "mean_ms": (("impact", "mean_ms"), True),
    "error_rate": (("impact", "error_rate"), True),
    "throughput_tps": (("impact", "throughput_tps"), False),
    "recovery_s": (("recovery", "duration_s"), True),
    "unavailability_s": (("recovery", "unavailability_s"), True),
    "baseline_p99_ms": (("baseline", "p99_ms"), True),
    "baseline_tps": (("baseline", "throughput_tps"), False),
}


MANIFEST_MIN_S = 0.5


def manifested(m: dict[str, Any]) -> bool:
    """Did the fault show? A disturbance of at least 0.5 s after the first fault (or one that never
    ended), or failed attempts in the impact window. Five slow transactions in a row at 1,000/s are a
    disturbance of milliseconds: that is not a fault showing."""
    rec = m.get("recovery") or {}
    if (m.get("impact") or {}).get("error_rate"):
        return True
    if rec.get("onset_ts") is not None and rec.get("duration_s") is None:
        return True
    # disturbances after later actions (a restart, a rollback) are not the fault showing
    faults = sorted((f for f in m.get("faults") or [] if f.get("start_ts") and not f.get("rollback")),
                    key=lambda f: f["start_ts"])
    first = faults[0].get("name") if faults else None
    durations = [rec.get("duration_s")] + [d.get("duration_s") for d in rec.get("disturbances") or []
                                           if first is None or d.get("after_fault") in (None, first)]
    return any(d is not None and d >= MANIFEST_MIN_S for d in durations)


def spread(values: list[float | None]) -> dict[str, Any] | None:
    """Median, quartiles, min, max and n of the values that are numbers (None when there are none)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    a = np.array(vals)
    r = lambda v: round(float(v), 3)  # noqa: E731
    return {"n": len(vals), "median": r(np.median(a)), "min": r(a.min()), "q1": r(np.percentile(a, 25)),
            "q3": r(np.percentile(a, 75)), "max": r(a.max())}


def _get(m: dict[str, Any], path: tuple[str, str]) -> Any:
    return (m.get(path[0]) or {}).get(path[1])


def _load_metrics(results: Path, entry: dict[str, Any]) -> dict[str, Any] | None:
    if entry.get("status") not in DONE_STATES:
        return None
    path = results / entry.get("dir", f"runs/{entry['id']}") / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _group_stats(entries: list[dict[str, Any]], metrics: list[dict[str, Any] | None]) -> dict[str, Any]:
    done = [e for e in entries if e.get("status") in DONE_STATES]
    with_m = [m for m in metrics if m is not None]
    recs = [_get(m, ("recovery", "duration_s")) for m in with_m]
    shown = [manifested(m) for m in with_m]
    drops = [(m.get("degradation") or {}).get("throughput_pct") for m in with_m]
    out: dict[str, Any] = {
        "planned": len(entries), "finished": len(done),
        "completed": sum(1 for e in done if e["status"] == "completed"),
        "deviated": sum(1 for e in done if e["status"] == "deviated"),
        "unfinished": {s: n for s in ("pending", "running", "interrupted", "error", "unsteady")
                       if (n := sum(1 for e in entries if e.get("status") == s))},
        "hypothesis_failed": round(sum(1 for e in done if e["status"] == "deviated") / len(done), 3) if done else None,
        "manifested": round(sum(shown) / len(shown), 3) if shown else None,
        "runs": [e["id"] for e in done],
    }
    for name, (path, _worse) in METRICS.items():
        out[name] = spread([_get(m, path) for m in with_m])
    out["recovery"] = {"values": recs, "not_recovered": sum(1 for r in recs if r is None),
                       **(spread(recs) or {"n": 0})}
    out["throughput_drop_pct"] = spread(drops)
    ops = _operation_stats(with_m)
    if ops:
        out["operations"] = ops
    cycles = sorted({str(v) for e in done for p, v in (e.get("parameters") or {}).items()
                     if p == "cluster:leader" or p.endswith(".target")})
    if cycles:
        out["targets"] = cycles
    return out


def _worst_step(steps: list[dict[str, Any]], key: str) -> float | None:
    vals = [float(v) for v in ((st.get("load") or {}).get(key) for st in steps) if v is not None]
    return max(vals) if vals else None


def _operation_stats(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Per operator action (rolling_restart, scale_out, ...) of the method: spreads over the runs of what the
    action measured (took, serving/healthy after) and of what the load saw (no commit, failed, tx/s ratio);
    for a rolling restart also the worst node step of each run."""
    by_action: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        for op in m.get("operations") or []:
            if not op.get("rollback") and op.get("status") == "succeeded":
                by_action.setdefault(op["action"], []).append(op)
    out: dict[str, Any] = {}
    for action, ops in by_action.items():
        load = [op.get("load") or {} for op in ops]
        entry = {"n": len(ops), "took_s": spread([op.get("total_s", op.get("seconds")) for op in ops]),
                 "serving_s": spread([op.get("serving_s") for op in ops]),
                 "healthy_s": spread([op.get("healthy_s") for op in ops]),
                 "no_commit_s": spread([x.get("no_commit_s") for x in load]),
                 "disturbed_s": spread([x.get("disturbed_s") for x in load]),
                 "failed": spread([x.get("failed") for x in load]),
                 "throughput_vs_baseline": spread([x.get("throughput_vs_baseline") for x in load])}
        steps = [op.get("steps") or [] for op in ops]
        if any(steps):
            entry["worst_step_no_commit_s"] = spread([_worst_step(ss, "no_commit_s") for ss in steps])
            entry["worst_step_disturbed_s"] = spread([_worst_step(ss, "disturbed_s") for ss in steps])
            entry["step_serving_s"] = spread([st.get("serving_s") for ss in steps for st in ss])
            entry["step_healthy_s"] = spread([st.get("healthy_s") for ss in steps for st in ss])
        out[action] = entry
    return out


def fault_window_tps(m: dict[str, Any]) -> float | None:
    """Throughput while the first fault holds: the 5 s windows between the end of the first fault action
    and the start of the next action (its rollback/restart), weighted by their length; else the impact
    window's throughput."""
    actions = sorted((f for f in m.get("faults") or [] if f.get("start_ts")), key=lambda f: f["start_ts"])
    if not actions or not actions[0].get("end_ts"):
        return _get(m, ("impact", "throughput_tps"))
    lo = float(actions[0]["end_ts"])
    later = [float(f["start_ts"]) for f in actions[1:] if float(f["start_ts"]) >= lo]
    hi = min(later) if later else float(m.get("end_ts") or lo)
    inside = [w for w in m.get("windows") or [] if w["start_ts"] >= lo and w["start_ts"] + w["seconds"] <= hi
              and w.get("tps") is not None]  # a window the load was paused throughout has no rate
    seconds = sum(w["seconds"] - w.get("paused_s", 0.0) for w in inside)
    if not seconds:
        return _get(m, ("impact", "throughput_tps"))
    return round(sum(w["tps"] * (w["seconds"] - w.get("paused_s", 0.0)) for w in inside) / seconds, 3)


def _upb(results: Path, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    cells: dict[int, dict[int, list[float]]] = {}
    base: dict[int, list[float]] = {}
    for e in entries:
        upb = e.get("upb")
        m = _load_metrics(results, e)
        if not upb or m is None:
            continue
        k, f = int(upb["K"]), int(upb["F"])
        if _get(m, ("baseline", "throughput_tps")) is not None:
            base.setdefault(k, []).append(_get(m, ("baseline", "throughput_tps")))
        held = fault_window_tps(m) if f > 0 else None
        if held is not None:
            cells.setdefault(k, {}).setdefault(f, []).append(held)
    if not base and not cells:
        return None
    table: dict[str, dict[str, float]] = {}
    for k in sorted(set(base) | set(cells)):
        row: dict[str, float] = {}
        if base.get(k):
            row["0"] = round(statistics.median(base[k]), 3)
        for f, vals in sorted(cells.get(k, {}).items()):
            row[str(f)] = round(statistics.median(vals), 3)
        table[str(k)] = row
    out: dict[str, Any] = {"T": table, "rule": "T[K][0]: median baseline throughput of the runs at K; "
                           "T[K][F]: median throughput of the runs with F failed nodes while they were down "
                           "(5 s windows from the end of the fault action to the next action)"}
    try:
        out["indices"] = upb_indices({"T": table})
    except ChaosDBError as exc:
        out["indices"] = None
        out["incomplete"] = str(exc)
    return out


def aggregate(results: Path | str) -> dict[str, Any]:
    results = Path(results)
    manifest = read_manifest(results)
    entries = manifest["runs"]
    suite = manifest["suite"]
    loaded = {e["id"]: _load_metrics(results, e) for e in entries}
    scenarios = []
    sweeps = []
    pairs: list[tuple[str, dict[str, Any]]] = []
    for sc in suite["scenarios"]:
        mine = [e for e in entries if e["scenario"] == sc["name"]]
        stats = _group_stats(mine, [loaded[e["id"]] for e in mine])
        scenarios.append({"scenario": sc["name"], "description": sc.get("description", ""),
                          "experiment": sc["experiment"], "upb": sc.get("upb"), **stats})
        for e in mine:
            run_metrics = loaded[e["id"]]
            if run_metrics is not None and run_metrics.get("impact") is not None:
                pairs.append((sc["name"], run_metrics))
        if sc.get("sweep"):
            points = []
            for value in sc["sweep"]["values"]:
                at = [e for e in mine if (e.get("sweep") or {}).get("value") == value]
                st = _group_stats(at, [loaded[e["id"]] for e in at])
                points.append({"value": value, "finished": st["finished"], "hypothesis_failed": st["hypothesis_failed"],
                               "manifested": st["manifested"], "p99_ms": st["p99_ms"], "recovery": st["recovery"],
                               "error_rate": st["error_rate"], "throughput_tps": st["throughput_tps"]})
            sweeps.append({"scenario": sc["name"], "parameter": sc["sweep"]["parameter"], "points": points})
    table = compare(pairs) if pairs else None
    run_rows = []
    for e in entries:
        m = loaded[e["id"]] or {}
        run_rows.append({"id": e["id"], "scenario": e["scenario"], "status": e["status"],
                         "attempts": e.get("attempts", 0), "dir": e.get("dir"),
                         "parameters": {k: v for k, v in (e.get("parameters") or {}).items()
                                        if not k.startswith(("configuration:", "control:"))},
                         "p99_ms": _get(m, ("impact", "p99_ms")), "recovery_s": _get(m, ("recovery", "duration_s")),
                         "error_rate": _get(m, ("impact", "error_rate"))})
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return {"format": "chaosdb-gameday-summary/1", "suite": suite["name"], "description": suite.get("description"),
            "runs": counts, "run_list": run_rows, "scenarios": scenarios, "table_6_1": table, "sweeps": sweeps,
            "upb": _upb(results, entries),
            "definitions": {"hypothesis_failed": "fraction of finished runs whose journal deviated, failed or aborted",
                            "manifested": "fraction of runs with metrics in which the fault showed: a "
                                          "disturbance of >= 0.5 s (or one that never ended), or failed attempts",
                            "spread": "median, quartiles (linear), min and max over the runs",
                            "recovery": "each run's recovery.duration_s (thesis rule); not_recovered runs "
                                        "are counted apart"}}


# ---------------------------------------------------------------------------------------------- output

def _distribution_png(summary: dict[str, Any], key: str, label: str, path: Path) -> Path | None:
    rows = [(s["scenario"], [v for v in (s["recovery"]["values"] if key == "recovery" else [])
                             if v is not None]) for s in summary["scenarios"]]
    if key != "recovery":
        return None
    rows = [(n, v) for n, v in rows if v]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(rows) + 1.6))
    for i, (_name, vals) in enumerate(rows):
        try:
            ax.boxplot(vals, positions=[i], orientation="horizontal", widths=0.5, showfliers=False)
        except TypeError:  # matplotlib < 3.10
            ax.boxplot(vals, positions=[i], vert=False, widths=0.5, showfliers=False)
        jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else [0.0]
        ax.scatter(vals, [i + j for j in jitter], s=14, zorder=3)
    ax.set_yticks(range(len(rows)), [n for n, _ in rows])
    ax.set_xlabel(label)
    ax.set_title("recovery time per run (thesis rule)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sweep_png(sweep: dict[str, Any], path: Path) -> Path | None:
    pts = [p for p in sweep["points"] if p["p99_ms"]]
    if not pts:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    x = [float(p["value"]) for p in pts]
    ax.plot(x, [p["p99_ms"]["median"] for p in pts], marker="o", label="p99 (median of runs)")
    ax.fill_between(x, [p["p99_ms"]["min"] for p in pts], [p["p99_ms"]["max"] for p in pts], alpha=0.2,
                    label="p99 min..max")
    ax.set_xlabel(sweep["parameter"])
    ax.set_ylabel("impact p99 (ms)")
    ax2 = ax.twinx()
    ax2.plot(x, [p["hypothesis_failed"] if p["hypothesis_failed"] is not None else np.nan for p in pts],
             color="tab:red", marker="s", linestyle="--", label="hypothesis failed (fraction)")
    ax2.set_ylim(-0.05, 1.05)
    ax2.set_ylabel("fraction of runs")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right", fontsize=8)
    ax.set_title(f"sweep: {sweep['scenario']}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sp(s: dict[str, Any] | None, digits: int = 1) -> str:
    if not s:
        return "–"
    return f"{_f(s['median'], digits)} [{_f(s['min'], digits)}–{_f(s['max'], digits)}]"


def _scenario_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["scenario", "runs", "hypothesis failed", "manifested", "p50 ms", "p95 ms", "p99 ms",
              "recovery s", "not recovered", "unavailable s", "errors", "throughput drop %"]
    rows = []
    for s in summary["scenarios"]:
        rows.append([s["scenario"], f"{s['finished']}/{s['planned']}",
                     _f(s["hypothesis_failed"], 2), _f(s["manifested"], 2), _sp(s["p50_ms"]), _sp(s["p95_ms"]),
                     _sp(s["p99_ms"]), _sp(s["recovery"] if s["recovery"].get("n") else None),
                     str(s["recovery"]["not_recovered"]), _sp(s["unavailability_s"]), _sp(s["error_rate"], 4),
                     _sp(s["throughput_drop_pct"])])
    return header, rows


OPS_HEADER = ["scenario", "operation", "runs", "took s", "serving after s", "healthy after s", "no commit s",
              "worst node step: no commit s", "disturbed s", "worst node step: disturbed s", "failed tx",
              "tx/s vs baseline"]


def _operation_rows(summary: dict[str, Any]) -> list[list[str]]:
    rows = []
    for s in summary["scenarios"]:
        for action, o in (s.get("operations") or {}).items():
            serving = o.get("serving_s") or o.get("step_serving_s")
            rows.append([s["scenario"], action + (" (per node)" if o.get("step_serving_s") else ""), str(o["n"]),
                         _sp(o["took_s"]), _sp(serving), _sp(o["healthy_s"] or o.get("step_healthy_s")),
                         _sp(o["no_commit_s"]),
                         _sp(o.get("worst_step_no_commit_s")), _sp(o.get("disturbed_s")),
                         _sp(o.get("worst_step_disturbed_s")), _sp(o["failed"], 0),
                         _sp(o["throughput_vs_baseline"], 2)])
    return rows


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sweep_rows(sweep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["value", "runs", "hypothesis failed", "manifested", "p99 ms", "recovery s", "errors"]
    rows = [[str(p["value"]), str(p["finished"]), _f(p["hypothesis_failed"], 2), _f(p["manifested"], 2),
             _sp(p["p99_ms"]), _sp(p["recovery"] if p["recovery"].get("n") else None), _sp(p["error_rate"], 4)]
            for p in sweep["points"]]
    return header, rows


def render_markdown(summary: dict[str, Any], images: dict[str, str]) -> str:
    parts = [f"# Game day: {summary['suite']}\n\n", (summary.get("description") or "") + "\n\n",
             "Runs: " + ", ".join(f"{v} {k}" for k, v in sorted(summary["runs"].items())) + ".\n\n",
             "Cells are the median over runs with [min–max]; *hypothesis failed* and *manifested* are fractions "
             "of runs.\n\n", "## Scenarios\n\n", _md_table(*_scenario_rows(summary))]
    ops = _operation_rows(summary)
    if ops:
        parts += ["\n## Operations under load\n\n", _md_table(OPS_HEADER, ops),
                  "\n*serving/healthy after*: measured by the action (for a rolling restart, per node); *no commit*, "
                  "*disturbed* (seconds inside a disturbance of the recovery rule), *failed tx* and *tx/s vs "
                  "baseline*: what the load saw while the operation ran.\n"]
    if summary["table_6_1"]:
        parts += ["\n## Comparison (thesis Table 6.1 style)\n\n", render_compare_markdown(summary["table_6_1"])]
    if "recovery" in images:
        parts.append(f"\n![recovery distribution]({images['recovery']})\n")
    for sw in summary["sweeps"]:
        parts += [f"\n## Sweep: {sw['scenario']} ({sw['parameter']})\n\n", _md_table(*_sweep_rows(sw))]
        if f"sweep-{sw['scenario']}" in images:
            parts.append(f"\n![sweep {sw['scenario']}]({images['sweep-' + sw['scenario']]})\n")
    if summary["upb"]:
        parts += ["\n## UPB\n\n", "T[K][F] (transactions/s): `" + json.dumps(summary["upb"]["T"]) + "`\n\n"]
        if summary["upb"].get("indices"):
            parts.append(render_upb_markdown(summary["upb"]["indices"]))
        else:
            parts.append(f"indices not computable: {summary['upb'].get('incomplete')}\n")
    return "".join(parts)


def render_html(summary: dict[str, Any], pngs: dict[str, Path]) -> str:
    def img(key: str, alt: str) -> str:
        if key not in pngs:
            return ""
        data = base64.b64encode(pngs[key].read_bytes()).decode()
        return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    parts = [f"<h1>Game day: {html.escape(summary['suite'])}</h1>",
             f"<p>{html.escape(summary.get('description') or '')}</p>",
             "<p>Runs: " + html.escape(", ".join(f"{v} {k}" for k, v in sorted(summary["runs"].items()))) + "</p>",
             "<p>Cells are the median over runs with [min–max]. <em>hypothesis failed</em> and <em>manifested</em> "
             "are fractions of runs (the flakiness of a setting).</p>",
             "<h2>Scenarios</h2>", _html_table(*_scenario_rows(summary))]
    ops = _operation_rows(summary)
    if ops:
        parts += ["<h2>Operations under load</h2>", _html_table(OPS_HEADER, ops),
                  "<p>serving/healthy after: measured by the action (for a rolling restart, per node); no commit, "
                  "disturbed (seconds inside a disturbance of the recovery rule), failed tx and tx/s vs baseline: "
                  "what the load saw while the operation ran.</p>"]
    if summary["table_6_1"]:
        t = summary["table_6_1"]
        header = ["scenario", "runs", "μ ms", "σ ms", "p50 ms", "p95 ms", "p99 ms", "recovery s"]
        cols = ("mean_ms", "std_ms", "p50_ms", "p95_ms", "p99_ms")

        def cell(v: Any, ch: Any = None) -> str:
            return "–" if v is None else f"{v:.1f}" + (f" ({ch:+.0f} %)" if ch is not None else "")

        rows = [["baseline", str(t["baseline"]["runs"])] + [cell(t["baseline"][c]) for c in cols] + ["–"]]
        rows += [[r["scenario"], str(r["runs"])] + [cell(r[c], r[c.replace("_ms", "_change_pct")]) for c in cols]
                 + [cell(r["recovery_s"])] for r in t["scenarios"]]
        parts += ["<h2>Comparison (thesis Table 6.1 style)</h2>", _html_table(header, rows)]
    parts.append(img("recovery", "recovery time per run"))
    for sw in summary["sweeps"]:
        parts += [f"<h2>Sweep: {html.escape(sw['scenario'])} ({html.escape(sw['parameter'])})</h2>",
                  img(f"sweep-{sw['scenario']}", f"sweep {sw['scenario']}"), _html_table(*_sweep_rows(sw))]
    if summary["upb"]:
        parts += ["<h2>UPB</h2>", f"<pre>{html.escape(json.dumps(summary['upb'], indent=2))}</pre>"]
    run_rows: list[str] = []
    for r in summary.get("run_list", []):
        link = (f'<a href="{html.escape(r["dir"])}/report.html">{html.escape(r["id"])}</a>'
                if r.get("dir") and r["status"] in ("completed", "deviated", "unsteady") else html.escape(r["id"]))
        params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items())
        run_rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in (
            link, html.escape(r["status"]), str(r["attempts"]), html.escape(params), _f(r["p99_ms"]),
            _f(r["recovery_s"]), _f(r["error_rate"], 4))) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("run", "status", "attempts", "parameters", "p99 ms", "recovery s",
                                              "errors"))
    parts += ["<h2>Runs</h2><p>Each run's own report (timeline, latency ECDF) is linked.</p>",
              f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(run_rows)}</tbody></table>"]
    style = ("body{font-family:sans-serif;margin:2em}"
             "table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap}"
             "td:first-child,th:first-child{text-align:left}img{max-width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Game day {html.escape(summary['suite'])}"
            f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def write_report(results: Path | str) -> dict[str, Any]:
    """Aggregate the results directory and write summary.json, report.md, report.html and PNGs."""
    results = Path(results)
    summary = aggregate(results)
    pngs: dict[str, Path] = {}
    p = _distribution_png(summary, "recovery", "seconds", results / "recovery.png")
    if p:
        pngs["recovery"] = p
    for sw in summary["sweeps"]:
        p = _sweep_png(sw, results / f"sweep-{sw['scenario']}.png")
        if p:
            pngs[f"sweep-{sw['scenario']}"] = p
    (results / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (results / "report.md").write_text(render_markdown(summary, {k: v.name for k, v in pngs.items()}))
    (results / "report.html").write_text(render_html(summary, pngs))
    return {"summary": summary, "files": ["summary.json", "report.md", "report.html"] + [p.name for p in pngs.values()]}
