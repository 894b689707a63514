"""``pear population ...``, the one command family of simulated populations
(:mod:`pear.populations`)::

    pear population fit RUN... --out FILE    a twin of recorded runs (pear.populations.twin)
    pear population sim-check RUN...         a population held against recorded runs, in
                                             their setting (pear.populations.simcheck)
    pear population family ACTION            the family of real twins: list, write, check,
                                             split-half (pear.populations.family, split_half)
    pear population shipped MODE             the shipped populations and the corpus fit they
                                             are written from: check, write, write-graded,
                                             corpus-fit, bootstrap, in-sample
                                             (pear.populations.corpus_fit, draws, checks,
                                             graded_copies)
    pear population published                a population held against published per-model
                                             figures (pear.populations.published_collapse)
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from pear.cli.options import Parser, positive
from pear.paths import shown

__all__ = ["add_population"]


def add_population(sub: Any) -> None:
    p = sub.add_parser("population", help="fit, check and simulate populations: fit, "
                       "sim-check, family, shipped, published",
                       description="Simulated populations fitted to and held against recorded "
                                   "runs: a twin of runs (fit), a population in a run's own "
                                   "setting (sim-check), the family of real twins (family), "
                                   "the shipped populations and their corpus fit (shipped), "
                                   "and published per-model figures (published).")
    commands = p.add_subparsers(dest="population_command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    for add in (_add_fit, _add_sim_check, _add_family, _add_shipped, _add_published):
        add(commands)


def _add_fit(sub: Any) -> None:
    f = sub.add_parser("fit", help="fit a twin population to recorded runs",
                       description="A population fitted to recorded runs (ours, imported, "
                                   "Inspect): the corpus fit (grounded) with run-level effects "
                                   "(keep, keep_right, follow, follow_right, invent, "
                                   "find_right) pooled toward it by a weak prior (data/"
                                   "populations/family/prior.json: 100 debates dominate it; "
                                   "a pilot under 20 debates is written with a warning), and the runs' initial answers (strength per "
                                   "dataset, how correlated and how spread the errors are). "
                                   "Bad input (no revision round, one agent, nothing graded) "
                                   "is one line naming it (exit 2) and nothing is written.")
    f.add_argument("runs", nargs="+", metavar="RUN", help="run directories (pear run, pear "
                   "import)")
    f.add_argument("--out", required=True, metavar="FILE.json", help="the population file")
    f.add_argument("--name", default=None, help="the population's name (default: twin-<run>)")
    f.add_argument("--prior", default=None, metavar="FILE",
                   help="a prior file (default: data/populations/family/prior.json)")
    f.set_defaults(handler=_cmd_fit)


def _cmd_fit(a: argparse.Namespace) -> int:
    from pear.populations.twin import EFFECTS, fit_twin, load_prior
    if not a.out.endswith(".json"):
        raise ValueError(f"invalid --out {a.out!r}: a population file ends in .json")
    with warnings.catch_warnings():  # a small pilot's warning is printed below, once
        warnings.simplefilter("ignore")
        tw = fit_twin(a.runs, name=a.name, prior=load_prior(a.prior))
    path = tw.population.write(a.out)
    if tw.population.info.get("warning"):
        print(f"warning: {tw.population.name}: {tw.population.info['warning']}",
              file=sys.stderr)
    d = tw.population.info["diagnostics"]
    effects = ", ".join(f"{k} {d['effects'][k]['estimate']:+.3f} "
                        f"(se {d['effects'][k]['se']:.3f})" for k in EFFECTS)
    print(f"{tw.population.name}: {d['debates']} debates, {d['choices']} choice sets, "
          f"log-likelihood {d['base_log_likelihood']:.1f} -> {d['log_likelihood']:.1f}; "
          f"{effects}; round-0 accuracy {d.get('round0_accuracy')}; {tw.seconds:.1f} s")
    print(f"wrote {path}")
    return 0


def _add_family(sub: Any) -> None:
    f = sub.add_parser("family", help="the family of real twins: write, check, split-half",
                       description="The family (data/populations/family/): a twin of each "
                                   "licensed run (DyLAN's MATH subjects and MMLU teams) and the "
                                   "prior they are pooled with.")
    f.add_argument("action", choices=("list", "write", "check", "split-half"),
                   help="list: the members and their effects; write: fit and write them again "
                        "(imports DyLAN's debates first); check: fail when the shipped files "
                        "differ from a fit now; split-half: each member's twin fitted on half "
                        "its questions, checked on the other half")
    f.add_argument("--replicates", type=int, default=20, metavar="K",
                   help="split-half: simulations per check (default 20)")
    f.set_defaults(handler=_cmd_family)


def _cmd_family(a: argparse.Namespace) -> int:
    from pear.populations import family  # heavy: pandas, scipy, only for this command
    if a.action == "list":
        print("member; under Du et al.'s protocol (3 agents, 2 debate rounds): change rate, "
              "W2R, R2W, vote gain; its run-level effects; its source")
        for p in family.load():
            d = p.info["diagnostics"]
            du = d.get("du_protocol") or {}
            dyn = "  ".join(f"{k} {du[k]:+.3f}" if k == "vote_gain" else f"{k} {du[k]:.3f}"
                            for k in ("change_rate", "w2r", "r2w", "vote_gain") if k in du)
            eff = " ".join(f"{k} {v['estimate']:+.2f}" for k, v in d["effects"].items())
            print(f"{p.name:<44} {dyn}  [{eff}]  ({p.info['describes']})")
        return 0
    from pear.store.import_cache import corpus_run, mmlu_runs  # the licensed runs, imported
    ms = family.members(corpus_run(), mmlu_runs())
    if a.action == "write":
        for path in family.write(ms):
            print(f"wrote {path}")
        return 0
    if a.action == "check":
        problems = family.check_shipped(ms)
        for p in problems:
            print(p)
        print(f"family: {len(family.load())} members, " + ("as shipped" if not problems else
                                                f"{len(problems)} differences"))
        return 1 if problems else 0
    from pear.populations.split_half import split_half
    rows = [split_half(m.runs[0], keep=m.keep, name=m.name, replicates=a.replicates).row()
            for m in ms]
    import pandas as pd
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


# ------------------------------------------------------------ pear population shipped

def _add_shipped(sub: Any) -> None:
    p = sub.add_parser("shipped", help="the shipped populations: check, write, write-graded, "
                       "corpus-fit, bootstrap, in-sample",
                       description="The shipped simulated populations (data/populations/: "
                                   "study, grounded, grounded-math and grounded's bootstrap "
                                   "draws) and the corpus fit they are written from (DyLAN's "
                                   "MATH and MMLU debates, pear.populations.corpus_fit), "
                                   "checked, "
                                   "written, refitted.")
    modes = p.add_subparsers(dest="mode", required=True, metavar="MODE")

    def mode(name: str, handler: Any, summary: str, description: str | None = None,
             also: bool = False) -> argparse.ArgumentParser:
        m = modes.add_parser(name, help=summary,
                             description=description or summary[0].upper() + summary[1:] + ".")
        if also:
            m.add_argument("--also", nargs="+", default=[], type=_run_dir, metavar="RUN",
                           help="imported runs (or runs of ours) to fit on besides DyLAN's "
                                "debates")
        m.set_defaults(handler=handler)
        return m

    mode("check", _cmd_populations_check,
         "import DyLAN's MATH and MMLU debates from scratch and refit from them; exit 1 unless "
         "the shipped graded import has the same records and the shipped population files "
         "(study, grounded, grounded-math and the ensemble's draws) the same fingerprints "
         "(minutes; run by CI)")
    mode("write", _cmd_populations_write,
         "rewrite data/populations/study.json, grounded.json, grounded-math.json and the "
         "ensemble's draws (data/populations/ensemble/)", also=True)
    mode("write-graded", _cmd_populations_write_graded,
         "import DyLAN's MATH corpus and notebook 17's shipped files from scratch and "
         "rewrite their shipped graded copies (data/real-debates/graded/)")
    mode("corpus-fit", _cmd_populations_fit,
         "print the corpus fit (on DyLAN's debates and the --also runs): its size, the "
         "coefficients and the diagnostics", also=True)
    b = mode("bootstrap", _cmd_populations_bootstrap,
             "time K bootstrap refits of the corpus fit and print the spread of their "
             "coefficients", also=True)
    b.add_argument("k", type=positive, metavar="K", help="how many refits")
    b.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    mode("in-sample", _cmd_populations_in_sample,
         "hold the fit against its own data: the choice level per situation and the corpus's "
         "debates simulated under their own protocol; exit 1 when a situation's choices are "
         "off (pear.populations.checks.in_sample)", also=True)


def _add_published(sub: Any) -> None:
    pub = sub.add_parser("published", help="hold a population against published per-model "
                         "debate figures",
                         description="A population held against published per-model debate "
                                     "figures (DebateLedger's collapse and recovery of 11 "
                                     "models; pear.populations.published_collapse), in their "
                                     "setting.")
    pub.add_argument("--population", default="grounded", metavar="NAME|FILE",
                     help="study, grounded, grounded-math or a file (default: grounded)")
    pub.add_argument("--replicates", type=positive, default=5, metavar="K",
                     help="simulations per model (default 5)")
    pub.add_argument("--questions", type=positive, default=500, metavar="N",
                     help="a seeded sample of N MMLU-Pro questions (default 500)")
    pub.add_argument("--seed", type=int, default=0, help="the simulations' seed (default 0)")
    pub.set_defaults(handler=_cmd_populations_published)


def _run_dir(text: str) -> str:
    if not Path(text, "manifest.json").is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a run directory (no manifest.json)")
    return text


def _ground(a: argparse.Namespace) -> Any:
    """The corpus fit on DyLAN's debates and the --also runs, printed."""
    # heavy: only for this command
    from pear.populations.corpus_fit import fit_corpus, fit_summary
    g = fit_corpus(extra=a.also)
    print(fit_summary(g))
    return g


