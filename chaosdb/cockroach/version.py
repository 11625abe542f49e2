"""CockroachDB versions and what each can do (CockroachDB's release notes and documentation).

The CLI's commands depend on the *binary* that runs them (``quit`` is gone from v22.2 binaries); the
SQL statements depend on the *cluster* (``SHOW RANGES`` changed in v23.1/v23.2). Both versions are
read once per configuration unless ``cockroach_version`` says it (``"v23.2.4"``).
"""

from __future__ import annotations

import re
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["parse_version", "Features", "features_of"]

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int]:
    """``v23.2.4-12-gabc``, ``Build Tag: v22.1.22``, ``CockroachDB CCL v23.2.4 (x86_64...)`` -> (23, 2, 4)."""
    m = _VERSION.search(str(text or ""))
    if not m:
        raise ChaosDBError(f"cannot read a CockroachDB version from {str(text)[:80]!r}: set cockroach_version "
                           "(e.g. \"v23.2.4\") in the configuration")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


class Features:
    """What a version has, by the release that changed it."""

    def __init__(self, version: tuple[int, int, int]):
        self.version = version

    def __repr__(self) -> str:
        return "v%d.%d.%d" % self.version

    @property
    def has_quit(self) -> bool:  # removed in v22.2 (cockroach#82988)
        """Whether ``cockroach quit`` exists (removed in v22.2, cockroach#82988)."""
        return self.version < (22, 2)

    @property
    def drain_by_node_id(self) -> bool:  # `node drain <id>` / --self since v22.1
        """Whether ``node drain <id>`` / ``--self`` exist (since v22.1)."""
        return self.version >= (22, 1)

    @property
    def json_format(self) -> bool:  # --format=json since v23.2
        """Whether the CLI has ``--format=json`` (since v23.2)."""
        return self.version >= (23, 2)

    @property
    def ndjson_format(self) -> bool:  # since v22.2
        """Whether the CLI has ``--format=ndjson`` (since v22.2)."""
        return self.version >= (22, 2)

    @property
    def show_ranges(self) -> str:
        """``legacy`` (lease_holder by default), ``details`` (v23.2+: needs WITH DETAILS), ``either`` (v23.1)."""
        if self.version < (23, 1):
            return "legacy"
        return "either" if self.version < (23, 2) else "details"

    @property
    def membership_column(self) -> bool:  # node status --decommission gained it in v20.2
        """Whether ``node status --decommission`` prints ``membership`` (since v20.2)."""
        return self.version >= (20, 2)


def features_of(text_or_version: Any) -> Features:
    """What the CockroachDB version (its text or a parsed tuple) supports, as :class:`Features`."""
    if isinstance(text_or_version, tuple):
        return Features(text_or_version)
    return Features(parse_version(text_or_version))
