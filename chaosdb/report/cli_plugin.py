"""``chaos db-report JOURNAL``: the reporter as a Chaos Toolkit CLI plugin (entry point
``chaostoolkit.cli_plugins``). Same as ``chaosdb report JOURNAL``.

Chaos Toolkit imports this module when ``chaos`` starts, before it reads any experiment: that is where a malformed
experiment file gets sentences instead of a traceback (:func:`chaosdb.experiment.malformed.install_hook`)."""

from __future__ import annotations

import sys

import click

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import require_extras
from chaosdb.experiment.malformed import install_hook

__all__ = ["db_report"]

install_hook()


@click.command("db-report")
@click.argument("journal", type=click.Path(exists=True, dir_okay=False))
@click.option("--samples", default=None, help="samples file or directory (default: from the journal)")
@click.option("-o", "--out", default=None, help="output directory (default: report/ beside the journal)")
@click.option("--rule", type=click.Choice(["runs", "literal"]), default="runs", help="recovery rule")
@click.option("--window-s", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
              help="width of the timeline's windows in seconds")
def db_report(journal: str, samples: str | None, out: str | None, rule: str, window_s: float) -> None:
    """Degradation and recovery report of a chaostoolkit-db run (metrics.json, report.md/.html, PNGs)."""

    try:
        # Chaos Toolkit loads this plugin for every command: the reporter (numpy, matplotlib) only when it runs
        require_extras("'chaos db-report'", ("report",))
        from chaosdb.report.console import build_and_summarise  # noqa: PLC0415 - needs the report extra

        build_and_summarise(journal, samples=samples, out_dir=out, rule=rule, window_s=window_s)
    except ChaosDBError as exc:  # as 'chaosdb report' says it: one line, exit status 2
        click.echo(f"chaosdb: error: {exc}", err=True)
        sys.exit(2)
