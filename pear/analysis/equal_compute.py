"""Debate against self-consistency at equal compute.

Self-consistency (SC) with K samples costs about K initial calls; a debate costs many more.
:func:`sc_curve` gives, per (model, dataset), SC's accuracy and tokens per example at every K
of the run (CoT-SC is SC at K = n, ``sc@K`` the others).  :func:`sc_matched` sets every debate
method beside SC *at that method's mean tokens*: SC's accuracy there is interpolated linearly
in tokens between the two K's that bracket it (above the largest K, the largest K's accuracy:
stated in the ``match`` column), and the difference method - SC is bootstrapped over
questions, pairing each question's debate with the same question's SC answers (the
interpolated SC correctness of a question is the same weighted mix of its two K's).

>>> interpolation_weights([3000.0, 6000.0, 12000.0], 4500.0)
(0, 1, 0.5)
>>> interpolation_weights([3000.0, 6000.0], 9000.0)
(1, 1, 1.0)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from pear.analysis import stats
from pear.analysis.metrics import pooled_accuracy
from pear.catalog.labels import sort_rows, display
from pear.core.methods import sc_k

__all__ = ["sc_size", "sc_methods", "sc_curve", "interpolation_weights", "sc_matched",
           "table_sc_matched"]

KEYS = ["model", "dataset", "seed", "question_id"]


def sc_size(method: str, n_agents: int) -> int | None:
    """K of a self-consistency method: ``sc@K`` -> K, ``cot_sc`` -> ``n_agents``; None for
    any other method.

    >>> sc_size("sc@20", 5), sc_size("cot_sc", 5), sc_size("pear", 5)
    (20, 5, None)
    """
    return int(n_agents) if method == "cot_sc" else sc_k(method)


def sc_methods(debates: pd.DataFrame) -> tuple[str, ...]:
    """The ``sc@K`` methods present in ``debates``, by K.

    >>> sc_methods(pd.DataFrame({"method": ["pear", "sc@40", "sc@10", "cot_sc"]}))
    ('sc@10', 'sc@40')
    """
    names = [m for m in debates["method"].unique() if sc_k(m) is not None]
    return tuple(sorted(names, key=sc_k))


def _sc_debates(debates: pd.DataFrame) -> pd.DataFrame:
    """The SC debates with their K (``cot_sc`` dropped where an ``sc@K`` of the same K ran:
    they hold the same answers)."""
    k = [sc_size(m, n) for m, n in zip(debates["method"], debates["n_agents"])]
    out = debates.assign(K=pd.array(k, dtype="Int64")).dropna(subset=["K"])
    if out.empty:
        return out
    dup = out["method"].eq("cot_sc") & out.duplicated(["K", *KEYS], keep=False)
    return out[~dup].assign(K=out["K"].astype(int))


def sc_curve(debates: pd.DataFrame) -> pd.DataFrame:
    """SC's accuracy and mean tokens per example for every K, per (model, dataset):
    columns ``model, dataset, K, method, accuracy, tokens_per_example, n_debates``, sorted
    by K (needs the debates' ``n_agents`` to place CoT-SC)."""
    sc = _sc_debates(debates)
    cols = ["model", "dataset", "K", "method", "accuracy", "tokens_per_example", "n_debates"]
    if sc.empty:
        return pd.DataFrame(columns=cols)
    g = sc.groupby(["model", "dataset", "K", "method"])
    out = pd.DataFrame({"accuracy": pooled_accuracy(sc, ["model", "dataset", "K", "method"]),
                        "tokens_per_example": g["tokens"].mean(),
                        "n_debates": g.size()}).reset_index()
    return out.sort_values(["model", "dataset", "K"]).reset_index(drop=True)[cols]


def interpolation_weights(tokens: Sequence[float], x: float) -> tuple[int, int, float]:
    """Where ``x`` falls on a curve with increasing ``tokens``: ``(lo, hi, w)`` so that the
    value at ``x`` is ``(1 - w) * value[lo] + w * value[hi]``; clamped to the ends (below
    the first point: the first; above the last: the last)."""
    t = np.asarray(tokens, dtype=float)
    if t.size == 0 or np.any(np.diff(t) <= 0):
        raise ValueError(f"tokens must be a non-empty increasing sequence, got {t.tolist()}")
    if x <= t[0]:
        return 0, 0, 0.0
    if x >= t[-1]:
        return t.size - 1, t.size - 1, 1.0
    hi = int(np.searchsorted(t, x))
    lo = hi - 1
    return lo, hi, float((x - t[lo]) / (t[hi] - t[lo]))


def sc_matched(debates: pd.DataFrame, methods: Sequence[str] | None = None, *,
               n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """Every debate method beside SC at its own mean tokens per example, per (model,
    dataset): columns ``model, dataset, method, tokens_per_example, accuracy, sc_accuracy,
    diff, low, high, K, match, n_pairs``.

    ``sc_accuracy`` is SC's accuracy interpolated at the method's tokens between the
    bracketing K's (``match`` names them: "K=10..20", "above K=40 (K=40's accuracy)", "below
    K=5 (K=5's accuracy)"); ``K`` is the SC size nearest in tokens; ``diff`` = accuracy -
    sc_accuracy on the questions both ran, with a paired bootstrap 95% interval
    (``n_resamples`` resamples of questions, ``seed``)."""
    curve = sc_curve(debates)
    if curve.empty:
        raise ValueError("no self-consistency debates (cot_sc or sc@K) in these records: "
                         "nothing to compare at equal compute")
    debate_methods = [m for m in (methods or debates["method"].unique())
                      if sc_size(m, 1) is None and m != "cot"]
    sc = _sc_debates(debates)
    rng = np.random.default_rng(seed)
    rows = []
    for (model, ds), cur in curve.groupby(["model", "dataset"], sort=False):
        cur = cur.groupby("K", as_index=False).first()  # one method per K
        here = debates[(debates["model"] == model) & (debates["dataset"] == ds)]
        sc_here = sc[(sc["model"] == model) & (sc["dataset"] == ds)]
        wide = sc_here.pivot_table(index=KEYS, columns="K", values="correct", aggfunc="first")
        for m in debate_methods:
            deb = here[here["method"] == m]
            if deb.empty:
                continue
            tokens = float(deb["tokens"].mean())
            lo, hi, w = interpolation_weights(cur["tokens_per_example"].tolist(), tokens)
            k_lo, k_hi = int(cur["K"].iloc[lo]), int(cur["K"].iloc[hi])
            if tokens > cur["tokens_per_example"].iloc[-1]:
                match = f"above K={k_hi} (K={k_hi}'s accuracy)"
            elif tokens < cur["tokens_per_example"].iloc[0]:
                match = f"below K={k_lo} (K={k_lo}'s accuracy)"
            else:
                match = f"K={k_lo}..{k_hi}"
            nearest = int(cur["K"].iloc[int(np.argmin(np.abs(cur["tokens_per_example"]
                                                             - tokens)))])
            pairs = deb.set_index(KEYS)["correct"].astype(float).to_frame("method").join(
                wide[sorted({k_lo, k_hi})].astype(float), how="inner").dropna()
            sc_q = (1 - w) * pairs[k_lo].to_numpy() + w * pairs[k_hi].to_numpy()
            d = pairs["method"].to_numpy() - sc_q
            diff, low, high = stats.bootstrap_mean(d, n_resamples, rng=rng) if d.size \
                else (np.nan,) * 3
            rows.append({"model": model, "dataset": ds, "method": m,
                         "tokens_per_example": tokens, "accuracy": float(deb["correct"].mean()),
                         "sc_accuracy": float(sc_q.mean()) if d.size else np.nan,
                         "diff": diff, "low": low, "high": high, "K": nearest, "match": match,
                         "n_pairs": int(d.size)})
    out = pd.DataFrame(rows)
    if out.empty:
        raise ValueError("no debate method shares questions with the SC runs")
    return sort_rows(out, ["model", "dataset", "method"]).reset_index(drop=True)


def table_sc_matched(debates: pd.DataFrame, methods: Sequence[str] | None = None, *,
                     n_resamples: int = 5000, seed: int = 0) -> pd.DataFrame:
    """:func:`sc_matched` with display names, indexed by (Model, Dataset, Method); an empty
    table where the records hold no self-consistency run."""
    try:
        rows = sc_matched(debates, methods, n_resamples=n_resamples, seed=seed)
    except ValueError:
        rows = pd.DataFrame(columns=["model", "dataset", "method", "tokens_per_example",
                                     "accuracy", "sc_accuracy", "diff", "low", "high", "K",
                                     "match", "n_pairs"])
    out = display(rows).rename(columns={
        "model": "Model", "dataset": "Dataset", "method": "Method",
        "tokens_per_example": "Tokens / example", "accuracy": "Accuracy",
        "sc_accuracy": "SC accuracy at these tokens", "diff": "Diff", "low": "CI low",
        "high": "CI high", "K": "Nearest K", "match": "SC interpolated between",
        "n_pairs": "Pairs"})
    return out.set_index(["Model", "Dataset", "Method"])
