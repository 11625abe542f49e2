"""YCSB-style workload A (50 % reads, 50 % updates, zipfian keys) on a SQL table.

Table ``usertable (ycsb_key varchar(64) PRIMARY KEY, field0 .. field9 varchar(100))``
with keys ``user<n>``; records are loaded with :func:`load`. Key choice is YCSB's
scrambled zipfian (as go-ycsb's ``requestdistribution=zipfian``): a Zipf(θ = 0.99) rank
among 10^10 items, hashed by FNV-1a into the records so that hot keys are not adjacent.

Operations are backend-neutral (:class:`Operation`) so that key-value stores
can be added as backends; :class:`SqlBackend` runs them through the shared
:class:`~chaosdb.workloads.executor.Executor`, so samples have the same format
and failure semantics as TPC-C's.
"""

from __future__ import annotations

import random
import string
import time
from dataclasses import dataclass
from typing import Any, Protocol

from chaosdb.workloads.executor import Executor
from chaosdb.workloads.samples import Sample

__all__ = ["Zipfian", "ScrambledZipfian", "WorkloadA", "Operation", "Backend", "SqlBackend", "load", "key_name", "FIELDS"]

FIELDS = 10
FIELD_LENGTH = 100
#: the statements of a read (every field, as YCSB's readallfields) and of an update of each field (prepared once per
#: connection)
READ = f"SELECT {', '.join(f'field{i}' for i in range(FIELDS))} FROM usertable WHERE ycsb_key = $1"
UPDATES = tuple(f"UPDATE usertable SET field{i} = $1 WHERE ycsb_key = $2" for i in range(FIELDS))


def fnv1a_64(value: int) -> int:
    """The 64-bit FNV-1a hash YCSB scrambles record numbers with."""
    h = 0xCBF29CE484222325
    for byte in value.to_bytes(8, "little"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


class Zipfian:
    """Zipf-distributed integers in [0, n) with constant θ (Gray et al., as in YCSB's ZipfianGenerator). *zetan*:
    the sum of 1/i^θ over the n items when known (YCSB precomputes it for 10^10 items)."""

    def __init__(self, n: int, theta: float = 0.99, rng: random.Random | None = None,
                 zetan: float | None = None) -> None:
        if n < 2:
            raise ValueError("zipfian needs at least 2 items")
        self.n, self.theta = n, theta
        self.rng = rng or random.Random()
        self.zetan = zetan if zetan is not None else sum(1.0 / (i ** theta) for i in range(1, n + 1))
        zeta2 = 1.0 + 0.5 ** theta
        self.alpha = 1.0 / (1.0 - theta)
        self.eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / self.zetan)
        self._half_pow = 1.0 + 0.5 ** theta

    def next(self) -> int:
        """The next record number, Zipfian distributed (YCSB's generator)."""
        u = self.rng.random()
        uz = u * self.zetan
        if uz < 1.0:
            return 0
        if uz < self._half_pow:
            return 1
        return min(self.n - 1, int(self.n * (self.eta * u - self.eta + 1.0) ** self.alpha))


#: YCSB's scrambled Zipfian draws a rank among this many items and hashes it into the records: the popularity of
#: a record is then that of every rank hashed to it (the hottest gets about 4 % of the operations, not the 9 % of
#: a Zipfian over 10,000 records)
SCRAMBLE_ITEMS = 10_000_000_000
#: the sum of 1/i^0.99 over SCRAMBLE_ITEMS items, as YCSB precomputes it (it cannot be summed at start)
SCRAMBLE_ZETAN = 26.46902820178302


class ScrambledZipfian:
    """YCSB's scrambled Zipfian over [0, n): a Zipfian rank among 10^10 items (θ = 0.99), hashed with FNV-1a 64
    (absolute value, as YCSB takes it) into the records, so hot records are spread over the key space. Another θ
    draws its ranks among the n records themselves (YCSB would sum 10^10 terms first)."""

    def __init__(self, n: int, theta: float = 0.99, rng: random.Random | None = None) -> None:
        if n < 2:
            raise ValueError("zipfian needs at least 2 items")
        self.n = n
        self._records: dict[int, int] = {}
        self.ranks = (Zipfian(SCRAMBLE_ITEMS, theta, rng, zetan=SCRAMBLE_ZETAN) if theta == 0.99
                      else Zipfian(n, theta, rng))

    def next(self) -> int:
        """The next record number, Zipfian popularity scattered over the key space by a hash."""
        rank = self.ranks.next()
        record = self._records.get(rank)
        if record is None:
            h = fnv1a_64(rank)
            record = (h if h < 1 << 63 else (1 << 64) - h) % self.n
            if len(self._records) < 1 << 16:  # the popular ranks come back: their records are remembered
                self._records[rank] = record
        return record


