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

# %% tags=["parameters"]
backend = "llamacpp"  # llamacpp | vllm | openai | simulated | replay
preset = "smoke"  # smoke | paper | sim
runs_dir = ""  # empty: data/runs/<preset>-<backend>
model = ""  # model path or name; empty: the backend default
seeds = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions = 0  # questions per dataset; 0: the preset value
bootstrap_seed = 0  # our choice: seed of the bootstrap replicates

# %% [markdown]
# ## Load records (subset questions and full sets)

# %%
from pear.claims import diff, evaluate as claims
from pear.analysis import figures, report
from pear.paper import ledger

figures.set_style()
subset, full = ledger.load_build(backend, preset, runs_dir, model=model, seeds=seeds,
                                 n_questions=n_questions)

# %% [markdown]
# ## Compute: every claim on this build and on the study's tables

# %%
table = claims.ledger(subset, full, rng=bootstrap_seed)
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
fig = ledger.plot_forest(forest, source=subset.source, mark=subset.mark)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
report.save_table(ledger.table_ledger(table), "claims",
                  caption=ledger.caption_ledger(table, subset))
report.save_table(ledger.table_consistency(table), "claims_consistency",
                  caption=ledger.caption_consistency(subset))
figures.save_figure(fig, "claims_forest")
diff.save_ledger(table, "claims")  # claims.json: `pear claims-diff` compares two builds
ledger.save_html(ledger.ledger_html(table, link=ledger.site_link, title="",
                                    source=subset.caption("The claims ledger of this build:")),
                 "claims")
