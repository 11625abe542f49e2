"""One TPC-C terminal: a home warehouse and district, a deck, a connection, retries.

Failure semantics (what a careful client does during a failover):

* connect with the multi-host DSN (``target_session_attrs=read-write``) and a
  short ``connect_timeout``; a broken connection is dropped and the next
  transaction reconnects;
* serialization failures and deadlocks (40001, 40P01) are retried up to
  ``max_retries`` times with exponential backoff (base 10 ms, cap 1 s) and
  full jitter; the sample keeps the retries used;
* an error while COMMIT is in flight (connection lost, 40003, 08007) is
  ``ambiguous`` and never retried: the write may or may not be durable;
* every attempt is recorded as one sample; nothing is dropped.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable

from chaosdb.workloads.outcomes import RETRYABLE, classify
from chaosdb.workloads.samples import Sample
from chaosdb.workloads.tpcc.rand import (
    DISTRICTS_PER_WAREHOUSE,
    KEYING_TIME_S,
    THINK_TIME_MEAN_S,
    Deck,
    RandomSource,
    Scale,
    think_time,
)
from chaosdb.workloads.tpcc.transactions import RUNNERS, BusinessRollback, TxnInfo

__all__ = ["TerminalConfig", "Terminal", "home_of"]

ISOLATION = {"default": None, "read_committed": "READ COMMITTED", "repeatable_read": "REPEATABLE READ",
             "serializable": "SERIALIZABLE"}


@dataclass
class TerminalConfig:
    dsn: str
    scale: Scale
    c_load: int
    isolation: str = "default"  # PostgreSQL default (read committed); "serializable" for CockroachDB
    max_retries: int = 5
    connect_timeout_s: int = 2
    wait: float = 0.0  # 0 = no keying/think time; 1 = spec times; 0.1 = a tenth of them
    seed: int | None = None


def home_of(terminal: int, warehouses: int) -> tuple[int, int]:
    """Terminals spread evenly: first across warehouses, then across their 10 districts."""
    return terminal % warehouses + 1, (terminal // warehouses) % DISTRICTS_PER_WAREHOUSE + 1


class Terminal:
    def __init__(self, number: int, config: TerminalConfig, sleep: Callable[[float], None] = time.sleep) -> None:
        if config.isolation not in ISOLATION:
            raise ValueError(f"isolation must be one of {', '.join(ISOLATION)}")
        self.number = number
        self.config = config
        self.w_id, self.d_id = home_of(number, config.scale.warehouses)
        seed = None if config.seed is None else config.seed * 100_003 + number
        self.rnd = RandomSource(config.scale, config.c_load, seed)
        self.deck = Deck(self.rnd.rng)
        self.sleep = sleep
        self.conn = None
        self._backoff = random.Random(seed)

    # connection -----------------------------------------------------------
    def _connect(self):
        import psycopg

        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.close()
        self.conn = psycopg.connect(self.config.dsn, connect_timeout=self.config.connect_timeout_s,
                                    target_session_attrs="read-write", application_name=f"tpcc-{self.number}")
        level = ISOLATION[self.config.isolation]
        if level:
            self.conn.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}")
            self.conn.commit()
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def _drop_broken(self) -> bool:
        broken = self.conn is None or self.conn.closed or self.conn.broken
        if broken:
            self.close()
        else:
            try:
                self.conn.rollback()
            except Exception:
                self.close()
                broken = True
        return broken

    # one transaction -------------------------------------------------------
    def run(self, name: str) -> Sample:
        """Run transaction *name* with retries; return its sample (the outcome is never an exception)."""
        import psycopg

        runner = RUNNERS[name]
        d_id = self.d_id if name == "stock_level" else None
        start_ts = time.time()
        t0 = time.perf_counter()
        retries = 0
        outcome, sqlstate = "error", ""
        info = TxnInfo()
        while True:
            during_commit = False
            try:
                conn = self._connect()
                info = TxnInfo()
                try:
                    runner(conn, self.rnd, self.w_id, d_id, info)
                except BusinessRollback:
                    conn.rollback()
                    outcome, sqlstate = "rollback", ""
                    break
                during_commit = True
                conn.commit()
                outcome, sqlstate = "committed", ""
                break
            except psycopg.Error as exc:
                sqlstate = exc.sqlstate or ""
                broken = self._drop_broken()
                outcome = classify(exc.sqlstate, during_commit, broken)
                if sqlstate in RETRYABLE and outcome == "aborted" and retries < self.config.max_retries:
                    retries += 1
                    self.sleep(self._backoff.uniform(0, min(1.0, 0.01 * 2 ** retries)))
                    continue
                if not sqlstate:
                    sqlstate = type(exc).__name__
                break
        latency_ms = (time.perf_counter() - t0) * 1000.0
        key = info.key if name == "new_order" and outcome in ("committed", "ambiguous") else ""
        return Sample(start_ts, latency_ms, name, outcome, sqlstate, retries, self.number, key)

    def next_transaction(self) -> str:
        return self.deck.next()

    def keying_time(self, name: str) -> float:
        return KEYING_TIME_S[name] * self.config.wait

    def think_time(self, name: str) -> float:
        return think_time(self.rnd.rng, THINK_TIME_MEAN_S[name] * self.config.wait)
