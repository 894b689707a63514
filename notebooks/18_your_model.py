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
#
# `pear.populations.twin.fit_twin` on the given runs, or on DyLAN's MMLU team of 3 (imported
# from the shipped corpus when needed, `pear.store.import_cache.mmlu_runs`).

# %%
import numpy as np
import pandas as pd

from pear.analysis import metrics, report
from pear.analysis.stats import mcnemar_sample_size, mcnemar_table
from pear.catalog.labels import dataset_label, method_label
from pear.claims import evaluate
from pear.claims.verdicts import POWER  # the ledger's: 80 %
from pear.paper import ensemble, study
from pear.paths import beside, shown
from pear.populations.twin import fit_twin
from pear.runs.grid import preset as grid_preset
from pear.sim.population import expected_accuracy
from pear.store import import_cache
from pear.tasks.benchmarks import load as load_questions

TEAM = 3  # our choice: DyLAN's MMLU team closest to the study's panels
METHODS = ("cot_sc", "clique", "random", "pear")  # ensemble.MAIN, in table order
AGAINST = ("cot_sc", "clique")  # the strongest baseline and the densest topology
study_size = grid_preset("paper")  # the size the power table and the claims are set against
PER_DS, SEEDS = int(study_size.n_questions), len(study_size.seeds)

given = [r.strip() for r in twin_runs.split(",") if r.strip()]
runs = given or [r for r in import_cache.mmlu_runs() if r.name.startswith(f"dylan-mmlu{TEAM}-")]
twin = fit_twin(runs, describe="" if given else
                f"a twin of DyLAN's gpt-3.5 MMLU debates, the team of {TEAM} ({runs[0].name})")
pop, diag = twin.population, twin.population.info["diagnostics"]
what = str(pop.info.get("describes") or f"a twin of {pop.name}")
print(f"{pop.name} ({pop.fingerprint[:12]}): {what}; {diag['debates']} debates, "
      f"{diag['choices']} revision choices")
for f in pop.info.get("fitted_on", []):
    about = ", ".join(f"{k} {f[k]}" for k in ("debates", "model", "protocol", "grading") if f.get(k))
    print(f"  fitted on {f.get('file', '?')} (sha256 {str(f.get('sha256', ''))[:12]}; {about})")
base = diag["base"]
print(f"  pooled toward {base['name']} ({base['fingerprint'][:12]}) with the prior spread "
      f"{diag['prior']['sd']}; log-likelihood {diag['log_likelihood']} (the base's: "
      f"{diag['base_log_likelihood']}); {'converged' if diag['converged'] else 'NOT converged'}"
      f"; fitted in {twin.seconds:.1f} s")
if pop.info.get("warning"):
    print(f"  WARNING: {pop.info['warning']}")

# %% [markdown]
# Its run-level effects (shifts of the corpus fit's coefficients; 0 = `grounded`) with their
# standard errors, the round-0 agent accuracy measured on the runs, and what the twin's agents
# are expected to score in round 0 on the grid's datasets (the `sim` preset's, one seed,
# `twin_questions` per dataset, at most the smallest dataset's):

# %%
sim = grid_preset("sim")
most = min(len(load_questions(d)) for d in sim.datasets)
grid = ensemble.grid("sim", min(twin_questions, most), methods=METHODS)

twin_table = pd.DataFrame(
    [{"Quantity": f"effect: {k}", "Estimate": v["estimate"], "SE": v["se"]}
     for k, v in diag["effects"].items()]
    + [{"Quantity": f"round-0 agent accuracy, measured ({d})", "Estimate": a, "SE": np.nan}
       for d, a in diag.get("round0_accuracy", {}).items()]
    + [{"Quantity": f"round-0 agent accuracy, expected ({dataset_label(d)})",
        "Estimate": expected_accuracy(pop.params, d), "SE": np.nan} for d in grid.datasets]
).set_index("Quantity")
twin_table

# %% [markdown]
# ## Compute: the study's grid, reduced, under the twin
#
# The twin's file goes to `<run>-twin/populations/` (kept when the same twin is there), its
# debates to `<run>-twin/<name>-<fingerprint[:8]>/` (resumable: `pear.paper.ensemble.run_under`).

# %%
root = beside(study.runs_path(runs_dir, preset, backend), "twin")
run_dir = root / f"{pop.name}-{pop.fingerprint[:8]}"
summary = ensemble.run_under(grid, ensemble.population_file(pop, root), run_dir)
results = study.load_results(run_dir, grid, "subset")
print(f"{shown(run_dir)}: {summary.line()}")

# %% [markdown]
# ## How many questions would the study need?
#
# PEAR against CoT-SC and against Clique, per dataset and pooled: accuracy of each, the
# discordant pairs (b: PEAR right and the other wrong; c: the reverse, `mcnemar_table`), the
# questions per dataset McNemar's test needs for 80 % power at that effect
# (`mcnemar_sample_size`; pooled: the pooled test's, spread evenly over the datasets), and how
# many seeds of the study's 200 questions per dataset that is (each seed counted as fresh
# questions: optimistic, since the study repeats its questions).

