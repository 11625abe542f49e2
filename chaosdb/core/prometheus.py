"""The Prometheus text exposition format (``/metrics``, ``/_status/vars``) as plain samples, read by
``prometheus_client``'s parser (label escapes, timestamps, ``+Inf``/``NaN``, comments and ``# TYPE`` lines)."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from chaosdb.core.errors import ChaosDBError

__all__ = ["parse_prometheus"]

#: a line the format allows: a comment or a sample starting with a metric name
_LINE = re.compile(r"\s*(#|[a-zA-Z_:])")


def parse_prometheus(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text exposition -> (name, labels, value) of every sample. Lines that are neither a comment nor
    a sample (a ``...`` where a recorded answer was shortened) are left out; a malformed sample is refused with
    :class:`ChaosDBError` naming it (is the URL a metrics endpoint?)."""
    kept = "".join(line for line in text.splitlines(keepends=True) if line.strip() and _LINE.match(line))
    if kept and not kept.endswith("\n"):
        kept += "\n"
    try:
        return [(sample.name, dict(sample.labels), float(sample.value))
                for family in text_string_to_metric_families(kept) for sample in family.samples]
    except ValueError as exc:
        raise ChaosDBError(f"the metrics are not in the Prometheus text format ({str(exc)[:200]}): is the URL a "
                           "metrics endpoint (CockroachDB /_status/vars, PD /metrics)?") from None
