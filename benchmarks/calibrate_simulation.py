"""Refit the simulated population on the study's baselines and print the residual table.

``python benchmarks/calibrate_simulation.py`` runs the staged fit of
:func:`pear.populations.calibration.fit` from the documented starting point :data:`START` (seeded: a
fixed question sample and fixed run seeds, so the fit is reproducible), prints the fitted
parameters, then simulates the fitted population on an evaluation grid (by default the
``sim`` preset's question subset, which the fit never saw) and prints, per target, the
study's number, the simulated one and whether it was fitted or held out, the calibration
goals, Random's round-wise accuracy and (as a finding, never an input) PEAR's gains.
It also scores the fitted targets on another question sample (``--other-question-seed``):
each question's difficulty is a random draw, so a different sample moves them by a few
points.  ``--no-fit`` evaluates the current ``SimParams`` defaults instead.

Fitted: CoT, CoT-SC and Random accuracy per dataset (averaged over the study's models),
Random's round-wise rise, Random's diagnostics.  Held out: Clique, Star, Chain, Ring.
PEAR and its ablations enter nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import pandas as pd

from pear.populations import calibration
from pear.sim.backend import SimParams
from pear.analysis.compare import load_paper, to_internal

START = SimParams(  # our choice: a rough hand guess from exploratory runs
    ease_gsm8k=2.0, ease_math500=-2.0, ease_truthfulqa=1.5, ease_mmlu_pro=0.0,
    difficulty_sd=3.5, skill_sd=0.5, wrong_focus=0.6, conf_base=3.0, accept_agree=1.5,
    accept_bias=-2.0, accept_right=1.0, accept_hold=2.0, recheck=0.4)
"""Where the fit starts (the fields it does not fit keep their ``SimParams`` defaults)."""


def _seeds(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(",") if s.strip())


def gains(summary: pd.DataFrame) -> dict[str, float]:
    """PEAR's accuracy minus the best fixed topology's (per setting, then averaged) and
    minus Random's (averaged over settings); a setting is a dataset (and, for the study's
    ``main_results.csv``, a model)."""
    keys = ["dataset", "model"] if "model" in summary else ["dataset"]
    acc = summary.pivot_table(index=keys, columns="method", values="accuracy")
    best = acc[list(calibration.HELD_OUT_METHODS)].max(axis=1)
    return {"pear": float(acc["pear"].mean()),
            "gain_over_best_fixed": float((acc["pear"] - best).mean()),
            "gain_over_random": float((acc["pear"] - acc["random"]).mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-fit", action="store_true", help="evaluate the SimParams defaults")
    ap.add_argument("--fit-questions", type=int, default=200,
                    help="questions per dataset of the fit (the sim preset's subset)")
    ap.add_argument("--fit-seeds", default="0")
    ap.add_argument("--fit-question-seed", type=int, default=0,
                    help="question sample of the fit (0: the sim preset's subset)")
    ap.add_argument("--budget", type=int, default=60, help="simulations per fit stage")
    ap.add_argument("--eval-questions", type=int, default=200)
    ap.add_argument("--eval-seeds", default="0,1")
    ap.add_argument("--no-pear", action="store_true", help="skip the PEAR finding")
    ap.add_argument("--other-question-seed", type=int, default=1,
                    help="also score the fitted targets on this other question sample")
    args = ap.parse_args()
    pd.set_option("display.width", 200)

    if args.no_fit:
        params = SimParams()
        print("evaluating the SimParams defaults (no fit)")
    else:
        t0 = time.perf_counter()
        result = calibration.fit(START, n_questions=args.fit_questions,
                                 seeds=_seeds(args.fit_seeds),
                                 question_seed=args.fit_question_seed, budget=args.budget)
        params = result.params
        print(f"fit took {time.perf_counter() - t0:.0f} s")
        for stage in result.stages:
            print(f"  stage {stage['stage']}: cost {stage['cost']:.3f}, "
                  f"{stage['simulations']} simulations ({stage['status']})")
        fitted = sorted({f for s in result.stages for s in [s] for f in s["fields"]})
        print("fitted parameters (the SimParams defaults should read):")
        for f in fitted:
            print(f"  {f} = {getattr(params, f)}  (default now {getattr(SimParams(), f)})")

    methods = [*calibration.FITTED_METHODS, *calibration.HELD_OUT_METHODS]
    if not args.no_pear:
        methods.append("pear")
    t0 = time.perf_counter()
    summary = calibration.simulate(params, methods, n_questions=args.eval_questions,
                                   seeds=_seeds(args.eval_seeds), question_seed=0)
    wall = time.perf_counter() - t0
    print(f"\nevaluation grid: {args.eval_questions} questions x seeds {args.eval_seeds} x 4 "
          f"datasets, {int(summary['debates'].sum())} debates in {wall:.0f} s")
    table = calibration.residual_table(summary)
    show = table[["target", "study", "simulated", "diff", "role"]]
    print(show.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\ngoals:")
    for k, v in calibration.goals(table).items():
        print(f"  {k}: {v:.3f}")
    if args.other_question_seed is not None:
        other = calibration.simulate(params, calibration.FITTED_METHODS,
                                     n_questions=args.eval_questions,
                                     seeds=_seeds(args.eval_seeds),
                                     question_seed=args.other_question_seed)
        g = calibration.goals(calibration.residual_table(other))
        print(f"\nout of sample (another {args.eval_questions} questions per dataset, "
              f"question seed {args.other_question_seed}): fitted accuracy MAE "
              f"{g['fitted_accuracy_mae']:.3f}, Random - CoT-SC "
              f"{g['random_minus_cot_sc']:+.3f}; Random's diagnostics errors "
              + ", ".join(f"{d} {g[d + '_error']:.3f}" for d in calibration.DIAGNOSTICS))
    curves = summary.groupby("method")[[c for c in summary.columns if c.startswith("round_")]]\
        .mean()
    print("\nvote accuracy by round (mean of datasets):")
    print(curves.dropna(axis=0, how="all").round(3).to_string())
    if not args.no_pear:
        g = gains(summary)
        s = gains(to_internal(load_paper("main_results")))
        print(f"\nfinding (PEAR entered nothing): PEAR {g['pear']:.3f}; gain over the best "
              f"fixed topology {g['gain_over_best_fixed']:+.3f}, over Random "
              f"{g['gain_over_random']:+.3f} (mean of datasets; the study, mean of its "
              f"settings: PEAR {s['pear']:.3f}, {s['gain_over_best_fixed']:+.3f}, "
              f"{s['gain_over_random']:+.3f})")
        print(summary[summary["method"] == "pear"][["dataset", "accuracy", *calibration
              .DIAGNOSTICS]].round(3).to_string(index=False))


if __name__ == "__main__":
    main()
