"""Waiting on a database connection's socket the way the process runs.

In a gevent program (a Locust worker) psycopg finds ``select`` patched and waits with its pure-Python ``poll``
loop, which under gevent builds a poll object, a watcher and a timeout for every wait: profiled on the TPC-C driver,
a quarter of the client's CPU went there. Here the waits of a connection reuse watchers of gevent's loop kept for the
connection's life (one to read, one to write, one for either), and a one-statement round trip straight through
libpq (:meth:`~chaosdb.workloads.executor.Executor.exec_prepared`) waits on a read watcher of its own. Outside
gevent nothing changes: psycopg's own connection class and ``select``.
"""

from __future__ import annotations

import functools
import select
from typing import Any, Callable

__all__ = ["connect", "connection_class", "gevent_patched", "socket_waiter"]


def gevent_patched() -> bool:
    """Whether this process runs under gevent with ``select`` patched (a Locust process)."""
    try:
        from gevent import monkey  # noqa: PLC0415 - only where gevent is installed
    except ImportError:
        return False
    return bool(monkey.is_module_patched("select"))


def connect(conninfo: str, **kwargs: Any) -> Any:
    """``psycopg.connect`` with the connection class of :func:`connection_class`."""
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    cls = connection_class()
    return psycopg.connect(conninfo, **kwargs) if cls is psycopg.Connection else cls.connect(conninfo, **kwargs)


@functools.cache
def connection_class() -> Any:
    """The psycopg connection class to connect with: under gevent, one whose waits use watchers kept for the
    connection; else ``psycopg.Connection``."""
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    if not gevent_patched():
        return psycopg.Connection
    from gevent import get_hub  # noqa: PLC0415 - only where gevent runs

    class GeventConnection(psycopg.Connection):
        """A psycopg connection waiting on its socket with three watchers of gevent's loop made on its first wait
        (read, write, either) instead of a poll object, a watcher and a timeout per wait."""

        _chaosdb_watchers: dict[int, Any] | None = None

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            """Run psycopg's protocol generator *gen* to its end, waiting on the connection's watchers; a wait with
            a *timeout* is left to psycopg."""
            if timeout is not None:
                return super().wait(gen, interval, timeout)
            hub = get_hub()
            watchers = self._chaosdb_watchers
            if watchers is None:
                fd = self.pgconn.socket
                watchers = self._chaosdb_watchers = {state: hub.loop.io(fd, state) for state in (1, 2, 3)}
            try:
                state = next(gen)
                while True:
                    hub.wait(watchers[state])
                    # what was waited for is ready (for "either", the generator reads or writes what it can)
                    state = gen.send(state)
            except StopIteration as done:
                return done.value

    return GeventConnection


def socket_waiter(fd: int) -> Callable[[], None]:
    """A function that waits until *fd* is readable: under gevent, on one watcher of gevent's loop kept for the
    connection (a new one, or ``select``, per wait costs system calls each round trip); else ``select``."""
    if gevent_patched():
        from gevent import get_hub  # noqa: PLC0415 - only where gevent runs

        hub = get_hub()
        watcher = hub.loop.io(fd, 1)
        return lambda: hub.wait(watcher)
    return lambda: select.select([fd], [], []) and None
