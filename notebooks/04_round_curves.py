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
# # 04 · Round-wise accuracy
#
# Accuracy of the vote after each round (round 0 = the initial answers) per method, per
# dataset and averaged over datasets; one row of panels per model. CoT and CoT-SC have no
# rounds and draw as dashed horizontal references.

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
from pear.analysis import figures, metrics
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Compute

# %%
curves = figures.with_average(metrics.round_accuracy(res.debates, res.rounds), over="dataset")

# %% [markdown]
# ## Figure

# %%
fig = figures.facet(figures.plot_round_curves, curves, rows="model", cols="dataset",
                    title="Round-wise accuracy of the vote per method",
                    source=res.source, mark=res.mark, methods=study.MAIN_METHODS)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "round_curves")
