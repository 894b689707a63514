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
#
# The parent's run is branched after `from_round` (held to its last branchable round, R - 1)
# into `methods` (`replay`: only the branches recorded before are read), into
# `<runs_dir>-studies/branch-r<round>`; the branches share the main run's response cache, and
# the simulated backend branches on every core.

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from pear import paths
from pear.analysis import figures, report, stats
from pear.backends.registry import spec as backend_spec
from pear.catalog.labels import method_label
from pear.paper import study
from pear.runs.branch import branch
from pear.runs.factory import default_workers, make_backend
from pear.store import view
from pear.store.records import iter_records

figures.set_style()
parent = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                       n_questions=n_questions, scope="subset")
used_round = max(0, min(int(from_round), parent.exp.debate.rounds - 1))
branch_run = paths.beside(parent.runs_dir, "studies") / f"branch-r{used_round}"
runtime = backend_spec(backend)
if runtime.runs:
    be = None
    if not runtime.simulator:
        be = make_backend(backend, exp=parent.exp, model=model or None,
                          model_path=model or None if runtime.model == "model_path" else None,
                          cache_path=paths.cache_path(parent.runs_dir))
    branch(parent.runs_dir, used_round, methods.split(","), branch_run, backend=be,
           parent_method=parent_method, progress=False, workers=default_workers(backend))
elif not branch_run.is_dir():
    raise FileNotFoundError(f"backend 'replay' needs recorded branches in "
                            f"{paths.shown(branch_run)!r}")
branches = view.load(branch_run).debates

# %% [markdown]
# ## Compute
#
# Per branched method: the branch paired with its parent on the same (model, dataset, seed,
# question), the accuracy difference with a paired bootstrap 95% interval and McNemar's exact
# p; beside it the unpaired comparison a full rerun allows (the method's own debates in the
# main run against the parent's, on as many questions, resampled independently); and the
# calls branching made and did not repeat (the copied rounds).

# %%
KEYS = ["model", "dataset", "seed", "question_id"]
rng = np.random.default_rng(0)
info = {r["debate_id"]: r["branched_from"] for r in iter_records(branch_run)}
deb = parent.debates
rows = []
for m in dict.fromkeys(branches["method"]):
    br = branches[branches["method"] == m]
    copied = sum(info[i]["calls_copied"] for i in br["debate_id"])
    pm = info[br["debate_id"].iloc[0]]["method"]
    par = deb[deb["method"] == pm].set_index(KEYS)["correct"].rename("parent")
    pairs = br.set_index(KEYS)["correct"].rename("branch").to_frame().join(par, how="inner")
    a, b = pairs["branch"].to_numpy(int), pairs["parent"].to_numpy(int)
    e = stats.paired_effect(a, b, n_resamples=5000, rng=rng)
    full = deb[deb["method"] == m]["correct"].to_numpy(int)[:a.size]
    u = stats.bootstrap_diff_unpaired(full, b, 5000, rng=rng) if full.size else (np.nan,) * 3
    calls = int(br["calls"].sum())
    rows.append({"method": m, "parent": pm, "n_pairs": int(a.size),
                 "parent_accuracy": float(b.mean()) if b.size else np.nan,
                 "branch_accuracy": float(a.mean()) if a.size else np.nan,
                 "diff": e.diff, "low": e.low, "high": e.high, "width": e.high - e.low,
                 "p_mcnemar": e.p_exact, "unpaired_diff": u[0], "unpaired_low": u[1],
                 "unpaired_high": u[2], "unpaired_width": u[2] - u[1],
                 "calls_branch": calls, "calls_copied": copied,
                 "saved_share": copied / (calls + copied) if calls + copied else np.nan})
eff = pd.DataFrame(rows)
table = eff.assign(method=eff["method"].map(method_label),
                   parent=eff["parent"].map(method_label)).rename(columns={
    "method": "Branch", "parent": "Parent", "n_pairs": "Pairs",
    "parent_accuracy": "Parent acc.", "branch_accuracy": "Branch acc.",
    "diff": "Paired diff", "low": "CI low", "high": "CI high", "width": "CI width",
    "p_mcnemar": "McNemar p", "unpaired_diff": "Unpaired diff",
    "unpaired_low": "Unpaired CI low", "unpaired_high": "Unpaired CI high",
    "unpaired_width": "Unpaired CI width", "calls_branch": "Calls made",
    "calls_copied": "Calls not repeated", "saved_share": "Share saved"}).set_index("Branch")

# %% [markdown]
# ## Table and figure

# %%
table

# %% [markdown]
# Per branched method the paired effect's 95% interval (filled) above the unpaired one
# (open), in accuracy points.

# %%
fig, ax = plt.subplots(figsize=(3.5, 1.2 + 0.45 * max(1, len(eff))), layout="constrained")
for i, row in enumerate(eff.itertuples()):
    color = figures.METHOD_COLORS.get(row.method, "0.4")
    ax.errorbar(row.diff, i + 0.15, xerr=[[row.diff - row.low], [row.high - row.diff]],
                fmt="o", color=color, capsize=2)
    if not np.isnan(row.unpaired_low):
        ax.errorbar(row.unpaired_diff, i - 0.15,
                    xerr=[[row.unpaired_diff - row.unpaired_low],
                          [row.unpaired_high - row.unpaired_diff]], fmt="o", mfc="white",
                    color=color, capsize=2)
ax.axvline(0, color="0.6", lw=0.6)
ax.set_yticks(range(len(eff)), [f"{method_label(m)} - {method_label(p)}"
                                for m, p in zip(eff["method"], eff["parent"])])
ax.set_xlabel("Accuracy difference (95% interval)")
ax.legend(handles=[Line2D([], [], marker="o", color="0.3", label="paired (branch)"),
                   Line2D([], [], marker="o", mfc="white", color="0.3",
                          label="unpaired (full rerun)")],
          fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
fig = figures.annotate(fig, [ax], title="Branches: paired vs unpaired", source=parent.source,
                       mark=parent.mark, simulated=parent.simulated)
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
