"""TLS and the password of a PostgreSQL connection, from the same keys as every other client (:mod:`chaosdb.core.tls`).

Configuration ``postgres_ca_file`` (libpq ``sslrootcert``), ``postgres_cert_file`` (``sslcert``),
``postgres_key_file`` (``sslkey``), ``postgres_sslmode`` (``sslmode``; ``verify-full`` when a CA is given,
``require`` with ``postgres_tls_verify: false``); secret ``postgres_password`` (``password``). What the DSN itself
says wins: these only fill parameters it does not have, so a DSN written for libpq keeps working as written.
"""

from __future__ import annotations

from typing import Any, Mapping

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.tls import client_tls, secret_value

__all__ = ["libpq_parameters", "with_libpq_tls", "explain_libpq_failure", "SSLMODES"]

SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def libpq_parameters(configuration: Mapping[str, Any] | None, secrets: Mapping[str, Any] | None = None
                     ) -> dict[str, str]:
    """The libpq parameters the configuration and secrets ask for (checked: files exist, the mode is known)."""
    cfg = configuration or {}
    tls = client_tls("postgres", cfg)
    params: dict[str, str] = {}
    if tls.ca_file:
        params["sslrootcert"] = tls.ca_file
    if tls.cert_file:
        params["sslcert"], params["sslkey"] = tls.cert_file, tls.key_file
    mode = str(cfg.get("postgres_sslmode") or "").strip()
    if mode and mode not in SSLMODES:
        raise ChaosDBError(f"postgres_sslmode {mode!r} is not a libpq sslmode ({', '.join(SSLMODES)})")
    if not mode and not tls.verify:
        mode = "require"
    elif not mode and tls.ca_file:
        mode = "verify-full"
    if mode:
        params["sslmode"] = mode
    password = secret_value(secrets, "postgres_password")
    if password:
        params["password"] = password
    return params


def with_libpq_tls(dsn: str, configuration: Mapping[str, Any] | None, secrets: Mapping[str, Any] | None = None
                   ) -> str:
    """*dsn* with the parameters of :func:`libpq_parameters` it does not set itself."""
    params = libpq_parameters(configuration, secrets)
    if not params:
        return dsn
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415 - needs the postgres extra
    except ImportError:
        raise ChaosDBError("psycopg is not installed: pip install 'chaostoolkit-db[postgres]'") from None
    try:
        have = conninfo_to_dict(dsn)
    except Exception:
        raise ChaosDBError("the PostgreSQL DSN is not a valid libpq connection string") from None
    extra = {k: v for k, v in params.items() if k not in have}
    return make_conninfo(dsn, **extra) if extra else dsn


#: (what libpq or the server says, what it means and which key fixes it)
_FAILURES = [
    ("password authentication failed", "the server refused the password: check the secret postgres_password (or the "
                                       "password in the DSN)"),
    ("no encryption", "the server accepts TLS connections only: set postgres_ca_file (sslmode verify-full) or "
                      "postgres_sslmode require"),
    ("certificate verify failed", "the server's certificate is signed by a CA this client does not trust: set "
                                  "postgres_ca_file to the CA that signed it"),
    ("does not match host name", "the server's certificate is not made out to this host name or address: use a name "
                                 "the certificate names in the DSN"),
    ("server does not support SSL", "the server does not speak TLS: set postgres_sslmode to disable or prefer"),
    ("certificate required", "the server asks for a client certificate: set postgres_cert_file and "
                             "postgres_key_file"),
    ("root certificate file", "the CA file cannot be read: check postgres_ca_file"),
    ("private key file", "the client key cannot be used: check postgres_key_file (libpq wants mode 600)"),
]


def explain_libpq_failure(message: str) -> str:
    """The first line libpq gave (a multi-host DSN repeats it per host), plus what fixes it when that is known."""
    first = message.strip().split("\nMultiple connection attempts failed")[0].strip().splitlines()
    text = " ".join(line.strip() for line in first)
    hint = next((h for needle, h in _FAILURES if needle in message), "")
    return f"{text} ({hint})" if hint else text
