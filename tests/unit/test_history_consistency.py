"""Consistency models and anomalies, as Jepsen's Elle relates them (its consistency_model_test.clj's facts)."""

from __future__ import annotations

import pytest

from chaosdb.history.consistency import (
    CONSISTENCY_MODELS,
    boundary,
    implied_anomalies,
    impossible_models,
    prohibited_anomalies,
)
from chaosdb.history.graph import PROCESS, REALTIME, orders_needed


def test_the_usual_models_are_known():
    assert {"read-uncommitted", "read-committed", "repeatable-read", "snapshot-isolation", "serializable",
            "strict-serializable", "strong-session-snapshot-isolation", "strong-session-serializable",
            "strong-snapshot-isolation"} <= set(CONSISTENCY_MODELS)


def test_read_committed_forbids():
    assert prohibited_anomalies("read-committed") == {
        "dirty-update", "G1a", "G1b", "G1c", "G1", "G0", "PL-1-cycle-exists", "PL-2-cycle-exists",
        "cyclic-versions", "duplicate-elements", "incompatible-order", "future-read"}


def test_each_level_adds_its_anomalies():
    rr, si, ser, strict = (prohibited_anomalies(m) for m in ("repeatable-read", "snapshot-isolation",
                                                                "serializable", "strict-serializable"))
    assert {"G2-item", "G-single-item", "G-nonadjacent-item", "lost-update"} <= rr
    # snapshot isolation allows write skew (G2-item) but not G-single or lost updates
    assert "G2-item" not in si and {"G-single-item", "G-nonadjacent-item", "lost-update", "G1c"} <= si
    assert {"G2-item", "G-single-item", "G0", "internal"} <= ser
    assert not any(a.endswith(("-realtime", "-process")) for a in ser)
    assert {"G-single-item-realtime", "G2-item-realtime", "G1c-realtime", "G0-realtime"} <= strict
    assert not any(a.endswith("-process") for a in prohibited_anomalies("snapshot-isolation"))
    assert {"G-single-item-process", "G1c-process"} <= prohibited_anomalies("strong-session-snapshot-isolation")
    assert prohibited_anomalies("PL-3") == ser == prohibited_anomalies("conflict-serializable")


def test_orders_built_per_model():
    assert orders_needed("serializable") == 0 and orders_needed("snapshot-isolation") == 0
    assert orders_needed("strict-serializable") == REALTIME == orders_needed("strong-snapshot-isolation")
    assert orders_needed("strong-session-serializable") == PROCESS


def test_implied_anomalies():
    assert implied_anomalies(["G-SI"]) == {"G-SI"}
    assert {"G1c", "G1", "G0-process", "G1c-realtime"} <= implied_anomalies(["G0"])


@pytest.mark.parametrize("anomalies, weakest, stronger", [
    ([], [], []),
    (["internal"], ["read-atomic"], ["causal-cerone", "parallel-snapshot-isolation", "prefix", "serializable",
                                     "snapshot-isolation", "strict-serializable", "strong-session-serializable",
                                     "strong-session-snapshot-isolation", "strong-snapshot-isolation",
                                     "update-atomic"]),
    (["G-single"], ["consistent-view"], ["forward-consistent-view", "serializable", "snapshot-isolation",
                                         "strict-serializable", "strong-session-serializable",
                                         "strong-session-snapshot-isolation", "strong-snapshot-isolation",
                                         "update-serializable"]),
    (["G-single-realtime"], ["strong-snapshot-isolation"], ["strict-serializable"]),
    (["G2", "internal"], ["read-atomic"], ["causal-cerone", "parallel-snapshot-isolation", "prefix",
                                           "serializable", "snapshot-isolation", "strict-serializable",
                                           "strong-session-serializable", "strong-session-snapshot-isolation",
                                           "strong-snapshot-isolation", "update-atomic"]),
])
def test_boundary(anomalies, weakest, stronger):
    assert boundary(anomalies) == (weakest, stronger)


def test_boundary_facts():
    assert boundary(["G1a"])[0] == ["read-committed"]
    assert boundary(["cyclic-versions"])[0] == ["read-uncommitted"]
    assert boundary(["lost-update"])[0] == ["cursor-stability", "update-atomic"]
    assert boundary(["G2-item"])[0] == ["repeatable-read"]
    assert boundary(["dirty-update"])[0] == ["read-committed"]


def test_impossible_models():
    assert impossible_models(["G-SI"]) == {"PL-SI", "PL-3", "PL-SS", "strong-session-serializable",
                                           "strong-session-snapshot-isolation", "strong-snapshot-isolation"}


def test_unknown_model_names_the_usual_ones_in_one_sentence():
    with pytest.raises(ValueError, match="did you mean 'strong-snapshot-isolation'") as raised:
        prohibited_anomalies("stricct-snappshot-isolation")
    message = str(raised.value)
    assert "the usual ones are read-committed, repeatable-read, snapshot-isolation, serializable, " \
           "strict-serializable" in message and ". " not in message and len(message) < 300