def _cmd_populations_check(a: argparse.Namespace) -> int:
    from pear.populations import checks, draws  # heavy: pandas, scipy, only for this command
    from pear.store.shipped import GRADED_DIR
    graded, problems = checks.check_all(log=print)
    where = shown(GRADED_DIR, elide=False)
    for line in graded:
        print(f"graded import check FAILED: {line}", file=sys.stderr)
    if graded:
        print(f"graded import check: {where} is not what the code produces now; if the change "
              "is intended, rewrite it with `pear population shipped write-graded`",
              file=sys.stderr)
    else:
        print(f"graded import check: {where} holds the records imports from scratch write")
    for line in problems:
        print(f"population check FAILED: {line}", file=sys.stderr)
    if not problems:
        print(f"population check: the shipped study, grounded, grounded-math and "
              f"{draws.ENSEMBLE_K} bootstrap files are what the shipped data and code "
              "produce")
    return 1 if problems or graded else 0


def _cmd_populations_write(a: argparse.Namespace) -> int:
    from pear.populations import checks, draws  # heavy: pandas, scipy, only for this command
    written, record = checks.write_populations(_ground(a))
    for path, p in written:
        print(f"wrote {path} (fingerprint {p.fingerprint[:12]})")
    print(f"wrote {draws.ENSEMBLE_K} bootstrap draws of seed {draws.ENSEMBLE_SEED} and "
          f"{record}")
    return 0


