"""Keep secrets out of anything a person or a journal sees.

Two mechanisms:
* :func:`redact_dsn` removes the password from a libpq DSN (URL or key=value form);
* :func:`redact` replaces every occurrence of known secret values in strings and
  nested JSON-like structures with ``***``; :func:`secret_strings` lists those values
  for a Chaos Toolkit secrets mapping (each DSN's password too).
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

__all__ = ["redact_dsn", "redact", "secret_strings", "MASK"]

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


def _dsn_passwords(text: str) -> list[str]:
    """The passwords inside *text* when it is a libpq DSN (URL or key=value form), else none."""
    if "://" in text:
        try:
            parts = urlsplit(text)
            found = [parts.password, unquote(parts.password)] if parts.password else []  # as written and decoded
        except ValueError:
            return []
        return found + parse_qs(parts.query).get("password", [])
    found = []
    for m in _KV_PASSWORD.finditer(text):
        value = m.group(2)
        if value.startswith("'"):  # quoted: the password as libpq reads it, its escapes undone
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        found.append(value)
    return found


def secret_strings(secrets: Any) -> list[str]:
    """Every string of a Chaos Toolkit secrets mapping (its scopes, at any depth), and the password inside each one
    that is a DSN: what :func:`redact` must mask in anything shown."""
    found: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            found.append(v)
            found.extend(_dsn_passwords(v))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(secrets)
    return list(dict.fromkeys(found))
