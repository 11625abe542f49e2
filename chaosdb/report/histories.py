"""The report's section on the operation history a run's load recorded (workloads ``list-append``, ``rw-register``,
``register-etcd``): checked from the run's folder alone, never against the database.

The history is checked against what the load asked of the database: its isolation level as a consistency model
(PostgreSQL's ``serializable`` is checked as ``serializable``, ``repeatable_read`` (its snapshot isolation) as
``snapshot-isolation``, ``read_committed`` and the server's default as ``read-committed``), a register for
linearizability. ``metrics.json`` keeps the verdict, the count of each anomaly and of the operations whose outcome
is unknown (``info``), and a few examples explained; a game day compares the counts across runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaosdb.history.check import anomaly_counts, check_history
from chaosdb.history.recording import history_files

__all__ = ["CONSISTENCY_OF_ISOLATION", "HISTORY_HEADER", "history_section", "history_sentences", "history_rows"]

#: the header of the section's table
HISTORY_HEADER = ["anomaly", "found", "first example"]

#: the consistency model a run's isolation level promises (PostgreSQL's levels)
CONSISTENCY_OF_ISOLATION = {"serializable": "serializable", "repeatable_read": "snapshot-isolation",
                            "read_committed": "read-committed", "default": "read-committed"}


def history_section(location: Path | str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The history of the run's folder checked (None when the load recorded none)."""
    if not Path(location).is_dir() or not history_files(location):
        return None
    promised = CONSISTENCY_OF_ISOLATION.get(str(settings.get("isolation") or "default"), "read-committed")
    result = check_history(location, None, promised, max_examples=3)
    counts = anomaly_counts(result)
    examples = {name: [{"explanation": e.get("explanation", ""), "served_by": e.get("served_by")}
                       for e in found[:2] if isinstance(e, dict)]
                for name, found in (result.get("anomalies") or {}).items()}
    return {"model": result.get("model"), "consistency_model": result.get("consistency_model"),
            "valid": result["valid"], "anomaly_types": result["anomaly_types"], "counts": counts,
            "anomaly_count": sum(counts.values()), "info": result.get("info", 0),
            "operations": result.get("operations", 0), "transactions": result.get("transactions"),
            "lost_appends": result.get("lost_appends"), "not": result.get("not", []), "examples": examples}


def history_sentences(h: dict[str, Any]) -> list[str]:
    """What the section says before its table: the history, the verdict, the models the anomalies rule out."""
    verdict = {True: "valid", False: "not valid"}.get(h["valid"], "unknown (the checker gave up)")
    out = [f"The load recorded a {h['model']} history of {h['operations']:,} events; {h['info']:,} operations ended "
           f"with an unknown outcome (info). Checked against {h['consistency_model']}: {verdict}."]
    if h.get("not"):
        out.append(f"The anomalies found rule out: {', '.join(h['not'])}.")
    return out


def history_rows(h: dict[str, Any]) -> list[list[str]]:
    """One row per anomaly: its name, how many were found, its first example explained."""
    rows = []
    for name, count in h["counts"].items():
        first = (h["examples"].get(name) or [{}])[0]
        served = first.get("served_by") or {}
        text = " ".join(str(first.get("explanation", "")).split())
        if served:
            text += " Served by: " + ", ".join(f"op {i} {node}" for i, node in served.items()) + "."
        rows.append([name, str(count), text])
    return rows
