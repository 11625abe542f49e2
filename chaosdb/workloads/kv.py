"""YCSB workload A on a key-value store: etcd's v3 API (a real Raft key-value store; the embedded
cluster's own etcd runs here), through its JSON gateway over persistent HTTP connections.

A record is one key ``/ycsb/user<n>`` whose value holds the 10 fields (JSON); a read is a
linearizable ``range`` of the key, an update a ``put`` of the whole record with one field changed
(what go-ycsb's KV drivers do). Samples have the same format as the SQL workloads (``read`` /
``update``), so the reporter works unchanged. An update's sample key is ``user<n>@<revision>``: the
etcd revision the put was acknowledged with, which :func:`lost_acknowledged_puts` checks afterwards.

Outcomes: ``committed`` (answered), ``conn_error`` (no connection: nothing sent), ``ambiguous`` (the
put was sent and no answer came: it may or may not be applied), ``error`` (etcd answered an error; its
gRPC code is kept in the ``sqlstate`` column as ``etcd<code>``, e.g. ``etcd14`` unavailable).
A client moves to the next endpoint after a connection failure or an ``unavailable`` answer.

``https://`` endpoints: the CA, client certificate and key come from *tls*, else from the environment variables
``CHAOSDB_ETCD_CA_FILE``, ``CHAOSDB_ETCD_CERT_FILE``, ``CHAOSDB_ETCD_KEY_FILE``, ``CHAOSDB_ETCD_TLS_VERIFY`` (the
settings of every etcd client of this pack; the load control sets them for its Locust processes). With etcd's
authentication on, *auth* (else ``CHAOSDB_ETCD_USERNAME`` / ``CHAOSDB_ETCD_PASSWORD``) is exchanged for a token,
sent with every request and renewed when etcd says it is no longer valid.
"""

from __future__ import annotations

import base64
import http.client
import json
import random
import string
import time
import urllib.parse
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import env_value
from chaosdb.core.tls import ClientTls, client_tls, credentials
from chaosdb.workloads.samples import Sample
from chaosdb.workloads.ycsb import FIELD_LENGTH, FIELDS, Operation, key_name

__all__ = ["EtcdKV", "EtcdBackend", "parse_endpoints", "record_key", "load_etcd", "lost_acknowledged_puts",
           "clear_etcd", "PREFIX"]

PREFIX = "/ycsb/"
PREFIX_END = PREFIX[:-1] + chr(ord(PREFIX[-1]) + 1)  # range_end covering every key under PREFIX


ENV_TLS = {"etcd_ca_file": "CHAOSDB_ETCD_CA_FILE", "etcd_cert_file": "CHAOSDB_ETCD_CERT_FILE",
           "etcd_key_file": "CHAOSDB_ETCD_KEY_FILE", "etcd_tls_verify": "CHAOSDB_ETCD_TLS_VERIFY"}


def tls_environment(tls: ClientTls | None, auth: tuple[str, str] | None = None) -> dict[str, str]:
    """The environment variables that give a KV client in another process these TLS settings and credentials."""
    env = {"CHAOSDB_ETCD_USERNAME": auth[0], "CHAOSDB_ETCD_PASSWORD": auth[1]} if auth else {}
    if tls is None:
        return env
    return {**env, ENV_TLS["etcd_ca_file"]: tls.ca_file, ENV_TLS["etcd_cert_file"]: tls.cert_file,
            ENV_TLS["etcd_key_file"]: tls.key_file, ENV_TLS["etcd_tls_verify"]: "true" if tls.verify else "false"}


def _secure(dsn: str) -> bool:
    schemes = {p.strip().split("://")[0] for p in str(dsn).split(",") if "://" in p}
    if "https" in schemes and schemes != {"https"}:
        raise ChaosDBError("etcd endpoints mix http:// and https://: use one scheme for every member")
    return schemes == {"https"}


