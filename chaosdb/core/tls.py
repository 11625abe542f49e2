"""TLS and credentials of a client, named alike for every database.

Each HTTP service the pack talks to has one prefix (:data:`SERVICES`) and the same keys under it:

* configuration ``<prefix>_ca_file`` (the CA that signed the servers' certificates), ``<prefix>_cert_file`` and
  ``<prefix>_key_file`` (this client's certificate and key, for servers that ask for one), ``<prefix>_tls_verify``
  (default true; false skips checking the server's certificate and is logged as a warning on every run);
* secrets ``<prefix>_username`` / ``<prefix>_password`` where the service takes a password.

:class:`ClientTls` holds the paths; :func:`explain_tls_failure` turns what OpenSSL said into a sentence that
names the server, what failed and the key that fixes it.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import env_value

__all__ = ["SERVICES", "TLS_SUFFIXES", "ClientTls", "client_tls", "credentials", "explain_tls_failure",
           "tls_keys", "as_bool", "secret_value"]

#: prefix of the keys -> what the service is called in messages
SERVICES: dict[str, str] = {
    "patroni": "Patroni REST API",
    "etcd": "etcd",
    "pd": "PD",
    "cockroach": "CockroachDB HTTP API",
    "postgres": "PostgreSQL",
    "chaosd": "chaosd",
}
TLS_SUFFIXES = ("ca_file", "cert_file", "key_file", "tls_verify")

_log = logging.getLogger("chaostoolkit")
_warned: set[str] = set()


def as_bool(value: Any, default: bool = True) -> bool:
    """A configuration flag: booleans, or strings such as ``true``/``false``/``1``/``0`` (environment variables);
    empty means *default*."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ChaosDBError(f"{value!r} is not true or false")


def tls_keys(service: str) -> list[str]:
    """The configuration keys of *service*'s TLS settings."""
    return [f"{service}_{s}" for s in TLS_SUFFIXES]


@dataclass(frozen=True)
class ClientTls:
    """Where one service's client finds its CA, certificate and key; empty paths mean "not given"."""

    service: str
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    verify: bool = True

    @property
    def label(self) -> str:
        """What the service is called in messages (``Patroni REST API``, ``etcd``, ...)."""
        return SERVICES.get(self.service, self.service)

    def key(self, suffix: str) -> str:
        """The configuration key of this service's *suffix* (``patroni_ca_file``)."""
        return f"{self.service}_{suffix}"

    @property
    def given(self) -> bool:
        """Whether anything TLS-specific was set (then the service's URLs must be https://)."""
        return bool(self.ca_file or self.cert_file or self.key_file or not self.verify)

    def check(self) -> "ClientTls":
        """Refuse settings that cannot work, before anything is sent: a certificate without its key, and files
        that are missing or unreadable."""
        if bool(self.cert_file) != bool(self.key_file):
            have, lack = ("cert_file", "key_file") if self.cert_file else ("key_file", "cert_file")
            raise ChaosDBError(f"{self.key(have)} is set but {self.key(lack)} is not: a client certificate needs "
                               "both the certificate and its key")
        for suffix, path in (("ca_file", self.ca_file), ("cert_file", self.cert_file), ("key_file", self.key_file)):
            if path and not os.path.isfile(path):
                raise ChaosDBError(f"{self.key(suffix)}: {path} does not exist or is not a file")
            if path and not os.access(path, os.R_OK):
                raise ChaosDBError(f"{self.key(suffix)}: {path} is not readable by this user")
        if not self.verify and self.service not in _warned:
            _warned.add(self.service)
            _log.warning("TLS: %s_tls_verify is false, so the %s's certificate is NOT checked: anybody between "
                         "here and the server can read and change this traffic. Set %s_ca_file to the CA that "
                         "signed it instead.", self.service, self.label, self.service)
        return self

    def check_urls(self, urls: list[str], url_key: str) -> list[str]:
        """*urls*, refused when TLS settings are given but a URL is plain ``http://`` (they would be ignored)."""
        plain = [u for u in urls if str(u).startswith("http://")]
        if self.given and plain:
            given = next(self.key(s) for s, v in (("ca_file", self.ca_file), ("cert_file", self.cert_file),
                                                  ("key_file", self.key_file), ("tls_verify", not self.verify)) if v)
            raise ChaosDBError(f"{given} is set but {url_key} has plain http:// URLs ({', '.join(plain)}): "
                               "use https://")
        return urls

    def requests_options(self) -> dict[str, Any]:
        """``verify=`` and ``cert=`` for :mod:`requests`."""
        verify: bool | str = (self.ca_file or True) if self.verify else False
        return {"verify": verify, "cert": (self.cert_file, self.key_file) if self.cert_file else None}

    def ssl_context(self) -> Any:
        """An :class:`ssl.SSLContext` with the same settings (for clients that are not :mod:`requests`)."""
        import ssl  # noqa: PLC0415 - only the callers that need a context pay for it

        ctx = ssl.create_default_context(cafile=self.ca_file or None)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx

    def over(self, defaults: "ClientTls | None") -> "ClientTls":
        """These settings, with *defaults* filling what is not given (an embedded cluster's own CA and client
        certificate under what the experiment sets)."""
        if defaults is None:
            return self
        return replace(defaults, service=self.service, ca_file=self.ca_file or defaults.ca_file,
                       cert_file=self.cert_file or defaults.cert_file, key_file=self.key_file or defaults.key_file,
                       verify=self.verify and defaults.verify)


