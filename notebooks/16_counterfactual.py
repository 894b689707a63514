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
# # 16 · Counterfactual branching
#
# Routing changes only the rounds after the first, yet a full rerun of a routed method
# re-asks every round, and two separate runs need many questions to show a routing effect.
# `pear branch` reruns only rounds R+1.. of every recorded debate of a parent method under
# other methods, starting from the parent's recorded state after round R (answers,
# confidences, reasoning, influence); rounds 0..R are copied, never re-asked, and
# `pear validate` checks the copies against the parent. Each branch is then paired with its
# parent question by question: the effect of switching the router after round R, with a
# paired bootstrap interval and McNemar's exact test, beside the unpaired comparison of two
# full runs on as many questions, and the calls branching did not repeat. Branching the
# parent's own method reproduces it (same seeds, same cache): its row is a check, its
# difference exactly 0.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; branches go to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value
from_round: int = 2  # branch after this round (held to the run's last branchable round)
parent_method: str = "random"  # the parent debates
methods: str = "random,pear,clique"  # the methods branched into (the parent's own: a check)

# %% [markdown]
# ## Load the parent run and branch it

# %%
from pear.analysis import figures, report
from pear.paper import counterfactual, study

figures.set_style()
parent = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                       n_questions=n_questions, scope="subset")
branches, branch_run, used_round = counterfactual.run_branches(
    backend, parent, methods.split(","), from_round, parent_method=parent_method, model=model)

# %% [markdown]
# ## Compute

# %%
eff = counterfactual.effects(branches, branch_run, parent)
table = counterfactual.table_effects(eff)

# %% [markdown]
# ## Table and figure

# %%
table

# %%
fig = counterfactual.plot_effects(eff, source=parent.source, mark=parent.mark,
                                  simulated=parent.simulated)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
report.save_table(table, "counterfactual", digits=3,
                  caption=parent.caption(f"Branches after round {used_round} of the "
                                         f"{parent_method} debates: paired effect (branch - "
                                         "parent, bootstrap 95% interval, McNemar's exact p) "
                                         "beside two full runs compared unpaired on as many "
                                         "questions, and the calls not repeated."))
figures.save_figure(fig, "counterfactual")
