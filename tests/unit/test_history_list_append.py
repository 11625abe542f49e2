"""The list-append checker against the cases of Jepsen's Elle (its list_append_test.clj and elle-cli's histories),
restated as our own literals: same operations and values, same expected anomalies and verdicts."""

from __future__ import annotations

import json
import random

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.history.list_append import check_list_append
from tests.unit.history_ops import indexes, invoked, numbered, txn

RESULT_KEYS = {"valid", "anomaly_types", "anomalies", "not", "also_not", "consistency_model", "model",
               "transactions", "info", "fail", "counts"}


def a(k, v):
    return ("append", k, v)


def r(k, v=None):
    return ("r", k, v)


def check(history, model="serializable", **kw):
    return check_list_append(numbered(history), model, **kw)


def test_result_shape_and_counts():
    history = [txn(a("x", 1)), txn(r("x", [1])), txn(a("x", 2), outcome="fail"), txn(a("y", 1), outcome="info")]
    result = check(history)
    assert set(result) == RESULT_KEYS
    assert (result["model"], result["consistency_model"]) == ("list-append", "serializable")
    assert (result["transactions"], result["info"], result["fail"]) == (2, 1, 1)
    assert result["valid"] is True and result["anomaly_types"] == [] and result["not"] == []
    json.dumps(result)


def test_g0_write_cycle():
    # x's order says T1 then T2, y's says T2 then T1: only ww edges
    result = check([txn(a("x", 1), a("y", 1)), txn(a("x", 2), a("y", 2)), txn(r("x", [1, 2]), r("y", [2, 1]))])
    assert result["valid"] is False and result["anomaly_types"] == ["G0"]
    assert result["not"] == ["read-uncommitted"]
    example = result["anomalies"]["G0"][0]
    assert sorted(indexes(example)) == [0, 1]
    assert [s["type"] for s in example["cycle"]] == ["ww", "ww"]
    assert "T1 = {index 0" in example["explanation"] and "T2 = {index 1" in example["explanation"]
    assert example["explanation"].endswith("This is a cycle: G0.")


def test_g1a_aborted_read_and_the_empty_graph():
    history = [txn(a("x", 1), outcome="fail"), txn(r("x", [1]))]
    committed = check(history, "read-committed")
    assert committed["valid"] is False
    assert committed["anomaly_types"] == ["G1a", "empty-transaction-graph"]
    assert committed["not"] == ["read-committed"]
    assert indexes(committed["anomalies"]["G1a"][0]) == [1, 0]
    # read uncommitted allows G1a; with no dependency at all to check the verdict is unknown
    assert check(history, "read-uncommitted")["valid"] == "unknown"
    assert check(history, "repeatable-read")["valid"] is False


def test_g1a_every_read_of_a_failed_append():
    result = check([txn(r("x", [1]), a("x", 2)), txn(r("x", [1, 2]), r("y", [3])), txn(a("x", 1), outcome="fail"),
                    txn(a("y", 3))], "read-committed")
    assert [indexes(e) for e in result["anomalies"]["G1a"]] == [[0, 2], [1, 2]]


def test_g1b_intermediate_read_is_also_g_single():
    history = invoked(txn(a("x", 1), a("x", 2))) + invoked(txn(r("x", [1]), process=1))
    result = check(history, "strict-serializable")
    assert result["valid"] is False
    assert result["anomaly_types"] == ["G-single-item", "G1b"]
    assert indexes(result["anomalies"]["G1b"][0]) == [3, 1]
    assert "intermediate" in result["anomalies"]["G1b"][0]["explanation"]


def test_g1b_not_for_a_transaction_reading_its_own_append():
    assert "G1b" not in check([txn(a("x", 1), r("x", [1]), a("x", 2)), txn(r("x", [1, 2]))])["anomaly_types"]


def test_g1c_circular_information_flow():
    result = check([txn(a("x", 1), r("y", [1])), txn(a("x", 2), a("y", 1)), txn(r("x", [1, 2]))], "read-committed")
    assert result["valid"] is False and result["anomaly_types"] == ["G1c"]
    assert result["not"] == ["read-committed"]
    assert sorted(s["type"] for s in result["anomalies"]["G1c"][0]["cycle"]) == ["wr", "ww"]