def key_name(n: int) -> str:
    """YCSB's key of record *n* as ``insertorder=ordered`` names it: ``user`` and its number (go-ycsb names it so too)."""
    return f"user{n}"


def _value(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters, k=FIELD_LENGTH))


#: letters an update's value is cut from (a random place each time: cheap, and no two updates alike)
VALUE_POOL = 1 << 16


@dataclass(slots=True)
class Operation:
    kind: str  # read | update
    key: str
    field: int = 0
    value: str = ""


class WorkloadA:
    """Chooses operations: 50/50 read/update over a scrambled-zipfian key."""

    read_proportion = 0.5

    def __init__(self, records: int, seed: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.keys = ScrambledZipfian(records, rng=self.rng)
        self._letters = "".join(self.rng.choices(string.ascii_letters, k=VALUE_POOL))
        self._names = [key_name(n) for n in range(records)]

    def next(self) -> Operation:
        """The next operation: a read or an update of a Zipfian-chosen key, 50/50 by default."""
        key = self._names[self.keys.next()]
        random = self.rng.random
        if random() < self.read_proportion:
            return Operation("read", key)
        at = int(random() * (VALUE_POOL - FIELD_LENGTH))
        return Operation("update", key, int(random() * FIELDS), self._letters[at:at + FIELD_LENGTH])


class Backend(Protocol):
    def execute(self, op: Operation, client: int) -> Sample:
        """Run *op* for client *client*; what happened, as a sample (never an exception)."""
        ...

    def close(self) -> None:
        """Close the backend's connections."""
        ...


class SqlBackend:
    """YCSB operations as SQL transactions on ``usertable``."""

    def __init__(self, dsn: str, client: int = 0, isolation: str = "default", max_retries: int = 5,
                 seed: int | None = None) -> None:
        self.executor = Executor(dsn, isolation, max_retries, application_name=f"ycsb-{client}", seed=seed)

    def execute(self, op: Operation, client: int) -> Sample:
        """A YCSB read or update on ``usertable`` as a sample: one statement in autocommit, one round trip (BEGIN and
        COMMIT would make it three); an update's key is kept when it committed or may have."""
        if op.kind == "read":
            return self.executor.run_statement("read", READ, (op.key,), client, fetch=True)
        return self.executor.run_statement("update", UPDATES[op.field], (op.value, op.key), client, write=True,
                                           key=op.key)

    def close(self) -> None:
        """Close the connection."""
        self.executor.close()


def load(dsn: str, records: int, seed: int = 7) -> dict[str, Any]:
    """Create ``usertable`` and insert the records that are missing (idempotent)."""
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    t0 = time.monotonic()
    rng = random.Random(seed)
    cols = ", ".join(f"field{i} varchar({FIELD_LENGTH})" for i in range(FIELDS))
    with psycopg.connect(dsn, connect_timeout=10) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS usertable (ycsb_key varchar(64) NOT NULL PRIMARY KEY, {cols})")
        have = conn.execute("SELECT count(*) FROM usertable").fetchone()[0]  # type: ignore[index]  # count(*) is one row
        conn.commit()
        if have >= records:
            return {"records": have, "inserted": 0, "seconds": round(time.monotonic() - t0, 2)}
        existing = {r[0] for r in conn.execute("SELECT ycsb_key FROM usertable")} if have else set()
        inserted = 0
        with conn.cursor().copy(f"COPY usertable (ycsb_key, {', '.join(f'field{i}' for i in range(FIELDS))}) "
                                "FROM STDIN") as copy:
            for n in range(records):
                k = key_name(n)
                if k in existing:
                    continue
                copy.write_row((k, *[_value(rng) for _ in range(FIELDS)]))
                inserted += 1
        conn.commit()
    return {"records": records, "inserted": inserted, "seconds": round(time.monotonic() - t0, 2)}
