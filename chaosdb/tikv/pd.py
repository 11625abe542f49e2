"""PD's HTTP API (``/pd/api/v1``): one client over one or more PD endpoints.

Configuration: ``pd_url`` (``http://pd:2379``) or ``pd_urls`` (a list, or comma-separated); the next
endpoint is tried when one cannot be reached, or answers 5xx (a follower whose leader is gone answers
``500 [PD:apiutil:ErrRedirect]redirect failed`` until a new leader is elected: measured on PD v8.5.7 with its
leader SIGKILLed); any PD member answers, followers forward to the leader. PD's error bodies (JSON strings) are
passed on in the error message; 4xx answers (a wrong request) are final.

TLS: ``pd_ca_file``, ``pd_cert_file``, ``pd_key_file``, ``pd_tls_verify`` (:mod:`chaosdb.core.tls`; PD with
``--cacert/--cert/--key`` asks every client for a certificate of its CA). A TLS failure is final: every member
would answer the same.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError, request_json
from chaosdb.core.tls import ClientTls, client_tls
from chaosdb.tikv.records import pd_error_text

__all__ = ["PDClient", "pd_client", "PDError"]

API = "/pd/api/v1"


class PDError(ChaosDBError):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def _urls(configuration: dict[str, Any]) -> list[str]:
    urls = configuration.get("pd_urls") or []
    if isinstance(urls, str):
        urls = [u.strip() for u in urls.split(",") if u.strip()]
    if configuration.get("pd_url"):
        urls = [str(configuration["pd_url"]), *[u for u in urls if u != configuration["pd_url"]]]
    if not urls:
        raise ChaosDBError("set pd_url (e.g. http://127.0.0.1:2379) or pd_urls in the configuration")
    for u in urls:
        if not str(u).startswith(("http://", "https://")):
            raise ChaosDBError(f"PD URL {u!r} must start with http:// or https://")
    return [str(u).rstrip("/") for u in urls]


class PDClient:
    def __init__(self, urls: list[str], timeout: float = 5.0, tls: ClientTls | None = None):
        self.urls = urls
        self.timeout = timeout
        self.tls = tls

    def _call(self, method: str, path: str, payload: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        qs = ("?" + urllib.parse.urlencode(query)) if query else ""
        errors = []
        last_status: int | None = None
        for base in self.urls:
            try:
                resp = request_json(method, f"{base}{API}{path}{qs}", payload, timeout=self.timeout, tls=self.tls,
                                    url_key="pd_url")
            except HttpError as exc:
                if exc.tls:
                    raise PDError(str(exc)) from None
                if exc.status is None:  # unreachable: try the next PD
                    errors.append(str(exc))
                    continue
                text = f"PD {method} {path}: HTTP {exc.status}: {pd_error_text(exc.body)}"
                if exc.status >= 500:  # this member cannot serve now (no leader to forward to): try the next
                    errors.append(f"{base}: {text}")
                    last_status = exc.status
                    continue
                raise PDError(text, exc.status) from None
            data = resp.json()
            return data if data is not None or not resp.body else resp.body
        raise PDError(f"no PD endpoint answered: {'; '.join(errors)}", last_status)

    def get(self, path: str, query: list[tuple[str, str]] | None = None) -> Any:
        """GET *path* of PD's API (with *query*); the JSON answer."""
        return self._call("GET", path, query=query)

    def post(self, path: str, payload: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        """POST *payload* to *path*; the JSON answer."""
        return self._call("POST", path, payload, query)

    def delete(self, path: str, query: list[tuple[str, str]] | None = None) -> Any:
        """DELETE *path*; the JSON answer."""
        return self._call("DELETE", path, query=query)

    def metrics(self) -> str:
        """PD's Prometheus text (``/metrics``, outside the API prefix)."""
        for base in self.urls:
            try:
                return request_json("GET", f"{base}/metrics", timeout=self.timeout, tls=self.tls).body
            except HttpError:
                continue
        raise PDError("no PD endpoint served /metrics")


def pd_client(configuration: dict[str, Any] | None, timeout: float = 5.0) -> PDClient:
    """A PD HTTP client for the configured ``pd_url`` with its TLS keys (``pd_timeout_s`` overrides *timeout*)."""
    tls = client_tls("pd", configuration)
    return PDClient(tls.check_urls(_urls(configuration or {}), "pd_url"),
                    float((configuration or {}).get("pd_timeout_s", timeout)), tls)