# %%
debates = results.debates
datasets = [d for d in grid.datasets if d in set(debates["dataset"])]
rows = []
for against in AGAINST:
    pairs = metrics.paired(debates, "pear", against)
    for ds in [*datasets, "pooled"]:
        part = pairs if ds == "pooled" else pairs[pairs["dataset"] == ds]
        k = len(datasets) if ds == "pooled" else 1
        _, test = mcnemar_table(part["correct_a"], part["correct_b"])
        need = mcnemar_sample_size(test.b, test.c, len(part), power=POWER)
        per = None if need is None else int(np.ceil(need / k))
        rows.append({"Against": method_label(against),
                     "Dataset": "Pooled" if ds == "pooled" else dataset_label(ds),
                     "PEAR": float(part["correct_a"].mean()),
                     "Baseline": float(part["correct_b"].mean()),
                     "Questions": len(part) // k, "b": test.b, "c": test.c,
                     "Questions needed": "no effect" if per is None else per,
                     f"Seeds of {PER_DS}": "–" if per is None else int(np.ceil(per / PER_DS)),
                     f"Within {SEEDS} seeds": "–" if per is None else
                     ("yes" if per <= PER_DS * SEEDS else "no")})
power = pd.DataFrame(rows).set_index(["Against", "Dataset"])
power

# %% [markdown]
# ## Which of the study's claims could its size decide?
#
# The claims ledger on the twin's grid (95 % bootstrap intervals): each claim's finding (its
# verdict on simulated agents is "not evidence"; "not evaluated" where it names a method the
# grid does not run, `ensemble.claims_not_run`), and where inconclusive the questions per
# setting that would decide it, set against the study's size.

# %%
ledger = evaluate.ledger(results, None, rng=bootstrap_seed)
missing = ensemble.claims_not_run(grid)
at_study = f"At the study's size ({PER_DS} questions x {SEEDS} seeds)"


def at_the_studys_size(r):
    """The claim's finding, the questions that would decide it, and whether the study's
    size reaches them (or why that is not asked)."""
    need = None if pd.isna(r["n_needed"]) else int(r["n_needed"])
    if r["id"] in missing:
        return "not evaluated", None, ("not covered: the twin's grid does not run "
                                       + ", ".join(method_label(m) for m in missing[r["id"]]))
    if r["finding"] in ("supported", "contradicted"):
        return r["finding"], need, f"decided at {grid.n_questions} questions"
    if r["finding"] == "inconclusive" and need is not None:
        k = int(np.ceil(need / PER_DS))
        return r["finding"], need, (f"{'yes' if need <= PER_DS * SEEDS else 'no'}: {k} "
                                    f"seed{'s' * (k != 1)} of {PER_DS} questions")
    if r["finding"] == "inconclusive":
        return r["finding"], need, "no: no sample size follows (a nil difference, or a test of ranks)"
    return r["finding"], need, "not covered by the twin's grid"


rows = []
for _, r in ledger.iterrows():
    finding, need, at = at_the_studys_size(r)
    rows.append({"Claim": r["id"], "Kind": r["kind"], "Finding": finding,
                 "Reproduced": r["reproduced"] or "–",
                 "Questions needed": "–" if need is None else need, at_study: at,
                 "Why": r["reason"] or "–"})  # the finding's own reason (not the not-evidence note)
claims = pd.DataFrame(rows).set_index("Claim")
at = claims[at_study].astype(str)
print(f"{len(claims)} claims: {at.str.startswith('decided').sum()} decided on the twin's grid, "
      f"{at.str.startswith('yes:').sum()} more decidable at the study's size, "
      f"{at.str.startswith('no:').sum()} not, {at.str.startswith('not covered').sum()} not "
      f"covered by the twin's grid ({(claims['Finding'] == 'not evaluated').sum()} of them name "
      "a method it does not run; the others need models, full sets or scopes it does not have)")
claims

# %% [markdown]
# ## Save

# %%
agents = f"simulated agents, {what}; population {pop.name}"
on_grid = (f"{agents}; grid: {len(grid.methods)} methods x {len(grid.datasets)} datasets x "
           f"{grid.n_questions} questions x {len(grid.seeds)} seed")
report.save_table(twin_table, "your_model_twin", digits=3,
                  caption="The twin: its run-level effects (shifts of the corpus fit's "
                          "coefficients) with standard errors, and its agents' round-0 "
                          f"accuracy, measured on the runs and expected on the grid's datasets: "
                          f"{agents}.")
report.save_table(power, "your_model_power", digits=3,
                  caption="PEAR against CoT-SC and Clique on the same questions: accuracy, "
                          "discordant pairs b (PEAR right) and c, the questions per dataset "
                          "McNemar's test needs for 80% power at that effect (pooled: the "
                          "pooled test's, spread over the datasets) and the seeds of the "
                          "study's questions per dataset that is, each seed counted as fresh "
                          f"questions: {on_grid}.")
report.save_table(claims, "your_model_claims",
                  caption="Every claim of the study on the twin's grid: its finding, and where "
                          "inconclusive the questions per setting that would decide it against "
                          f"the study's size: {on_grid}.")
