import collections
import random

import pytest

from chaosdb.workloads.tpcc.rand import (
    DECK_CARDS,
    DECK_SIZE,
    Deck,
    RandomSource,
    Scale,
    last_name,
    nurand,
    scaled_a,
    think_time,
    valid_c_run,
)
from chaosdb.workloads.tpcc.terminal import home_of


def test_nurand_stays_in_range_and_is_skewed():
    rng = random.Random(1)
    values = [nurand(rng, 1023, 1, 3000, 123) for _ in range(30000)]
    assert min(values) >= 1 and max(values) <= 3000
    counts = collections.Counter(values)
    # non-uniform: the most frequent ids are far above the uniform expectation of 10
    assert counts.most_common(1)[0][1] > 30


def test_scaled_a_keeps_the_spec_fraction():
    assert scaled_a(8191, 100000, 100000) == 8191
    assert scaled_a(1023, 3000, 300) == 127  # 300 * 1024 / 3000 = 102 -> nearest power of two 128 - 1
    assert scaled_a(255, 1000, 300) == 63
    s = Scale.reduced(2, 10)
    assert (s.items, s.customers_per_district, s.last_names) == (10000, 300, 300)
    assert s.first_new_order == 211  # the last 30 % of 300 orders are undelivered


def test_last_names_from_syllables():
    assert last_name(0) == "BARBARBAR"
    assert last_name(371) == "PRICALLYOUGHT"
    assert last_name(999) == "EINGEINGEING"


def test_c_run_delta_rule():
    rng = random.Random(3)
    for c_load in range(0, 256, 5):
        delta = abs(valid_c_run(c_load, rng) - c_load)
        assert 65 <= delta <= 119 and delta not in (96, 112)


def test_run_time_last_names_exist_in_a_scaled_database():
    rnd = RandomSource(Scale.reduced(1, 30), c_load=17, seed=5)
    loaded = {last_name(i) for i in range(rnd.scale.last_names)}
    assert all(rnd.customer_last_name() in loaded for _ in range(2000))
    assert all(1 <= rnd.item_id() <= rnd.scale.items for _ in range(2000))


def test_deck_deals_every_card_once_per_pass_and_the_mix():
    deck = Deck(random.Random(9))
    draws = [deck.next() for _ in range(DECK_SIZE * 100)]
    counts = collections.Counter(draws)
    assert counts == {k: v * 100 for k, v in DECK_CARDS.items()}
    first = collections.Counter(draws[:DECK_SIZE])
    assert first == DECK_CARDS, "every pass of the deck deals exactly its cards"
    mix = {k: 100 * v / len(draws) for k, v in counts.items()}
    for name, target in {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}.items():
        assert abs(mix[name] - target) <= 2
    # the spec's minimum shares (5.2.3), New-Order the rest: the same mix as go-tpc's, so tpmC compares
    assert DECK_CARDS["payment"] / DECK_SIZE >= 0.43
    assert all(DECK_CARDS[n] / DECK_SIZE >= 0.04 for n in ("order_status", "delivery", "stock_level"))
    assert DECK_CARDS["new_order"] / DECK_SIZE == 0.45


def test_think_time_is_truncated_negative_exponential():
    rng = random.Random(4)
    values = [think_time(rng, 12.0) for _ in range(20000)]
    assert max(values) <= 120.0
    assert 11.0 < sum(values) / len(values) < 13.0
    assert think_time(rng, 0) == 0.0


def test_terminals_spread_evenly_across_warehouses_and_districts():
    homes = [home_of(t, 2) for t in range(40)]
    assert collections.Counter(w for w, _ in homes) == {1: 20, 2: 20}
    assert len(set(homes)) == 20
    # two worker processes with interleaved numbering cover the same homes
    worker0 = {home_of(i * 2 + 0, 2) for i in range(10)}
    worker1 = {home_of(i * 2 + 1, 2) for i in range(10)}
    assert {w for w, _ in worker0} == {1} and {w for w, _ in worker1} == {2}


@pytest.mark.parametrize("bad", [dict(items=50), dict(customers_per_district=25), dict(warehouses=0),
                                 dict(customers_per_district=305)])
def test_scale_validation(bad):
    with pytest.raises(ValueError):
        Scale(**bad)
