"""``chaosdb serve``: the checks as HTTP endpoints, for a Chaos Mesh ``StatusCheck`` or a Litmus ``httpProbe``.

A poller thread evaluates every check, one at a time, every ``interval`` seconds (:mod:`chaosdb.checks.evaluate`)
and keeps each one's state (:class:`StateStore`): its last result, since when it has been failing, how many times
in a row. A Flask app (:func:`create_app`) answers from that state, served by waitress (:class:`CheckServer`):

==========================  ===================================================================================
``GET /checks/<name>``      200 when the check passes, or has failed for less than its ``for_s``; 503 when it
                            has failed for ``for_s`` seconds or more (at once with ``for_s`` 0), or has not been
                            evaluated yet; 404 for a name the file does not have. The body: the last result and
                            ``status``, ``for_s``, ``failing_since``, ``failing_for_s``, ``consecutive_failures``,
                            ``reason`` (why this status). A group (an experiment's hypothesis title) answers 200
                            when every one of its checks does, with theirs in ``checks``.
``GET /checks``             every check's answer; 200 when every one is 200, else 503
``GET /healthz``            200: the server itself is up
==========================  ===================================================================================

Each change of a check's state (first result, passing -> failing, failing -> passing) is one log line, secrets
masked. SIGTERM or SIGINT stops the server and the poller (:func:`run_server`).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask
from waitress import create_server, wasyncore

from chaosdb.checks.evaluate import evaluate
from chaosdb.checks.spec import Check, CheckSet
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.redact import redact

__all__ = ["CheckState", "StateStore", "Poller", "create_app", "CheckServer", "run_server", "NOT_EVALUATED"]

logger = logging.getLogger("chaosdb.checks")

#: the reason of a check the poller has not evaluated yet
NOT_EVALUATED = "not evaluated yet"
#: how often the server's loop looks whether it was asked to stop (seconds)
_TICK_S = 0.2


@dataclass
class CheckState:
    """What the server knows of one check: its last result, since when it has failed without a pass (the poller's
    clock and the result's time), and how many evaluations in a row failed."""

    check: Check
    last: dict[str, Any] | None = None
    failing_since: float | None = None
    failing_since_at: str | None = None
    consecutive_failures: int = 0


class StateStore:
    """Every check's :class:`CheckState`, safe to read from the server's threads while the poller writes; *clock*
    (seconds, monotonic) measures how long a check has been failing (a test gives its own)."""

    def __init__(self, checks: CheckSet, clock: Callable[[], float] = time.monotonic) -> None:
        self.checks = checks
        self.clock = clock
        self._lock = threading.Lock()
        self._states = {c.name: CheckState(c) for c in checks.checks}

    def record(self, result: dict[str, Any]) -> str | None:
        """Keep *result* as its check's last; the check's new state when it changed (``passing`` or ``failing``;
        the first result is a change), else None."""
        with self._lock:
            state = self._states[result["check"]]
            before = None if state.last is None else bool(state.last["ok"])
            state.last = result
            if result["ok"]:
                state.failing_since, state.failing_since_at, state.consecutive_failures = None, None, 0
            else:
                if state.failing_since is None:
                    state.failing_since, state.failing_since_at = self.clock(), result.get("at")
                state.consecutive_failures += 1
        now = bool(result["ok"])
        return None if before is now else ("passing" if now else "failing")

    def answer(self, name: str) -> tuple[int, dict[str, Any]] | None:
        """The HTTP status and body for the check or group *name*; None when the file has neither."""
        if name in self._states:
            with self._lock:
                return self._answer(self._states[name])
        members = self.checks.groups.get(name)
        if members is None:
            return None
        answers = [a for a in (self.answer(m) for m in members) if a is not None]
        status = 200 if all(code == 200 for code, _ in answers) else 503
        failing = [body["check"] for code, body in answers if code != 200]
        return status, {"check": name, "status": status, "ok": status == 200,
                        "reason": None if status == 200 else f"{', '.join(failing)} answer 503",
                        "checks": [body for _, body in answers]}

    def answer_all(self) -> tuple[int, dict[str, Any]]:
        """The status (200 when every check answers 200, else 503) and every check's answer."""
        answers = [self.answer(name) for name in self._states]
        bodies = [body for _, body in filter(None, answers)]
        status = 200 if all(a is not None and a[0] == 200 for a in answers) else 503
        return status, {"ok": status == 200, "status": status, "checks": bodies}

    def _answer(self, state: CheckState) -> tuple[int, dict[str, Any]]:
        for_s = state.check.for_s
        if state.last is None:
            return 503, {"check": state.check.name, "ok": None, "status": 503, "for_s": for_s,
                         "failing_since": None, "failing_for_s": None, "consecutive_failures": 0,
                         "reason": NOT_EVALUATED}
        body = {**state.last, "for_s": for_s, "failing_since": state.failing_since_at, "failing_for_s": None,
                "consecutive_failures": state.consecutive_failures}
        if state.last["ok"]:
            return 200, {**body, "status": 200, "reason": None}
        failing_for = max(0.0, self.clock() - (state.failing_since or 0.0))
        body["failing_for_s"] = round(failing_for, 3)
        why = state.last.get("reason") or "it failed"
        if failing_for >= for_s:
            return 503, {**body, "status": 503, "reason": f"failing for {failing_for:.1f} s (for_s {for_s:g} s): "
                                                          f"{why}"}
        return 200, {**body, "status": 200, "reason": f"failing for {failing_for:.1f} s, under its for_s of "
                                                      f"{for_s:g} s: {why}"}


class Poller(threading.Thread):
    """The thread that evaluates every check, one at a time, every *interval* seconds (a round that takes longer
    is followed by the next at once), records each result and logs each change of state."""

    def __init__(self, checks: CheckSet, states: StateStore, interval: float = 1.0,
                 evaluate_check: Callable[..., dict[str, Any]] = evaluate) -> None:
        super().__init__(name="chaosdb-checks-poller", daemon=True)
        self.checks, self.states, self.interval = checks, states, interval
        self.evaluate_check = evaluate_check
        self.stopping = threading.Event()
        self.rounds = 0

    def run(self) -> None:
        """Evaluate the checks round after round until :meth:`stop`."""
        mask = self.checks.mask()
        while not self.stopping.is_set():
            started = time.monotonic()
            for check in self.checks.checks:
                if self.stopping.is_set():
                    return
                try:
                    result = self.evaluate_check(check, self.checks.configuration, self.checks.secrets, mask)
                    change = self.states.record(result)
                except Exception as exc:  # noqa: BLE001 - the poller goes on; the check keeps its last state
                    logger.error("check %r could not be evaluated: %s: %s", check.name, type(exc).__name__,
                                 redact(str(exc), mask))
                    continue
                if change == "failing":
                    logger.warning("check %r is failing: %s", check.name, result.get("reason"))
                elif change == "passing":
                    logger.info("check %r passes (%.1f ms)", check.name, result.get("latency_ms", 0.0))
            self.rounds += 1
            self.stopping.wait(max(0.0, started + self.interval - time.monotonic()))

    def stop(self) -> None:
        """Ask the poller to stop after the check it is evaluating."""
        self.stopping.set()


def create_app(checks: CheckSet, states: StateStore) -> Flask:
    """The Flask app of ``chaosdb serve``: ``/checks/<name>``, ``/checks`` and ``/healthz``, answered from
    *states* (keys in the order they are written)."""
    app = Flask("chaosdb.checks")
    app.json.sort_keys = False  # type: ignore[attr-defined]

    @app.get("/healthz")
    def healthz() -> tuple[dict[str, Any], int]:
        return {"ok": True, "checks": len(checks.checks)}, 200

    @app.get("/checks")
    def all_checks() -> tuple[dict[str, Any], int]:
        status, body = states.answer_all()
        return body, status

    @app.get("/checks/<path:name>")
    def one_check(name: str) -> tuple[dict[str, Any], int]:
        answer = states.answer(name)
        if answer is None:
            return {"check": name, "status": 404, "reason": f"no check named {name!r}",
                    "checks": checks.known()}, 404
        status, body = answer
        return body, status

    return app


class CheckServer:
    """The app served by waitress on *host*:*port* (0: any free port, then :attr:`port` says which) with its
    poller: :meth:`serve` blocks until :meth:`stop` (from any thread, or a signal handler)."""

    def __init__(self, checks: CheckSet, host: str = "127.0.0.1", port: int = 8099, interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, threads: int = 4,
                 evaluate_check: Callable[..., dict[str, Any]] = evaluate) -> None:
        self.checks = checks
        self.states = StateStore(checks, clock)
        self.app = create_app(checks, self.states)
        self.poller = Poller(checks, self.states, interval, evaluate_check)
        self._map: dict[int, Any] = {}
        self._stopping = threading.Event()
        try:
            self.server = create_server(self.app, map=self._map, host=host, port=port, threads=threads,
                                        ident="chaosdb")
        except OSError as exc:
            raise ChaosDBError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.host = str(self.server.effective_host)
        self.port = int(self.server.effective_port)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://{self.host}:{self.port}"

    def serve(self) -> None:
        """Start the poller and answer requests until :meth:`stop`; then close every connection, wait for the
        request threads and stop the poller."""
        self.poller.start()
        try:
            while not self._stopping.is_set():
                wasyncore.loop(timeout=_TICK_S, map=self._map, count=1)
        finally:
            self._close()

    def stop(self) -> None:
        """Ask :meth:`serve` to return (within a fraction of a second); safe in a signal handler."""
        self._stopping.set()

    def _close(self) -> None:
        self.poller.stop()
        self.server.close()  # the listening socket and its trigger
        self.server.task_dispatcher.shutdown(timeout=5)
        for channel in list(self._map.values()):
            channel.close()
        self._map.clear()
        self.poller.join(timeout=30)
        if self.poller.is_alive():
            logger.warning("the poller is still evaluating a check; it stops when that check returns")


def run_server(checks: CheckSet, host: str = "127.0.0.1", port: int = 8099, interval: float = 1.0,
               ready: Callable[[CheckServer], None] | None = None) -> None:
    """Serve *checks* until SIGTERM or SIGINT (signals are handled when called from the main thread; from another
    thread, *ready* receives the server, whose :meth:`CheckServer.stop` ends it)."""
    server = CheckServer(checks, host, port, interval)
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: server.stop())
    logger.info("serving %d check(s) of %s on %s/checks every %g s", len(checks.checks), checks.source, server.url,
                interval)
    try:
        if ready is not None:
            ready(server)
        server.serve()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        logger.info("stopped")
