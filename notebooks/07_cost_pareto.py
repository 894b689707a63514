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
# figure draws SC's curve, and `sc_matched` sets every debate method beside SC *at that
# method's own tokens per example*: SC's accuracy interpolated linearly in tokens between the
# two K's around it (above the largest K: the largest K's accuracy, said in the table), the
# difference with a paired bootstrap 95% interval over questions, and the nearest K.

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
from pear.analysis import compare, equal_compute, figures, metrics, report
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Compute

# %%
points = study.select(study.cost_accuracy(res.debates),
                      methods=study.MAIN_METHODS + equal_compute.sc_methods(res.debates))
cost = metrics.costs(res.debates)
tokens = report.table_tokens(cost)
vs_paper, note = compare.beside_paper(study.select(cost, methods=study.MAIN_METHODS), "cost",
                                      ["tokens_per_example"], keys=["method"])
quoted = compare.quoted_macros(vs_paper, "Tokens", digits=0)
matched = equal_compute.table_sc_matched(res.debates, methods=study.MAIN_METHODS[2:])

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
