"""HTML reports from Jinja2 templates (``templates/``, package data): one self-contained page each, its plots
inlined as data URIs, every value escaped by the templates' autoescaping. The data each page shows is prepared by
the module that builds it (:mod:`chaosdb.report.build`, :mod:`chaosdb.gameday.render`)."""

from __future__ import annotations

import base64
import functools
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

__all__ = ["render_page", "png_data_uri"]


def png_data_uri(path: Path | str) -> str:
    """A PNG file as a ``data:`` URI, so the page needs no other file (its policy loads nothing else)."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()


@functools.cache
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("chaosdb.report", "templates"), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["png"] = png_data_uri
    return env


def render_page(template: str, **context: Any) -> str:
    """The page *template* (``run.html``, ``journal.html``, ``gameday.html``) with *context*."""
    return _environment().get_template(template).render(**context)
