"""The analysis' former dict path (records -> DataFrames -> metrics), kept only to check that
the columnar view's metrics give the same values (test_view_vs_dicts.py); removed with it."""
from __future__ import annotations

from typing import Any, Iterable

IDENTITY = ("model", "backend", "dataset", "method", "seed", "question_id", "config_hash")

import warnings
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import entropy as scipy_entropy

from pear.config import (CONFIDENCE_MAX, CONFIDENCE_MIN, DEBATE_METHODS, FIXED_TOPOLOGIES,
                         METHOD_LABELS, METHODS, method as _method)

__all__ = [
    "GROUP", "DATASETS", "DATASET_LABELS", "DATASET_NAMES", "METHOD_NAMES", "PAPER_DIR",
    "seed_accuracy", "accuracy", "round_accuracy", "update_rates", "critique_rates",
    "influence_entropy", "mean_influence_entropy", "diagnostics", "macro_average", "costs",
    "gains", "gain_summary", "gains_versus", "rank_agreement", "pareto_front", "paired",
    "load_paper", "to_internal", "compare_with_paper",
]

GROUP = ("model", "dataset", "method")
"""The keys of one experimental cell; seeds and questions are averaged inside it."""
DATASETS = ("mmlu_pro", "truthfulqa", "gsm8k", "math500")
"""Internal dataset names in the order of the study's tables."""
DATASET_LABELS = {"mmlu_pro": "MMLU-Pro", "truthfulqa": "TruthfulQA", "gsm8k": "GSM8K",
                  "math500": "MATH-500"}
DATASET_NAMES = {v: k for k, v in DATASET_LABELS.items()}
"""Paper display name -> internal dataset name."""
METHOD_NAMES = {v: k for k, v in METHOD_LABELS.items()}
"""Paper display name -> internal method name."""
MODEL_SPELLINGS = {"Qwen2.5-14B": "Qwen-2.5-14B"}
"""The paper spells one model two ways; :func:`to_internal` keeps the main table's."""
PAPER_DIR = Path(__file__).resolve().parent.parent / "data" / "paper"
_SINGLE = {m for m in METHODS if _method(m).kind == "single"}


def _rank(col: pd.Series) -> pd.Series:
    order = {"method": METHODS, "dataset": DATASETS}.get(str(col.name))
    if order is None:
        return col
    pos = {name: i for i, name in enumerate(order)}
    return col.map(lambda v: (pos.get(v, len(pos)), str(v)))