def _cmd_populations_write_graded(a: argparse.Namespace) -> int:
    import time
    # heavy: only for this command
    from pear.populations.graded_copies import write_graded, write_shipped_graded
    for write in (lambda: [write_graded()], write_shipped_graded):
        t0 = time.perf_counter()
        for dest in write():
            sizes = ", ".join(f"{p.name} {p.stat().st_size:,} bytes"
                              for p in sorted(dest.iterdir()))
            print(f"wrote {shown(dest, elide=False)} ({sizes}) from an import from scratch in "
                  f"{time.perf_counter() - t0:.0f} s")
    return 0


def _cmd_populations_fit(a: argparse.Namespace) -> int:
    _ground(a)
    return 0


def _cmd_populations_bootstrap(a: argparse.Namespace) -> int:
    from pear.populations.draws import bootstrap_spread  # heavy: only for this command
    dt, sd = bootstrap_spread(a.k, a.seed, _ground(a))
    print(f"{a.k} bootstrap refits in {dt:.2f} s ({dt / a.k:.3f} s each); sd of the "
          "coefficients: " + ", ".join(f"{f} {s:.3f}" for f, s in sd.items()))
    return 0


def _cmd_populations_in_sample(a: argparse.Namespace) -> int:
    import time
    from pear.populations.checks import in_sample  # heavy: only for this command
    g = _ground(a)
    t0 = time.perf_counter()
    table, debates, problems = in_sample(g)
    print("the choice level, real and predicted, per situation (own answer x heard):")
    print(table.round(3).to_string())
    print(f"the corpus simulated under its own protocol ({debates.setting.get('replicates')} "
          "replicates):")
    print(debates.table())
    print(f"in-sample check in {time.perf_counter() - t0:.0f} s: " + (
        "every situation's choices as predicted" if not problems else f"{len(problems)} gaps"))
    for line in problems:
        print(f"in-sample check FAILED: {line}", file=sys.stderr)
    return 1 if problems else 0


