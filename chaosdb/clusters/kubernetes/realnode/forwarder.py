"""A TCP forwarder, run as its own process: ``python -m chaosdb.clusters.kubernetes.realnode.forwarder LISTEN TARGET``.

There is no kube-proxy on the local cluster, so two things would not reach what they need:

* pods reach the API server at ``10.96.0.1:443`` (what ``KUBERNETES_SERVICE_HOST`` / ``_PORT`` say in every pod)
  because a forwarder listens there, on the node's bridge, and passes each connection on to the apiserver's own
  address (TLS goes end to end: the apiserver's certificate names ``10.96.0.1``);
* this machine reaches a Service of the real node's pods at a stable address of the cluster (the primary of the
  Patroni cluster at ``<cluster address>:5432``): with ``TARGET`` given as ``endpoints:NAMESPACE/SERVICE:PORT`` the
  forwarder reads the Service's Endpoints from the API for every new connection and passes it on to the first
  ready address, so clients follow a failover as they would through a Service (Patroni keeps the primary
  Service's Endpoints on the leader).

Bytes are copied as they are. One process per forwarded address, started in the cluster's folder (its working
directory is how ``down`` finds it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import ssl
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path

import yaml

__all__ = ["main", "serve", "static_target", "endpoints_target"]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


Target = Callable[[], Awaitable[tuple[str, int] | None]]


def static_target(address: tuple[str, int]) -> Target:
    """Always *address*."""

    async def target() -> tuple[str, int] | None:
        return address

    return target


def endpoints_target(spec: str, kubeconfig: str) -> Target:
    """The first ready address of a Service's Endpoints (``NAMESPACE/SERVICE:PORT``), read anew for each connection
    with the credentials of *kubeconfig*; None when the Service has none ready."""
    where, _, port = spec.rpartition(":")
    namespace, _, service = where.partition("/")
    config = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    token = config["users"][0]["user"]["token"]
    context = ssl.create_default_context(cafile=cluster["certificate-authority"])
    url = f"{cluster['server']}/api/v1/namespaces/{namespace}/endpoints/{service}"

    def read() -> tuple[str, int] | None:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                endpoints = json.loads(response.read())
        except (OSError, ValueError):
            return None
        for subset in endpoints.get("subsets") or []:
            for address in subset.get("addresses") or []:
                if address.get("ip"):
                    return address["ip"], int(port)
        return None

    async def target() -> tuple[str, int] | None:
        return await asyncio.to_thread(read)

    return target


async def serve(listen: tuple[str, int], target: Target) -> None:
    """Accept on *listen* and pass every connection on to where *target* says now (both ways, until either side
    closes); a connection with nowhere to go is closed."""

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            address = await target()
        except Exception:  # noqa: BLE001 - an answer it could not read: nowhere to go, as with no address
            address = None
        if address is None:
            client_writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*address)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))

    server = await asyncio.start_server(handle, listen[0], listen[1], reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    """Forward ``LISTEN`` (``host:port``) to ``TARGET`` until SIGTERM."""
    parser = argparse.ArgumentParser(prog="chaosdb-forwarder", description=__doc__)
    parser.add_argument("listen", type=_address, help="host:port to accept connections on")
    parser.add_argument("target", help="host:port to pass them on to, or endpoints:NAMESPACE/SERVICE:PORT")
    parser.add_argument("--kubeconfig", default="", help="the credentials to read Endpoints with")
    args = parser.parse_args(argv)
    if args.target.startswith("endpoints:"):
        target = endpoints_target(args.target.removeprefix("endpoints:"), args.kubeconfig)
    else:
        target = static_target(_address(args.target))
    asyncio.run(serve(args.listen, target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
