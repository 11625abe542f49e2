"""The result of a check, in the one JSON-ready shape both checkers return."""

from __future__ import annotations

from typing import Any

from chaosdb.history.consistency import boundary, prohibited_anomalies
from chaosdb.history.transactions import FAIL, INFO, OK, Transactions

__all__ = ["UNKNOWN_ANOMALIES", "result"]

#: Anomalies that make a history's verdict unknown rather than wrong (nothing to check, a search gave up).
UNKNOWN_ANOMALIES = frozenset({"empty-transaction-graph", "cycle-search-timeout"})


def result(model: str, consistency_model: str, txns: Transactions, anomalies: dict[str, list[Any]],
           max_examples: int) -> dict[str, Any]:
    """The verdict on the anomalies found (each with at least one example) under ``consistency_model``.

    ``valid`` is False when the model forbids one of them, "unknown" when only anomalies that leave the verdict open
    are left, True otherwise; anomalies the model allows are reported all the same. ``not``/``also_not`` are the
    models these anomalies rule out (the weakest ones, then the stronger rest), whatever model was asked for.
    ``counts`` says how many of each were found (``anomalies`` keeps at most ``max_examples`` of them).
    """
    prohibited = prohibited_anomalies(consistency_model)
    present = {name: examples[:max_examples] for name, examples in anomalies.items() if examples}
    if any(name in prohibited for name in present):
        valid: bool | str = False
    elif any(name in UNKNOWN_ANOMALIES for name in present):
        valid = "unknown"
    else:
        valid = True
    ruled_out, also_ruled_out = boundary(name for name in present if name not in UNKNOWN_ANOMALIES)
    counts = {name: len(examples) for name, examples in sorted(anomalies.items()) if examples}
    return {"valid": valid, "anomaly_types": sorted(present), "anomalies": present, "counts": counts,
            "not": ruled_out,
            "also_not": also_ruled_out, "consistency_model": consistency_model, "model": model,
            "transactions": txns.count(OK), "info": txns.count(INFO), "fail": txns.count(FAIL)}
