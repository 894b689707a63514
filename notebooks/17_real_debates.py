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
# # 17 · Real debates from the field, and the simulated agents held against them
#
# Debates recorded by other frameworks, imported as PEAR records (`pear import`): DyLAN's
# gpt-3.5-turbo debates on the MATH-500 problems are shipped (`data/real-debates/`, MIT);
# any file in Du et al.'s format can be added with `du_file`. For each imported run: the
# round-wise accuracy (agents and vote), W2R and R2W per query (the study's definition),
# the answer-change rate and the share of debates where a correct minority of round 0 won,
# each with a 95% bootstrap interval over debates, beside the simulated population in the
# same setting (`pear population sim-check`, `pear.populations.simcheck`): the same questions and, from the
# import's manifest, the source's protocol (agents, rounds, who hears whom and when, the stop
# rule, who leaves), the simulated value being the mean of `replicates` simulations.
#
# The simulated population is **not refitted** to these data: they are a held-out check of
# its dynamics. Only its `skill_mean` is shifted so that its expected round-0 agent accuracy
# equals the real run's, so that what is compared is the dynamics, not the skill. Imported
# debates have no confidences, critiques or influence: nothing here uses them.
#
# **Leave-one-out over DyLAN's seven MATH subjects** (its whole corpus of 4,800 gpt-3.5 debates,
# `data/real-debates/dylan-math-gpt35.tgz`, on which, with DyLAN's MMLU debates, the shipped
# `grounded` population is fitted): for each subject, a grounded population is fitted by the
# same code on the other six subjects' debates and the MMLU debates only (the revision model,
# the question sets' round-0 accuracies and the share of erring agents giving the same wrong
# answer) and held against the held-out subject's debates
# with `pear population sim-check` (DyLAN's protocol; only the skill matched to the subject's round-0
# accuracy); the `study` population, fitted to none of DyLAN's debates, on the same debates is
# the contrast. Its outcome is cached under `build/heldout/`, keyed by the corpus, the
# package's code, the replicates and the seed.
#
# This notebook reads the shipped data whatever the backend and preset: it does not depend on
# the study's runs.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay (not used: see above)
preset: str = "smoke"  # smoke | paper | sim | beyond (not used)
runs_dir: str = ""  # not used: the imports go to build/imported/
model: str = ""  # not used
seeds: str = ""  # not used
n_questions: int = 0  # not used
du_file: str = ""  # a Du et al. file to add (e.g. gsm_3_2.json); empty: the shipped runs only
du_dataset: str = "gsm8k"  # its dataset: one of ours, or a new name with du_grading
du_grading: str = ""  # numbers | letters | math, for a dataset we do not ship
du_model: str = ""  # the model that debated in du_file
sim_seed: int = 0  # the simulated population's seed (and the bootstrap's)
population: str = "grounded"  # the simulated population: study | grounded | grounded-math | a file
replicates: int = 20  # simulations of each run (the simulated value is their mean)
n_resamples: int = 2000  # bootstrap resamples
loo_replicates: int = 20  # simulated replicates per held-out subject and population
loo_subjects: str = ""  # comma-separated subjects to hold out; empty: all seven

# %% [markdown]
# ## Load records (import the shipped files, and du_file)

# %%
from pear.analysis import figures, report
from pear.populations import leave_one_subject_out, real_debates, simcheck

figures.set_style()
runs = real_debates.shipped_runs(du_file, du_dataset, du_grading, du_model)
runs

# %% [markdown]
# ## Compute: the real runs and the simulated population in their setting

# %%
analyses = [real_debates.analyse(name, path, seed=sim_seed, n_resamples=n_resamples,
                                 population=population, replicates=replicates)
            for name, path in runs.items()]
print("\n\n".join(real_debates.describe(a) for a in analyses))

# %%
summary = real_debates.table(analyses)
summary

# %% [markdown]
# ## Does the simulated population fall inside the real interval? (one line per statistic)

# %%
print("\n".join(real_debates.verdicts(analyses)))

# %% [markdown]
# The same, one row per run (`pear population sim-check RUN [RUN...] --summary`): statistics inside /
# defined, and those outside with their side (`+` simulated above the real interval, `-` below)

# %%
print(simcheck.summary([a.check for a in analyses]))

# %% [markdown]
# ## Leave-one-out: each MATH subject held against a population fitted without it

# %%
loo = leave_one_subject_out.leave_one_out(replicates=loo_replicates, seed=sim_seed,  # the corpus, as grounded
                            subjects_=[s.strip() for s in loo_subjects.split(",") if s.strip()],
                            n_resamples=n_resamples)
print(leave_one_subject_out.describe(loo))
loo_summary = leave_one_subject_out.summary(loo)
loo_summary

# %% [markdown]
# Each fold's revision model (coefficients; the shipped `grounded` fitted on every subject is in
# `docs/populations.md`):

# %%
loo.folds.set_index("subject").drop(columns=["fingerprint"])

# %%
loo_table = leave_one_subject_out.table(loo)
loo_table

# %% [markdown]
# ## Figure

# %%
fig = real_debates.plot_real_vs_simulated(analyses)
figures.display_figure(fig)

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "real_debates")
report.save_table(summary, "real_debates",
                  caption="Real debates (imported) beside the simulated population in the "
                          "source's protocol: mean over debates with a 95% percentile bootstrap "
                          "interval; debates = those that define the statistic; simulated = "
                          "the mean of the replicates [the middle 95% of them]; inside = the "
                          "simulated value lies in the real interval. W2R and R2W per query "
                          "(the study's definition). Not refitted: a held-out check.")
report.save_table(loo_table, "leave_one_out",
                  caption="Leave-one-out over DyLAN's MATH subjects: per held-out subject, the "
                          "real value with its 95% bootstrap interval over the subject's "
                          "debates, and the simulated value (mean of the replicates, DyLAN's "
                          "protocol, skill matched to the subject's round-0 accuracy) of a "
                          "grounded population fitted without the subject's debates and of the "
                          "study population; inside = the simulated value lies in the real "
                          "interval.")
report.save_table(loo_summary, "leave_one_out_summary",
                  caption="Leave-one-out over DyLAN's MATH subjects: per held-out subject, its "
                          "debates, the choice sets (agent rounds of the other subjects) the "
                          "population without it was fitted on, and how many statistics' "
                          "simulated values lie inside the real 95% interval, for the "
                          "population fitted without the subject and for the study population.")