def parse_endpoints(dsn: str) -> list[tuple[str, int]]:
    """``http://127.0.0.11:2379,http://127.0.0.12:2379`` (or ``https://...``, ``etcd://h1:2379,h2:2379``) ->
    [(host, port)]."""
    out = []
    for part in str(dsn).replace("etcd://", "").split(","):
        part = part.strip()
        if not part:
            continue
        if "://" not in part:
            part = "http://" + part
        u = urllib.parse.urlsplit(part)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ChaosDBError(f"etcd endpoint {part!r}: use http://host:port or https://host:port")
        out.append((u.hostname, u.port or 2379))
    if not out:
        raise ChaosDBError("no etcd endpoint given (e.g. http://127.0.0.11:2379,http://127.0.0.12:2379)")
    return out


def record_key(n_or_name: int | str) -> str:
    """The etcd key of record *n* (or of a YCSB key name)."""
    return PREFIX + (key_name(n_or_name) if isinstance(n_or_name, int) else n_or_name)


def _b64(s: str | bytes) -> str:
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


class EtcdError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class EtcdKV:
    """A minimal etcd v3 client over the JSON gateway, one keep-alive connection at a time."""

    def __init__(self, endpoints: list[tuple[str, int]], timeout: float = 5.0, start: int = 0,
                 tls: ClientTls | None = None, auth: tuple[str, str] | None = None):
        self.endpoints = endpoints
        self.timeout = timeout
        self.index = start % len(endpoints)
        self.conn: http.client.HTTPConnection | None = None
        self.context = tls.ssl_context() if tls is not None else None
        self.auth = auth
        self.token = ""

    @classmethod
    def of(cls, dsn: str, timeout: float = 5.0, start: int = 0, tls: ClientTls | None = None,
           auth: tuple[str, str] | None = None) -> "EtcdKV":
        """A client of the endpoints in *dsn*; for https:// ones with *tls*, else the TLS of the environment;
        credentials *auth*, else those of the environment."""
        if _secure(dsn) and tls is None:
            tls = client_tls("etcd", {key: env_value(env) for key, env in ENV_TLS.items()})
        return cls(parse_endpoints(dsn), timeout, start, tls if _secure(dsn) else None,
                   auth or credentials("etcd", None))

    @property
    def endpoint(self) -> str:
        """The etcd endpoint in use (``host:port``)."""
        h, p = self.endpoints[self.index]
        return f"{h}:{p}"

    def rotate(self) -> None:
        """Move to the next endpoint (after a failure)."""
        self.close()
        self.index = (self.index + 1) % len(self.endpoints)

    def close(self) -> None:
        """Close the connection."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """POST to the current endpoint: (answer, sent). Raises OSError/HTTPException (with ``sent``
        set on the exception) or EtcdError. With credentials, logs in first and once more when the token
        expired."""
        if self.auth and not self.token:
            answer, _ = self._post("/v3/auth/authenticate", {"name": self.auth[0], "password": self.auth[1]})
            self.token = str(answer.get("token") or "")
        try:
            return self._post(path, body)
        except EtcdError as exc:
            if not self.auth or "invalid auth token" not in str(exc):
                raise
            self.token = ""
            return self.call(path, body)

    def _post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        sent = False
        try:
            if self.conn is None:
                host, port = self.endpoints[self.index]
                self.conn = (http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self.context)
                             if self.context is not None else
                             http.client.HTTPConnection(host, port, timeout=self.timeout))
                self.conn.connect()
            data = json.dumps(body).encode()
            headers = {"Content-Type": "application/json"}
            if self.token:
                headers["Authorization"] = self.token
            self.conn.request("POST", path, data, headers)
            sent = True
            resp = self.conn.getresponse()
            text = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            setattr(exc, "sent", sent)  # noqa: B010 - what was sent tells an ambiguous write from a failed one
            raise
        try:
            answer = json.loads(text or b"{}")
        except ValueError:
            answer = {"error": text[:200].decode("utf-8", "replace"), "code": 2}
        if resp.status != 200 or "error" in answer:
            raise EtcdError(int(answer.get("code", 2)), str(answer.get("error") or answer.get("message")))
        return answer, True

    def get(self, key: str) -> dict[str, Any] | None:
        """The key-value of *key*, None when it is missing."""
        answer, _ = self.call("/v3/kv/range", {"key": _b64(key)})
        kvs = answer.get("kvs") or []
        return kvs[0] if kvs else None

    def put(self, key: str, value: str) -> int:
        """Write *key*; the revision it was written at."""
        answer, _ = self.call("/v3/kv/put", {"key": _b64(key), "value": _b64(value)})
        return int((answer.get("header") or {}).get("revision", 0))

    def compare_and_put(self, key: str, expected: str, value: str) -> bool:
        """Write *key* only if it holds *expected* (one transaction); whether it did."""
        answer, _ = self.call("/v3/kv/txn", {
            "compare": [{"key": _b64(key), "target": "VALUE", "result": "EQUAL", "value": _b64(expected)}],
            "success": [{"requestPut": {"key": _b64(key), "value": _b64(value)}}]})
        return bool(answer.get("succeeded"))  # proto3 JSON leaves a false one out

    def put_many(self, items: list[tuple[str, str]]) -> int:
        """Write *items* in one transaction; its revision."""
        ops = [{"requestPut": {"key": _b64(k), "value": _b64(v)}} for k, v in items]
        answer, _ = self.call("/v3/kv/txn", {"success": ops})
        return int((answer.get("header") or {}).get("revision", 0))

    def count(self, prefix: str) -> int:
        """How many keys start with *prefix*."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        answer, _ = self.call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(end), "count_only": True})
        return int(answer.get("count", 0))