def test_g_single_item():
    result = check([txn(a("x", 1), a("y", 1)), txn(a("x", 2), r("y")), txn(r("x", [1, 2]))])
    assert result["valid"] is False and result["anomaly_types"] == ["G-single-item"]
    assert result["not"] == ["consistent-view", "repeatable-read"]
    example = result["anomalies"]["G-single-item"][0]
    assert sorted(indexes(example)) == [0, 1]
    rw = next(s for s in example["cycle"] if s["type"] == "rw")
    assert (rw["from"], rw["to"], rw["key"], rw["value"]) == (1, 0, "y", 1)
    assert "did not see" in example["explanation"]


def test_g2_item_write_skew_allowed_by_snapshot_isolation_not_by_repeatable_read():
    # each reads the other's key empty and appends to its own
    history = [txn(a("x", 1), r("y")), txn(a("y", 1), r("x"))]
    for model in ("serializable", "repeatable-read"):
        result = check(history, model)
        assert result["valid"] is False and result["anomaly_types"] == ["G2-item"], model
        assert result["not"] == ["repeatable-read"]
    for model in ("snapshot-isolation", "read-committed"):
        result = check(history, model)
        assert result["valid"] is True, model
        assert result["anomaly_types"] == ["G2-item"]  # still reported
    assert [s["type"] for s in check(history)["anomalies"]["G2-item"][0]["cycle"]] == ["rw", "rw"]


def _stale_after_realtime(reader_process):
    return numbered([{"process": 0, "type": "invoke", "value": [["append", "x", 1]]},
                     {"process": 0, "type": "ok", "value": [["append", "x", 1]]},
                     {"process": 1, "type": "invoke", "value": [["append", "x", 2]]},
                     {"process": 1, "type": "ok", "value": [["append", "x", 2]]},
                     {"process": reader_process, "type": "invoke", "value": [["r", "x", None]]},
                     {"process": reader_process, "type": "ok", "value": [["r", "x", [1]]]},
                     {"process": 3, "type": "invoke", "value": [["r", "x", None]]},
                     {"process": 3, "type": "ok", "value": [["r", "x", [1, 2]]]}])


def test_realtime_cycle_valid_serializable_invalid_strict_serializable():
    # the read of [1] starts after the append of 2 completed, yet misses it
    history = _stale_after_realtime(2)
    assert check_list_append(history, "serializable")["valid"] is True
    result = check_list_append(history, "strict-serializable")
    assert result["valid"] is False and result["anomaly_types"] == ["G-single-item-realtime"]
    assert result["not"] == ["strong-snapshot-isolation"]
    example = result["anomalies"]["G-single-item-realtime"][0]
    assert sorted(indexes(example)) == [3, 5]
    assert sorted(s["type"] for s in example["cycle"]) == ["realtime", "rw"]
    assert "completed (index 3) before" in example["explanation"]


def test_process_cycle_for_strong_session_snapshot_isolation():
    history = _stale_after_realtime(1)  # the same process appended 2, then read [1]
    assert check_list_append(history, "serializable")["valid"] is True
    result = check_list_append(history, "strong-session-snapshot-isolation")
    assert result["valid"] is False and result["anomaly_types"] == ["G-single-item-process"]
    assert result["not"] == ["strong-session-snapshot-isolation"]
    assert "process 1 ran" in result["anomalies"]["G-single-item-process"][0]["explanation"]


def test_g_nonadjacent_item_process():
    history = numbered([{"process": 0, "type": "invoke", "value": [["r", "x", None], ["r", "z", None]]},
                        {"process": 0, "type": "ok", "value": [["r", "x", None], ["r", "z", [1]]]},
                        {"process": 1, "type": "invoke", "value": [["append", "x", 1]]},
                        {"process": 1, "type": "ok", "value": [["append", "x", 1]]},
                        {"process": 1, "type": "invoke", "value": [["r", "z", None]]},
                        {"process": 1, "type": "ok", "value": [["r", "z", None]]},
                        {"process": 2, "type": "invoke", "value": [["append", "z", 1]]},
                        {"process": 2, "type": "ok", "value": [["append", "z", 1]]}])
    assert check_list_append(history, "serializable")["valid"] is True
    result = check_list_append(history, "strong-session-snapshot-isolation")
    assert result["anomaly_types"] == ["G-nonadjacent-item-process"]
    assert sorted(indexes(result["anomalies"]["G-nonadjacent-item-process"][0])) == [1, 3, 5, 7]


