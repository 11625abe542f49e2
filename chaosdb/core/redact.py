"""Keep secrets out of anything a person or a journal sees.

Two mechanisms:
* :func:`redact_dsn` removes the password from a libpq DSN (URL or key=value form);
* :func:`redact` replaces every occurrence of known secret values in strings and
  nested JSON-like structures with ``***``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_dsn", "redact", "MASK"]

MASK = "***"

_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """Return *dsn* with any password masked; everything else is kept as written."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, hosts = netloc.rsplit("@", 1)
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":" + MASK
            netloc = f"{userinfo}@{hosts}"
        query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2" + MASK, parts.query, flags=re.IGNORECASE)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return _KV_PASSWORD.sub(lambda m: m.group(1) + MASK, dsn)


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return a copy of *value* with every secret string replaced by ``***``.

    Secrets shorter than 4 characters are ignored: masking them would mangle
    ordinary text and they are not worth hiding anyway.
    """
    needles = sorted({s for s in secrets if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for n in needles:
                if n in v:
                    v = v.replace(n, MASK)
            return v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value)
