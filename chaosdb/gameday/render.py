"""The aggregated game-day report written from :func:`chaosdb.gameday.aggregate.aggregate`: ``summary.json``,
``report.md`` and a self-contained ``report.html`` with its figures (recovery distribution, sweep curves), the
scenario, operation and sweep tables, Table 6.1 and the UPB indices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from chaosdb.gameday.aggregate import aggregate, runs_by_scenario
from chaosdb.report.build import format_value as _f
from chaosdb.report.compare import render_compare_markdown
from chaosdb.report.html import render_page
from chaosdb.report.plots import pyplot
from chaosdb.report.upb import render_upb_markdown

__all__ = ["write_report", "render_markdown", "render_html"]


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


def _overlay_png(scenario: str, runs: list[tuple[str, dict[str, Any]]], path: Path) -> Path | None:
    """Every run's timeline of one scenario on one figure, aligned on its first fault (0 s): committed tx/s as a
    fraction of the run's own baseline, and p99 per window; each fault's span in effect is shaded faintly."""
    runs = [(rid, m) for rid, m in runs if m.get("first_fault_ts") and m.get("windows")]
    if not runs:
        return None
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 5.6), sharex=True)
    for rid, m in runs:
        zero = float(m["first_fault_ts"])
        base = (m.get("baseline") or {}).get("throughput_tps") or 0
        x = [w["start_ts"] - zero + w.get("seconds", 5.0) / 2 for w in m["windows"]]
        ax1.plot(x, [(w["tps"] / base) if base and w["tps"] is not None else np.nan for w in m["windows"]],
                 linewidth=1.1, label=rid)
        ax2.plot(x, [w["p99_ms"] if w["p99_ms"] is not None else np.nan for w in m["windows"]], linewidth=1.1)
        for sp in m.get("fault_spans") or []:
            for ax in (ax1, ax2):
                ax.axvspan(sp["start_ts"] - zero, sp["end_ts"] - zero, color="tab:orange", alpha=0.06)
    for ax in (ax1, ax2):
        ax.axvline(0, color="tab:orange", linewidth=1)
        ax.grid(True, alpha=0.3)
    ax1.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax1.set_ylabel("tx/s ÷ run's baseline")
    ax2.set_yscale("log")
    ax2.set_ylabel("p99 (ms, log)")
    ax2.set_xlabel("seconds since each run's first fault")
    ax1.legend(fontsize=7, ncol=4, loc="lower right")
    ax1.set_title(f"{scenario}: every run aligned on its fault", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
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


def _sweep_rows(sweep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["value", "runs", "hypothesis failed", "manifested", "p99 ms", "recovery s", "errors"]
    rows = [[str(p["value"]), str(p["finished"]), _f(p["hypothesis_failed"], 2), _f(p["manifested"], 2),
             _sp(p["p99_ms"]), _sp(p["recovery"] if p["recovery"].get("n") else None), _sp(p["error_rate"], 4)]
            for p in sweep["points"]]
    return header, rows


def render_markdown(summary: dict[str, Any], images: dict[str, str]) -> str:
    """The game day's report in Markdown: the scenarios' table, the overlaid timelines and each run."""
    parts = [f"# Game day: {summary['suite']}\n\n", (summary.get("description") or "") + "\n\n",
             "Runs: " + ", ".join(f"{v} {k}" for k, v in sorted(summary["runs"].items())) + ".\n\n",
             "Cells are the median over runs with [min–max]; *hypothesis failed* and *manifested* are fractions "
             "of runs.\n\n", "## Scenarios\n\n", _md_table(*_scenario_rows(summary))]
    overlays = [k for k in images if k.startswith("timelines-")]
    if overlays:
        parts.append("\n## Runs over time, aligned on the fault\n\n")
        parts += [f"![{k[len('timelines-'):]}]({images[k]})\n\n" for k in overlays]
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
    """The game day's report as one self-contained HTML page (the plots inlined; ``templates/gameday.html`` of
    :mod:`chaosdb.report`)."""
    comparison: list[list[str]] = []
    t = summary["table_6_1"]
    if t:
        cols = ("mean_ms", "std_ms", "p50_ms", "p95_ms", "p99_ms")

        def cell(v: Any, ch: Any = None) -> str:
            return "–" if v is None else f"{v:.1f}" + (f" ({ch:+.0f} %)" if ch is not None else "")

        comparison = [["baseline", str(t["baseline"]["runs"])] + [cell(t["baseline"][c]) for c in cols] + ["–"]]
        comparison += [[r["scenario"], str(r["runs"])] + [cell(r[c], r[c.replace("_ms", "_change_pct")])
                                                         for c in cols] + [cell(r["recovery_s"])]
                       for r in t["scenarios"]]
    runs = [{"id": r["id"], "link": f"{r['dir']}/report.html"
             if r.get("dir") and r["status"] in ("completed", "deviated", "unsteady") else "",
             "cells": [r["status"], str(r["attempts"]), ", ".join(f"{k}={v}" for k, v in r["parameters"].items()),
                       _f(r["p99_ms"]), _f(r["recovery_s"]), _f(r["error_rate"], 4)]}
            for r in summary.get("run_list", [])]
    scenario_header, scenario_rows = _scenario_rows(summary)
    return render_page(
        "gameday.html", title=f"Game day {summary['suite']}", suite=summary["suite"],
        description=summary.get("description") or "",
        runs=", ".join(f"{v} {k}" for k, v in sorted(summary["runs"].items())),
        scenario_header=scenario_header, scenarios=scenario_rows,
        overlays=[(k[len("timelines-"):], pngs[k]) for k in pngs if k.startswith("timelines-")],
        ops_header=OPS_HEADER, operations=_operation_rows(summary),
        comparison_header=["scenario", "runs", "μ ms", "σ ms", "p50 ms", "p95 ms", "p99 ms", "recovery s"],
        comparison=comparison, recovery=pngs.get("recovery"),
        sweeps=[{"scenario": sw["scenario"], "parameter": sw["parameter"], "image": pngs.get(f"sweep-{sw['scenario']}"),
                 "header": _sweep_rows(sw)[0], "rows": _sweep_rows(sw)[1]} for sw in summary["sweeps"]],
        upb=json.dumps(summary["upb"], indent=2) if summary["upb"] else "",
        run_header=["run", "status", "attempts", "parameters", "p99 ms", "recovery s", "errors"], run_list=runs)


def _file_part(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def write_report(results: Path | str) -> dict[str, Any]:
    """Aggregate the results directory and write summary.json, report.md, report.html and PNGs."""
    results = Path(results)
    summary = aggregate(results)
    pngs: dict[str, Path] = {}
    p = _distribution_png(summary, "recovery", "seconds", results / "recovery.png")
    if p:
        pngs["recovery"] = p
    for scenario, runs in runs_by_scenario(results).items():
        p = _overlay_png(scenario, runs, results / f"timelines-{_file_part(scenario)}.png")
        if p:
            pngs[f"timelines-{scenario}"] = p
    for sw in summary["sweeps"]:
        p = _sweep_png(sw, results / f"sweep-{sw['scenario']}.png")
        if p:
            pngs[f"sweep-{sw['scenario']}"] = p
    (results / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (results / "report.md").write_text(render_markdown(summary, {k: v.name for k, v in pngs.items()}))
    (results / "report.html").write_text(render_html(summary, pngs))
    return {"summary": summary, "files": ["summary.json", "report.md", "report.html"] + [p.name for p in pngs.values()]}