def _record(rng: random.Random, fields: dict[str, str] | None = None) -> str:
    values = fields or {f"field{i}": "".join(rng.choices(string.ascii_letters, k=FIELD_LENGTH))
                        for i in range(FIELDS)}
    return json.dumps(values, separators=(",", ":"))


class EtcdBackend:
    """YCSB operations on etcd, as samples."""

    UNAVAILABLE = {14, 4}  # gRPC unavailable, deadline exceeded: try another endpoint next time

    def __init__(self, dsn: str, client: int = 0, seed: int | None = None, timeout: float = 5.0):
        self.kv = EtcdKV.of(dsn, timeout, start=client)
        self.rng = random.Random(seed)

    def execute(self, op: Operation, client: int) -> Sample:
        """A YCSB read or update on etcd, as a sample."""
        start_ts = time.time()
        t0 = time.perf_counter()
        outcome, code, key = "committed", "", ""
        try:
            if op.kind == "read":
                self.kv.get(record_key(op.key))
            else:
                fields = json.loads(_record(self.rng))
                fields[f"field{op.field}"] = op.value
                rev = self.kv.put(record_key(op.key), json.dumps(fields, separators=(",", ":")))
                key = f"{op.key}@{rev}"
        except EtcdError as exc:
            # a put that timed out or lost its leader mid-way may still be applied; "no leader" was not
            maybe_applied = exc.code == 4 or any(t in str(exc) for t in ("timed out", "leader changed"))
            outcome, code = ("ambiguous" if op.kind == "update" and maybe_applied else "error"), f"etcd{exc.code}"
            if exc.code in self.UNAVAILABLE:
                self.kv.rotate()
        except (OSError, http.client.HTTPException) as exc:
            sent = getattr(exc, "sent", False)
            outcome = "ambiguous" if sent and op.kind == "update" else "conn_error"
            code = type(exc).__name__
            self.kv.rotate()
        return Sample(start_ts, (time.perf_counter() - t0) * 1000.0, op.kind, outcome, code, 0, client, key)

    def close(self) -> None:
        """Close the connection."""
        self.kv.close()


