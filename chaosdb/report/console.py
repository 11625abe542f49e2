"""The reporter from a terminal: build a run's report and say in a few lines where it is and what it found
(``chaosdb report JOURNAL`` and the Chaos Toolkit plugin ``chaos db-report JOURNAL`` both print this)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from chaosdb.report.build import build_report, recovery_lines

__all__ = ["build_and_summarise"]


def build_and_summarise(journal: str, samples: str | None = None, out_dir: str | None = None, rule: str = "runs",
                        say: Callable[[str], None] = print, window_s: float = 5.0) -> dict[str, Any]:
    """Build the report of *journal*, then say where it was written, the baseline against the impact and the
    recovery; returns what :func:`~chaosdb.report.build.build_report` returned."""
    result = build_report(journal, samples=samples, out_dir=out_dir, rule=rule, window_s=window_s)
    m = result["metrics"]
    say(f"report written to {result['out_dir']}: {', '.join(result['files'])}")
    if m.get("no_load"):
        say(f"  verdict: {m['verdict'].get('sentence', '')}")
        say("  " + m["no_load"])
        say(f"  open {Path(result['out_dir']) / 'report.html'}")
        return result
    b, i = m["baseline"], m.get("impact") or {}
    say(f"  baseline: p99 {b.get('p99_ms')} ms, {b.get('throughput_tps')} tx/s;  "
        f"impact: p99 {i.get('p99_ms')} ms, {i.get('throughput_tps')} tx/s, errors {i.get('error_rate')}")
    for line in recovery_lines(m):
        say("  " + line.replace("**", "").replace("*", ""))
    say(f"  open {Path(result['out_dir']) / 'report.html'}")
    return result