def test_g_nonadjacent_item():
    history = (invoked(txn(a("x", 1))) + invoked(txn(r("x", [1]), r("y"), process=1))
               + invoked(txn(a("y", 1), process=2)) + invoked(txn(r("y", [1]), r("x"), process=3)))
    for model in ("serializable", "snapshot-isolation", "repeatable-read"):
        result = check(history, model)
        assert result["valid"] is False and result["anomaly_types"] == ["G-nonadjacent-item"], model
        assert result["not"] == ["repeatable-read", "snapshot-isolation"]
    cycle = check(history)["anomalies"]["G-nonadjacent-item"][0]["cycle"]
    assert sorted(s["type"] for s in cycle) == ["rw", "rw", "wr", "wr"]


def test_adjacent_rw_edges_are_not_g_nonadjacent():
    history = []
    for p, mops in enumerate([(r("x", [5]), a("y", 1)), (r("y"), a("z", 2)), (r("z"), a("t", 3)),
                              (r("t", [3]), a("u", 4)), (r("u"), a("x", 5))]):
        history += invoked(txn(*mops, process=p))
    result = check(history, "snapshot-isolation")
    assert result["valid"] is True
    assert "G-nonadjacent-item" not in result["anomaly_types"]


def test_incompatible_order_and_g1c():
    result = check([txn(a("x", 1), r("y", [1])), txn(a("x", 2)), txn(a("x", 3), a("y", 1)),
                    txn(r("x", [1, 3])), txn(r("x", [1, 2, 3]))], "read-committed")
    assert result["valid"] is False
    assert result["anomaly_types"] == ["G1c", "incompatible-order"]
    case = result["anomalies"]["incompatible-order"][0]
    assert case["key"] == "x" and case["values"] == [[1, 3], [1, 2, 3]]
    assert sorted(indexes(result["anomalies"]["G1c"][0])) == [0, 1, 2]


def test_dirty_update_direct_and_through_an_info():
    direct = check([txn(a("x", 1), outcome="fail"), txn(a("x", 2), process=1), txn(r("x", [1, 2]), process=2)],
                   "read-committed")
    assert "dirty-update" in direct["anomaly_types"] and direct["valid"] is False
    assert direct["anomalies"]["dirty-update"][0]["values"] == [1, 2]
    assert indexes(direct["anomalies"]["dirty-update"][0]) == [0, 1]
    indirect = check([txn(a("x", 1), outcome="fail"), txn(a("x", 2), outcome="info", process=1),
                      txn(a("x", 3), process=2), txn(r("x", [1, 2, 3]), process=3)])
    case = indirect["anomalies"]["dirty-update"][0]
    assert case["values"] == [1, 2, 3] and indexes(case) == [0, 2]
    assert check([txn(a("x", 1), outcome="fail")])["anomaly_types"] == ["empty-transaction-graph"]


def test_duplicate_elements():
    result = check([txn(a("x", 1), r("y", [1])), txn(a("x", 2), a("y", 1)), txn(r("x", [1, 2, 1]))],
                   "read-committed")
    assert result["valid"] is False
    # [1 2 1] also looks as if 1 came last: a G-single-item too (Elle's test notes it, then filters it out)
    assert result["anomaly_types"] == ["G-single-item", "G1c", "duplicate-elements"]
    assert result["anomalies"]["duplicate-elements"][0]["duplicates"] == {"1": 2}
    assert indexes(result["anomalies"]["duplicate-elements"][0]) == [2]


def test_internal_inconsistency():
    result = check([txn(a("x", 1), a("x", 2), a("x", 4)), txn(a("x", 3), r("x", [1, 2, 3, 4]))])
    assert "internal" in result["anomaly_types"] and result["valid"] is False
    case = result["anomalies"]["internal"][0]
    assert case["expected"] == "[... 3]" and indexes(case) == [1]