def client_tls(service: str, configuration: Mapping[str, Any] | None) -> ClientTls:
    """*service*'s TLS settings from the configuration (``<service>_ca_file`` ...), checked."""
    cfg = configuration or {}
    try:
        verify = as_bool(cfg.get(f"{service}_tls_verify"))
    except ChaosDBError as exc:
        raise ChaosDBError(f"{service}_tls_verify: {exc}") from None
    return ClientTls(service, str(cfg.get(f"{service}_ca_file") or ""), str(cfg.get(f"{service}_cert_file") or ""),
                     str(cfg.get(f"{service}_key_file") or ""), verify).check()


def secret_value(secrets: Mapping[str, Any] | None, key: str, environment: bool = True) -> str:
    """The secret *key* (flat, or in any secret scope), else with *environment* the variable ``CHAOSDB_<KEY>`` (so
    a CronJob's Secret can hold it without the experiment naming it), else empty."""
    scopes = [secrets or {}, *[v for v in (secrets or {}).values() if isinstance(v, dict)]]
    found = next((str(s[key]) for s in scopes if s.get(key)), "")
    return found or (env_value(f"CHAOSDB_{key.upper()}") if environment else "")


def credentials(service: str, secrets: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(username, password) from the secrets ``<service>_username`` / ``<service>_password`` (flat, or in any
    secret scope; else ``CHAOSDB_<SERVICE>_USERNAME`` / ``_PASSWORD``), or None. A password without a username is
    an error: it would silently not be sent."""
    user = secret_value(secrets, f"{service}_username")
    password = secret_value(secrets, f"{service}_password")
    if password and not user:
        raise ChaosDBError(f"secret {service}_password is set but {service}_username is not")
    return (user, password) if user and password else None


#: (what OpenSSL says, what it means for a person, which suffix of the keys fixes it); checked in order
_FAILURES: list[tuple[tuple[str, ...], str, str]] = [
    (("certificate has expired",), "the server's certificate has expired", "renew the server's certificate"),
    (("certificate is not yet valid",), "the server's certificate is not valid yet (check the clocks)",
     "renew the server's certificate"),
    (("hostname mismatch", "ip address mismatch", "doesn't match", "not valid for"),
     "the server's certificate is not made out to this host name or address",
     "name"),
    (("unable to get local issuer certificate", "self-signed certificate", "self signed certificate",
      "unable to verify the first certificate"),
     "the server's certificate is signed by a CA this client does not trust", "ca_file"),
    (("certificate required", "alert handshake failure", "peer did not return a certificate"),
     "the server asks for a client certificate and none was sent", "cert_file"),
    (("alert unknown ca", "alert bad certificate", "alert certificate unknown", "alert certificate expired",
      "alert decrypt error", "alert access denied", "alert certificate revoked", "unsupported certificate"),
     "the server refused this client's certificate", "cert_file"),
    (("wrong version number", "record layer failure", "packet length too long", "http request"),
     "the server does not speak TLS at this address", "url"),
    (("eof occurred in violation of protocol", "unexpected eof"),
     "the server closed the connection during the handshake (most likely it asks for a client certificate and none, "
     "or one it does not trust, was sent)", "cert_file"),
    (("key values mismatch",), "the client key does not belong to the client certificate", "key_file"),
    (("pem lib", "no start line", "no such file"), "a certificate or key file cannot be read", "cert_file"),
]


def explain_tls_failure(error_text: str, where: str, tls: ClientTls | None, url_key: str = "") -> str:
    """One sentence for a failed TLS connection to *where* (``host:port``): what failed, and the configuration key
    that fixes it."""
    service = tls.service if tls else ""
    label = tls.label if tls else "the server"
    low = error_text.lower()
    meaning, fix = next(((m, f) for needles, m, f in _FAILURES if any(n in low for n in needles)),
                        ("the TLS handshake failed", "ca_file"))
    if fix == "name":
        hint = "use a host name or address the certificate names" + (f" in {url_key}" if url_key else "")
    elif fix == "url":
        hint = f"use http:// in {url_key}" if url_key else "use an http:// URL"
    elif fix in ("ca_file", "cert_file", "key_file"):
        key = f"{service}_{fix}" if service else fix
        hint = {"ca_file": f"set {key} to the CA that signed the server's certificate",
                "cert_file": f"set {service + '_' if service else ''}cert_file and "
                             f"{service + '_' if service else ''}key_file to a client certificate the server "
                             "trusts",
                "key_file": f"set {key} to the key of {service + '_' if service else ''}cert_file"}[fix]
    else:
        hint = fix
    return f"TLS to {where} ({label}) failed: {meaning}: {hint} [{_first_line(error_text)}]"


def _first_line(text: str) -> str:
    """OpenSSL's own words (``certificate verify failed: ...``) out of the wrapped exception text."""
    found = re.search(r"\[SSL: [A-Z0-9_]+\] ([^(\]'\"]+)", text)
    return (found.group(1) if found else " ".join(text.split())).strip()[:200]
