"""UPB degradation indices (Under Pressure Benchmark, seeds/001).

Input (JSON): measured throughputs ``T[K][F]``, K = tolerated failures (replication / fault
tolerance level), F = failed nodes, ``T[0][0]`` the baseline without fault tolerance::

    {"T": {"0": {"0": 238.740},
           "1": {"0": 156.659, "1": 152.072},
           "2": {"0": 112.388, "1": 110.491, "2": 109.781}}}

Definitions (UPB section 3):

* ``D_{K,0} = (1 - T_{K,0} / T_{0,0}) * 100``   cost of fault tolerance (step 2)
* ``D_{K,F} = (1 - T_{K,F} / T_{K,0}) * 100``   degradation with F failures (step 3)
* ``DF_K = sum_{F=1..K} (1/F) D_{K,F} / sum_{F=1..K} (1/F)``   (simultaneous failures weigh less)
* ``D_T = mean over K=1..Kmax of D_{K,0}``; ``D_F = mean over K=1..Kmax of DF_K``

Negative values mean the throughput increased.
"""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["upb_indices", "render_upb_markdown"]


def _table(data: dict[str, Any]) -> dict[int, dict[int, float]]:
    raw = data.get("T", data)
    try:
        return {int(k): {int(f): float(v) for f, v in row.items()} for k, row in raw.items()}
    except (AttributeError, TypeError, ValueError):
        raise ChaosDBError('UPB input must be {"T": {"K": {"F": throughput}}} with numbers') from None


def upb_indices(data: dict[str, Any]) -> dict[str, Any]:
    """The UPB availability indices (D_K0, D_KF, DF_K, D_T, D_F) from throughputs measured by replicas down K and faults
    F."""
    t = _table(data)
    if 0 not in t or 0 not in t[0] or t[0][0] <= 0:
        raise ChaosDBError("UPB input needs the baseline T[0][0] > 0")
    ks = sorted(k for k in t if k > 0)
    if not ks:
        raise ChaosDBError("UPB input needs at least one K > 0")
    d_k0, d_kf, df_k = {}, {}, {}
    for k in ks:
        if 0 not in t[k]:
            raise ChaosDBError(f"T[{k}][0] is missing (throughput with K={k} and no failure)")
        d_k0[k] = (1 - t[k][0] / t[0][0]) * 100
        fs = sorted(f for f in t[k] if f > 0)
        bad = [f for f in fs if f > k]
        if bad:
            raise ChaosDBError(f"F must be <= K: T[{k}] has F={bad}")
        d_kf[k] = {f: (1 - t[k][f] / t[k][0]) * 100 for f in fs}
        if fs:
            df_k[k] = sum(d_kf[k][f] / f for f in fs) / sum(1 / f for f in fs)
    d_t = sum(d_k0.values()) / len(d_k0)
    d_f = sum(df_k.values()) / len(df_k) if df_k else None
    r = lambda v: round(v, 3)  # noqa: E731
    return {
        "D_K0": {str(k): r(v) for k, v in d_k0.items()},
        "D_KF": {str(k): {str(f): r(v) for f, v in row.items()} for k, row in d_kf.items()},
        "DF_K": {str(k): r(v) for k, v in df_k.items()},
        "D_T": r(d_t),
        "D_F": r(d_f) if d_f is not None else None,
    }


def render_upb_markdown(result: dict[str, Any]) -> str:
    """The UPB indices as a Markdown table."""
    lines = ["| K | D_K,0 (%) | D_K,F (%) by F | DF_K (%) |", "| ---: | ---: | --- | ---: |"]
    for k, v in result["D_K0"].items():
        kf = ", ".join(f"F={f}: {x:.3f}" for f, x in result["D_KF"].get(k, {}).items()) or "–"
        df = result["DF_K"].get(k)
        lines.append(f"| {k} | {v:.3f} | {kf} | {df:.3f} |" if df is not None else f"| {k} | {v:.3f} | {kf} | – |")
    lines.append("")
    lines.append(f"D_T = {result['D_T']:.3f} %   D_F = "
                 + (f"{result['D_F']:.3f} %" if result["D_F"] is not None else "–"))
    return "\n".join(lines) + "\n"
