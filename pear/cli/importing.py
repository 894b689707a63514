"""Commands that bring other frameworks' recorded debates in and hold simulated agents against
recorded runs: ``pear import``, ``pear sim-check``."""
from __future__ import annotations

import argparse
import importlib
import os
from typing import Any

from pear.store.readers import FORMATS

__all__ = ["add_import", "add_sim_check"]


def add_import(sub: Any) -> None:
    im = sub.add_parser("import", help="import other frameworks' recorded debates as a run",
                        description="Read debate records written by another framework into a "
                                    "new run directory of PEAR records, graded by our graders; "
                                    "questions found in our benchmark by their text take our "
                                    "ids and gold ("
                                    + "; ".join(f"{f.name}: {f.summary}"
                                                for f in FORMATS.values() if f.reader)
                                    + "); or "
                                    + "; ".join(f"{f.name}: {f.summary}"
                                                for f in FORMATS.values() if not f.reader)
                                    + ". Bad input is an error naming the file and the entry "
                                    "(exit 2) and nothing is written, unless --skip-bad.")
    im.add_argument("format", choices=tuple(FORMATS),
                    help="the files' format" + "".join(
                        f"; {f.name} needs the {f.extra} extra" for f in FORMATS.values()
                        if f.extra))
    im.add_argument("files", nargs="+", metavar="FILE",
                    help="record files (" + "; ".join(f"{f.name}: {f.files}"
                                                      for f in FORMATS.values()) + ")")
    im.add_argument("--out", required=True, help="new run directory")
    im.add_argument("--dataset", default=None,
                    help="one of ours (mmlu_pro, truthfulqa, gsm8k, math500; default math500) "
                         "or a new name with --grading (not for "
                         + ", ".join(f.name for f in FORMATS.values() if not f.reader)
                         + ": its records name it)")
    # pear.tasks.grading.GRADING_KINDS, spelled out so that `pear --help` stays fast (a test
    # holds the two equal)
    im.add_argument("--grading", choices=("numbers", "letters", "math", "yesno"), default=None,
                    help="how to grade a dataset we do not ship: numbers (a final number, "
                         "e.g. Du et al.'s arithmetic), letters (an option letter among those "
                         "the question lists, e.g. Du et al.'s MMLU, AQuA), math (a LaTeX "
                         "answer, Math-Verify) or yesno (yes or no, e.g. StrategyQA)")
    im.add_argument("--model", default="", help="the model that debated, recorded as given")
    im.add_argument("--protocol", default=None, metavar="NAME",
                    help="keep only the debates of this source protocol (a run records one: "
                         "DyLAN's MMLU teams of 2, 3, 4 and 7 agents are dylan-mmlu-2, -3, -4 "
                         "and -7; files that mix protocols need it)")
    im.add_argument("--skip-bad", action="store_true",
                    help="import the good entries and list the bad ones in the manifest")
    im.set_defaults(handler=_cmd_import)



def _cmd_import(a: argparse.Namespace) -> int:
    if FORMATS[a.format].reader is None:
        return _cmd_import_records(a)
    # start-up: only this command loads it (`pear --help` stays fast)
    from pear.store.importing import import_files
    print(import_files(a.format, a.files, a.out, dataset=a.dataset or "math500",
                       grading=a.grading,
                       model=a.model, skip_bad=a.skip_bad,
                       protocol=a.protocol).report())
    return 0


def _cmd_import_records(a: argparse.Namespace) -> int:
    """``pear import FORMAT FILE...`` of a format whose entries are PEAR records already (e.g.
    the Inspect logs of pear's solver): its importer writes them as a run of ours."""
    fmt = FORMATS[a.format]
    given = [f"--{k.replace('_', '-')}" for k in ("dataset", "grading", "model", "protocol")
             if getattr(a, k, None)]
    if given:
        raise ValueError(f"{', '.join(given)} does not apply to {fmt.name} files: their PEAR "
                         "records name the dataset, grading, model and protocol")
    module, _, function = fmt.importer.partition(":")
    try:  # the one importer of pear.harness: inspect_ai is a heavy optional extra
        import_files = getattr(importlib.import_module(module), function)
    except ImportError as err:
        raise ValueError(f"pear import {fmt.name} needs the {fmt.extra} extra (missing "
                         f"{err.name or err}): make setup-{fmt.extra}, or pip install "
                         f"'pear[{fmt.extra}]'") from None
    print(import_files(a.files, a.out, skip_bad=a.skip_bad).report())
    return 0


def add_sim_check(sub: Any) -> None:
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
    # start-up: only this command loads it (`pear --help` stays fast)
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
    """``pear sim-check RUN --population family``: every member, and the family's range."""
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