def _sorted(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by ``keys``, methods and datasets in the study's table order."""
    keys = [k for k in keys if k in df.columns]
    return df.sort_values(keys, key=_rank).reset_index(drop=True) if keys else df


def _across_seeds(per_seed: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Mean and sample std (ddof=1; 0 with one seed) of per-seed accuracies."""
    out = per_seed.groupby(list(keys), sort=False).agg(
        accuracy=("accuracy", "mean"),
        std=("accuracy", lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0),
        n_seeds=("seed", "nunique"), n_questions=("n_questions", "min")).reset_index()
    return _sorted(out, keys)


def seed_accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Per-seed final-answer accuracy: columns ``model, dataset, method, seed, accuracy,
    n_questions`` (accuracy = mean of the 0/1 ``correct`` over that seed's questions)."""
    out = debates.groupby([*GROUP, "seed"], sort=False)["correct"].agg(
        accuracy="mean", n_questions="size").reset_index()
    out["accuracy"] = out["accuracy"].astype(float)
    return _sorted(out, [*GROUP, "seed"])


def accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Final-answer accuracy per (model, dataset, method): mean and std ACROSS SEEDS.

    Columns ``model, dataset, method, accuracy, std, n_seeds, n_questions``: each seed's
    accuracy is first the mean of 0/1 correctness over its questions; ``accuracy`` and
    ``std`` (ddof=1, 0 when one seed) are then taken over those per-seed values, never over
    the 0/1 flags.  ``n_questions`` is the smallest number of questions of any seed.
    """
    return _across_seeds(seed_accuracy(debates), GROUP)


def round_accuracy(agent_rounds: pd.DataFrame) -> pd.DataFrame:
    """Accuracy of the vote after each round (round 0 = the initial answers), mean and std
    across seeds as in :func:`accuracy`: columns ``model, dataset, method, round, accuracy,
    std, n_seeds, n_questions``.

    Methods without debate rounds (``cot``, ``cot_sc``: records with round 0 only) are
    carried flat over rounds 0..R, R the last round of any debate method of the same
    (model, dataset), so that they draw as horizontal reference lines.

    >>> ar = pd.DataFrame({"model": "m", "dataset": "d", "seed": 0, "agent": 0,
    ...     "method": ["cot", "pear", "pear"], "debate_id": ["a", "b", "b"],
    ...     "round": [0, 0, 1], "vote_correct": [True, False, True]})
    >>> round_accuracy(ar)[["method", "round", "accuracy"]].values.tolist()
    [['cot', 0, 1.0], ['cot', 1, 1.0], ['pear', 0, 0.0], ['pear', 1, 1.0]]
    """
    votes = agent_rounds.drop_duplicates(["debate_id", "round"])
    per_seed = votes.groupby([*GROUP, "seed", "round"], sort=False)["vote_correct"].agg(
        accuracy="mean", n_questions="size").reset_index()
    per_seed["accuracy"] = per_seed["accuracy"].astype(float)
    out = _across_seeds(per_seed, [*GROUP, "round"])
    last = out.groupby(list(GROUP))["round"].transform("max")
    horizon = out[last > 0].groupby(["model", "dataset"])["round"].max()
    flat = [row.to_frame().T.assign(round=r) for _, row in out[last == 0].iterrows()
            for r in range(1, int(horizon.get((row["model"], row["dataset"]), 0)) + 1)]
    out = pd.concat([out, *flat], ignore_index=True).astype(out.dtypes.to_dict())
    return _sorted(out, [*GROUP, "round"])


def update_rates(agent_rounds: pd.DataFrame, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Wrong-to-right and right-to-wrong rates of agent updates, pooled within ``by``.

    An update is one agent in round r-1 and in round r of the same debate.  Columns:
    ``updates, from_wrong, from_right, w2r_count, r2w_count`` and the rates
    ``w2r = w2r_count / from_wrong`` (wrong answers that became right), ``r2w = r2w_count
    / from_right`` (right answers that became wrong) and ``net = w2r - r2w``.

    Why conditional rates: the study's diagnostics print W2R ~0.32, R2W ~0.11, Net ~0.21
    per round.  As shares of all updates a Net of 0.21 would raise agent accuracy by 21
    points every round, far beyond the ~14-point total gain from CoT to debate in its main
    table; as conditional rates the accuracy settles where (1-a) 0.32 = a 0.11, at
    a ~0.74, which is where its debate accuracies lie (0.68-0.75).  Groups with no update
    at all (CoT, CoT-SC) get 0, as the study prints; a rate with an empty denominator in a
    group that has updates is NaN.

    >>> ar = pd.DataFrame({"model": "m", "dataset": "d", "method": "pear", "debate_id": "x",
    ...     "agent": [0, 1, 0, 1], "round": [0, 0, 1, 1], "correct": [False, True, True, True]})
    >>> update_rates(ar)[["updates", "w2r_count", "w2r", "r2w", "net"]].to_dict("records")
    [{'updates': 2, 'w2r_count': 1, 'w2r': 1.0, 'r2w': 0.0, 'net': 1.0}]
    """
    by = list(by)
    cur = agent_rounds[[*by, "debate_id", "agent", "round", "correct"]]
    prev = cur[["debate_id", "agent", "round", "correct"]].assign(
        round=cur["round"] + 1).rename(columns={"correct": "before"})
    upd = cur.merge(prev, on=["debate_id", "agent", "round"])
    before, after = upd["before"].astype(bool), upd["correct"].astype(bool)
    upd = upd.assign(from_wrong=~before, from_right=before, w2r_count=~before & after,
                     r2w_count=before & ~after)
    cols = ["from_wrong", "from_right", "w2r_count", "r2w_count"]
    counts = upd.groupby(by)[cols].sum().astype(int)
    counts.insert(0, "updates", upd.groupby(by).size())
    groups = agent_rounds[by].drop_duplicates().set_index(by).index
    out = counts.reindex(groups, fill_value=0).reset_index()
    none = out["updates"] == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out["w2r"] = np.where(none, 0.0, out["w2r_count"] / out["from_wrong"].replace(0, np.nan))
        out["r2w"] = np.where(none, 0.0, out["r2w_count"] / out["from_right"].replace(0, np.nan))
    out["net"] = out["w2r"] - out["r2w"]
    return _sorted(out, by)


def critique_rates(critiques: pd.DataFrame, agent_rounds: pd.DataFrame | None = None,
                   by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Critique diagnostics over routed edges, pooled within ``by``.

    Columns ``edges`` (routed critique edges), ``decisions`` (delivered critiques with an
    ACCEPT/REJECT decision), ``acceptance`` (share ACCEPT among ``decisions``),
    ``cross_answer`` (share of edges whose source answered differently from its target when
    the critique was written) and ``source_confidence`` (mean of (c - 1) / 4, the source's
    confidence c on the 1..5 scale mapped to [0, 1]).  With ``agent_rounds`` the answers of
    round r-1 are compared after canonicalisation (``canonical``); without it the record's
    ``cross_answer`` flag (raw answer strings) is used.  Groups without critiques are absent.

    >>> c = pd.DataFrame({"model": "m", "dataset": "d", "method": "pear", "delivered": True,
    ...     "decision": ["ACCEPT", "REJECT", None], "cross_answer": [True, False, True],
    ...     "source_confidence": [5, 3, 1]})
    >>> out = critique_rates(c)[["acceptance", "cross_answer", "source_confidence"]]
    >>> out.round(3).values.tolist()
    [[0.5, 0.667, 0.5]]
    """
    by = list(by)
    crit = critiques.copy()
    if agent_rounds is not None and len(crit):
        ans = agent_rounds[["debate_id", "round", "agent", "canonical"]].assign(
            round=agent_rounds["round"] + 1)
        for side in ("source", "target"):
            crit = crit.merge(ans.rename(columns={"agent": side, "canonical": f"_{side}"}),
                              on=["debate_id", "round", side], how="left")
        known = crit["_source"].notna() & crit["_target"].notna()
        crit["cross_answer"] = np.where(known, crit["_source"] != crit["_target"],
                                        crit["cross_answer"])
    has_decision = crit["delivered"].astype(bool) & crit["decision"].notna()
    crit = crit.assign(
        _decided=has_decision, _accepted=has_decision & (crit["decision"] == "ACCEPT"),
        _cross=crit["cross_answer"].astype(float),
        _conf=(crit["source_confidence"] - CONFIDENCE_MIN) / (CONFIDENCE_MAX - CONFIDENCE_MIN))
    g = crit.groupby(by)
    out = pd.DataFrame({"edges": g.size(), "decisions": g["_decided"].sum().astype(int),
                        "acceptance": g["_accepted"].sum() / g["_decided"].sum().replace(0, np.nan),
                        "cross_answer": g["_cross"].mean(), "source_confidence": g["_conf"].mean()})
    return _sorted(out.reset_index(), by)


def influence_entropy(influence: Sequence[float] | np.ndarray) -> float:
    """Normalised entropy H(rho / sum rho) / log n of an influence vector of n agents.

    1 = influence spread evenly, 0 = one agent holds it all.  An all-zero vector (no
    critique ever accepted) and a single agent give 0 by convention.

    >>> influence_entropy([0.2] * 5), influence_entropy([0, 0, 0]), influence_entropy([0, 1])
    (1.0, 0.0, 0.0)
    """
    rho = np.asarray(influence, dtype=float)
    if (rho < 0).any():
        raise ValueError(f"influence must be non-negative, got {rho.tolist()}")
    total = rho.sum()
    if rho.size <= 1 or total <= 0:
        return 0.0
    return float(min(1.0, max(0.0, scipy_entropy(rho) / np.log(rho.size))))


def mean_influence_entropy(debates: pd.DataFrame, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Mean over debates of the normalised entropy of the final influence vector.

    Debates without debate rounds have no influence update; their vote weighs every answer
    equally, so they count as uniform influence: 0 for a single answer (``cot``), 1 for
    several (``cot_sc``), as in the study's diagnostics.  Column ``influence_entropy``.
    """
    def one(row: pd.Series) -> float:
        if row["method"] in DEBATE_METHODS and row.get("rounds", 1) != 0:
            return influence_entropy(row["final_influence"])
        return 0.0 if row["method"] in _SINGLE or row["n_agents"] <= 1 else 1.0

    ent = debates.apply(one, axis=1) if len(debates) else pd.Series(dtype=float)
    out = debates.assign(influence_entropy=ent).groupby(list(by))["influence_entropy"].mean()
    return _sorted(out.reset_index(), by)


def diagnostics(debates: pd.DataFrame, agent_rounds: pd.DataFrame, critiques: pd.DataFrame,
                by: Sequence[str] = GROUP) -> pd.DataFrame:
    """The study's trajectory diagnostics, pooled within ``by``: ``w2r, r2w, net,
    acceptance, cross_answer, source_confidence, influence_entropy`` (see
    :func:`update_rates`, :func:`critique_rates`, :func:`mean_influence_entropy`); methods
    without debate rounds get 0 for the update rates and NaN for the critique columns."""
    by = list(by)
    base = debates[by].drop_duplicates()
    upd = update_rates(agent_rounds, by)[[*by, "w2r", "r2w", "net"]]
    crit = critique_rates(critiques, agent_rounds, by)[
        [*by, "acceptance", "cross_answer", "source_confidence"]]
    out = (base.merge(upd, on=by, how="left").merge(crit, on=by, how="left")
           .merge(mean_influence_entropy(debates, by), on=by, how="left"))
    return _sorted(out, by)


def macro_average(df: pd.DataFrame, by: Sequence[str] = ("method",)) -> pd.DataFrame:
    """Unweighted mean of every numeric column over the rows sharing ``by`` (the study's
    "averaged over settings"), NaN skipped.

    >>> macro_average(pd.DataFrame({"method": ["a", "a"], "x": [0.2, 0.4]}))["x"].tolist()
    [0.30000000000000004]
    """
    num = [c for c in df.select_dtypes("number").columns if c not in by]
    return _sorted(df.groupby(list(by))[num].mean().reset_index(), by)


def costs(debates: pd.DataFrame, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Cost per example (per debate): ``tokens_per_example`` (prompt + completion),
    ``prompt_tokens, completion_tokens, cached_tokens`` (means; cached is part of prompt),
    ``calls_per_example``, ``parse_failure_rate`` (parse failures / calls) and
    ``n_debates``."""
    g = debates.groupby(list(by))
    out = pd.DataFrame({
        "tokens_per_example": g["tokens"].mean(), "prompt_tokens": g["prompt_tokens"].mean(),
        "completion_tokens": g["completion_tokens"].mean(),
        "cached_tokens": g["cached_tokens"].mean(), "calls_per_example": g["calls"].mean(),
        "parse_failure_rate": g["parse_failures"].sum() / g["calls"].sum().replace(0, np.nan),
        "n_debates": g.size()})
    return _sorted(out.reset_index(), by)


def gains(acc: pd.DataFrame, method: str = "pear", against: str = "best_fixed") -> pd.DataFrame:
    """Accuracy gain of ``method`` over a reference per (model, dataset) setting, in points.

    ``against`` is a method name or ``"best_fixed"``: the best of the fixed topologies
    (clique, star, chain, ring) present in that setting.  Columns ``model, dataset,
    reference, reference_accuracy, accuracy, gain`` with gain = 100 (acc - ref).

    >>> a = pd.DataFrame({"model": "m", "dataset": "gsm8k", "method": ["pear", "clique", "ring"],
    ...                   "accuracy": [0.75, 0.70, 0.72]})
    >>> gains(a)[["reference", "gain"]].to_dict("records")
    [{'reference': 'ring', 'gain': 3.0}]
    """
    table = acc.pivot_table(index=["model", "dataset"], columns="method", values="accuracy")
    if method not in table:
        raise ValueError(f"method {method!r} has no accuracy in the table")
    if against == "best_fixed":
        fixed = [m for m in FIXED_TOPOLOGIES if m in table]
        if not fixed:
            raise ValueError(f"no fixed topology ({', '.join(FIXED_TOPOLOGIES)}) in the table")
        known = table[fixed].dropna(how="all")
        ref, name = known.max(axis=1), known.idxmax(axis=1)
    elif against in table:
        ref, name = table[against], pd.Series(against, index=table.index)
    else:
        raise ValueError(f"reference {against!r} has no accuracy in the table")
    out = pd.DataFrame({"reference": name, "reference_accuracy": ref, "accuracy": table[method]})
    out = out.dropna(subset=["reference_accuracy", "accuracy"])
    out["gain"] = (100 * (out["accuracy"] - out["reference_accuracy"])).round(10)
    return _sorted(out.reset_index(), ["model", "dataset"])


def gain_summary(gain_df: pd.DataFrame) -> pd.DataFrame:
    """Mean gain per dataset, per model and overall, as the study's text quotes them:
    columns ``level`` (dataset / model / overall), ``key``, ``gain``, ``n_settings``."""
    parts = []
    for level in ("dataset", "model"):
        g = gain_df.groupby(level)["gain"].agg(gain="mean", n_settings="size").reset_index()
        parts.append(_sorted(g, [level]).rename(columns={level: "key"}).assign(level=level))
    parts.append(pd.DataFrame({"level": ["overall"], "key": ["all"],
                               "gain": [gain_df["gain"].mean()], "n_settings": [len(gain_df)]}))
    return pd.concat(parts, ignore_index=True)[["level", "key", "gain", "n_settings"]]


def gains_versus(acc: pd.DataFrame, method: str = "pear",
                 references: Sequence[str] = ("best_fixed", "random", *FIXED_TOPOLOGIES)
                 ) -> pd.DataFrame:
    """Mean gain (points) of ``method`` over each reference present: ``reference, gain,
    n_settings``."""
    present = set(acc["method"])
    rows = [{"reference": r, "gain": (g := gains(acc, method, r))["gain"].mean(),
             "n_settings": len(g)} for r in references
            if r == "best_fixed" and present & set(FIXED_TOPOLOGIES) or r in present]
    return pd.DataFrame(rows, columns=["reference", "gain", "n_settings"])


def rank_agreement(acc_a: pd.DataFrame, acc_b: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rho (:func:`pear.stats.spearman`) between two accuracy tables (e.g. the
    subset's and the full set's, from :func:`accuracy`) over the methods in both, per
    (model, dataset) in both: ``model, dataset, n_methods, rho, p_value`` (NaN with fewer
    than 3 methods or constant accuracies).

    >>> a = pd.DataFrame({"model": "m", "dataset": "gsm8k", "method": ["x", "y", "z"],
    ...                   "accuracy": [0.1, 0.2, 0.3]})
    >>> out = rank_agreement(a, a.assign(accuracy=[0.3, 0.5, 0.4]))
    >>> out[["n_methods", "rho"]].to_dict("records")
    [{'n_methods': 3, 'rho': 0.5}]
    """
    from pear.stats import spearman  # pear.stats imports this module
    both = acc_a.merge(acc_b, on=list(GROUP), suffixes=("_a", "_b"))
    rows = []
    for (m, ds), part in both.groupby(["model", "dataset"], sort=False):
        rho = p = np.nan
        if len(part) >= 3:
            with warnings.catch_warnings():  # constant accuracies: rho undefined (NaN)
                warnings.simplefilter("ignore")
                rho, p = spearman(part["accuracy_a"], part["accuracy_b"])
        rows.append({"model": m, "dataset": ds, "n_methods": len(part), "rho": rho, "p_value": p})
    out = pd.DataFrame(rows, columns=["model", "dataset", "n_methods", "rho", "p_value"])
    return _sorted(out, ["dataset"])


def pareto_front(tokens: Sequence[float], accuracy: Sequence[float]) -> np.ndarray:
    """Boolean mask of the Pareto-optimal points: no other point has at most the tokens and
    at least the accuracy, better in one.  Points with equal (tokens, accuracy) tie as optimal.

    >>> pareto_front([800, 3100, 24800, 32300], [0.55, 0.59, 0.68, 0.75]).tolist()
    [True, True, True, True]
    >>> pareto_front([1, 2, 3], [0.5, 0.4, 0.6]).tolist()
    [True, False, True]
    """
    t, a = np.asarray(tokens, dtype=float), np.asarray(accuracy, dtype=float)
    if t.shape != a.shape:
        raise ValueError(f"tokens and accuracy differ in shape: {t.shape} vs {a.shape}")
    no_worse = (t[None, :] <= t[:, None]) & (a[None, :] >= a[:, None])
    better = (t[None, :] < t[:, None]) | (a[None, :] > a[:, None])
    return ~(no_worse & better).any(axis=1)


def paired(debates: pd.DataFrame, method_a: str, method_b: str) -> pd.DataFrame:
    """0/1 correctness of two methods on the same (model, dataset, seed, question_id):
    columns ``model, dataset, seed, question_id, correct_a, correct_b`` (inner join), the
    input of :func:`pear.stats.mcnemar_table` and :func:`pear.stats.significance`."""
    keys = ["model", "dataset", "seed", "question_id"]
    sides = []
    for name, suffix in ((method_a, "a"), (method_b, "b")):
        part = debates.loc[debates["method"] == name, [*keys, "correct"]]
        if part.empty:
            raise ValueError(f"no debates of method {name!r}")
        if part.duplicated(keys).any():
            raise ValueError(f"method {name!r} has several debates per question; "
                             "select one config_hash first")
        sides.append(part.rename(columns={"correct": f"correct_{suffix}"}))
    out = sides[0].merge(sides[1], on=keys)
    out[["correct_a", "correct_b"]] = out[["correct_a", "correct_b"]].astype(int)
    return _sorted(out, keys)


def load_paper(name: str) -> pd.DataFrame:
    """The study's printed numbers ``data/paper/<name>.csv`` as printed (display names).

    >>> load_paper("cost").set_index("method").loc["PEAR", "tokens_per_example"]
    np.int64(32300)
    """
    path = PAPER_DIR / f"{name}.csv"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PAPER_DIR.glob("*.csv")))
        raise FileNotFoundError(f"no paper table {name!r} ({path}); known: {known}")
    return pd.read_csv(path)


def to_internal(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with the paper's display names mapped to internal ones in the ``dataset``,
    ``method`` and ``model`` columns (names already internal are kept).

    >>> to_internal(pd.DataFrame({"dataset": ["MATH-500"], "method": ["CoT-SC"]})).values.tolist()
    [['math500', 'cot_sc']]
    """
    out = df.copy()
    for col, mapping in (("dataset", DATASET_NAMES), ("method", METHOD_NAMES),
                         ("model", MODEL_SPELLINGS)):
        if col in out:
            out[col] = out[col].map(lambda v, m=mapping: m.get(v, v))
    return out


def compare_with_paper(reproduced: pd.DataFrame, paper: pd.DataFrame,
                       keys: Sequence[str] = GROUP, value: str = "accuracy",
                       model_map: Mapping[str, str] | None = None,
                       how: Literal["inner", "left", "right", "outer"] = "inner",
                       ) -> pd.DataFrame:
    """Reproduced and printed ``value`` side by side: columns ``*keys, reproduced, paper,
    diff`` (reproduced - paper).  Paper names are mapped with :func:`to_internal`;
    ``model_map`` renames reproduced models (e.g. ``{"Qwen/Qwen2.5-14B-Instruct":
    "Qwen-2.5-14B"}``).  Rows sharing ``keys`` on one side are averaged first, so
    ``keys=("method",)`` compares per-method means over all settings.

    >>> rep = pd.DataFrame({"method": ["pear", "cot"], "tokens_per_example": [30000, 900]})
    >>> compare_with_paper(rep, load_paper("cost"), keys=["method"],
    ...                    value="tokens_per_example").values.tolist()
    [['cot', 900.0, 800.0, 100.0], ['pear', 30000.0, 32300.0, -2300.0]]
    """
    keys = list(keys)
    rep = reproduced.copy()
    if model_map and "model" in rep:
        rep["model"] = rep["model"].map(lambda v: model_map.get(v, v))
    rep_g, pap_g = (side.groupby(keys)[value].mean().rename(name).reset_index()
                    for side, name in ((rep, "reproduced"), (to_internal(paper), "paper")))
    out = rep_g.merge(pap_g, on=keys, how=how)
    out["diff"] = out["reproduced"] - out["paper"]
    return _sorted(out, keys)


def debates_frame(records: Iterable[dict[str, Any]]):
    """One row per debate: identity, gold, final answer, correctness, tokens, calls,
    parse failures, the final influence vector."""
    import pandas as pd

    rows = []
    for r in records:
        tok = r["tokens"]
        rows.append({
            "debate_id": r["debate_id"], **{k: r[k] for k in IDENTITY},
            "n_agents": r["n_agents"], "rounds": r["rounds"], "gold": r["gold"],
            "final_answer": r["final_answer"], "correct": bool(r["correct"]),
            "prompt_tokens": tok["prompt"], "completion_tokens": tok["completion"],
            "cached_tokens": tok["cached"], "tokens": tok["prompt"] + tok["completion"],
            "calls": r["calls"], "parse_failures": r["parse_failures"],
            "final_influence": list(r["rounds_data"][-1]["influence"]),
            "latency_s": r.get("latency_s", 0.0),
        })
    return pd.DataFrame(rows, columns=None if rows else [
        "debate_id", *IDENTITY, "n_agents", "rounds", "gold", "final_answer", "correct",
        "prompt_tokens", "completion_tokens", "cached_tokens", "tokens", "calls",
        "parse_failures", "final_influence", "latency_s"])


def agent_rounds_frame(records: Iterable[dict[str, Any]]):
    """One row per debate x round x agent: answer, canonical answer, confidence,
    correctness, parse error, the agent's influence and the vote after that round."""
    import pandas as pd

    rows = []
    for r in records:
        ident = {"debate_id": r["debate_id"], **{k: r[k] for k in IDENTITY}}
        for rd in r["rounds_data"]:
            for a in rd["agents"]:
                rows.append({**ident, "round": rd["round"], "agent": a["agent"],
                             "answer": a["answer"], "canonical": a["canonical"],
                             "confidence": a["confidence"], "correct": bool(a["correct"]),
                             "parse_error": a["parse_error"],
                             "influence": rd["influence"][a["agent"]]
                             if a["agent"] < len(rd["influence"]) else 0.0,
                             "vote": rd["vote"], "vote_correct": bool(rd["vote_correct"])})
    return pd.DataFrame(rows, columns=None if rows else [
        "debate_id", *IDENTITY, "round", "agent", "answer", "canonical", "confidence",
        "correct", "parse_error", "influence", "vote", "vote_correct"])


def critiques_frame(records: Iterable[dict[str, Any]]):
    """One row per routed critique edge: source/target, their answers and confidences when
    the critique was written, whether it was delivered, the target's decision."""
    import pandas as pd

    rows = []
    for r in records:
        ident = {"debate_id": r["debate_id"], **{k: r[k] for k in IDENTITY}}
        for rd in r["rounds_data"]:
            for c in rd["critiques"]:
                rows.append({**ident, "round": rd["round"], "source": c["source"],
                             "target": c["target"], "source_answer": c["source_answer"],
                             "target_answer": c["target_answer"],
                             "source_confidence": c["source_confidence"],
                             "target_confidence": c["target_confidence"],
                             "cross_answer": c["source_answer"] != c["target_answer"],
                             "delivered": bool(c["delivered"]), "decision": c["decision"],
                             "accepted": c["decision"] == "ACCEPT",
                             "parse_error": c["parse_error"]})
    return pd.DataFrame(rows, columns=None if rows else [
        "debate_id", *IDENTITY, "round", "source", "target", "source_answer", "target_answer",
        "source_confidence", "target_confidence", "cross_answer", "delivered", "decision",
        "accepted", "parse_error"])


