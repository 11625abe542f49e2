"""JSON over HTTP(S) with :mod:`requests`: timeouts, TLS settings (:mod:`chaosdb.core.tls`) and errors a person can
act on.

Connections are kept open per thread and per TLS setting, so repeated probes pay the TLS handshake once.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

import requests
import urllib3

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.tls import ClientTls, explain_tls_failure

__all__ = ["HttpResponse", "request_json", "request", "HttpError"]

# the pack warns once per run, in words, when a service's verification is off (ClientTls.check); urllib3's
# per-request warning would only repeat it on every probe
urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

_local = threading.local()


class HttpError(ChaosDBError):
    """The endpoint answered with an error status or could not be reached (``status`` None), or TLS failed
    (``tls`` True)."""

    def __init__(self, message: str, status: int | None = None, body: str = "", tls: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.tls = tls


@dataclass
class HttpResponse:
    status: int
    body: str

    def json(self) -> Any:
        """The body as JSON; None when it is empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except json.JSONDecodeError:
            return None


def _session(tls: ClientTls | None) -> requests.Session:
    sessions = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = _local.sessions = {}
    key = tls or ClientTls("")
    if key not in sessions:
        s = requests.Session()
        s.trust_env = False  # a proxy from the environment must not see database traffic
        options = key.requests_options()
        s.verify, s.cert = options["verify"], options["cert"]
        sessions[key] = s
    return sessions[key]


def _where(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts.netloc.rsplit("@", 1)[-1] or url


def _chain_text(exc: BaseException) -> str:
    """The messages of an exception and its causes (requests wraps urllib3 wraps ssl)."""
    seen: set[int] = set()
    parts: list[str] = []
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(str(cur))
        cur = cur.__cause__ or cur.__context__ or (cur.args[0] if cur.args and isinstance(cur.args[0], BaseException)
                                                   else None)
    return " | ".join(parts)


def request(method: str, url: str, *, data: Any = None, timeout: float = 5.0,
            auth: tuple[str, str] | None = None, headers: dict[str, str] | None = None,
            tls: ClientTls | None = None, url_key: str = "") -> HttpResponse:
    """Send one request; any status comes back. Unreachable servers and TLS failures raise :class:`HttpError`
    (``status=None``); a TLS failure's message says what failed and which key of *tls* fixes it."""
    method = method.upper()
    try:
        resp = _session(tls).request(method, url, data=data, timeout=timeout, auth=auth, headers=headers,
                                     allow_redirects=False)
    except requests.exceptions.SSLError as exc:
        raise HttpError(f"{method} {url}: " + explain_tls_failure(_chain_text(exc), _where(url), tls, url_key),
                        tls=True) from None
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        text = _chain_text(exc)
        if url.startswith("https://") and ("EOF occurred" in text or "UNEXPECTED_EOF" in text):
            # TLS 1.3 servers refuse a client certificate after the handshake: the client sees the connection
            # closed on its first read
            raise HttpError(f"{method} {url}: " + explain_tls_failure(
                "certificate required (connection closed after the handshake)", _where(url), tls, url_key),
                tls=True) from None
        reason = _reason(exc)
        if url.startswith("http://") and reason in ("Connection reset by peer", _CLOSED):
            reason += (f": if {_where(url)} speaks TLS, use https://" + (f" in {url_key}" if url_key else ""))
        raise HttpError(f"{method} {url} failed: {reason}") from None
    except requests.exceptions.RequestException as exc:
        raise HttpError(f"{method} {url} failed: {_reason(exc)}") from None
    body = resp.content.decode("utf-8", "replace")
    if resp.status_code == 400 and url.startswith("http://") and "HTTPS server" in body:
        # Go servers (etcd, PD) answer plain HTTP on a TLS port like this
        service = f" ({tls.label})" if tls and tls.service else ""
        fix = f" in {url_key}" if url_key else ""
        raise HttpError(f"{method} {url}: the server at {_where(url)}{service} speaks TLS and refused plain HTTP: "
                        f"use https://{fix}", resp.status_code, body, tls=True)
    return HttpResponse(resp.status_code, body)


_CLOSED = "the connection was closed without an answer"


def _reason(exc: BaseException) -> str:
    text = _chain_text(exc)
    for marker in ("Connection refused", "timed out", "Name or service not known", "No route to host",
                   "Connection reset by peer", "RemoteDisconnected", "Connection aborted"):
        if marker in text:
            return {"Connection aborted": _CLOSED, "RemoteDisconnected": _CLOSED}.get(marker, marker)
    return text.split(" | ")[0][:300]


def request_json(
    method: str,
    url: str,
    payload: Any = None,
    timeout: float = 5.0,
    auth: tuple[str, str] | None = None,
    ok: tuple[int, ...] = (200,),
    headers: dict[str, str] | None = None,
    tls: ClientTls | None = None,
    url_key: str = "",
) -> HttpResponse:
    """Send *payload* as JSON; return the response when its status is in *ok*.

    Other statuses raise :class:`HttpError` with the status and the first part of the body; connection and TLS
    failures raise it with ``status=None``.
    """
    data = None if payload is None else json.dumps(payload).encode()
    all_headers = {"Accept": "application/json"}
    if data is not None:
        all_headers["Content-Type"] = "application/json"
    all_headers.update(headers or {})
    resp = request(method, url, data=data, timeout=timeout, auth=auth, headers=all_headers, tls=tls,
                   url_key=url_key)
    if resp.status not in ok:
        raise HttpError(f"{method.upper()} {url} answered HTTP {resp.status}: {resp.body[:300].strip()}",
                        resp.status, resp.body)
    return resp
