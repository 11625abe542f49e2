"""One TPC-C terminal: a home warehouse and district, a deck, and an :class:`Executor`.

Connection handling, retries and outcome classification are the executor's
(:mod:`chaosdb.workloads.executor`); the terminal chooses what to run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from chaosdb.workloads.executor import Executor
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
from chaosdb.workloads.tpcc.transactions import RUNNERS, TxnInfo

__all__ = ["TerminalConfig", "Terminal", "home_of"]


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
        self.number = number
        self.config = config
        self.w_id, self.d_id = home_of(number, config.scale.warehouses)
        seed = None if config.seed is None else config.seed * 100_003 + number
        self.rnd = RandomSource(config.scale, config.c_load, seed)
        self.deck = Deck(self.rnd.rng)
        self.executor = Executor(config.dsn, config.isolation, config.max_retries, config.connect_timeout_s,
                                 f"tpcc-{number}", seed, sleep)
        self._cursor: Any = None

    def close(self) -> None:
        """Close the terminal's connection."""
        self.executor.close()

    def run(self, name: str) -> Sample:
        """Run transaction *name*; return its sample (the outcome is never an exception)."""
        runner = RUNNERS[name]
        d_id = self.d_id if name == "stock_level" else None

        def body(conn) -> str:
            info = TxnInfo()
            runner(self.cursor(conn), self.rnd, self.w_id, d_id, info)
            return info.key if name == "new_order" else ""

        return self.executor.run(name, body, self.number)

    def cursor(self, conn: Any) -> Any:
        """The cursor the transactions run their statements on, one per connection (``conn.execute`` makes a new
        cursor for every statement)."""
        if self._cursor is None or self._cursor.connection is not conn or self._cursor.closed:
            self._cursor = conn.cursor()
        return self._cursor

    def next_transaction(self) -> str:
        """The deck's next transaction name."""
        return self.deck.next()

    def keying_time(self, name: str) -> float:
        """TPC-C's keying time before *name*, scaled by the run's wait factor."""
        return KEYING_TIME_S[name] * self.config.wait

    def think_time(self, name: str) -> float:
        """TPC-C's think time after *name* (negative exponential around its mean), scaled by the run's wait factor."""
        return think_time(self.rnd.rng, THINK_TIME_MEAN_S[name] * self.config.wait)