def load_etcd(dsn: str, records: int, seed: int = 7, batch: int = 100, tls: ClientTls | None = None,
              auth: tuple[str, str] | None = None) -> dict[str, Any]:
    """Put the records that are missing (idempotent: counts the prefix, fills from there in key order)."""
    t0 = time.monotonic()
    kv = EtcdKV.of(dsn, timeout=10.0, tls=tls, auth=auth)
    rng = random.Random(seed)
    try:
        have = kv.count(PREFIX)
        inserted = 0
        if have < records:
            existing = set()
            if have:
                answer, _ = kv.call("/v3/kv/range", {"key": _b64(PREFIX), "range_end": _b64(PREFIX_END),
                                                     "keys_only": True})
                existing = {base64.b64decode(k["key"]).decode() for k in answer.get("kvs") or []}
            todo = [record_key(n) for n in range(records) if record_key(n) not in existing]
            for i in range(0, len(todo), batch):
                kv.put_many([(k, _record(rng)) for k in todo[i:i + batch]])
            inserted = len(todo)
    except (OSError, http.client.HTTPException, EtcdError) as exc:
        raise ChaosDBError(f"loading YCSB records into etcd at {kv.endpoint} failed: {exc}") from None
    finally:
        kv.close()
    return {"records": max(records, have), "inserted": inserted, "seconds": round(time.monotonic() - t0, 2)}


def lost_acknowledged_puts(dsn: str, acknowledged: dict[str, int], tls: ClientTls | None = None,
                           auth: tuple[str, str] | None = None) -> dict[str, Any]:
    """For each key, the highest revision a put was acknowledged with: the key must now have a
    ``mod_revision`` at least that high (the write or a later one survived); a smaller one means an
    acknowledged write was lost. Returns counts and the first lost keys."""
    kv = EtcdKV.of(dsn, timeout=30.0, tls=tls, auth=auth)
    try:
        for _attempt in range(len(kv.endpoints)):  # one range over the prefix: keys and their revisions
            try:
                answer, _ = kv.call("/v3/kv/range", {"key": _b64(PREFIX), "range_end": _b64(PREFIX_END),
                                                     "keys_only": True})
                break
            except (OSError, http.client.HTTPException, EtcdError):
                kv.rotate()
        else:
            raise ChaosDBError("no etcd endpoint answered while checking the acknowledged puts")
    finally:
        kv.close()
    current = {base64.b64decode(r["key"]).decode()[len(PREFIX):]: int(r.get("mod_revision", 0))
               for r in answer.get("kvs") or []}
    lost = [{"key": name, "acknowledged_revision": rev, "current_revision": current.get(name, 0)}
            for name, rev in sorted(acknowledged.items()) if current.get(name, 0) < rev]
    return {"keys_checked": len(acknowledged), "missing": len(lost), "lost": lost[:20]}


def clear_etcd(dsn: str, tls: ClientTls | None = None) -> dict[str, Any]:
    """Remove the YCSB records and give the space back: delete the prefix, compact the history up to now and
    defragment every member (etcd keeps every revision until compacted: a long KV run grows it by the size of
    every put). The cluster's other keys (Patroni's) are untouched."""
    kv = EtcdKV.of(dsn, timeout=30.0, tls=tls)
    endpoints = kv.endpoints
    try:
        answer, _ = kv.call("/v3/kv/deleterange", {"key": _b64(PREFIX), "range_end": _b64(PREFIX_END)})
        deleted = int(answer.get("deleted", 0))
        revision = int((answer.get("header") or {}).get("revision", 0))
        if revision:
            try:
                kv.call("/v3/kv/compaction", {"revision": revision, "physical": True})
            except EtcdError as exc:
                if "compacted" not in str(exc):  # already compacted that far: fine
                    raise
        defragmented = []
        for i in range(len(endpoints)):
            member = EtcdKV.of(dsn, timeout=60.0, start=i, tls=tls)
            try:
                member.call("/v3/maintenance/defragment", {})
                defragmented.append(member.endpoint)
            finally:
                member.close()
    except (OSError, http.client.HTTPException, EtcdError) as exc:
        raise ChaosDBError(f"clearing the YCSB records from etcd failed: {exc}") from None
    finally:
        kv.close()
    return {"deleted": deleted, "compacted_to": revision, "defragmented": defragmented}
