"""The rw-register checker against the cases of Jepsen's Elle (its rw_register_test.clj and elle-cli's
rw-register history), restated as our own literals."""

from __future__ import annotations

import json

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.history.rw_register import check_rw_register
from tests.unit.history_ops import indexes, invoked, numbered, txn


def w(k, v):
    return ("w", k, v)


def r(k, v=None):
    return ("r", k, v)


def check(history, model="serializable", **kw):
    return check_rw_register(numbered(history), model, **kw)


def test_result_shape():
    result = check([txn(w("x", 1)), txn(r("x", 1))])
    assert result["model"] == "rw-register" and result["valid"] is True and result["transactions"] == 2
    json.dumps(result)


@pytest.mark.parametrize("mops, expected", [
    ([r("x", 1), w("x", 2), r("x", 1)], 2),   # stale after its own write
    ([r("x"), r("x", 2)], None),               # read nil, then a value
])
def test_internal(mops, expected):
    result = check([txn(*mops)])
    assert "internal" in result["anomaly_types"] and result["valid"] is False
    assert result["anomalies"]["internal"][0]["expected"] == expected


def test_internal_consistency_holds():
    assert "internal" not in check([txn(r("y", 2), w("x", 2), r("x", 2), w("x", 1), r("x", 1))])["anomaly_types"]


def test_g1a_and_g1b():
    g1a = check([txn(r("x", 1)), txn(w("x", 1), outcome="fail")], "read-committed")
    assert g1a["anomaly_types"] == ["G1a", "empty-transaction-graph"] and g1a["valid"] is False
    assert indexes(g1a["anomalies"]["G1a"][0]) == [0, 1]
    g1b = check([txn(w("x", 1), w("x", 2)), txn(r("x", 1))], "read-committed")
    assert g1b["anomaly_types"] == ["G1b", "empty-transaction-graph"] and g1b["valid"] is False
    assert g1b["not"] == ["read-committed"]
    # the last write, and a transaction reading its own intermediate write, are fine
    assert "G1b" not in check([txn(w("x", 1), w("x", 2)), txn(r("x"), r("x", 2))])["anomaly_types"]


def test_g0_needs_sequential_keys():
    history = (invoked(txn(w("x", 1), w("y", 2), process=0)) + invoked(txn(w("x", 2), w("y", 1), process=1)))
    # two blind writers: nothing orders them, nothing to check
    assert check(history, "read-uncommitted")["valid"] == "unknown"
    history += invoked(txn(r("x", 2), process=0)) + invoked(txn(r("y", 2), process=1))
    assert check(history, "read-uncommitted")["valid"] is True
    result = check(history, "read-uncommitted", sequential_keys=True)
    assert result["valid"] is False and result["anomaly_types"] == ["G0"]
    assert sorted(indexes(result["anomalies"]["G0"][0])) == [1, 3]
    assert "a later version (ww)" in result["anomalies"]["G0"][0]["explanation"]


def test_g1c():
    history = [txn(w("x", 1), r("y", 1)), txn(w("y", 1), r("x", 1))]
    for model in ("read-committed", "serializable"):
        result = check(history, model)
        assert result["valid"] is False and result["anomaly_types"] == ["G1c"], model
        assert result["not"] == ["read-committed"]
    assert check(history, "read-uncommitted")["valid"] is True


def test_cyclic_versions_under_linearizable_keys():
    # 1 is written, then 2 is read, then 1 is read again: in real time the versions go 1, 2, 1
    history = invoked(txn(w("x", 1))) + invoked(txn(r("x", 2))) + invoked(txn(r("x", 1)))
    assert check(history[:4], "strict-serializable", linearizable_keys=True)["valid"] is True
    result = check(history, "strict-serializable", linearizable_keys=True)
    assert result["valid"] is False and result["anomaly_types"] == ["cyclic-versions"]
    assert result["not"] == ["read-uncommitted"]
    case = result["anomalies"]["cyclic-versions"][0]
    assert case["values"] == [1, 2] and case["sources"] == ["initial-state", "linearizable-keys"]


def test_cyclic_versions_under_writes_follow_reads():
    result = check([txn(r("x", 1), w("x", 2)), txn(r("x", 2), w("x", 1))], wfr_keys=True)
    assert "cyclic-versions" in result["anomaly_types"]
    assert result["anomalies"]["cyclic-versions"][0]["sources"] == ["initial-state", "wfr-keys"]


def test_g2_item_under_linearizable_keys():
    t1, t2, t3 = (invoked(txn(r("x", 1), r("y", 1), process=0)), invoked(txn(r("x", 1), w("y", 2), process=1)),
                  invoked(txn(r("y", 1), w("x", 2), process=2)))
    history = [t1[0], t1[1], t2[0], t3[0], t3[1], t2[1]]
    assert check(history)["valid"] == "unknown"  # without the assumption, nothing orders anything
    result = check(history, linearizable_keys=True)
    assert result["valid"] is False and result["anomaly_types"] == ["G2-item"]
    assert sorted(indexes(result["anomalies"]["G2-item"][0])) == [4, 5]
    assert check(history, "snapshot-isolation", linearizable_keys=True)["valid"] is True


def test_g_single_item_from_the_initial_state():
    # T1 read x as nil and read T2's y; T2 wrote both
    result = check([txn(r("x"), r("y", 1)), txn(w("x", 1), w("y", 1))])
    assert result["anomaly_types"] == ["G-single-item"] and result["valid"] is False
    assert "read key 'x' = nil" in result["anomalies"]["G-single-item"][0]["explanation"]


def test_realtime_wr_cycle_needs_strict_serializable():
    # the read of nil began after the write of 1 completed
    history = invoked(txn(w("x", 1))) + invoked(txn(r("x"), process=1)) + invoked(txn(r("x", 1), process=2))
    assert check(history)["valid"] is True
    result = check(history, "strict-serializable")
    assert result["valid"] is False and result["anomaly_types"] == ["G-single-item-realtime"]


def test_lost_update():
    result = check([txn(w("x", 0)), txn(r("x", 0), w("x", 1)), txn(r("x", 0), w("x", 2))])
    assert "lost-update" in result["anomaly_types"] and result["valid"] is False
    assert indexes(result["anomalies"]["lost-update"][0]) == [1, 2]


def test_elle_cli_rw_register_history_is_valid():
    # elle-cli's histories/elle/rw-register.json, which its test expects valid (strict-serializable); the read of 3,
    # a value nobody wrote, orders nothing
    history = [{"type": "invoke", "f": "txn", "value": [["w", "x", 2]], "process": 0, "index": 1},
               {"type": "ok", "f": "txn", "value": [["w", "x", 2]], "process": 0, "index": 2},
               {"type": "invoke", "f": "txn", "value": [["r", "x", None]], "process": 0, "index": 3},
               {"type": "ok", "f": "txn", "value": [["r", "x", 3]], "process": 0, "index": 4},
               {"type": "invoke", "f": "txn", "value": [["r", "x", None]], "process": 0, "index": 5},
               {"type": "ok", "f": "txn", "value": [["r", "x", 2]], "process": 0, "index": 6}]
    assert check_rw_register(history, "strict-serializable")["valid"] is True


def test_refusals():
    with pytest.raises(ChaosDBError, match="two transactions"):
        check([txn(w("x", 1)), txn(w("x", 1))])
    with pytest.raises(ChaosDBError, match="malformed"):
        check([txn(("append", "x", 1))])
    with pytest.raises(ValueError, match="unknown consistency model"):
        check([], "linearisable-ish")
