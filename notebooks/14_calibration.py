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
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from pear.analysis import figures, report
from pear.analysis.figures import METHOD_COLORS
from pear.catalog.labels import METHOD_LABELS
from pear.paper import study
from pear.populations import calibration

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

# %% [markdown]
# Study (x) against simulation (y) for every target of the residual table: one panel for
# accuracies (per dataset and averaged), one for diagnostics; filled markers for fitted
# targets, open ones for held-out targets, the diagonal for agreement and a band of +-0.05.
# Every panel says "simulated agents"; one row of panels per population.

# %%
MARKERS = {"accuracy": "o", "w2r": "^", "r2w": "v", "acceptance": "s",
           "cross_answer": "D", "source_confidence": "P"}


def calibration_panels(axes, table, name):
    """One population's accuracy and diagnostics panels."""
    panels = [("Accuracy", table[table["quantity"] == "accuracy"]),
              ("Diagnostics", table[table["quantity"] != "accuracy"])]
    for a, (label, part) in zip(axes, panels):
        for r in part.itertuples(index=False):
            color = METHOD_COLORS.get(r.method, "k")
            a.scatter([r.study], [r.simulated], s=46 if r.dataset == "all" else 22,
                      marker=MARKERS.get(r.quantity, "o"), linewidths=1.1, edgecolors=color,
                      facecolors=color if r.role == "fitted" else "none")
        lim = (0.0, 1.0)
        a.plot(lim, lim, color="0.3", lw=0.8)
        a.fill_between(lim, [lim[0] - 0.05, lim[1] - 0.05], [lim[0] + 0.05, lim[1] + 0.05],
                       color="0.5", alpha=0.12, lw=0)
        a.set(xlim=lim, ylim=lim, xlabel="study",
              ylabel=f"simulation ({name})" if name else "simulation",
              title=f"{label}: {name}" if name else label)
        a.set_aspect("equal")
        a.text(0.5, 0.5, "simulated agents", transform=a.transAxes, ha="center", va="center",
               fontsize=14, color="0.6", alpha=0.25, rotation=30)


def plot_calibration(tables, *, ax=None, title=None):
    """``tables``: population name -> its residual table (or one table); ``ax``: one
    population's panels drawn on one axes."""
    tables = dict(tables) if isinstance(tables, dict) else {"": tables}
    if ax is None:
        fig = Figure(figsize=(7.0, 3.3 * len(tables)), layout="constrained")
        grid = fig.subplots(len(tables), 2, squeeze=False)
    else:
        if len(tables) > 1:
            raise ValueError("one ax holds one population's table")
        fig, grid = ax.figure, [[ax, ax]]
    for axes, (name, part) in zip(grid, tables.items()):
        calibration_panels(list(axes), part, name)
    fitted, held_out = calibration.FITTED_METHODS, calibration.HELD_OUT_METHODS
    shown = set(pd.concat(tables.values())["method"])
    handles = [Line2D([], [], ls="", marker="o", color=METHOD_COLORS[m],
                      markerfacecolor=METHOD_COLORS[m] if m in fitted else "none",
                      label=f"{METHOD_LABELS[m]} ({'fitted' if m in fitted else 'held out'})")
               for m in (*fitted, *held_out) if m in shown]
    handles += [Line2D([], [], ls="", marker=MARKERS[q], color="0.3", markerfacecolor="none",
                       label=q.replace("_", " ")) for q in calibration.DIAGNOSTICS]
    fig.legend(handles=handles, loc="outside right center", fontsize=7, frameon=False)
    fig.suptitle(title or "Simulated agents: calibration (filled: fitted, open: held out; "
                          "large: mean of datasets)", fontsize=9)
    return fig


fig = plot_calibration(tables)
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
