"""Which anomalies each transactional consistency model forbids, and which models a set of anomalies rules out.

The facts (the hierarchy of models, which anomaly implies which, what each model forbids outright) are those of
Jepsen's Elle (``elle/consistency_model.clj``), written down here as plain tables. A model forbids what it forbids
itself, plus what every weaker model it implies forbids, plus every anomaly that implies one of those.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

__all__ = ["CONSISTENCY_MODELS", "COMMON_MODELS", "prohibited_anomalies", "implied_anomalies", "impossible_models", "boundary",
           "canonical_model"]

# A user's name for a model -> the name the tables below use (Adya's PL-n names where he has one).
_CANONICAL: dict[str, str] = {
    "consistent-view": "PL-2+",
    "conflict-serializable": "PL-3",
    "cursor-stability": "PL-CS",
    "forward-consistent-view": "PL-FCV",
    "monotonic-snapshot-read": "PL-MSR",
    "monotonic-view": "PL-2L",
    "read-committed": "PL-2",
    "read-uncommitted": "PL-1",
    "repeatable-read": "PL-2.99",
    "serializable": "PL-3",
    "snapshot-isolation": "PL-SI",
    "strict-serializable": "PL-SS",
    "strong-serializable": "PL-SS",
    "update-serializable": "PL-3U",
    "strong-session-read-uncommitted": "strong-session-PL-1",
    "strong-session-read-committed": "strong-session-PL-2",
    "strong-read-uncommitted": "strong-PL-1",
    "strong-read-committed": "strong-PL-2",
}

# The name we print for a canonical name (several user names share PL-3 and PL-SS; we print the common one).
_FRIENDLY: dict[str, str] = {**{canonical: name for name, canonical in _CANONICAL.items()},
                              "PL-3": "serializable", "PL-SS": "strict-serializable"}

# Model -> the models it implies directly (a history satisfying the first satisfies each of these).
_MODEL_IMPLIES: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("read-atomic",),
    "consistent-view": ("cursor-stability", "monotonic-view"),
    "conflict-serializable": ("view-serializable",),
    "cursor-stability": ("read-committed", "PL-2"),
    "forward-consistent-view": ("consistent-view",),
    "PL-2": ("PL-1",),
    "PL-3": ("repeatable-read", "update-serializable"),
    "update-serializable": ("forward-consistent-view",),
    "monotonic-atomic-view": ("read-committed",),
    "monotonic-view": ("PL-2",),
    "monotonic-snapshot-read": ("PL-2",),
    "parallel-snapshot-isolation": ("causal-cerone", "update-atomic"),
    "prefix": ("causal-cerone",),
    "read-atomic": ("monotonic-atomic-view",),
    "read-committed": ("read-uncommitted",),
    "repeatable-read": ("cursor-stability", "monotonic-atomic-view"),
    "update-atomic": ("read-atomic",),
    "serializable": ("repeatable-read", "snapshot-isolation", "view-serializable"),
    "session-serializable": ("1SR",),
    "snapshot-isolation": ("forward-consistent-view", "monotonic-atomic-view", "monotonic-snapshot-read",
                           "parallel-snapshot-isolation", "prefix"),
    "strict-serializable": ("PL-3", "serializable", "linearizable", "snapshot-isolation",
                            "strong-snapshot-isolation", "strong-session-serializable"),
    "strong-session-PL-1": ("PL-1",),
    "strong-session-PL-2": ("PL-2", "strong-session-PL-1"),
    "strong-PL-1": ("strong-session-PL-1",),
    "strong-PL-2": ("strong-session-PL-2", "strong-PL-1"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "strong-session-snapshot-isolation": ("snapshot-isolation", "strong-session-PL-2"),
    "strong-serializable": ("session-serializable",),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-PL-2"),
    "linearizable": ("sequential",),
    "sequential": ("causal",),
    "causal": ("writes-follow-reads", "PRAM"),
    "PRAM": ("monotonic-reads", "monotonic-writes", "read-your-writes"),
}

# Model -> the anomalies it forbids itself (weaker models it implies add theirs).
_MODEL_FORBIDS: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("internal", "G1a"),
    "cursor-stability": ("G1", "G-cursor", "lost-update"),
    "monotonic-view": ("G1", "G-monotonic"),
    "monotonic-snapshot-read": ("G1", "G-MSR"),
    "consistent-view": ("G1", "G-single"),
    "forward-consistent-view": ("G1", "G-SIb"),
    "parallel-snapshot-isolation": ("internal", "G1a"),
    "PL-3": ("G1", "G2", "predicate-read-miss", "PL-3-cycle-exists"),
    "PL-2": ("G1", "PL-2-cycle-exists"),
    "PL-1": ("G0", "duplicate-elements", "cyclic-versions", "PL-1-cycle-exists"),
    "prefix": ("internal", "G1a"),
    "serializable": ("internal",),
    "snapshot-isolation": ("internal", "G1", "G-SI", "G-nonadjacent", "PL-SI-cycle-exists"),
    "read-atomic": ("internal", "G1a", "future-read"),
    "repeatable-read": ("G1", "G2-item", "PL-2.99-cycle-exists", "lost-update"),
    "update-atomic": ("lost-update",),
    "strict-serializable": ("G1", "G1c-realtime", "G2-realtime", "PL-SS-cycle-exists"),
    "strong-session-PL-1": ("strong-session-PL-1-cycle-exists", "G0-process"),
    "strong-session-PL-2": ("strong-session-PL-2-cycle-exists", "G1c-process"),
    "strong-PL-1": ("strong-PL-1-cycle-exists", "G0-realtime"),
    "strong-PL-2": ("strong-PL-2-cycle-exists", "G1c-realtime"),
    "strong-session-snapshot-isolation": ("internal", "G1-process", "G-nonadjacent-process",
                                          "strong-session-snapshot-isolation-cycle-exists"),
    "strong-snapshot-isolation": ("internal", "G1-realtime", "G-nonadjacent-realtime",
                                  "strong-snapshot-isolation-cycle-exists"),
    "strong-session-serializable": ("G1-process", "G2-process", "strong-session-serializable-cycle-exists"),
    "update-serializable": ("G1", "G-update"),
}

# Anomaly -> the anomalies its presence implies (G1 is G1a or G1b or G1c; a G0 cycle is also a G1c cycle, ...).
_ANOMALY_IMPLIES: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1a": ("G1",),
    "G1b": ("G1",),
    "G1c": ("G1", "G1c-process"),
    "G1c-process": ("G1c-realtime", "G1-process"),
    "G1c-realtime": ("G1-realtime",),
    "G1": ("G1-process",),
    "G1-process": ("G1-realtime",),
    "G-single-item": ("G-single", "G-single-item-process", "G-nonadjacent-item"),
    "G-single-item-process": ("G-single-process", "G-single-item-realtime", "G-nonadjacent-item-process"),
    "G-single-item-realtime": ("G-single-realtime", "G-nonadjacent-item-realtime"),
    "G-single": ("G-nonadjacent", "GSIb", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent-item": ("G-nonadjacent", "G2-item", "G-nonadjacent-item-process"),
    "G-nonadjacent-item-process": ("G-nonadjacent-process", "G2-item-process", "G-nonadjacent-item-realtime"),
    "G-nonadjacent-item-realtime": ("G2-item-realtime", "G-nonadjacent-realtime"),
    "G-nonadjacent": ("G2", "G-nonadjacent-process"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime"),
    "G-nonadjacent-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2-process": ("G2-realtime",),
    "GSIa": ("GSI",),
    "GSIb": ("GSI",),
    "incompatible-order": ("G1a",),
    "future-read": ("G1c",),
    "dirty-update": ("G1a",),
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
}


def _canonical(model: str) -> str:
    return _CANONICAL.get(model, model)


def _invert(graph: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    inverted: dict[str, set[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            inverted.setdefault(target, set()).add(source)
    return inverted


def _reachable(graph: Mapping[str, Iterable[str]], starts: Iterable[str]) -> set[str]:
    seen = set(starts)
    todo = list(seen)
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _canonical_keys(graph: Mapping[str, Iterable[str]], rename_targets: bool) -> dict[str, tuple[str, ...]]:
    """The graph with its models under canonical names (two names of one model merge their entries)."""
    merged: dict[str, list[str]] = {}
    for source, targets in graph.items():
        merged.setdefault(_canonical(source), []).extend(_canonical(t) if rename_targets else t for t in targets)
    return {source: tuple(dict.fromkeys(targets)) for source, targets in merged.items()}


_IMPLIES = _canonical_keys(_MODEL_IMPLIES, rename_targets=True)
_IMPLIED_BY = _invert(_IMPLIES)
_FORBIDS = _canonical_keys(_MODEL_FORBIDS, rename_targets=False)
_FORBIDDEN_BY = _invert(_FORBIDS)
_ANOMALY_IMPLIED_BY = _invert(_ANOMALY_IMPLIES)

#: Every model name accepted (friendly and canonical names alike), sorted.
CONSISTENCY_MODELS: tuple[str, ...] = tuple(sorted(
    set(_CANONICAL) | set(_CANONICAL.values()) | set(_IMPLIES) | {t for ts in _IMPLIES.values() for t in ts}))


#: the models a refusal names (every name of :data:`CONSISTENCY_MODELS` is accepted)
COMMON_MODELS = ("read-committed", "repeatable-read", "snapshot-isolation", "serializable", "strict-serializable")


def canonical_model(model: str) -> str:
    """The canonical name of ``model``; raises ValueError (with a did-you-mean) for a name we do not know."""
    if model not in CONSISTENCY_MODELS:
        close = difflib.get_close_matches(str(model), CONSISTENCY_MODELS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown consistency model {model!r}{hint}; the usual ones are {', '.join(COMMON_MODELS)} "
                         f"(every name Elle uses is accepted: {len(CONSISTENCY_MODELS)} of them, such as PL-2 and "
                         "strong-session-serializable)")
    return _canonical(model)


def implied_anomalies(anomalies: Iterable[str]) -> frozenset[str]:
    """The given anomalies and every anomaly their presence implies (e.g. G0 implies G1c and G1)."""
    return frozenset(_reachable(_ANOMALY_IMPLIES, anomalies))


def prohibited_anomalies(model: str) -> frozenset[str]:
    """Every anomaly that cannot be present in a history satisfying ``model`` (ValueError for an unknown model)."""
    models = _reachable(_IMPLIES, [canonical_model(model)])
    direct = {a for m in models for a in _FORBIDS.get(m, ())}
    return frozenset(_reachable(_ANOMALY_IMPLIED_BY, direct))


def impossible_models(anomalies: Iterable[str]) -> frozenset[str]:
    """The canonical names of every model that the presence of these anomalies rules out."""
    forbidding = {m for a in implied_anomalies(anomalies) for m in _FORBIDDEN_BY.get(a, ())}
    return frozenset(_reachable(_IMPLIED_BY, forbidding))


def _weakest(models: set[str]) -> set[str]:
    """The models of the set not implied by another model of the set."""
    return {m for m in models if not (_reachable(_IMPLIES, [m]) - {m}) & models}


def boundary(anomalies: Iterable[str]) -> tuple[list[str], list[str]]:
    """(not, also_not): the weakest models these anomalies rule out, and the stronger ones they rule out as well.

    Names are the friendly ones, sorted, as Elle's ``:not`` and ``:also-not``.
    """
    ruled_out = set(impossible_models(anomalies))
    weakest = _weakest(ruled_out)
    friendly = _FRIENDLY.get
    return (sorted({friendly(m, m) for m in weakest}),
            sorted({friendly(m, m) for m in ruled_out - weakest}))
