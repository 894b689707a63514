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
# # 03 · Routing ablation
#
# The seven routing variants (PEAR and its six ablations, which keep one or two of the
# score terms T, I, L) with Random as the reference, per model and dataset, and their
# averages over datasets: a grouped bar chart and a table. The study prints no ablation
# numbers in `data/paper/`, so there is nothing to set beside them.

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
from pear.analysis import figures, report
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Compute

# %%
acc = study.select(study.accuracy(res.debates), methods=study.ROUTING_VARIANTS)
table = report.table_main(acc)
bars = figures.with_average(acc, over="dataset")

# %% [markdown]
# ## Figure and table

# %%
fig = figures.facet(figures.plot_ablation, bars, rows="model", cols=None, width="double",
                    title="Routing ablation: accuracy per variant (Random = reference)",
                    source=res.source, mark=res.mark)
figures.display_figure(fig)

# %%
table

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "ablation")
report.save_table(table, "ablation", bold_best="max",
                  caption=res.caption("Routing ablation: accuracy of Random, PEAR and its six "
                                      "ablations (mean ± std over seeds); Average = mean over "
                                      "settings; best per row in bold."))
