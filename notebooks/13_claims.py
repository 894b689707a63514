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
# # 13 · The claims ledger
#
# Every claim of the study (`data/paper/claims.csv`: its quote, kind, printed value and how
# to recompute it) gets a verdict on this build's records: *supported*, *contradicted*,
# *inconclusive* (with the questions per setting that would decide it), *not covered by
# this build* (a model, dataset, method or scope missing, or a claim no grid can decide),
# or, for simulated and smoke builds, *not evidence* (the finding is still shown, as a
# statement about the simulated mechanism). How each claim is recomputed is data
# (`data/paper/claims_recompute.toml`); every value comes from the records through the
# analysis library, with a 95 % bootstrap interval over questions and seeds, or the exact
# test the claim names. The same evaluators run on the study's printed tables: the
# internal-consistency table sets each printed claim beside what its own tables give.
# The relabelling claims (the abstract's, the theorem's, the introduction's positional biases
# and sensitivity to role assignments) are judged on notebook 19's seat variants, read from
# their records (the build runs this notebook after 19); without them they are not covered.
#
# A simulated build's conclusions hang on its simulated population. The last section states
# them across an ensemble of plausible populations (the grounded revision model refitted on
# DyLAN's debates resampled with replacement, and PEAR's critiques mapped to "heard" in full or
# discounted by half; the grid's runner and its tables are `pear.paper.ensemble`): the main
# results and PEAR's gains with their range, and each claim with the share of populations in
# which it holds, on a reduced grid run beside the build's (`<run>-ensemble/`, resumable).

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value
bootstrap_seed: int = 0  # our choice: seed of the bootstrap replicates
ensemble_k: int = 20  # populations of the ensemble (issue 35: 20)
ensemble_questions: int = 20  # questions per dataset of its grid (at most the build's), 1 seed
ensemble_seed: int = 0  # our choice: seed of the bootstrap over real debates

# %% [markdown]
# ## Load records (subset questions and full sets)

# %%
import numpy as np
from matplotlib.figure import Figure

from pear.claims import diff, evaluate as claims
from pear.analysis import figures, report
from pear.paper import ensemble, ledger, study

figures.set_style()
build = {"model": model, "seeds": seeds, "n_questions": n_questions}
subset = study.results(backend, preset, runs_dir, scope="subset", **build)  # records checked
full = (study.results(backend, preset, runs_dir, scope="full", **build)
        if subset.exp.full_datasets else None)
# notebook 19's relabelling study, from its records (or why there is none)
relabelled = ledger.load_relabelling(backend, preset, runs_dir, **build)

# %% [markdown]
# ## Compute: every claim on this build and on the study's tables

# %%
table = claims.ledger(subset, full, rng=bootstrap_seed, relabelling=relabelled)
forest = ledger.forest_frame(table)
claims.verdict_counts(table)

# %% [markdown]
# ## The ledger

# %%
ledger.table_ledger(table)

# %% [markdown]
# ## The study against its own tables

# %%
ledger.table_consistency(table)

# %% [markdown]
# ## Numeric claims: printed, recomputed from the tables, reproduced with 95 % intervals

# %%
UNITS = {"fraction": "fraction (accuracy, rates)", "points": "points", "percent": "percent",
         "tokens": "tokens per example", "rho": "Spearman rho", "p-value": "p-value",
         "count": "count", "edges": "edges per round"}
COLORS = {"supported": "#1b7837", "contradicted": "#b2182b", "inconclusive": "#e08214",
          "not covered": "0.6"}


