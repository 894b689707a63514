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
# # 12 · Robustness to an adversarial or overconfident agent
#
# PEAR's T and L terms trust stated confidence. Accuracy of Clique, Star, Ring, Random, PEAR
# and the single-term variants PEAR-T and PEAR-L (to see which term helps or hurts) with an
# honest population, with agent 2 adversarial (argues for a wrong answer with confidence 5),
# and with agent 2 overconfident (always states 5); the drop against the honest population
# with a paired bootstrap 95% CI and an exact McNemar test.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond (the studies grid: pear.paper.beyond)
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; variants go to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (run or resume each population)

# %%
from pear.analysis import figures, report
from pear.paper import beyond, study

figures.set_style()
exp = beyond.preset_experiment(preset, seeds=seeds, n_questions=n_questions)
runs = beyond.run_variants(backend, beyond.population_variants(exp),
                            study.runs_path(runs_dir, preset, backend), model=model)
res = runs["honest"]

# %% [markdown]
# ## Compute

# %%
table = beyond.robustness_table(runs)
table

# %% [markdown]
# ## Figure

# %%
fig = beyond.plot_robustness(table, source=res.source, mark=res.mark,
                              simulated=res.simulated)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "robustness")
report.save_table(table.set_index(["population", "method"]), "robustness",
                  caption=res.caption("Accuracy with an honest population, one adversarial "
                                      "agent and one overconfident agent (agent 2); drop "
                                      "against the honest population with a paired "
                                      "bootstrap 95% CI and the exact McNemar p."))
