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
# # 19 · Relabelling: where sitting matters, and each router beside its orbit average
#
# The study's theory: an equivariant router's expected accuracy does not change when the agents
# are relabelled, and a router's orbit average (``NAME~orbit``: a fresh uniform relabelling per
# debate) has the router's expected accuracy under exchangeable agents. With identical agents
# every method is trivially invariant, so here one agent is odd (notebook 12's adversarial
# agent, agent 1; or the same model at another temperature, or another model: the parameters)
# and it is seated at every position in turn (``DebateConfig.relabelling``; it keeps its role,
# temperature, model and own request seeds wherever it sits; the CPU smoke build seats it at
# Star's hub and at one leaf only, ``relabelling.SMOKE_SEATS``). Per method: accuracy with the
# odd agent at each position (position 1 is Star's hub and Chain's head) with Wilson 95%
# intervals; the spread across seats against what sampling alone gives (a randomisation test
# at matched seeds: each question's outcomes permuted across seats); and each fixed router
# beside its orbit average.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; variants go to <runs_dir>-studies/
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset's first two seeds (relabelling.SEEDS), else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value
odd_role: str = "adversarial"  # the odd agent's role (pear.core.config.ROLES)
odd_temperature: float = -1.0  # its sampling temperature; -1: the protocol's (honest + 1.2: two temps)
odd_model: str = ""  # its model (a mixed-model panel; `model` runs the others); '': the grid's

# %% [markdown]
# ## Load records (run or resume one variant per seat)

# %%
from matplotlib.figure import Figure

from pear.analysis import figures, report
from pear.catalog.labels import method_label, method_order
from pear.core.methods import orbit_base
from pear.paper import beyond, relabelling, study

figures.set_style()
exp = relabelling.experiment(preset, seeds=seeds, n_questions=n_questions)
variants = relabelling.variants(exp, odd_role, odd_temperature=odd_temperature,
                                odd_model=odd_model, model=model)
odd = " ".join([f"{odd_role} agent",  # the odd agent in words, for captions and axes
                *([f"at temperature {odd_temperature:g}"] if odd_temperature >= 0 else []),
                *([f"of model {odd_model}"] if odd_model else [])])
runs = beyond.run_variants(backend, variants, study.runs_path(runs_dir, preset, backend),
                           model=model)
res = next(iter(runs.values()))

# %% [markdown]
# ## Compute

# %%
by_seat, spread, orbit = relabelling.tables(runs)
spread

# %%
by_seat.pivot_table(index="method", columns="seat", values="accuracy")

# %%
orbit

# %% [markdown]
# ## Figure
#
# Accuracy per method against the odd agent's position, Wilson 95% intervals (orbit averages
# dashed).

# %%
fig = Figure(figsize=(6.4, 3.6))
ax = fig.add_subplot()
names = method_order(by_seat["method"].unique())
for j, m in enumerate(names):
    d = by_seat[by_seat["method"] == m]
    ax.errorbar(d["seat"] + (j - len(names) / 2) * 0.05, d["accuracy"],
                yerr=[d["accuracy"] - d["ci_low"], d["ci_high"] - d["accuracy"]],
                marker="o", capsize=2, label=method_label(m),
                linestyle="--" if orbit_base(m) else "-")
ax.set_xticks(sorted(by_seat["seat"].unique()))
ax.set_xlabel(f"position of the {odd} (1: Star's hub, Chain's head)")
ax.set_ylabel("accuracy")
ax.legend(fontsize=7, ncol=2)
fig = figures.annotate(fig, [ax], source=res.source, mark=res.mark, simulated=res.simulated)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "relabelling")
note = f"The {odd} seated at each position, same questions and seeds"
report.save_table(spread.set_index("method"), "relabelling_spread",
                  caption=res.caption(note + "; spread: range of accuracy across seats; null: "
                                      "its mean when each question's outcomes are permuted "
                                      "across seats; p: randomisation test at matched seeds."))
report.save_table(by_seat.set_index(["method", "seat"]), "relabelling_by_seat",
                  caption=res.caption(note + "; Wilson 95% intervals."))
report.save_table(orbit.set_index("router"), "relabelling_orbit",
                  caption=res.caption(note + "; each fixed router beside its orbit average (a "
                                      "fresh uniform relabelling per debate): mean accuracy "
                                      "over seats, the difference (orbit - router) with its "
                                      "paired bootstrap 95% interval and McNemar's p over "
                                      "(question, seed, seat) pairs, and each one's spread."))
