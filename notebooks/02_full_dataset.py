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
# # 02 · Full-dataset results
#
# Accuracy on the full TruthfulQA (817) and MATH-500 (500) sets for the preset's full-set
# methods and seed, beside the study's full-dataset table (`data/paper/full_dataset.csv`).
# The full-set runs share their subset questions' records.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

# %% [markdown]
# ## Load records (full sets)

# %%
from pear.analysis import compare, figures, report
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="full")
res.summary()

# %% [markdown]
# ## Compute

# %%
acc = study.accuracy(res.debates)
full = report.table_main(acc)
vs_paper, note = compare.beside_paper(acc, "full_dataset", ["accuracy"])

# %% [markdown]
# ## Tables

# %%
full

# %%
print(note)
vs_paper

# %% [markdown]
# ## Save

# %%
report.save_table(full, "full_dataset", bold_best="max",
                  caption=res.caption("Full-dataset accuracy; best per row in bold."))
report.save_table(vs_paper, "full_dataset_vs_paper",
                  caption=res.caption("Full-dataset accuracy beside the study's printed "
                                      f"numbers; diff = reproduced - paper. {note}"))
