"""TPC-C random functions (spec clauses 2.1.6, 4.3.2, 5.2.4, 5.2.5).

Scaled-down databases
---------------------
The spec's sizes are 100,000 items and 3,000 customers per district, with
``NURand(A, x, y)`` constants A = 8191 (items), 1023 (customer ids) and 255
(last-name numbers 0..999). :class:`Scale` lets a quick run use fewer items and
customers. NURand stays inside the reduced range because of its final modulo,
and to keep the *shape* of the skew (A spans about the same fraction of the
range as in the spec) ``A`` is scaled to the power of two minus one nearest to
``range * A_spec / range_spec``. Last names: the spec gives the first 1,000
customers of a district the names 0..999 and draws the others with NURand over
0..999; with C < 1,000 customers the name space is 0..C-1, so Payment and
Order-Status by last name always find somebody, as they do at full scale.

C constants: the run-time C for last names must differ from the load-time one
by a delta in [65, 119] other than 96 and 112 (2.1.6.1); the load-time value
is stored in the database (table ``tpcc_meta``) so every run picks a valid one.
"""

from __future__ import annotations

import math
import random
import string
from dataclasses import dataclass

__all__ = [
    "Scale",
    "nurand",
    "scaled_a",
    "last_name",
    "valid_c_run",
    "Deck",
    "TRANSACTIONS",
    "DECK_CARDS",
    "KEYING_TIME_S",
    "THINK_TIME_MEAN_S",
    "think_time",
    "astring",
    "nstring",
    "zip_code",
    "RandomSource",
]

SPEC_ITEMS = 100_000
SPEC_CUSTOMERS = 3_000
DISTRICTS_PER_WAREHOUSE = 10

SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")

TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
#: the 100-card deck: 45 New-Order, 43 Payment, 4 each of the others. Every type but New-Order at the spec's
#: minimum share (5.2.3: 43 % / 4 % / 4 % / 4 %), as go-tpc and BenchmarkSQL run it, so that tpmC, which counts
#: New-Orders only, compares with theirs. (The spec's 23-card example, 10/10/1/1/1, gives New-Order 43.5 %.)
DECK_CARDS = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}
DECK_SIZE = sum(DECK_CARDS.values())
#: 5.2.5.7 minimum keying times and mean think times (seconds)
KEYING_TIME_S = {"new_order": 18.0, "payment": 3.0, "order_status": 2.0, "delivery": 2.0, "stock_level": 2.0}
THINK_TIME_MEAN_S = {"new_order": 12.0, "payment": 12.0, "order_status": 10.0, "delivery": 5.0, "stock_level": 5.0}


def scaled_a(spec_a: int, spec_range: int, new_range: int) -> int:
    """A for a reduced range: the power of two minus one closest to ``new_range * spec_a / spec_range``."""
    if new_range >= spec_range:
        return spec_a
    target = max(1.0, new_range * (spec_a + 1) / spec_range)
    return max(1, 2 ** round(math.log2(target)) - 1)


