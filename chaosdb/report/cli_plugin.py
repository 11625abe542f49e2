"""``chaos db-report JOURNAL``: the reporter as a Chaos Toolkit CLI plugin (entry point
``chaostoolkit.cli_plugins``). Same as ``chaosdb report JOURNAL``."""

from __future__ import annotations

import sys

import click

from chaosdb.core.errors import ChaosDBError
from chaosdb.report.console import build_and_summarise

__all__ = ["db_report"]


@click.command("db-report")
@click.argument("journal", type=click.Path(exists=True, dir_okay=False))
@click.option("--samples", default=None, help="samples file or directory (default: from the journal)")
@click.option("-o", "--out", default=None, help="output directory (default: report/ beside the journal)")
@click.option("--rule", type=click.Choice(["runs", "literal"]), default="runs", help="recovery rule")
def db_report(journal: str, samples: str | None, out: str | None, rule: str) -> None:
    """Degradation and recovery report of a chaostoolkit-db run (metrics.json, report.md/.html, PNGs)."""

    try:
        build_and_summarise(journal, samples=samples, out_dir=out, rule=rule)
    except ChaosDBError as exc:  # as 'chaosdb report' says it: one line, exit status 2
        click.echo(f"chaosdb: error: {exc}", err=True)
        sys.exit(2)
