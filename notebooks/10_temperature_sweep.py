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
# # 10 · Routing temperature
#
# The study never states the softmax temperature tau of its router (we default to 0.1; the
# authors' code uses 0.7, which makes the choice nearly uniform over the pool). PEAR at
# tau in {0 (argmax), 0.03, 0.1, 0.3, 0.7, 3} and Random, on the same questions, seeds and
# base graphs: accuracy, W2R/R2W (per query), and the normalised entropy of the router's
# choice distribution (1 = uniform, as Random). The last table says for which tau the
# PEAR-minus-Random gap is consistent with the study's (its mean over the main-results
# settings, computed from `data/paper/main_results.csv`).

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond (the studies grid: pear.paper.beyond)
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; variants go to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (run or resume each temperature)

# %%
from pear.analysis import figures, report
from pear.paper import beyond, study

figures.set_style()
exp = beyond.preset_experiment(preset, seeds=seeds, n_questions=n_questions)
runs = beyond.run_variants(backend, beyond.temperature_variants(exp),
                            study.runs_path(runs_dir, preset, backend), model=model)
res = runs["Random"]

# %% [markdown]
# ## Compute

# %%
sweep = beyond.temperature_table(runs)
table = sweep.groupby(["variant", "tau"], dropna=False, sort=False)[
    ["accuracy", "w2r", "r2w", "entropy"]].mean()
gap = beyond.consistent_taus(runs, beyond.study_gap_pear_random())
table

# %%
gap

# %% [markdown]
# ## Figure

# %%
fig = beyond.plot_temperature_sweep(sweep, source=res.source, mark=res.mark,
                                     simulated=res.simulated)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "temperature_sweep")
report.save_table(table, "temperature_sweep",
                  caption=res.caption("PEAR across routing temperatures and Random, averaged "
                                      "over datasets: accuracy, W2R and R2W per query, "
                                      "normalised entropy of the choice distribution."))
report.save_table(gap.set_index("variant"), "temperature_gap",
                  caption=res.caption("PEAR minus Random accuracy per temperature with a "
                                      "paired bootstrap 95% CI; consistent = the study's "
                                      "mean gap lies inside the CI."))
