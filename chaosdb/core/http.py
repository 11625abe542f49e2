"""Minimal JSON over HTTP with timeouts and errors a person can act on (stdlib only)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["HttpResponse", "request_json", "HttpError"]


class HttpError(ChaosDBError):
    """The endpoint answered with an error status or could not be reached."""

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass
class HttpResponse:
    status: int
    body: str

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except json.JSONDecodeError:
            return None


def request_json(
    method: str,
    url: str,
    payload: Any = None,
    timeout: float = 5.0,
    auth: tuple[str, str] | None = None,
    ok: tuple[int, ...] = (200,),
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    """Send *payload* as JSON; return the response when its status is in *ok*.

    Other statuses raise :class:`HttpError` with the status and the first part
    of the body; connection failures raise it with ``status=None``.
    """
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method=method.upper())
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    if auth:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read().decode("utf-8", "replace")
            status = resp.status
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace") if exc.fp else ""
        status = exc.code
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HttpError(f"{method.upper()} {url} failed: {reason}") from None
    if status not in ok:
        raise HttpError(f"{method.upper()} {url} answered HTTP {status}: {body[:300].strip()}", status, body)
    return HttpResponse(status, body)
