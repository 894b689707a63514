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
# # 06 · Significance and rank agreement
#
# PEAR against the strongest fixed topology of each setting: exact McNemar test on the
# paired questions of one seed (discordant pairs b = PEAR right and the baseline wrong,
# c = the reverse), the same p-values Holm-adjusted across the settings of the table (the
# study tests several settings and stars them unadjusted; a reader should look at the
# adjusted column), a paired bootstrap 95% interval of PEAR's accuracy minus the best fixed
# topology's (questions resampled with their pair, 10,000 resamples, seed 0), the
# discordant win rate b / (b + c) with its Wilson interval, and post-hoc power; on the full
# sets (the study's table) and on the subset. Then Spearman's rank agreement of the methods
# between the subset and the full set where full sets were run. The study's
# `significance.csv` and `spearman.csv` stand beside.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (subset questions and full sets)

# %%
from pear.analysis import compare, figures, report, stats
from pear.paper import study

figures.set_style()
subset = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                       n_questions=n_questions, scope="subset")
full = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                     n_questions=n_questions, scope="full")

# %% [markdown]
# ## Compute

# %%
sig, table = study.significance_sets(full, subset)
sig_vs_paper, sig_note = compare.beside_paper(
    sig, "significance", ["best_baseline_acc", "pear_acc", "b", "c", "chi2", "p_exact",
                          "win_rate", "wilson_low", "wilson_high", "power"],
    keys=["set", "dataset", "model"])
ranks = stats.rank_agreement(study.accuracy(subset.debates), study.accuracy(full.debates))
rank_vs_paper, rank_note = compare.beside_paper(ranks, "spearman", ["rho", "p_value"],
                                                keys=["dataset", "model"])

# %% [markdown]
# ## Tables

# %%
table

# %%
print(sig_note)
sig_vs_paper

# %%
ranks

# %%
print(rank_note)
rank_vs_paper

# %% [markdown]
# ## Save

# %%
report.save_table(table, "significance",
                  caption=full.caption("PEAR against the strongest fixed topology, one seed: "
                                       "exact McNemar p and the Holm-adjusted p across the "
                                       "settings of each set (* < 0.05, ** < 0.01, "
                                       "*** < 0.001), PEAR minus best fixed accuracy with a "
                                       "paired bootstrap 95% CI, discordant win rate with "
                                       "Wilson 95% interval, post-hoc power; full sets and "
                                       "subset (" + subset.grid + ")."))
report.save_table(sig_vs_paper, "significance_vs_paper", digits=4,
                  caption=full.caption("Significance beside the study's printed table "
                                       "(accuracies in percent); diff = reproduced - paper. "
                                       + sig_note))
report.save_table(report.display_table(ranks, ["dataset", "model"]), "spearman", digits=4,
                  caption=full.caption("Spearman rank agreement of the methods' accuracies "
                                       "between the subset (" + subset.grid + ") and the full "
                                       "set."))
report.save_table(rank_vs_paper, "spearman_vs_paper", digits=4,
                  caption=full.caption("Rank agreement beside the study's printed numbers; "
                                       "diff = reproduced - paper. " + rank_note))
