"""A test PKI and a generic local HTTPS server that asks for a client certificate (a stand-in for servers that cannot
run here, such as CockroachDB's DB Console; the real secure clusters are in tests/integration/test_secure_clusters.py).

``make_pki(folder)``: a CA, a second CA nobody trusts, a server certificate for 127.0.0.1 only (so ``localhost`` is a
name mismatch), a client certificate of the CA and one of the other CA. ``serve_https(handler, pki)``: a threading
HTTP server wrapped in TLS that requires a client certificate of the CA.
"""

from __future__ import annotations

import ssl
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

from chaosdb.core.pki import issue, make_ca


@dataclass
class TestPki:
    dir: Path
    ca_crt: str = ""
    other_crt: str = ""
    server_crt: str = ""
    server_key: str = ""
    client_crt: str = ""
    client_key: str = ""

    def file(self, name: str) -> str:
        return str(self.dir / name)


def make_pki(folder: Path) -> TestPki:
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "other.key").exists():
        make_ca(d / "ca.key", d / "ca.crt", "chaosdb test CA")
        make_ca(d / "other.key", d / "other.crt", "a CA nobody trusts")
        issue(d / "ca.key", d / "ca.crt", d / "server.key", d / "server.crt", "127.0.0.1", ips=["127.0.0.1"],
              usage="serverAuth")
        issue(d / "ca.key", d / "ca.crt", d / "client.key", d / "client.crt", "root", usage="clientAuth")
        issue(d / "other.key", d / "other.crt", d / "stranger.key", d / "stranger.crt", "root", usage="clientAuth")
        issue(d / "ca.key", d / "ca.crt", d / "expired.key", d / "expired.crt", "127.0.0.1", ips=["127.0.0.1"],
              usage="serverAuth", days="-1")  # valid until yesterday
    names = ("ca.crt", "other.crt", "server.crt", "server.key", "client.crt", "client.key")
    return TestPki(d, *(str(d / n) for n in names))


@contextmanager
def serve_https(handler: type[BaseHTTPRequestHandler], pki: TestPki, client_cert: bool = True,
                certificate: str = "server") -> Iterator[str]:
    """``https://127.0.0.1:<port>`` of a server running *handler* with the PKI's server certificate (``expired``: one
    that expired yesterday)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.file(f"{certificate}.crt"), pki.file(f"{certificate}.key"))
    if client_cert:
        ctx.load_verify_locations(pki.ca_crt)
        ctx.verify_mode = ssl.CERT_REQUIRED
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