@pytest.mark.parametrize("mops, expected", [
    ([r("x", [1, 2]), a("x", 3), r("x", [1, 2])], "[1 2 3]"),         # stale
    ([r("x", [1, 2]), a("x", 3), r("x", [0, 2, 3])], "[1 2 3]"),      # wrong prefix
    ([r("x", [1, 2]), a("x", 3), r("x", [1, 2, 3, 4])], "[1 2 3]"),   # extended
    ([r("x", [1, 2]), a("x", 3), r("x", [1])], "[1 2 3]"),            # short
    ([a("x", 3), r("x", [1, 2, 3, 4])], "[... 3]"),                   # disagrees after an append
    ([a("x", 3), r("x", [])], "[... 3]"),                             # misses its own append
    ([a(0, 6), r(0)], "[... 6]"),                                     # FaunaDB's: read nil after an append
    ([r("x"), r("x", [2])], "[]"),                                    # read nil, then something
])
def test_internal_cases(mops, expected):
    # the other elements read are appended beforehand (a read of an element nothing appended is refused)
    setup = [txn(a("x", e)) for e in (0, 1, 2, 4)] + [txn(a("y", 5), a("y", 6))]
    result = check(setup + [txn(*mops)])
    assert [c["expected"] for c in result["anomalies"]["internal"]] == [expected]


def test_internal_consistency_holds():
    result = check([txn(a("x", 1), a("x", 2)), txn(a("y", 5), a("y", 6)), txn(r("y", [5, 6]), a("x", 3), r("x", [1, 2, 3]), a("x", 4), r("x", [1, 2, 3, 4]))])
    assert "internal" not in result["anomaly_types"]


@pytest.mark.parametrize("setup, mops, element", [
    ([txn(a("x", 0), a("x", 2), process=1)], [r("x", [0, 1, 2]), a("x", 1)], 1),
    ([], [a("x", 1), r("x", [0, 1]), a("x", 0), a("x", 3)], 0),
])
def test_future_read(setup, mops, element):
    result = check(setup + invoked(txn(*mops)), "read-committed")
    assert result["valid"] is False and "future-read" in result["anomaly_types"]
    assert result["anomalies"]["future-read"][0]["element"] == element


def test_unobserved_appends_come_after_everything_read():
    # x shows 1 then 2; y shows only 2, so y's 1 (never read) came after it; 3 is never read on either key
    history = []
    for mops in ([a("x", 1), a("y", 1)], [a("x", 2), a("y", 2)], [a("x", 3), a("y", 3)], [r("x", [1, 2])],
                 [r("y", [2])]):
        history.append({"process": len(history), "type": "invoke",
                        "value": [[m[0], m[1], None] if m[0] == "r" else list(m) for m in mops]})
    history += [{"process": p, "type": "ok", "value": [list(m) for m in mops]} for p, mops in enumerate(
        ([a("x", 1), a("y", 1)], [a("x", 2), a("y", 2)], [a("x", 3), a("y", 3)], [r("x", [1, 2])], [r("y", [2])]))]
    result = check(history)
    assert result["anomaly_types"] == ["G-single-item", "G0"]
    assert sorted(indexes(result["anomalies"]["G0"][0])) == [5, 6]
    assert sorted(indexes(result["anomalies"]["G-single-item"][0])) == [5, 6, 9]


def test_lost_update():
    history = invoked(txn(a("x", 0))) + invoked(txn(r("x", [0]), a("x", 1), process=1)) \
        + invoked(txn(r("x", [0]), a("x", 2), process=2))
    result = check(history)
    assert result["anomaly_types"] == ["G2-item", "lost-update"]
    assert result["not"] == ["cursor-stability", "update-atomic"]
    case = result["anomalies"]["lost-update"][0]
    assert case["key"] == "x" and case["value"] == [0] and indexes(case) == [3, 5]
    one_txn_two_appends = invoked(txn(r("x"), a("x", 1), a("x", 2))) + invoked(txn(r("x", [1, 2]), process=1))
    assert check(one_txn_two_appends)["valid"] is True


def test_wr_process_cycle():
    history = numbered([
        {"process": 1, "type": "invoke", "f": "txn", "value": [["r", "x"], ["append", "y", 1]]},
        {"process": 1, "type": "ok", "f": "txn", "value": [["r", "x", [1]], ["append", "y", 1]]},
        {"process": 2, "type": "invoke", "f": "txn", "value": [["r", "y"]]},
        {"process": 2, "type": "ok", "f": "txn", "value": [["r", "y", [1]]]},
        {"process": 2, "type": "invoke", "f": "txn", "value": [["append", "x", 1]]},
        {"process": 2, "type": "ok", "f": "txn", "value": [["append", "x", 1]]}])
    result = check_list_append(history, "strong-session-snapshot-isolation")
    assert result["valid"] is False and result["anomaly_types"] == ["G1c-process"]
    assert result["not"] == ["strong-session-read-committed"]


