"""SQL for CockroachDB, built safely, and the CLI's tables parsed (``channels.run_sql`` runs it over the SQL
channel or the CLI).

Statements such as ``SHOW RANGE FROM TABLE t FOR ROW (...)`` take no placeholders, so identifiers and
values are quoted here: identifiers that are plain lower-case names stay as they are (CockroachDB folds
unquoted names to lower case), anything else is double-quoted; strings are single-quoted with quotes
doubled (standard_conforming_strings is always on), numbers must be finite, ``None`` is ``NULL``.
Nothing a user passes ever reaches a shell: the CLI gets an argv list.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any, Sequence

from chaosdb.core.errors import ChaosDBError

__all__ = ["quote_ident", "quote_name", "literal", "row_literal", "parse_sql_csv", "parse_sql_table"]

_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")


def quote_ident(name: str) -> str:
    """*name* as a SQL identifier, quoted when it is not a plain lower-case name; NUL and empty names refused."""
    if not isinstance(name, str) or not name:
        raise ChaosDBError(f"not a SQL identifier: {name!r}")
    if "\0" in name:
        raise ChaosDBError("a SQL identifier cannot contain NUL")
    return name if _PLAIN.fullmatch(name) else '"' + name.replace('"', '""') + '"'


def quote_name(name: str | Sequence[str]) -> str:
    """``"movr.public.vehicles"`` or ``["movr", "public", "Vehicles"]`` -> a qualified, quoted name.
    A dotted string is split on dots; pass a list when a part itself contains a dot."""
    parts = name.split(".") if isinstance(name, str) else list(name)
    if not parts or len(parts) > 3:
        raise ChaosDBError(f"a table is [database.][schema.]name, got {name!r}")
    return ".".join(quote_ident(p) for p in parts)


def literal(value: Any) -> str:
    """*value* as a SQL literal (NULL, booleans, numbers, strings quoted and escaped), for statements that take no
    placeholders."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ChaosDBError(f"not a usable SQL value: {value!r}")
        return repr(value)
    if isinstance(value, str):
        if "\0" in value:
            raise ChaosDBError("a SQL string cannot contain NUL")
        return "'" + value.replace("'", "''") + "'"
    raise ChaosDBError(f"row values must be strings, numbers, booleans or null; got {type(value).__name__}")


def row_literal(values: Any) -> str:
    """``[1, "boston"]`` -> ``(1, 'boston')``; a single value is a one-column row."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if not values:
        raise ChaosDBError("the row needs at least one value (the primary key columns, in order)")
    return "(" + ", ".join(literal(v) for v in values) + ")"


def parse_sql_csv(text: str) -> list[dict[str, str | None]]:
    """``cockroach sql --format=csv`` output (one result set) -> rows; ``NULL`` becomes None."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not re.fullmatch(r"\(\d+ rows?\)", ln.strip())]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    return [{k: (None if v == "NULL" else v) for k, v in r.items()} for r in rows]


def parse_sql_table(text: str) -> list[dict[str, str | None]]:
    """The CLI's ``table`` format (what a terminal shows) -> rows: the header is the line above the
    ``---+---`` rule (text before it, such as the echoed statement, is ignored); ``...`` lines are skipped."""
    all_lines = text.splitlines()
    sep = next((i for i, ln in enumerate(all_lines) if ln.strip() and set(ln.strip()) <= set("-+")), None)
    if sep is None or sep == 0:
        return []
    lines = [all_lines[sep - 1]] + [ln for ln in all_lines[sep + 1:] if ln.strip() and ln.strip() != "..."
                                    and not re.fullmatch(r"\(\d+ rows?\)", ln.strip())]
    header = [h.strip() for h in lines[0].split("|")]
    rows = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.split("|")]
        if len(cells) != len(header):
            raise ChaosDBError(f"a table row has {len(cells)} cells for {len(header)} columns: {ln[:80]!r}")
        rows.append({h: (None if c == "NULL" else c) for h, c in zip(header, cells, strict=False)})
    return rows
