"""PNG plots of a run (matplotlib, Agg backend: no display, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from chaosdb.report.data import Samples
from chaosdb.report.spans import timeline_events

#: up to how many windows the failed attempts are drawn as bars (beyond, as one filled outline)
MAX_BARS = 400
#: lanes of event labels above the latency panel before labels are shortened to their number
MAX_LANES = 8
#: the event labels' font size (points)
EVENT_FONT = 7.0
DPI = 100
#: the timeline's layout in inches: width, margins, title, panels, x axis, one legend row, one lane of labels
_WIDTH, _LEFT, _RIGHT = 10.0, 0.85, 0.25
_TITLE, _LATENCY, _GAP, _TPS, _XAXIS, _LEGEND_ROW, _LANE = 0.45, 3.0, 0.12, 2.0, 0.6, 0.2, 0.17
_LEGEND_COLUMNS = 5
#: how the bands are drawn: the recovery above the fault (both visible where they overlap: its face is see-through
#: and its edges dashed)
FAULT_BAND: dict[str, Any] = {"facecolor": (1.0, 0.5, 0.05, 0.22), "edgecolor": "none", "zorder": 0.5}
RECOVERY_BAND: dict[str, Any] = {"facecolor": (0.84, 0.15, 0.16, 0.13), "edgecolor": (0.84, 0.15, 0.16, 0.9), "linestyle": "--",
                 "linewidth": 1.0, "zorder": 0.7}
PAUSE_BAND: dict[str, Any] = {"facecolor": (0.5, 0.5, 0.5, 0.18), "hatch": "//", "edgecolor": (0.5, 0.5, 0.5, 0.5), "linewidth": 0,
              "zorder": 0.6}
BASELINE_BAND: dict[str, Any] = {"facecolor": (0.12, 0.47, 0.71, 0.06), "edgecolor": "none", "zorder": 0.4}

__all__ = ["timeline_png", "timeline_figure", "ecdf_png", "pyplot", "place_event_labels", "MAX_LANES"]


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (imported on first use: plots are optional)."""
    import matplotlib  # noqa: PLC0415 - needs the report extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - needs the report extra

    return plt


def _crowds(xs: list[float], crowd_px: float, min_crowd: int) -> list[list[int]]:
    """The events' indices in runs whose lines stand less than *crowd_px* apart; a run shorter than *min_crowd* is
    split into runs of one (each is labelled on its own)."""
    runs: list[list[int]] = []
    for i, x in enumerate(xs):
        if runs and x - xs[runs[-1][-1]] < crowd_px:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [part for run in runs for part in ([run] if len(run) >= min_crowd else [[i] for i in run])]


def place_event_labels(events: list[dict[str, Any]], x0: float, x1: float, width_px: float,
                       measure: Callable[[str], float], max_lanes: int = MAX_LANES,
                       pad_px: float = 3.0, gap_px: float = 4.0, crowd_px: float = 8.0,
                       min_crowd: int = 4) -> list[dict[str, Any]]:
    """Where the events' labels go in the strip above the latency panel, one entry per label: ``ns`` (the numbers
    of the events it labels), ``at`` (its line), ``text``, ``lane`` (0 at the bottom) and ``ha`` (``left``: the
    text starts right of its line; ``right``: it ends left of it).

    A label is "N words" right of its line, or "words N" left of it near the right edge (the number always next to
    its line); "N" alone when none of the first *max_lanes* lanes has room for its words; "a–b" for *min_crowd* or
    more events whose lines stand less than *crowd_px* apart (too close to tell apart: the table has each). A label
    takes the first lane in which it overlaps no other label (*gap_px* apart) and stays within [*x0*, *x1*],
    *width_px* pixels wide; *measure* gives a text's width in pixels. Labels never overlap and never leave the
    strip; every event's number is in one label."""
    scale = width_px / (x1 - x0) if x1 > x0 else 1.0
    lanes: list[list[tuple[float, float]]] = []

    def spot(width: float, x: float) -> tuple[float, float, str] | None:
        if x + pad_px + width <= width_px:
            return x + pad_px, x + pad_px + width, "left"
        if x - pad_px - width >= 0:
            return x - pad_px - width, x - pad_px, "right"
        return None

    def free_lane(a: float, b: float, limit: int | None) -> int | None:
        for i, used in enumerate(lanes):
            if all(b + gap_px <= u or a >= v + gap_px for u, v in used):
                return i
        if limit is None or len(lanes) < limit:
            lanes.append([])
            return len(lanes) - 1
        return None

    xs = [(float(e["at_s"]) - x0) * scale for e in events]
    placed = []
    for crowd in _crowds(xs, crowd_px, min_crowd):
        first, last = events[crowd[0]], events[crowd[-1]]
        x = xs[crowd[0]]
        if len(crowd) == 1:
            # words and number, else the number alone (in any lane: it must be somewhere)
            tries = [((f"{first['n']} {first['label']}", f"{first['label']} {first['n']}"), max_lanes),
                     ((str(first["n"]),) * 2, None)]
        else:
            tries = [((f"{first['n']}–{last['n']}",) * 2, None)]
        for texts, limit in tries:
            right = spot(measure(texts[0]), x)
            where = right if right is not None and right[2] == "left" else spot(measure(texts[1]), x)
            if where is None:
                continue
            lane = free_lane(where[0], where[1], limit)
            if lane is None:
                continue
            lanes[lane].append((where[0], where[1]))
            placed.append({"ns": [events[i]["n"] for i in crowd], "at": float(first["at_s"]),
                           "text": texts[0] if where[2] == "left" else texts[1], "lane": lane, "ha": where[2]})
            break
    return placed