def test_repeatable_read_forbids_g_single_item_and_g_nonadjacent_item():
    single = invoked(txn(a("x", 1), a("y", 1))) + invoked(txn(r("x", [1]), r("y"), process=1))
    result = check(single, "repeatable-read")
    assert result["valid"] is False and result["anomaly_types"] == ["G-single-item"]
    history = []
    for p, mops in enumerate([(a("x", 1), a("t", 1)), (r("x", [1]), r("y")), (a("y", 1), a("z", 2)),
                              (r("z", [2]), r("t"))]):
        history += invoked(txn(*mops, process=p))
    result = check(history, "repeatable-read")
    assert result["valid"] is False and result["anomaly_types"] == ["G-nonadjacent-item"]
    assert result["not"] == ["repeatable-read", "snapshot-isolation"]


def test_info_reads_of_nil_say_nothing():
    # the crashed transaction's nil read of y must not order it before the append to y
    history = [txn(a("x", 2), r("y"), outcome="info"), txn(a("x", 1), a("y", 1), process=1),
               txn(r("x", [1, 2]), r("y", [1]), process=2)]
    assert check(history)["valid"] is True


def test_elle_cli_paper_example():
    # elle-cli's histories/elle/paper-example.json: its test expects it invalid (strict-serializable); the last
    # transaction reads key 255 without the 8 an earlier transaction appended and read
    history = [
        {"index": 0, "process": 1, "type": "invoke", "value": [["append", 253, 1], ["append", 253, 3],
                                                               ["append", 253, 4], ["append", 255, 2],
                                                               ["append", 255, 3], ["append", 255, 4],
                                                               ["append", 255, 5], ["append", 256, 1],
                                                               ["append", 256, 2]]},
        {"index": 2, "process": 1, "type": "invoke", "value": [["append", 255, 8], ["r", 253, None]]},
        {"index": 3, "process": 1, "type": "ok", "value": [["append", 255, 8], ["r", 253, [1, 3, 4]]]},
        {"index": 4, "process": 1, "type": "invoke", "value": [["append", 256, 4], ["r", 255, None],
                                                               ["r", 256, None], ["r", 253, None]]},
        {"index": 5, "process": 1, "type": "ok", "value": [["append", 256, 4], ["r", 255, [2, 3, 4, 5, 8]],
                                                           ["r", 256, [1, 2, 4]], ["r", 253, [1, 3, 4]]]},
        {"index": 6, "process": 1, "type": "invoke", "value": [["append", 250, 10], ["r", 253, None],
                                                               ["r", 255, None], ["append", 256, 3]]},
        {"index": 7, "process": 1, "type": "ok", "value": [["append", 250, 10], ["r", 253, [1, 3, 4]],
                                                           ["r", 255, [2, 3, 4, 5]], ["append", 256, 3]]},
    ]
    history.insert(1, dict(history[0], index=1, type="ok"))
    for model in ("strict-serializable", "serializable"):
        result = check_list_append(history, model)
        assert result["valid"] is False and result["anomaly_types"] == ["G-single-item"], model
        assert 7 in indexes(result["anomalies"]["G-single-item"][0])


def test_elle_cli_gh_30_is_not_serializable():
    # elle-cli's histories/elle/list-append-gh-30.edn (expected invalid under serializable): two transactions
    # each read empty a key the other appended to
    history = [
        {"index": 1, "type": "invoke", "process": 2, "value": [["append", 4, 2], ["append", 5, 5]]},
        {"index": 2, "type": "invoke", "process": 0, "value": [["r", 2, None], ["r", 3, None], ["append", 4, 0]]},
        {"index": 3, "type": "invoke", "process": 1, "value": [["append", 3, 1], ["append", 2, 4], ["r", 4, None]]},
        {"index": 4, "type": "ok", "process": 2, "value": [["append", 4, 2], ["append", 5, 5]]},
        {"index": 5, "type": "invoke", "process": 2, "value": [["append", 2, 8]]},
        {"index": 6, "type": "ok", "process": 1, "value": [["append", 3, 1], ["append", 2, 4], ["r", 4, []]]},
        {"index": 7, "type": "invoke", "process": 1, "value": [["append", 3, 7], ["append", 4, 10]]},
        {"index": 8, "type": "ok", "process": 0, "value": [["r", 2, []], ["r", 3, []], ["append", 4, 0]]},
        {"index": 9, "type": "ok", "process": 2, "value": [["append", 2, 8]]},
        {"index": 10, "type": "ok", "process": 1, "value": [["append", 3, 7], ["append", 4, 10]]},
    ]
    result = check_list_append(history, "serializable")
    assert result["valid"] is False and "G2-item" in result["anomaly_types"]
    assert sorted(indexes(result["anomalies"]["G2-item"][0])) == [6, 8]