@dataclass(frozen=True)
class Scale:
    """Database size. The defaults are the spec's; districts are always 10 per warehouse."""

    warehouses: int = 1
    items: int = SPEC_ITEMS
    customers_per_district: int = SPEC_CUSTOMERS

    def __post_init__(self) -> None:
        if self.warehouses < 1:
            raise ValueError("warehouses must be >= 1")
        if not 100 <= self.items <= SPEC_ITEMS:
            raise ValueError(f"items must be between 100 and {SPEC_ITEMS}")
        if not 30 <= self.customers_per_district <= SPEC_CUSTOMERS or self.customers_per_district % 10:
            raise ValueError(f"customers_per_district must be a multiple of 10 between 30 and {SPEC_CUSTOMERS}")

    @classmethod
    def reduced(cls, warehouses: int, factor: int) -> "Scale":
        """The spec sizes divided by *factor* (1 = full size), e.g. 10 -> 10,000 items, 300 customers."""
        if factor < 1:
            raise ValueError("scale factor must be >= 1")
        customers = max(30, (SPEC_CUSTOMERS // factor) // 10 * 10)
        return cls(warehouses=warehouses, items=max(100, SPEC_ITEMS // factor), customers_per_district=customers)

    @property
    def orders_per_district(self) -> int:
        """Orders loaded per district: one per customer."""
        return self.customers_per_district

    @property
    def first_new_order(self) -> int:
        """Orders from this id on are undelivered (2101 of 3000 in the spec: the last 30 %)."""
        return self.orders_per_district - (self.orders_per_district * 3) // 10 + 1

    @property
    def last_names(self) -> int:
        """How many distinct last names the customers have (1000 at full scale)."""
        return min(1000, self.customers_per_district)

    @property
    def a_item(self) -> int:
        """NURand's A for item ids, scaled from the spec's 8191."""
        return scaled_a(8191, SPEC_ITEMS, self.items)

    @property
    def a_customer(self) -> int:
        """NURand's A for customer ids, scaled from the spec's 1023."""
        return scaled_a(1023, SPEC_CUSTOMERS, self.customers_per_district)

    @property
    def a_last(self) -> int:
        """NURand's A for last names, scaled from the spec's 255."""
        return scaled_a(255, 1000, self.last_names)


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def last_name(number: int) -> str:
    """C_LAST from a number 0..999: its three digits mapped to syllables (4.3.2.3)."""
    return SYLLABLES[number // 100] + SYLLABLES[(number // 10) % 10] + SYLLABLES[number % 10]


def valid_c_run(c_load: int, rng: random.Random) -> int:
    """A run-time C for C_LAST whose delta from *c_load* is in [65, 119] and not 96 or 112."""
    while True:
        c_run = rng.randint(0, 255)
        delta = abs(c_run - c_load)
        if 65 <= delta <= 119 and delta not in (96, 112):
            return c_run


def astring(rng: random.Random, lo: int, hi: int) -> str:
    """A random alphanumeric string of *lo* to *hi* characters (TPC-C's a-string)."""
    return "".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(lo, hi)))


def nstring(rng: random.Random, lo: int, hi: int) -> str:
    """A random numeric string of *lo* to *hi* digits (TPC-C's n-string)."""
    return "".join(rng.choices(string.digits, k=rng.randint(lo, hi)))


def zip_code(rng: random.Random) -> str:
    """A TPC-C zip code: 4 random digits and ``11111``."""
    return nstring(rng, 4, 4) + "11111"


def think_time(rng: random.Random, mean_s: float) -> float:
    """Negative exponential think time with the given mean, truncated at 10 x mean (5.2.5.4)."""
    if mean_s <= 0:
        return 0.0
    return min(-math.log(max(rng.random(), 1e-12)) * mean_s, 10 * mean_s)


class Deck:
    """A shuffled deck of :data:`DECK_CARDS`, reshuffled when exhausted (5.2.4.2)."""

    def __init__(self, rng: random.Random, cards: dict[str, int] | None = None) -> None:
        self.rng = rng
        self.cards = [name for name, n in (cards or DECK_CARDS).items() for _ in range(n)]
        self._pile: list[str] = []

    def next(self) -> str:
        """The next card (transaction name); a new shuffled deck when the pile is empty."""
        if not self._pile:
            self._pile = list(self.cards)
            self.rng.shuffle(self._pile)
        return self._pile.pop()


class RandomSource:
    """The per-terminal inputs of the five transactions (clauses 2.4.1 - 2.8.1)."""

    def __init__(self, scale: Scale, c_load: int, seed: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.scale = scale
        self.c_last = valid_c_run(c_load, self.rng)
        self.c_id = self.rng.randint(0, scale.a_customer)
        self.c_item = self.rng.randint(0, scale.a_item)

    def customer_id(self) -> int:
        """A customer id by NURand (clause 2.1.6)."""
        return nurand(self.rng, self.scale.a_customer, 1, self.scale.customers_per_district, self.c_id)

    def item_id(self) -> int:
        """An item id by NURand."""
        return nurand(self.rng, self.scale.a_item, 1, self.scale.items, self.c_item)

    def customer_last_name(self) -> str:
        """A customer last name by NURand."""
        return last_name(nurand(self.rng, self.scale.a_last, 0, self.scale.last_names - 1, self.c_last))

    def other_warehouse(self, home: int) -> int:
        """A warehouse other than *home* (*home* itself when there is one)."""
        if self.scale.warehouses == 1:
            return home
        other = self.rng.randint(1, self.scale.warehouses - 1)
        return other + 1 if other >= home else other
