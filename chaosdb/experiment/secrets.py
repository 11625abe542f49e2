"""An experiment's secrets kept out of the journal Chaos Toolkit writes and out of the run's log.

Chaos Toolkit copies the experiment whole into its journal (``--journal-path``) and logs activity results at debug
level: a password written inline in the experiment's ``secrets`` (``"load_dsn": "postgresql://u:pw@..."``) would
land there verbatim. The experiment control masks them: a log filter from the start of the run, and the journal
just before Chaos Toolkit writes it (the last control hook, so every other control and the report still saw the
real values). Secrets read from the environment (``{"type": "env", "key": ...}``) are masked too, wherever their
values appear. A run whose experiment holds inline secrets is told once that they belong in the environment.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Iterable

from chaosdb.core.redact import MASK, redact, redact_dsn
from chaosdb.core.settings import referenced_value, secret_environment_values

__all__ = ["inline_secrets", "secret_values", "mask_journal", "LogMask", "journal_path", "make_journal_private"]

#: words in a configuration key that make its value a secret even outside the ``secrets`` block
_SECRET_WORDS = ("password", "passwd", "secret", "token", "dsn", "credential", "private_key")


def _is_reference(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in ("env", "vault") and "key" in value


def inline_secrets(experiment: Any) -> list[str]:
    """Where the experiment writes a secret value inline: ``secrets.<scope>.<key>`` (and configuration keys whose
    name says secret), for the warning; references to the environment or a vault are not listed."""
    found: list[str] = []
    if not isinstance(experiment, dict):
        return found
    scopes = experiment.get("secrets")
    for scope, entries in (scopes.items() if isinstance(scopes, dict) else []):
        for key, value in (entries.items() if isinstance(entries, dict) else []):
            if not _is_reference(value) and value not in (None, ""):
                found.append(f"secrets.{scope}.{key}")
    config = experiment.get("configuration")
    for key, value in (config.items() if isinstance(config, dict) else []):
        if isinstance(value, str) and _secret_key(str(key)) and (redact_dsn(value) != value if "://" in value
                                                                 or "=" in value else len(value) >= 4):
            found.append(f"configuration.{key}")
    return found


def _secret_key(key: str) -> bool:
    return any(w in key.lower() for w in _SECRET_WORDS)


def secret_values(experiment: Any, secrets: Any = None) -> list[str]:
    """Every secret value of the run: inline in the experiment's ``secrets``, as loaded for the run (*secrets*: the
    values Chaos Toolkit resolved, the environment's included), in configuration keys whose name says secret
    (a DSN's password only), and the pack's own secret environment variables."""
    found: list[str] = list(secret_environment_values())

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if _is_reference(value):
                if value.get("type") == "env":
                    walk(referenced_value(str(value["key"]), ""))
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            found.extend(_parts(str(value)))

    if isinstance(experiment, dict):
        walk(experiment.get("secrets") or {})
        config = experiment.get("configuration")
        for key, value in (config.items() if isinstance(config, dict) else []):
            if not _secret_key(str(key)) or _is_reference(value) or not isinstance(value, str):
                continue
            if "://" in value or "=" in value:  # a DSN: only when it holds a password
                found.extend(_parts(value) if redact_dsn(value) != value else [])
            else:
                found.append(value)
    walk(secrets or {})
    return sorted({v for v in found if len(v) >= 4}, key=len, reverse=True)


def _parts(value: str) -> list[str]:
    """A secret value and, for a DSN, its password alone (it may appear without the rest)."""
    masked = redact_dsn(value)
    if masked == value:
        return [value]
    password = _dsn_password(value)
    return [value] + ([password] if password else [])


def _dsn_password(dsn: str) -> str:
    from urllib.parse import parse_qs, unquote, urlsplit  # noqa: PLC0415 - only for DSNs

    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password:
            return unquote(parts.password)
        return (parse_qs(parts.query).get("password") or [""])[0]
    for item in dsn.split():
        key, _, value = item.partition("=")
        if key.strip().lower() == "password":
            return value.strip("'")
    return ""


def mask_journal(journal: dict[str, Any], values: Iterable[str]) -> int:
    """Replace every secret value in *journal* (in place, every key) with ``***``; how many top-level entries
    changed."""
    needles = list(values)
    changed = 0
    for key in list(journal):
        masked = redact(journal[key], needles)
        if masked != journal[key]:
            journal[key] = masked
            changed += 1
    return changed


class LogMask(logging.Filter):
    """A filter for the run's log handlers: the message of every record with the run's secret values masked."""

    def __init__(self, values: Iterable[str]) -> None:
        super().__init__("chaosdb-secrets")
        self.values = [v for v in values if len(v) >= 4]

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask the record's message (its arguments are merged into it first); never drops a record."""
        if not self.values:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot format is logging's to report
            return True
        masked = message
        for value in self.values:
            if value in masked:
                masked = masked.replace(value, MASK)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_text:
            for value in self.values:
                record.exc_text = record.exc_text.replace(value, MASK)
        return True


def journal_path(argv: list[str] | None = None) -> str | None:
    """Where ``chaos run`` will write its journal (``--journal-path``, else ``./journal.json``), or None when this
    process is not a ``chaos run``."""
    args = list(sys.argv if argv is None else argv)
    if "run" not in args[1:]:
        return None
    for i, arg in enumerate(args):
        if arg == "--journal-path" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--journal-path="):
            return arg.split("=", 1)[1]
    return "./journal.json"


def make_journal_private(argv: list[str] | None = None) -> None:
    """Create (or restrict) the journal file ``chaos run`` is about to write so only its owner reads it: Chaos
    Toolkit opens it for writing without choosing a mode, which keeps the mode of a file that exists."""
    path = journal_path(argv)
    if not path:
        return
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        os.chmod(path, 0o600)
    except OSError:
        pass  # Chaos Toolkit reports a journal path it cannot write
