"""The Prometheus text exposition format (``/metrics``, ``/_status/vars``) as plain samples."""

from __future__ import annotations

import re

__all__ = ["parse_prometheus"]

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text exposition -> (name, labels, value); comments and ``...`` elisions skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(4))
        except ValueError:
            continue
        out.append((m.group(1), dict(_LABEL.findall(m.group(3) or "")), value))
    return out
