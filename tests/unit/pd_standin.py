"""A local HTTP stand-in for PD (tests only: no TiKV/PD can run on the test machines).

It keeps stores and regions in memory and answers ``/pd/api/v1`` like PD v7/v8 does (shapes and messages
from ../shared/reference/tikv-pd/NOTES.md): zero values omitted (``state`` 0, ``role`` 0, zero counts),
upper-case hex region keys, ``?format=hex`` key lookups, errors as JSON strings with PD's status codes,
operators and schedulers that take effect a moment later (as PD's do), store state names computed from
the last heartbeat (Disconnected after 20 s, Down after max-store-down-time) and ``/metrics`` with
``pd_regions_status``. ``stop_store`` freezes a store's heartbeats and marks its peers down.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_SCHEDULERS = ["balance-hot-region-scheduler", "balance-leader-scheduler", "balance-region-scheduler",
                      "evict-slow-store-scheduler"]


class PDState:
    def __init__(self, stores: int = 3, regions: list[tuple[bytes, bytes, int]] | None = None,
                 delay_s: float = 0.2, address: str = "127.0.0.1:{port}"):
        self.lock = threading.Lock()
        self.delay_s = delay_s
        self.clock = time.time
        self.stores = {i: {"id": i, "address": address.format(port=20160 + i, i=i),
                           "status_address": address.format(port=20180 + i, i=i), "state": 0,
                           "stopped_at": None, "version": "7.5.1"} for i in range(1, stores + 1)}
        # regions: (start, end, leader store); every store holds a voter of every region
        regions = regions or [(b"", b"usertable:user5", 1), (b"usertable:user5", b"", 2)]
        self.regions = []
        pid = 100
        for rid, (start, end, leader) in enumerate(regions, start=2):
            peers = []
            for s in self.stores:
                pid += 1
                peers.append({"id": pid, "store_id": s})
            self.regions.append({"id": rid, "start": start, "end": end, "peers": peers, "leader": leader,
                                 "epoch": {"conf_ver": 5, "version": 3}})
        self.evicted: set[int] = set()
        self.pending: list[tuple[float, callable]] = []
        self.max_store_down_s = 1800.0

    # -- time-based effects
    def settle(self) -> None:
        now = self.clock()
        due = [f for t, f in self.pending if t <= now]
        self.pending = [(t, f) for t, f in self.pending if t > now]
        for f in due:
            f()

    def later(self, fn) -> None:
        self.pending.append((self.clock() + self.delay_s, fn))

    def up_ids(self) -> list[int]:
        return [i for i, s in self.stores.items() if s["state"] == 0 and s["stopped_at"] is None]

    def move_leaders_off(self, store_id: int) -> None:
        for r in self.regions:
            if r["leader"] == store_id:
                ok = [p["store_id"] for p in r["peers"] if p["store_id"] in self.up_ids()
                      and p["store_id"] not in self.evicted and p["store_id"] != store_id]
                if ok:
                    r["leader"] = ok[0]

    def stop_store(self, store_id: int) -> None:
        with self.lock:
            self.stores[store_id]["stopped_at"] = self.clock()
            self.move_leaders_off(store_id)

    # -- views
    def store_json(self, s: dict) -> dict:
        now = self.clock()
        beat = s["stopped_at"] or now
        leaders = sum(1 for r in self.regions if r["leader"] == s["id"])
        regions = sum(1 for r in self.regions if any(p["store_id"] == s["id"] for p in r["peers"]))
        name = {0: "Up", 1: "Offline", 2: "Tombstone"}[s["state"]]
        if name == "Up" and now - beat > self.max_store_down_s:
            name = "Down"
        elif name == "Up" and now - beat > 20:
            name = "Disconnected"
        store = {"id": s["id"], "address": s["address"], "version": s["version"],
                 "status_address": s["status_address"], "git_hash": "0123abcd", "start_timestamp": 1700000000,
                 "deploy_path": "/", "last_heartbeat": int(beat * 1e9), "state_name": name}
        if s["state"]:
            store["state"] = s["state"]
        status = {"capacity": "20 GiB", "available": "16 GiB", "used_size": "1.5GiB", "leader_weight": 1,
                  "region_weight": 1, "start_ts": "2026-11-22T08:00:00Z",
                  "last_heartbeat_ts": time.strftime("%Y-%m-%dT%H:%M:%S.123456789Z", time.gmtime(beat)),
                  "uptime": "1h2m3.5s"}
        for k, v in (("leader_count", leaders), ("leader_score", leaders), ("leader_size", leaders),
                     ("region_count", regions), ("region_score", regions), ("region_size", regions)):
            if v:
                status[k] = v
        return {"store": store, "status": status}

    def region_json(self, r: dict) -> dict:
        down = [{"peer": p, "down_seconds": int(self.clock() - self.stores[p["store_id"]]["stopped_at"])}
                for p in r["peers"] if self.stores[p["store_id"]]["stopped_at"] is not None]
        body = {"id": r["id"], "start_key": r["start"].hex().upper(), "end_key": r["end"].hex().upper(),
                "epoch": r["epoch"], "peers": [{**p, "role_name": "Voter"} for p in r["peers"]],
                "approximate_size": 1, "approximate_keys": 10}
        # a region whose leader PD does not know has no "leader" here (PD omits empty fields; the exact body is
        # not verified, NOTES.md): the pack reads a missing leader and one without a store_id alike
        if r["leader"] is not None:
            leader = next(p for p in r["peers"] if p["store_id"] == r["leader"])
            body["leader"] = {**leader, "role_name": "Voter"}
        if down:
            body["down_peers"] = down
        return body

    def region_for(self, key: bytes) -> dict | None:
        for r in self.regions:
            if r["start"] <= key and (r["end"] == b"" or key < r["end"]):
                return r
        return None


class PDHandler(BaseHTTPRequestHandler):
    state: PDState

    def log_message(self, *a):
        pass

    def _send(self, code: int, value, raw: str | None = None, ctype: str = "application/json; charset=UTF-8"):
        data = (raw if raw is not None else json.dumps(value, indent=2)).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if not n:
            return None
        try:
            return json.loads(self.rfile.read(n))
        except ValueError:
            return "invalid"

    def _route(self, method: str):
        st = self.state
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        path = url.path
        with st.lock:
            st.settle()
            if path == "/metrics" and method == "GET":
                down = sum(1 for r in st.regions if any(st.stores[p["store_id"]]["stopped_at"] is not None
                                                        for p in r["peers"]))
                text = ("# HELP pd_regions_status Status of the regions.\n# TYPE pd_regions_status gauge\n"
                        f'pd_regions_status{{type="down-peer-region-count"}} {down}\n'
                        'pd_regions_status{type="miss-peer-region-count"} 0\n'
                        'pd_regions_status{type="offline-peer-region-count"} 0\n')
                return self._send(200, None, text, "text/plain; version=0.0.4; charset=utf-8")
            if not path.startswith("/pd/api/v1/"):
                return self._send(404, None, "404 page not found\n", "text/plain; charset=utf-8")
            p = path[len("/pd/api/v1"):]
            parts = p.strip("/").split("/")
            if method == "GET" and p == "/stores":
                states = [int(x) for x in q.get("state", ["0", "1"])]
                items = [st.store_json(s) for s in st.stores.values() if s["state"] in states]
                return self._send(200, {"count": len(items), "stores": items})
            if parts[0] == "store" and len(parts) >= 2:
                sid = int(parts[1]) if parts[1].isdigit() else -1
                if sid not in st.stores:
                    return self._send(404, f"[PD:core:ErrStoreNotFound]store id {parts[1]} not found")
                if method == "GET" and len(parts) == 2:
                    return self._send(200, st.store_json(st.stores[sid]))
                if method == "POST" and parts[2:] == ["state"]:
                    want = (q.get("state") or [""])[0]
                    if want not in ("Up", "Offline"):
                        return self._send(400, f"invalid state {want}")
                    if st.stores[sid]["state"] == 2:
                        return self._send(400, f"store {sid} has been removed")
                    st.stores[sid]["state"] = 0 if want == "Up" else 1
                    return self._send(200, "The store's state is updated.")
            if method == "GET" and parts[:2] == ["region", "key"] and len(parts) >= 3:
                raw = urllib.parse.unquote_to_bytes("/".join(parts[2:]))
                key = bytes.fromhex(raw.decode()) if q.get("format") == ["hex"] else raw
                r = st.region_for(key)
                if r is None:
                    return self._send(404, f"[PD:region:ErrRegionNotFound]region {key!r} not found")
                return self._send(200, st.region_json(r))
            if method == "GET" and p == "/regions":  # NOTES.md: GET /regions -> {"count": N, "regions": [...]}
                return self._send(200, {"count": len(st.regions), "regions": [st.region_json(r) for r in st.regions]})
            if method == "GET" and parts[:2] == ["region", "id"]:
                r = next((x for x in st.regions if str(x["id"]) == parts[2]), None)
                if r is None:
                    return self._send(404, f"[PD:region:ErrRegionNotFound]region {parts[2]} not found")
                return self._send(200, st.region_json(r))
            if method == "GET" and p in ("/members", "/health", "/leader"):
                m = {"name": "pd-1", "member_id": 13195394291058371180, "peer_urls": ["http://127.0.0.1:2380"],
                     "client_urls": ["http://127.0.0.1:2379"], "binary_version": "v7.5.1"}
                if p == "/members":
                    return self._send(200, {"header": {"cluster_id": 7123}, "members": [m], "leader": m,
                                            "etcd_leader": m})
                if p == "/leader":
                    return self._send(200, m)
                return self._send(200, [{"name": "pd-1", "member_id": m["member_id"],
                                         "client_urls": m["client_urls"], "health": True}])
            if p == "/operators" and method == "POST":
                b = self._body()
                if not isinstance(b, dict) or "name" not in b:
                    return self._send(400, "missing operator name")
                if b["name"] != "transfer-leader":
                    return self._send(400, "unknown operator")
                if "region_id" not in b:
                    return self._send(400, "missing region id")
                if "to_store_id" not in b:
                    return self._send(400, "missing store id to transfer leader to")
                r = next((x for x in st.regions if x["id"] == b["region_id"]), None)
                if r is None:
                    return self._send(500, f"[PD:region:ErrRegionNotFound]region {b['region_id']} not found")
                to = int(b["to_store_id"])
                if to not in [x["store_id"] for x in r["peers"]] or to in st.evicted or to not in st.up_ids():
                    return self._send(500, f"region has no voter in store {to}")
                st.later(lambda: r.__setitem__("leader", to))
                return self._send(200, "The operator is created.")
            if p == "/schedulers" and method == "GET":
                return self._send(200, sorted(DEFAULT_SCHEDULERS + (["evict-leader-scheduler"] if st.evicted
                                                                     else [])))
            if p == "/schedulers" and method == "POST":
                b = self._body()
                if not isinstance(b, dict) or "name" not in b:
                    return self._send(400, "missing scheduler name")
                if b["name"] != "evict-leader-scheduler":
                    return self._send(400, "unknown scheduler")
                if "store_id" not in b:
                    return self._send(400, "missing store id")
                sid = int(b["store_id"])
                if sid not in st.stores:
                    return self._send(400, "please input a right store id")
                first = not st.evicted
                st.evicted.add(sid)
                st.later(lambda: st.move_leaders_off(sid))
                return self._send(200, "The scheduler is created." if first
                                  else "The scheduler has been applied to the store.")
            if parts[0] == "schedulers" and method == "DELETE" and len(parts) == 2:
                name = parts[1]
                if name == "evict-leader-scheduler" and st.evicted:
                    st.evicted.clear()
                    return self._send(200, "The scheduler is removed.")
                if name.startswith("evict-leader-scheduler-") and int(name.rsplit("-", 1)[1]) in st.evicted:
                    st.evicted.discard(int(name.rsplit("-", 1)[1]))
                    return self._send(200, "The scheduler is removed.")
                return self._send(404, "[PD:scheduler:ErrSchedulerNotFound]scheduler not found")
            return self._send(404, "404 page not found\n" if method == "GET" else "method not allowed")

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_DELETE(self):
        self._route("DELETE")


class PDStandin:
    """``with PDStandin() as pd: pd.url, pd.state``."""

    def __init__(self, **kwargs):
        self.state = PDState(**kwargs)

    def __enter__(self):
        handler = type("Handler", (PDHandler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
