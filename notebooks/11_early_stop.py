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
# # 11 · Early stopping
#
# The study's PEAR spends about 32k tokens per example over five rounds. Could debates stop
# once agents agree? Clique, Ring, Random and PEAR under four stop rules — none (the study's
# protocol), consensus (stop after a round in which all agents agree), stable:1 and stable:2
# (stop when the vote has not changed for 1 or 2 rounds) — on the same questions and seeds:
# accuracy against tokens per example, the Pareto frontier over all (rule, method) points,
# and an exact McNemar test of each early-stopped method against its full run.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond (the studies grid: pear.paper.beyond)
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; variants go to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (run or resume each stop rule)

# %%
from pear.analysis import figures, report
from pear.paper import beyond, study

figures.set_style()
exp = beyond.preset_experiment(preset, seeds=seeds, n_questions=n_questions)
runs = beyond.run_variants(backend, beyond.stop_variants(exp),
                            study.runs_path(runs_dir, preset, backend), model=model)
res = runs["none"]

# %% [markdown]
# ## Compute

# %%
table = beyond.early_stop_table(runs)
table

# %% [markdown]
# ## Figure

# %%
fig = beyond.plot_early_stop(table, source=res.source, mark=res.mark,
                              simulated=res.simulated)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "early_stop_pareto")
report.save_table(table.set_index(["stop", "method"]), "early_stop",
                  caption=res.caption("Early stopping: accuracy, tokens and calls per "
                                      "example, rounds run, Pareto-optimal points, and the "
                                      "exact McNemar p of each rule against the full "
                                      "protocol (averaged over datasets)."))