def _serial_history(n, seed):
    """A strictly serial run: each transaction applied and completed before the next starts."""
    rng = random.Random(seed)
    store, history, counter = {}, [], 0
    for i in range(n):
        mops = []
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(6)
            if rng.random() < 0.5:
                mops.append(["r", k, list(store.get(k, []))])
            else:
                counter += 1
                store.setdefault(k, []).append(counter)
                mops.append(["append", k, counter])
        process = i % 3
        history.append({"process": process, "type": "invoke",
                        "value": [[f, k, None if f == "r" else v] for f, k, v in mops]})
        history.append({"process": process, "type": "ok", "value": mops})
    return numbered(history)


def test_serial_history_is_valid_under_every_model():
    history = _serial_history(300, seed=3)
    for model in ("strict-serializable", "strong-session-serializable", "serializable", "snapshot-isolation"):
        result = check_list_append(history, model)
        assert result["valid"] is True and result["anomaly_types"] == [], model


def test_max_examples_and_ignored_nemesis_events():
    history = [{"process": "nemesis", "type": "info", "f": "start", "value": None}]
    for i in range(5):
        history += [txn(a(f"x{i}", 1), r(f"y{i}")), txn(a(f"y{i}", 1), r(f"x{i}"))]
    result = check(history, max_examples=2)
    assert len(result["anomalies"]["G2-item"]) == 2 and result["transactions"] == 10


def test_refusals():
    with pytest.raises(ChaosDBError, match="twice"):
        check([txn(a("x", 1)), txn(a("x", 1))])
    with pytest.raises(ChaosDBError, match="position 0"):
        check([{"type": "ok", "process": 0, "value": [["w", "x", 1]]}])
    with pytest.raises(ChaosDBError, match="type"):
        check([{"type": "done", "process": 0, "value": []}])
    with pytest.raises(ChaosDBError, match="no transaction"):
        check([txn(r("x", [7]))])
    with pytest.raises(ValueError, match="did you mean 'strict-serializable'"):
        check([], "strict-serialisable")


def test_crashed_completion_without_value_takes_the_invocation():
    history = numbered([{"process": 0, "type": "invoke", "f": "txn", "value": [["append", "x", 1]]},
                        {"process": 0, "type": "info", "f": "txn"},
                        {"process": 1, "type": "fail", "f": "txn"},
                        {"process": 2, "type": "ok", "f": "txn", "value": [["r", "x", [1]]]}])
    result = check_list_append(history)
    assert (result["info"], result["fail"], result["transactions"]) == (1, 1, 1)
    assert result["valid"] is True


def test_snapshot_isolation_without_g_single_is_still_not_repeatable_read():
    # Elle's histories/si-without-g-single.edn: only G2-item cycles (adjacent rw edges), no G-single
    history = []
    for index, process, mops, read in [(10, 2, [a(9, 2)], None), (20, 4, [a(8, 1), r(9)], None),
                                       (30, 7, [r(6), r(8), a(9, 5)], None), (40, 9, [a(6, 2), r(9)], [2])]:
        invocation = [list(m) for m in mops]
        completion = [list(m) for m in mops]
        if read is not None:
            completion[-1][2] = read
        history += [{"index": index, "process": process, "type": "invoke", "f": "txn", "value": invocation},
                    {"index": index + 1, "process": process, "type": "ok", "f": "txn", "value": completion}]
    si = check_list_append(history, "snapshot-isolation")
    assert si["valid"] is True and si["anomaly_types"] == ["G2-item"]
    rr = check_list_append(history, "repeatable-read")
    assert rr["valid"] is False and rr["anomaly_types"] == ["G2-item"] and rr["not"] == ["repeatable-read"]