def _cmd_populations_published(a: argparse.Namespace) -> int:
    from pear.populations.published_collapse import report  # heavy: the simulator, pandas
    print(report(a.population, a.replicates, a.seed, a.questions))
    return 0


# ----------------------------------------------------------- pear population sim-check

def _add_sim_check(sub: Any) -> None:
    sc = sub.add_parser("sim-check", help="hold a simulated population against recorded runs",
                        description="Simulate the run's debates in its setting (an imported "
                                    "run: its source's protocol from the manifest; one of "
                                    "ours: PEAR's engine with its methods and protocol) with "
                                    "agents of a population whose skill alone is matched to "
                                    "the run's round-0 agent accuracy, and set each dynamics "
                                    "statistic beside the run's 95%% bootstrap interval over "
                                    "debates. Bad input (not a run, a run with one agent, an "
                                    "unknown population) is one line naming it (exit 2), "
                                    "before any run is simulated.")
    sc.add_argument("runs", nargs="+", metavar="RUN",
                    help="run directories (pear run or pear import)")
    sc.add_argument("--summary", action="store_true",
                    help="one row per run (statistics inside / defined, those outside and "
                         "which way) and a total, instead of each run's table")
    sc.add_argument("--population", default="grounded", metavar="NAME|FILE",
                    help="study, grounded (default), grounded-math, a population file (.json; "
                         "a twin's replicates each draw its effects: a predictive interval) "
                         "or family (every member of data/populations/family/, with the range "
                         "of their simulated values per statistic and the forecast of the "
                         "members weighted by their likelihood on the run)")
    sc.add_argument("--replicates", type=int, default=20, metavar="K",
                    help="simulations of the run; the simulated value is their mean "
                         "(default 20)")
    sc.add_argument("--seed", type=int, default=0,
                    help="seed of the simulations and the bootstrap (default 0)")
    sc.add_argument("--json", action="store_true",
                    help='print {"run", "population", "setting", "statistics"} as JSON')
    sc.add_argument("--no-predictive", dest="predictive", action="store_false",
                    help="a twin (a population file with its effects' covariance) is "
                         "simulated at its fitted effects in every replicate, instead of a "
                         "fresh draw of them per replicate (the predictive interval)")
    sc.set_defaults(handler=_cmd_sim_check)


def _cmd_sim_check(a: argparse.Namespace) -> int:
    import json
    # heavy: pandas, scipy, only for this command
    from pear.populations.simcheck import check, summary
    from pear.sim.population import load as load_population
    from pear.store import manifest
    for run in a.runs:  # every run and the population checked before anything is simulated
        if not os.path.isdir(run) or manifest.read(run) is None:
            raise ValueError(f"not a run directory: {run!r} (no manifest.json)")
    if a.population == "family":
        return _sim_check_family(a)
    pop = load_population(a.population)
    draws = None
    if a.predictive and (pop.info.get("diagnostics") or {}).get("effects_cov"):
        from pear.populations.twin import draws as twin_draws
        draws = twin_draws(pop, a.replicates, a.seed)  # a twin: its fitted uncertainty
    results = [check(run, pop, a.replicates, a.seed, draws=draws) for run in a.runs]
    if a.json:
        print(json.dumps([r.to_json() for r in results] if len(results) > 1 or a.summary
                         else results[0].to_json(), indent=2))
    elif a.summary:
        print(summary(results))
    else:
        print("\n\n".join(r.table() for r in results))
    return 0


def _sim_check_family(a: argparse.Namespace) -> int:
    """``pear population sim-check RUN --population family``: every member, and the family's
    range."""
    import json
    from pear.populations import family
    fam = family.load()
    results = [family.check(run, fam, a.replicates, a.seed, weighted=True) for run in a.runs]
    if a.json:
        print(json.dumps([r.to_json() for r in results] if len(results) > 1
                         else results[0].to_json(), indent=2))
    else:
        print("\n\n".join(r.table() for r in results))
    return 0