def _x_range(metrics: dict[str, Any], zero: float, spans: list[dict[str, Any]], faults: list[dict[str, Any]],
             events: list[dict[str, Any]]) -> tuple[float, float]:
    """The x axis's limits (seconds from the first fault): every window, span, marker and event, with a margin."""
    wins = metrics["windows"]
    xs = [w["start_ts"] - zero for w in wins] + [w["start_ts"] + w.get("seconds", 5.0) - zero for w in wins]
    xs += [sp["start_ts"] - zero for sp in spans] + [sp["end_ts"] - zero for sp in spans]
    xs += [f["start_ts"] - zero for f in faults if f.get("start_ts") is not None and f.get("status") != "failed"]
    xs += [float(e["at_s"]) for e in events]
    if not xs:
        return -1.0, 1.0
    lo, hi = min(xs), max(xs)
    margin = max(0.5, 0.015 * (hi - lo))
    return lo - margin, hi + margin


def timeline_figure(metrics: dict[str, Any], faults: list[dict[str, Any]], title: str) -> tuple[Any, dict[str, Any]]:
    """The timeline as a matplotlib figure (see :func:`timeline_png`) and what it drew; the caller closes it.

    Layout, top to bottom: the title; a strip with the database's events, each a numbered label in its own lane
    (the numbers and labels of the report's table of events); latency percentiles (log); throughput and failed
    attempts; the x axis; the legend, below everything (it covers no data)."""
    plt = pyplot()
    from matplotlib.font_manager import FontProperties  # noqa: PLC0415 - needs the report extra
    from matplotlib.lines import Line2D  # noqa: PLC0415 - needs the report extra
    from matplotlib.patches import Patch  # noqa: PLC0415 - needs the report extra
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: PLC0415 - needs the report extra

    zero = metrics.get("first_fault_ts") or metrics["first_ts"]
    wins = metrics["windows"]
    spans = metrics.get("fault_spans")
    if spans is None:  # metrics of an older report: the actions' own windows
        spans = [{"name": f.get("name"), "start_ts": f["start_ts"], "end_ts": f.get("end_ts") or f["start_ts"]}
                 for f in faults if f.get("start_ts") is not None and not (f.get("rollback") or f.get("restores"))]
    events = metrics.get("timeline_events")
    if events is None:
        events = timeline_events(metrics.get("events") or [])
    x0, x1 = _x_range(metrics, zero, spans, faults, events)

    fig = plt.figure(figsize=(_WIDTH, 6.0), dpi=DPI)
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=EVENT_FONT)
    axes_px = (_WIDTH - _LEFT - _RIGHT) * DPI
    placed = place_event_labels(events, x0, x1, axes_px,
                                lambda text: renderer.get_text_width_height_descent(text, font, ismath=False)[0],
                                pad_px=2.0 * DPI / 72.0)
    lanes = max((p["lane"] for p in placed), default=-1) + 1

    # the legend's entries first: their number sets the height of the bottom margin
    rec = metrics.get("recovery") or {}
    base = metrics.get("baseline") or {}
    b_start, first = metrics.get("baseline_start_ts"), metrics.get("first_fault_ts")
    has_baseline = b_start is not None and first is not None and first > b_start
    has_recovery = bool(rec.get("onset_ts") and rec.get("end_ts"))
    pauses = metrics.get("excluded_pauses") or []
    drawn_faults = [f for f in faults if f.get("start_ts") is not None and f.get("status") != "failed"]
    has_operator = any(f.get("operator") and not (f.get("rollback") or f.get("restores")) for f in drawn_faults)
    # p50, p95, p99, committed tx/s, failed attempts/s, [baseline tx/s], fault in effect, restore / rollback, ...
    entries = 5 + bool(base.get("throughput_tps")) + 2 + has_operator + has_baseline + bool(events) + bool(pauses) \
        + has_recovery
    rows = -(-entries // _LEGEND_COLUMNS)
    strip = lanes * _LANE + 0.12 if lanes else 0.0
    height = _TITLE + strip + _LATENCY + _GAP + _TPS + _XAXIS + rows * _LEGEND_ROW + 0.15
    fig.set_size_inches(_WIDTH, height)

    def rect(top_in: float, h_in: float) -> list[float]:
        return [_LEFT / _WIDTH, 1 - (top_in + h_in) / height, (_WIDTH - _LEFT - _RIGHT) / _WIDTH, h_in / height]

    ax1 = fig.add_axes(rect(_TITLE + strip, _LATENCY))
    ax2 = fig.add_axes(rect(_TITLE + strip + _LATENCY + _GAP, _TPS), sharex=ax1)
    axe = fig.add_axes(rect(_TITLE, strip), sharex=ax1) if lanes else None
    panels = [ax for ax in (axe, ax1, ax2) if ax is not None]
    ax1.set_xlim(x0, x1)

    x = np.array([w["start_ts"] - zero + w.get("seconds", 5.0) / 2 for w in wins])
    # the percentiles in shades of one blue (darker: higher), apart from the throughput's green in the one legend
    for key, style, color in (("p50_ms", "-", "#6baed6"), ("p95_ms", "--", "#2171b5"), ("p99_ms", "-", "#08306b")):
        y = np.array([w[key] if w[key] is not None else np.nan for w in wins], dtype=float)
        ax1.plot(x, y, style, color=color, label=key.replace("_ms", ""), linewidth=1.6 if key == "p99_ms" else 1.2,
                 zorder=2)
    ax1.set_yscale("log")
    ax1.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax1.yaxis.set_minor_formatter(NullFormatter())
    ax1.set_ylabel("latency (ms, log)")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.tick_params(labelbottom=False)
    tps = np.array([w["tps"] if w["tps"] is not None else np.nan for w in wins], dtype=float)
    errs = np.array([w["errors"] / max(w.get("seconds", 5.0), 1e-9) for w in wins])
    ax2.plot(x, tps, color="tab:green", label="committed tx/s", zorder=2)
    if len(wins) <= MAX_BARS:
        ax2.bar(x, errs, width=0.8 * float(metrics.get("window_s") or 5.0), color="tab:red", alpha=0.5,
                label="failed attempts/s", zorder=1.5)
    elif wins:  # a long run: one filled outline instead of thousands of sub-pixel bars (each a patch to draw)
        edges = [w["start_ts"] - zero for w in wins] + [wins[-1]["start_ts"] + wins[-1].get("seconds", 5.0) - zero]
        ax2.stairs(errs, edges, fill=True, color="tab:red", alpha=0.5, label="failed attempts/s", zorder=1.5)
    ax2.set_ylabel("transactions / s")
    ax2.set_xlabel("seconds since the first fault")
    ax2.grid(True, alpha=0.3)
    if base.get("throughput_tps"):
        ax2.axhline(base["throughput_tps"], color="grey", linestyle=":", linewidth=1, label="baseline tx/s", zorder=2)
    drawn: dict[str, Any] = {"faults": [], "markers": [], "operators": [], "pauses": [], "events": [],
                             "baseline": None, "recovery": None, "windows": len(wins), "lanes": lanes}
    for sp in spans:
        s, e = sp["start_ts"] - zero, sp["end_ts"] - zero
        for ax in (ax1, ax2):
            ax.axvspan(s, max(e, s + 0.5), gid="fault", **FAULT_BAND)
        drawn["faults"].append({"name": sp.get("name"), "start": s, "end": e})
    for f in drawn_faults:
        s, e = f["start_ts"] - zero, (f.get("end_ts") or f["start_ts"]) - zero
        if f.get("rollback") or f.get("restores"):
            for ax in (ax1, ax2):
                ax.axvline(s, color="tab:purple", linestyle="-.", linewidth=1, zorder=1.8)
            drawn["markers"].append({"name": f.get("name"), "start": s, "end": e})
        elif f.get("operator"):
            for ax in (ax1, ax2):
                ax.axvline(s, color="tab:blue", linestyle="--", linewidth=1.2, zorder=1.8)
            drawn["operators"].append({"name": f.get("name"), "start": s, "end": e})
    if has_baseline:
        for ax in (ax1, ax2):
            ax.axvspan(b_start - zero, first - zero, gid="baseline", **BASELINE_BAND)
        drawn["baseline"] = {"start": b_start - zero, "end": first - zero}
    for p in pauses:
        s, e = float(p["start_ts"]) - zero, float(p["end_ts"]) - zero
        for ax in (ax1, ax2):
            ax.axvspan(s, e, gid="pause", **PAUSE_BAND)
        drawn["pauses"].append({"start": s, "end": e})
    if has_recovery:
        s, e = rec["onset_ts"] - zero, rec["end_ts"] - zero
        for ax in (ax1, ax2):
            ax.axvspan(s, e, gid="recovery", **RECOVERY_BAND)
        drawn["recovery"] = {"start": s, "end": e}
    for ev in events:
        for ax in panels:
            ax.axvline(ev["at_s"], color="black", linestyle=":", linewidth=0.8, alpha=0.7, zorder=1.9)
    if axe is not None:
        axe.set_ylim(0, lanes)
        axe.set_yticks([])
        axe.tick_params(labelbottom=False, bottom=False)
        for side in ("top", "right", "left"):
            axe.spines[side].set_visible(False)
        axe.set_ylabel("events", rotation=0, ha="right", va="center", fontsize=8)
        pad = 2.0
        for p in placed:
            axe.annotate(p["text"], xy=(p["at"], p["lane"] + 0.5), xycoords="data", fontsize=EVENT_FONT,
                         xytext=(pad if p["ha"] == "left" else -pad, 0), textcoords="offset points", ha=p["ha"],
                         va="center", gid="event-label", annotation_clip=False)
    by_n = {n: p for p in placed for n in p["ns"]}
    drawn["events"] = [{"n": ev["n"], "at": ev["at_s"], "label": ev["label"],
                        "text": by_n[ev["n"]]["text"] if ev["n"] in by_n else None} for ev in events]

    handles, labels = ax1.get_legend_handles_labels()
    more_h, more_l = ax2.get_legend_handles_labels()
    handles, labels = handles + more_h, labels + more_l
    handles += [Patch(**{k: v for k, v in FAULT_BAND.items() if k != "zorder"}),
                Line2D([], [], color="tab:purple", linestyle="-.")]
    labels += ["fault in effect", "restore / rollback"]
    if has_operator:
        handles.append(Line2D([], [], color="tab:blue", linestyle="--"))
        labels.append("operator action")
    if has_baseline:
        handles.append(Patch(facecolor=(0.12, 0.47, 0.71, 0.15)))
        labels.append("baseline")
    if events:
        handles.append(Line2D([], [], color="black", linestyle=":"))
        labels.append("database event (numbered)")
    if pauses:
        handles.append(Patch(**{k: v for k, v in PAUSE_BAND.items() if k != "zorder"}))
        labels.append("load paused (integrity check)")
    if has_recovery:
        handles.append(Patch(**{k: v for k, v in RECOVERY_BAND.items() if k != "zorder"}))
        labels.append(f"recovery {rec['duration_s']:.1f} s" if rec.get("duration_s") is not None else "recovery")
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.08 / height), ncol=_LEGEND_COLUMNS,
               fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11, y=1 - 0.12 / height, va="top")
    return fig, drawn


def timeline_png(metrics: dict[str, Any], faults: list[dict[str, Any]], path: Path, title: str) -> dict[str, Any]:
    """Latency percentiles and throughput per window; each fault shaded while it was in effect (``fault_spans``:
    until whatever ended it), the recovery span shaded red above it with dashed edges, restoring actions,
    rollbacks and operator actions marked with a line, the baseline shaded blue, the database's events as numbered
    dotted lines labelled in a strip above the latency panel (``timeline_events``: the report's table of events),
    pauses of the load shaded grey (no throughput is drawn where the load was paused); the legend below the
    panels. The x axis is seconds relative to the first fault (0 = injection). Returns what it drew, in seconds on
    that axis, so that a test can hold it against the tables."""
    plt = pyplot()
    fig, drawn = timeline_figure(metrics, faults, title)
    fig.savefig(path, dpi=DPI)
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
