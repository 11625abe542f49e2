"""PNG plots of a run (matplotlib, Agg backend: no display, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from chaosdb.core.dbevents import label_of
from chaosdb.report.data import Samples

#: the events drawn on the timeline (all are in metrics.json), and at most how many
ANNOTATED = ("leader_lost", "leader_elected", "term_changed", "member_left", "member_rejoined", "replicas_converged",
             "unreachable")
MAX_ANNOTATIONS = 40
#: up to how many windows the failed attempts are drawn as bars (beyond, as one filled outline)
MAX_BARS = 400

__all__ = ["timeline_png", "ecdf_png", "pyplot"]


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (imported on first use: plots are optional)."""
    import matplotlib  # noqa: PLC0415 - needs the report extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - needs the report extra

    return plt


def timeline_png(metrics: dict[str, Any], faults: list[dict[str, Any]], path: Path, title: str) -> dict[str, Any]:
    """Latency percentiles and throughput per window; each fault shaded while it was in effect (``fault_spans``:
    until the restoring action), restoring actions, rollbacks and operator actions marked with a line, the
    baseline shaded blue, the database's events (leader, timeline, members, replicas) as dotted annotated lines,
    pauses of the load shaded grey (no throughput is drawn where the load was paused).
    The x axis is seconds relative to the first fault (0 = injection). Returns what it drew, in seconds on
    that axis, so that a test can hold it against the tables."""
    plt = pyplot()
    zero = metrics.get("first_fault_ts") or metrics["first_ts"]
    wins = metrics["windows"]
    x = np.array([w["start_ts"] - zero + w.get("seconds", 5.0) / 2 for w in wins])
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6.2), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for key, style in (("p50_ms", "-"), ("p95_ms", "--"), ("p99_ms", "-")):
        y = np.array([w[key] if w[key] is not None else np.nan for w in wins], dtype=float)
        ax1.plot(x, y, style, label=key.replace("_ms", ""), linewidth=1.6 if key == "p99_ms" else 1.2)
    ax1.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: PLC0415 - needs the report extra

    ax1.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax1.yaxis.set_minor_formatter(NullFormatter())
    ax1.set_ylabel("latency (ms, log)")
    ax1.grid(True, which="both", alpha=0.3)
    tps = np.array([w["tps"] if w["tps"] is not None else np.nan for w in wins], dtype=float)
    errs = np.array([w["errors"] / max(w.get("seconds", 5.0), 1e-9) for w in wins])
    ax2.plot(x, tps, color="tab:green", label="committed tx/s")
    if len(wins) <= MAX_BARS:
        ax2.bar(x, errs, width=0.8 * float(metrics.get("window_s") or 5.0), color="tab:red", alpha=0.5,
                label="failed attempts/s")
    elif wins:  # a long run: one filled outline instead of thousands of sub-pixel bars (each a patch to draw)
        edges = [w["start_ts"] - zero for w in wins] + [wins[-1]["start_ts"] + wins[-1].get("seconds", 5.0) - zero]
        ax2.stairs(errs, edges, fill=True, color="tab:red", alpha=0.5, label="failed attempts/s")
    ax2.set_ylabel("transactions / s")
    ax2.set_xlabel("seconds since the first fault")
    ax2.grid(True, alpha=0.3)
    base = metrics.get("baseline") or {}
    if base.get("throughput_tps"):
        ax2.axhline(base["throughput_tps"], color="grey", linestyle=":", linewidth=1, label="baseline tx/s")
    rec = metrics.get("recovery") or {}
    drawn: dict[str, Any] = {"faults": [], "markers": [], "operators": [], "pauses": [], "events": [],
                             "baseline": None, "windows": len(wins)}
    spans = metrics.get("fault_spans")
    if spans is None:  # metrics of an older report: the actions' own windows
        spans = [{"name": f.get("name"), "start_ts": f["start_ts"], "end_ts": f.get("end_ts") or f["start_ts"]}
                 for f in faults if f.get("start_ts") is not None and not (f.get("rollback") or f.get("restores"))]
    for sp in spans:
        s, e = sp["start_ts"] - zero, sp["end_ts"] - zero
        for ax in (ax1, ax2):
            ax.axvspan(s, max(e, s + 0.5), color="tab:orange", alpha=0.25)
        drawn["faults"].append({"name": sp.get("name"), "start": s, "end": e})
    for f in faults:
        if f.get("start_ts") is None or f.get("status") == "failed":
            continue
        s, e = f["start_ts"] - zero, (f.get("end_ts") or f["start_ts"]) - zero
        if f.get("rollback") or f.get("restores"):
            for ax in (ax1, ax2):
                ax.axvline(s, color="tab:purple", linestyle="-.", linewidth=1)
            drawn["markers"].append({"name": f.get("name"), "start": s, "end": e})
        elif f.get("operator"):
            for ax in (ax1, ax2):
                ax.axvline(s, color="tab:blue", linestyle="--", linewidth=1.2)
            drawn["operators"].append({"name": f.get("name"), "start": s, "end": e})
    b_start, first = metrics.get("baseline_start_ts"), metrics.get("first_fault_ts")
    if b_start is not None and first is not None and first > b_start:
        for ax in (ax1, ax2):
            ax.axvspan(b_start - zero, first - zero, color="tab:blue", alpha=0.06)
        drawn["baseline"] = {"start": b_start - zero, "end": first - zero}
    shown = [e for e in metrics.get("events") or [] if e.get("event") in ANNOTATED and e.get("at_s") is not None]
    # events seen within a second of each other share one line and one label (Patroni says several at once)
    groups: list[list[dict[str, Any]]] = []
    for e in shown:
        if groups and e["at_s"] - groups[-1][0]["at_s"] <= 1.0:
            groups[-1].append(e)
        else:
            groups.append([e])
    for group in groups[:MAX_ANNOTATIONS]:
        at = group[0]["at_s"]
        label = "; ".join(dict.fromkeys(label_of(e) for e in group))
        for ax in (ax1, ax2):
            ax.axvline(at, color="black", linestyle=":", linewidth=0.8, alpha=0.7)
        ax1.annotate(label, xy=(at, 1.0), xycoords=("data", "axes fraction"), rotation=90, fontsize=7, va="top",
                     ha="right", xytext=(-1, -2), textcoords="offset points", alpha=0.85)
        drawn["events"] += [{"event": e["event"], "at": e["at_s"], "label": label_of(e)} for e in group]
    for p in metrics.get("excluded_pauses") or []:
        s, e = float(p["start_ts"]) - zero, float(p["end_ts"]) - zero
        for ax in (ax1, ax2):
            ax.axvspan(s, e, color="grey", alpha=0.18, hatch="//", linewidth=0)
        drawn["pauses"].append({"start": s, "end": e})
    if rec.get("onset_ts") and rec.get("end_ts"):
        ax1.axvspan(rec["onset_ts"] - zero, rec["end_ts"] - zero, color="tab:red", alpha=0.08)
    from matplotlib.lines import Line2D  # noqa: PLC0415 - needs the report extra
    from matplotlib.patches import Patch  # noqa: PLC0415 - needs the report extra

    handles, labels = ax1.get_legend_handles_labels()
    handles += [Patch(color="tab:orange", alpha=0.25), Line2D([], [], color="tab:purple", linestyle="-.")]
    labels += ["fault in effect", "restore / rollback"]
    if drawn["operators"]:
        handles.append(Line2D([], [], color="tab:blue", linestyle="--"))
        labels.append("operator action")
    if drawn["baseline"]:
        handles.append(Patch(color="tab:blue", alpha=0.06))
        labels.append("baseline")
    if drawn["events"]:
        handles.append(Line2D([], [], color="black", linestyle=":"))
        labels.append("database event")
    if drawn["pauses"]:
        handles.append(Patch(color="grey", alpha=0.18, hatch="//"))
        labels.append("load paused (integrity check)")
    if rec.get("onset_ts") and rec.get("end_ts"):
        handles.append(Patch(color="tab:red", alpha=0.08))
        labels.append(f"recovery {rec['duration_s']:.1f} s")
    ax1.legend(handles, labels, loc="lower left", fontsize=7, ncol=4, framealpha=0.8)
    ax2.legend(loc="upper left", fontsize=8, ncol=3)
    ax1.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn


