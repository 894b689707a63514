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
# # 14 · Calibration of the simulated agents: the `study` and `grounded` populations
#
# How far the simulated populations (`pear.sim.population`, files in `data/populations/`)
# can be trusted as an instrument, whatever backend the other notebooks ran.
#
# * `study`: every parameter fitted (`benchmarks/calibrate_simulation.py`) to the study's
#   baselines only — CoT, CoT-SC and Random accuracy per dataset (averaged over the study's
#   models), Random's round-wise rise and Random's trajectory diagnostics — while Clique, Star,
#   Chain and Ring were held out. PEAR and its ablations entered nothing.
# * `grounded`: the same initial answers, confidence and critique acceptance, but revision
#   drawn from a model fitted by maximum likelihood to real debates (DyLAN's 4,800 gpt-3.5
#   MATH debates and its MMLU teams' debates, `pear.populations.corpus_fit`) and the erring agents'
#   agreement measured there.
#   Its revision and its erring agents' agreement were not fitted to the study's numbers:
#   for them every target below is a check, not a fit.
#
# This notebook simulates the baselines with both on the `sim` preset's questions and sets
# each target beside the study's number: filled markers were fitted (for `study`), open ones
# are the held-out validation. (On another sample of questions the fitted accuracies move by
# a few points: each question's difficulty is a random draw; `benchmarks/calibrate_simulation.py`
# prints that check.) Which parameter came from which data: `docs/populations.md`.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>; where it records this grid's debates
# under the same population (a simulated sim build), they are read there, not run again
model: str = ""  # not used
seeds: str = ""  # not used
n_questions: int = 0  # not used
calibration_questions: int = 200  # questions per dataset (200: the sim preset's subset, as fitted)
calibration_seeds: int = 1  # run seeds 0..calibration_seeds-1

# %% [markdown]
# ## Simulate the baselines with each population

# %%
from pear.paper import study
from pear.populations import calibration
from pear.analysis import figures, report

figures.set_style()
populations = ["study", "grounded"]
summaries = {p: calibration.simulate(methods=calibration.FITTED_METHODS
                                     + calibration.HELD_OUT_METHODS,
                                     n_questions=calibration_questions,
                                     seeds=range(calibration_seeds), population=p,
                                     recorded=study.runs_path(runs_dir, preset, backend))
             for p in populations}
calibration.describe_populations(populations)

# %% [markdown]
# ## Compute: the study beside each population

# %%
tables = {p: calibration.residual_table(s) for p, s in summaries.items()}
headline, both = calibration.populations_table(tables)
headline

# %%
both

# %% [markdown]
# ## Figure

# %%
fig = calibration.plot_calibration(tables)
fig

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "calibration")
report.save_table(both.set_index("target"), "calibration",
                  caption=f"Simulated agents: the study's numbers beside the populations "
                          f"study (fitted to the fitted targets) and grounded (revision fitted "
                          f"to real debates, nothing fitted to these targets) "
                          f"({calibration_questions} questions per dataset, "
                          f"{calibration_seeds} seeds); held-out targets entered no fit; "
                          f"diff = simulated - study.")
