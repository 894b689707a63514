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

# %% tags=["parameters"]
backend = "llamacpp"  # llamacpp | vllm | openai | simulated | replay
preset = "smoke"  # smoke | paper | sim
runs_dir = ""  # empty: data/runs/<preset>-<backend>
model = ""  # model path or name; empty: the backend default
seeds = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (subset questions)

# %%
from pear.analysis import compare, figures, metrics, report
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Compute

# %%
points = study.select(study.cost_accuracy(res.debates), methods=study.MAIN_METHODS)
cost = metrics.costs(res.debates)
tokens = report.table_tokens(cost)
vs_paper, note = compare.beside_paper(study.select(cost, methods=study.MAIN_METHODS), "cost",
                                      ["tokens_per_example"], keys=["method"])
quoted = compare.quoted_macros(vs_paper, "Tokens", digits=0)

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