def _ecdf_points(values: np.ndarray, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(values)
    if v.size <= points:
        return v, np.arange(1, v.size + 1) / v.size
    q = np.linspace(0, 1, points)
    idx = np.minimum((q * v.size).astype(int), v.size - 1)
    return v[idx], (idx + 1) / v.size


def ecdf_png(baseline: Samples | np.ndarray | None, impact: Samples | np.ndarray | None, path: Path,
             title: str) -> dict[str, Any]:
    """Empirical CDF of successful latencies, baseline versus impact, log x axis; each given as samples or as
    their successful latencies (ms). Returns, per curve, how many transactions it holds and its largest latency
    (to be held against the tables)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn: dict[str, Any] = {}
    for label, s, color in (("baseline", baseline, "tab:blue"), ("impact", impact, "tab:red")):
        ok_ms = s.lat[s.ok] if isinstance(s, Samples) else s
        if ok_ms is None or not ok_ms.size:  # no window (no fault) or nothing succeeded in it
            continue
        drawn[label] = {"n": int(ok_ms.size), "max_ms": float(ok_ms.max())}
        x, y = _ecdf_points(ok_ms)
        ax.step(x, y, where="post", label=f"{label} (n={int(ok_ms.size)})", color=color)
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415 - needs the report extra

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.set_xlabel("latency (ms, log)")
    ax.set_ylabel("fraction of transactions")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn
