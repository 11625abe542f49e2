"""A TCP proxy that delays traffic: latency and jitter where the kernel has no netem.

``python -m chaosdb.faults.netproxy --listen 127.0.0.21:0 --upstream 127.0.0.21:5432
--delay-ms 100 --jitter-ms 20 --direction both --mark 0x10000000 --port-file F``

Each chunk read from one side is written to the other side ``delay ± jitter``
milliseconds later (uniform jitter, like netem's default), never before a chunk
read earlier (TCP is a byte stream: order is kept, so jitter cannot reorder).
``--direction`` picks which way is delayed: ``inbound`` (to the node),
``outbound`` (from the node) or ``both`` (the round trip grows by twice the delay).

Differences from netem, documented for users: the delay applies per chunk read,
not per packet; only connections opened after the fault started go through the
proxy (existing ones are reset by the engine, or kept undelayed); loss and
reordering are not modelled here (loss is iptables' job). Upstream connections
carry the packet mark ``--mark`` so that the redirect rule lets them through.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import sys

SO_MARK = getattr(socket, "SO_MARK", 36)


class _Delay:
    def __init__(self, delay_ms: float, jitter_ms: float, rng: random.Random):
        self.delay = delay_ms / 1000.0
        self.jitter = jitter_ms / 1000.0
        self.rng = rng

    def sample(self) -> float:
        if self.jitter:
            return max(0.0, self.delay + self.rng.uniform(-self.jitter, self.jitter))
        return self.delay


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: _Delay | None) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    async def read_side() -> None:
        last = 0.0
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                release = loop.time() + (delay.sample() if delay else 0.0)
                last = max(release, last)
                await queue.put((last, data))
        except (ConnectionError, OSError):
            pass
        await queue.put((last, None))

    async def write_side() -> None:
        try:
            while True:
                release, data = await queue.get()
                wait = release - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    await asyncio.gather(read_side(), write_side())


async def _serve(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    up_host, up_port = args.upstream.rsplit(":", 1)
    inbound = _Delay(args.delay_ms, args.jitter_ms, rng) if args.direction in ("both", "inbound") else None
    outbound = _Delay(args.delay_ms, args.jitter_ms, rng) if args.direction in ("both", "outbound") else None
    loop = asyncio.get_running_loop()

    async def handle(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if args.mark:
                sock.setsockopt(socket.SOL_SOCKET, SO_MARK, args.mark)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            await asyncio.wait_for(loop.sock_connect(sock, (up_host, int(up_port))), timeout=10)
            u_reader, u_writer = await asyncio.open_connection(sock=sock)
        except (OSError, asyncio.TimeoutError):
            sock.close()
            c_writer.close()
            return
        try:
            await asyncio.gather(_pump(c_reader, u_writer, inbound), _pump(u_reader, c_writer, outbound))
        finally:
            for w in (u_writer, c_writer):
                w.close()

    if args.listen_fd >= 0:  # the socket its starter bound and redirected to already (connections wait in its backlog)
        server = await asyncio.start_server(handle, sock=socket.socket(fileno=args.listen_fd))
    else:
        host, port = args.listen.rsplit(":", 1)
        server = await asyncio.start_server(handle, host, int(port), reuse_address=True)
    actual = server.sockets[0].getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(actual))
        os.replace(tmp, args.port_file)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m chaosdb.faults.netproxy``: a TCP proxy from ``--listen`` to ``--upstream`` adding delay and jitter,
    until it is stopped."""
    p = argparse.ArgumentParser(prog="python -m chaosdb.faults.netproxy")
    p.add_argument("--listen", required=True)
    p.add_argument("--listen-fd", type=int, default=-1, help="a listening socket to serve (inherited)")
    p.add_argument("--upstream", required=True)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--direction", choices=["both", "inbound", "outbound"], default="both")
    p.add_argument("--mark", type=lambda s: int(s, 0), default=0)
    p.add_argument("--port-file", default="")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--fault-id", default="")  # only to tag the process (cleanup finds it by command line)
    args = p.parse_args(argv)
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
