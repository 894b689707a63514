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
# # 09 · Calibration of the simulated agents
#
# How far the simulated population (`pear.backends.simulated`, its `SimParams` defaults) can be
# trusted as an instrument, whatever backend the other notebooks ran: the population's
# parameters were fitted (`benchmarks/calibrate_simulation.py`) to the study's baselines only —
# CoT, CoT-SC and Random accuracy per dataset (averaged over the study's models), Random's
# round-wise rise and Random's trajectory diagnostics — while Clique, Star, Chain and Ring were
# held out. PEAR and its ablations entered nothing. This notebook simulates the baselines with
# those defaults on the `sim` preset's questions and sets each target beside the study's
# number: filled markers were fitted, open ones are the held-out validation. (On another
# sample of questions the fitted accuracies move by a few points: each question's difficulty
# is a random draw; `benchmarks/calibrate_simulation.py` prints that check.)

# %% tags=["parameters"]
backend = "llamacpp"  # llamacpp | vllm | openai | simulated | replay (not used: see above)
preset = "smoke"  # smoke | paper | sim (not used)
runs_dir = ""  # empty: data/runs/<preset>-<backend> (not used)
model = ""  # not used
seeds = ""  # not used
n_questions = 0  # not used
calibration_questions = 200  # questions per dataset (200: the sim preset's subset, as fitted)
calibration_seeds = 1  # run seeds 0..calibration_seeds-1

# %% [markdown]
# ## Simulate the baselines with the calibrated defaults

# %%
from pear.paper import calibration
from pear.analysis import figures, report

figures.set_style()
summary = calibration.simulate(methods=calibration.FITTED_METHODS + calibration.HELD_OUT_METHODS,
                               n_questions=calibration_questions,
                               seeds=range(calibration_seeds))

# %% [markdown]
# ## Compute: the study beside the simulation

# %%
table = calibration.residual_table(summary)
headline = calibration.goals(table)
headline

# %%
table[["target", "study", "simulated", "diff", "role"]]

# %% [markdown]
# ## Figure

# %%
fig = calibration.plot_calibration(table)
fig

# %% [markdown]
# ## Save

# %%
figures.save_figure(fig, "calibration")
report.save_table(table.set_index("target")[["study", "simulated", "diff", "role"]],
                  "calibration",
                  caption=f"Simulated agents: the study's numbers beside the calibrated "
                          f"population ({calibration_questions} questions per dataset, "
                          f"{calibration_seeds} seeds); fitted targets entered the fit, "
                          f"held-out ones did not; diff = simulated - study.")
