import collections
import random

import pytest

from chaosdb.workloads.ycsb import ScrambledZipfian, WorkloadA, Zipfian, fnv1a_64


def test_zipfian_is_skewed_towards_low_ranks_and_in_range():
    z = Zipfian(1000, rng=random.Random(1))
    values = [z.next() for _ in range(50_000)]
    assert 0 <= min(values) and max(values) < 1000
    counts = collections.Counter(values)
    assert counts[0] > counts[1] > counts[10] > counts.get(500, 0)
    assert counts[0] / len(values) > 0.1  # theta 0.99 over 1000 items: rank 0 gets ~13 %


def test_scrambled_zipfian_spreads_hot_keys():
    z = ScrambledZipfian(1000, rng=random.Random(2))
    hot = [k for k, _ in collections.Counter(z.next() for _ in range(20_000)).most_common(5)]
    assert hot != sorted(hot) or max(hot) - min(hot) > 5, "hot keys are not adjacent"
    assert fnv1a_64(0) != fnv1a_64(1)


def test_workload_a_is_half_reads_half_updates():
    w = WorkloadA(100, seed=3)
    ops = [w.next() for _ in range(10_000)]
    reads = sum(1 for o in ops if o.kind == "read") / len(ops)
    assert 0.47 < reads < 0.53
    updates = [o for o in ops if o.kind == "update"]
    assert all(0 <= o.field < 10 and len(o.value) == 100 and o.key.startswith("user") for o in updates)


def test_zipfian_needs_items():
    with pytest.raises(ValueError):
        Zipfian(1)


def test_scrambled_zipfian_is_ycsbs_the_hottest_record_gets_about_four_percent():
    """YCSB (and go-ycsb) draw a rank among 10^10 items and hash it into the records; a Zipfian over the records
    themselves gives the hottest one more than twice as much (and with it row-lock contention YCSB does not have)."""
    z = ScrambledZipfian(10_000, rng=random.Random(5))
    draws = [z.next() for _ in range(200_000)]
    assert 0 <= min(draws) and max(draws) < 10_000
    top = collections.Counter(draws).most_common(1)[0][1] / len(draws)
    assert 0.03 < top < 0.05  # 1 / zeta(10^10, 0.99) = 1 / 26.47 = 3.8 %
    over_records = Zipfian(10_000, rng=random.Random(5))
    top_plain = collections.Counter(over_records.next() for _ in range(200_000)).most_common(1)[0][1] / 200_000
    assert top_plain > 2 * top


def test_update_values_differ_and_have_the_field_length():
    w = WorkloadA(1000, seed=9)
    values = [o.value for o in (w.next() for _ in range(2000)) if o.kind == "update"]
    assert all(len(v) == 100 and v.isalpha() for v in values) and len(set(values)) > 0.99 * len(values)