def plot_forest(df, source, mark):
    """One row per printed number (`forest`), one panel per unit: the printed value (x), the
    value recomputed from the study's tables (o) and this build's value with its 95 %
    interval (dot and bar, coloured by the part's verdict); the build's mark and source."""
    if df.empty:
        raise ValueError("no numeric claim with a printed number to plot")
    units = [u for u in UNITS if u in set(df["unit"])] + sorted(set(df["unit"]) - set(UNITS))
    heights = [max(1.0, 0.22 * (df["unit"] == u).sum() + 0.6) for u in units]
    fig = Figure(figsize=(7.5, sum(heights)), layout="constrained")
    axes = fig.subplots(len(units), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, unit in zip(axes, units):
        part = df[df["unit"] == unit].reset_index(drop=True)
        y = np.arange(len(part))[::-1]
        scale = 1e-3 if unit == "tokens" else 1.0  # tokens in thousands
        err = np.vstack([part["reproduced"] - part["low"], part["high"] - part["reproduced"]])
        for verdict, color in COLORS.items():
            m = (part["verdict"] == verdict).to_numpy()
            if m.any():
                ax.errorbar(part["reproduced"][m] * scale, y[m], xerr=np.abs(err[:, m]) * scale,
                            fmt="o", ms=3.5, color=color, lw=1, capsize=2,
                            label=f"reproduced ({verdict})")
        ax.scatter(part["printed"] * scale, y, marker="x", color="black", s=22, zorder=4,
                   label="printed")
        ax.scatter(part["recomputed"] * scale, y, marker="o", facecolors="none",
                   edgecolors="0.35", s=30, zorder=4, label="recomputed from the tables")
        ax.set_yticks(y, [f"{c}: {lab}"[:70] for c, lab in zip(part["claim"], part["label"])],
                      fontsize=5)
        ax.set_xlabel(UNITS.get(unit, unit) + (" (thousands)" if unit == "tokens" else ""),
                      fontsize=7)
        ax.tick_params(axis="x", labelsize=6)
    seen = {}  # one legend entry per label, over every panel
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(seen.values(), seen.keys(), fontsize=6, loc="outside upper center", ncols=3,
               frameon=False)
    return figures.annotate(fig, axes, source=source, mark=mark)


fig = plot_forest(forest, source=subset.source, mark=subset.mark)
figures.display_figure(fig)

# %% [markdown]
# ## Across an ensemble of plausible populations
#
# The build's grid reduced (its datasets and the study's 14 methods, `ensemble_questions`
# questions per dataset, its first seed, no full sets) run under `grounded` and under
# `ensemble_k` populations drawn from the revision fit's sampling distribution (a bootstrap
# over DyLAN's debates). A build of a real model or of imported debates has no population
# to vary: its tables say so.

# %%
from pear.backends.registry import spec as backend_spec
from pear.paths import beside

run_dir = study.runs_path(runs_dir, preset, backend)
small = ensemble.grid(base=study.experiment(preset, seeds=seeds, n_questions=n_questions,
                                            backend=backend), n_questions=ensemble_questions)
replay = not backend_spec(backend).runs  # a replay build reads what a simulated one ran


def across(root, family=False):
    """The reduced grid under every population of `root`, each its own run directory (run or
    resumed, several at once; read only on a replay), or why the build has none to vary."""
    note = ensemble.unvaried(backend, run_dir, root, family)
    if note:
        return ensemble.Ensemble.empty(small, root, note, family)
    return ensemble.run(small, root, ensemble_k, ensemble_seed, replay=replay, family=family)


ens = across(beside(run_dir, "ensemble"))  # grounded and ensemble_k bootstrap draws
print(ensemble.describe_times(ens))
ensemble.table_main(ens)

# %% [markdown]
# PEAR's gains (accuracy points) over Random, Clique and CoT-SC, and the populations in
# which PEAR is ahead.

# %%
ensemble.table_gains(ens)

# %% [markdown]
# Every claim: its finding under `grounded` (95 % intervals on the ensemble's grid) and the
# populations in which it holds at their point values.

# %%
ensemble.table_claims(ens)

# %% [markdown]
# ## Across the family of real twins
#
# The same reduced grid under every member of the family (`data/populations/family/`: a twin
# of each licensed run, DyLAN's MATH subjects and MMLU teams, and a moment-matched twin of
# each published model and task; `pear.populations.family`): each claim holds in how many
# members, and in which: "Where it holds" names the one trait of the members (a twin's
# revision effects, or its round-0 accuracy) that sorts them, when one does. The ledger's page
# says the same per claim and lists the members. The bootstrap above is the sampling error
# within one member; the family is how far models differ.

# %%
fam = across(beside(run_dir, "family"), family=True)
print(ensemble.describe_times(fam))
ensemble.table_gains(fam)

# %% [markdown]
# What the ledger's page says of each claim across the family: in how many members it holds,
# the trait that sorts them (when one does), and the members by name.


# %%
def family_words(fam):
    """Claim -> where it holds across the family's members, in words."""
    if fam.note:
        return {}
    traits = ensemble.member_traits(fam)
    return {cid: f"{ensemble.where_it_holds(held, traits)}. Holds in: "
                 f"{', '.join(held.index[held.astype(bool)]) or 'none'}."
            for cid, held in ensemble.held_by_member(fam).items()}


words = family_words(fam)

# %%
ensemble.table_claims(fam)

# %% [markdown]
# ## Save

# %%
findings = (f" Findings on this build's records: {ledger.counts_line(table, 'finding')}."
            if (table["verdict"] != table["finding"]).any() else "")  # when not evidence
report.save_table(ledger.table_ledger(table), "claims",
                  caption="Every claim of the study and its verdict on this build: "
                          f"{ledger.counts_line(table)}.{findings}{subset.caption('')}")
report.save_table(ledger.table_consistency(table), "claims_consistency",
                  caption="The study against its own tables: each claim's printed value "
                          "recomputed from the printed tables by the ledger's evaluators, "
                          "beside the check claims.csv transcribes; Agree compares the two "
                          "checks.")
figures.save_figure(fig, "claims_forest")
diff.save_ledger(table, "claims")  # claims.json: `pear claims-diff` compares two builds
ledger.save_html(ledger.ledger_html(table, link=ledger.site_link, title="",
                                    source=subset.caption("The claims ledger of this build:"),
                                    family=words),
                 "claims")
report.save_table(ensemble.table_main(ens), "ensemble_main",
                  caption=ensemble.caption_main(ens))
report.save_table(ensemble.table_gains(ens), "ensemble_gains", digits=1,
                  caption=ensemble.caption_gains(ens))
report.save_table(ensemble.table_claims(ens), "ensemble_claims", digits=2,
                  caption=ensemble.caption_claims(ens))
report.save_table(ensemble.table_gains(fam), "family_gains", digits=1,
                  caption=ensemble.caption_gains(fam))
report.save_table(ensemble.table_claims(fam), "family_claims", digits=2,
                  caption=ensemble.caption_claims(fam))
