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
# same setting (`pear population sim-check`, `pear.populations.simcheck`): the same questions
# and, from the import's manifest, the source's protocol (agents, rounds, who hears whom and
# when, the stop rule, who leaves), the simulated value being the mean of `replicates`
# simulations.
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
# answer) and held against the held-out subject's debates with `pear population sim-check`
# (DyLAN's protocol; only the skill matched to the subject's round-0 accuracy); the `study` population, fitted to none of DyLAN's debates, on the same debates is
# the contrast. Its outcome is cached under `build/leave_one_subject_out/`, keyed by the corpus, the
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
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pear.analysis import figures, report
from pear.populations import debate_statistics, graded_copies, leave_one_subject_out, simcheck
from pear.store import manifest

figures.set_style()
runs = graded_copies.shipped_runs(du_file, du_dataset, du_grading, du_model)
runs

# %% [markdown]
# ## Compute: the real runs and the simulated population in their setting

# %% [markdown]
# Per run, the population held against it in its source's protocol (`simcheck.check`, as
# `pear population sim-check`), and McNemar's exact test of the vote, last round against round 0
# (`debate_statistics.first_last_mcnemar`, on the debates with rounds).

# %%
checks = {name: simcheck.check(path, population, replicates, sim_seed, n_resamples=n_resamples)
          for name, path in runs.items()}


def describe(name, check):
    """What was imported and matched, and how the simulation was set (Markdown)."""
    imp = (manifest.read(runs[name]) or {}).get("imported", {})
    st = check.setting
    lines = [f"**{name}** ({imp.get('format')}, model {imp.get('model')}): "
             f"{imp.get('debates')} debates, {imp.get('matched')} matched to our "
             f"{', '.join(imp.get('datasets', []))} by text, {imp.get('gold_disagree')} "
             f"golds that disagree with ours, {imp.get('bad_count', 0)} bad entries skipped.",
             f"Simulated population `{check.population.name}` under the source's protocol "
             f"({st['protocol']['name']}), {st['replicates']} replicates: `skill_mean` shifted "
             f"to {st['skill_mean']:+.3f} (mean over replicates) so that its expected round-0 "
             f"agent accuracy is the real run's "
             f"({', '.join(f'{v:.3f}' for v in st['round0_accuracy'].values())}); not refitted."]
    test, note = debate_statistics.first_last_mcnemar(check.per_debate)
    if test is not None:
        lines.append(f"McNemar, vote in the last round vs round 0 (debates with rounds): "
                     f"b = {test.b} right only in the last, c = {test.c} right only in round 0, "
                     f"exact p = {test.pvalue_exact:.3g}.")
    else:
        lines.append(f"McNemar, vote last vs first round: cannot be computed ({note}).")
    return "\n\n".join(lines)


print("\n\n".join(describe(name, c) for name, c in checks.items()))

# %% [markdown]
# One row per (run, statistic): the real value with its 95% interval, the simulated value (mean
# over replicates) with the range of the middle 95% of replicates, and whether the simulated
# value is inside the real interval.

# %%
def interval(v, lo, hi):
    if v is None or not np.isfinite(v):
        return debate_statistics.NOT_DEFINED
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) and np.isfinite(hi) else f"{v:.3f}"


def nan_if_none(x):
    return np.nan if x is None else x


def summary_table(checks):
    return pd.DataFrame([
        {"run": name, "statistic": debate_statistics.STATISTICS[s["statistic"]],
         "real [95% CI]": interval(s["real"], nan_if_none(s["lo"]), nan_if_none(s["hi"])),
         "debates": s["debates"],
         "simulated [95% of replicates]": interval(*c.simulated.set_index("statistic").loc[
             s["statistic"], ["value", "low", "high"]]),
         "inside": {True: "yes", False: "no"}.get(s["inside"], debate_statistics.NOT_DEFINED)}
        for name, c in checks.items() for s in c.statistics]).set_index(["run", "statistic"])


summary = summary_table(checks)
summary

# %% [markdown]
# ## Does the simulated population fall inside the real interval? (one line per statistic)

# %%
def verdict(name, check, s):
    label = debate_statistics.STATISTICS[s["statistic"]]
    if s["inside"] is None:
        why = check.real.set_index("statistic")["note"][s["statistic"]] or \
            "the simulated debates do not define it"
        return f"{name}: {label}: cannot be compared ({why})"
    return (f"{name}: {label}: simulated {s['simulated']:.3f} "
            f"{'inside' if s['inside'] else 'OUTSIDE'} the real interval "
            f"[{s['lo']:.3f}, {s['hi']:.3f}] (real {s['real']:.3f})")


print("\n".join(verdict(name, c, s) for name, c in checks.items() for s in c.statistics))

# %% [markdown]
# The same, one row per run (`pear population sim-check RUN [RUN...] --summary`): statistics
# inside / defined, and those outside with their side (`+` simulated above the real interval,
# `-` below)

# %%
print(simcheck.summary(list(checks.values())))

# %% [markdown]
# ## Leave-one-out: each MATH subject held against a population fitted without it

# %%
loo = leave_one_subject_out.leave_one_out(  # DyLAN's corpus, with its MMLU teams as grounded
    replicates=loo_replicates, seed=sim_seed, n_resamples=n_resamples,
    subjects_=[s.strip() for s in loo_subjects.split(",") if s.strip()])
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

# %% [markdown]
# Per run: the round curves (agent and vote accuracy; real solid, simulated dashed) and the
# statistics with their intervals (real and simulated side by side).

# %%
def error_bars(df):
    v, lo, hi = (df[c].to_numpy(float) for c in ("value", "low", "high"))
    return np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0)


fig, axes = plt.subplots(len(checks), 2, figsize=(10, 3.6 * len(checks)), squeeze=False)
for (ax_c, ax_s), (name, c) in zip(axes, checks.items()):
    curve = c.real_curve
    for col, label, color in (("agent_accuracy", "agents", "C0"), ("vote_accuracy", "vote", "C1")):
        ax_c.plot(curve["round"], curve[col], "-o", color=color, label=f"real {label}")
        ax_c.plot(c.simulated_curve["round"], c.simulated_curve[col], "--s", color=color,
                  alpha=0.7, label=f"simulated {label}")
    ax_c.set_xlabel("round (debates that ended carry their last round)")
    ax_c.set_ylabel("accuracy")
    ax_c.set_xticks(list(curve["round"]))
    ax_c.set_title(f"{name}: round-wise accuracy")
    ax_c.legend(fontsize=7)
    stats = c.real
    y = np.arange(len(stats))
    ax_s.errorbar(stats["value"], y + 0.15, xerr=error_bars(stats), fmt="o", color="k",
                  label="real (95% bootstrap CI)")
    ax_s.errorbar(c.simulated["value"], y - 0.15, xerr=error_bars(c.simulated), fmt="s",
                  color="C3", label=f"simulated ({c.population.name}, 95% of replicates)")
    ax_s.set_yticks(y)
    ax_s.set_yticklabels(stats["label"], fontsize=8)
    ax_s.invert_yaxis()
    ax_s.axvline(0, color="0.8", lw=0.8)
    ax_s.set_xlim(min(-0.02, float(np.nanmin(np.r_[stats["low"], stats["value"]])) - 0.05), 1.02)
    ax_s.set_title(f"{name}: dynamics, real vs simulated")
    ax_s.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
fig.tight_layout()
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
