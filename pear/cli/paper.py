"""Commands on the paper's build: ``pear paper`` (every notebook), ``pear claims-diff``
(the claims that moved between two builds) and ``pear ensemble`` (a simulated build's
conclusions across an ensemble of plausible populations)."""
from __future__ import annotations

import argparse
from typing import Any

from pear.backends.registry import BACKENDS, SIMULATED
from pear.cli.options import DROP_HELP, add_plugin_argument, comma_list, nonneg, positive
from pear.paths import beside

__all__ = ["add_paper", "add_claims_diff", "add_ensemble"]


def add_paper(sub: Any) -> None:
    pp = sub.add_parser("paper", help="execute every notebook (jupytext + papermill)",
                        description="Run the notebooks in order; outputs go to figures/.")
    # the build checks the name (pear.paper.build): an unknown one is its one-line error
    pp.add_argument("--backend", default="llamacpp",
                    help="; ".join(f"{n}: {s.summary}" for n, s in BACKENDS.items())
                    + " (default: llamacpp)")
    pp.add_argument("--preset", default="smoke", help="smoke | paper | sim | beyond")
    pp.add_argument("--model", default="", help="model name/path ('' = backend default)")
    pp.add_argument("--runs", default="", help="run directory (default data/runs/<preset>-<backend>)")
    pp.add_argument("--seeds", default="", help="comma-separated seeds ('' = preset's)")
    pp.add_argument("--n-questions", default=0, type=nonneg, help="0 = preset's")
    pp.add_argument("--base-url", default="", help="OpenAI-compatible endpoint")
    pp.add_argument("--only", default="", help="comma-separated notebook name prefixes")
    pp.add_argument("--drop-invalid", action="store_true", help=DROP_HELP)
    pp.add_argument("--population", default="", metavar="NAME|FILE",
                    help="the simulated backend's population: study, grounded or a population "
                         "file ('' = $PEAR_POPULATION, else grounded)")
    pp.add_argument("--previous", default="", metavar="DIR",
                    help="an earlier build's figures directory (copy it aside first): the "
                    "site shows the claims that moved since (pear claims-diff)")
    add_plugin_argument(pp)
    pp.set_defaults(handler=_cmd_paper)


def _cmd_paper(a: argparse.Namespace) -> int:
    from pear.paper.build import build  # heavy: pandas, msgspec, only for this command
    return build(backend=a.backend, preset=a.preset, model=a.model, runs=a.runs, seeds=a.seeds,
                 n_questions=a.n_questions, base_url=a.base_url, only=a.only,
                 drop_invalid=a.drop_invalid, previous=a.previous, population=a.population)


def add_claims_diff(sub: Any) -> None:
    cd = sub.add_parser("claims-diff", help="the claims whose verdict or value moved between "
                        "two builds", description="Compare the claims ledgers of two builds "
                        "(figures directories holding claims.json, or run directories, whose "
                        "ledger is computed from their records): claims whose finding changed "
                        "or whose intervals no longer overlap, with both intervals.")
    cd.add_argument("build_a", help="figures directory or run directory")
    cd.add_argument("build_b", help="figures directory or run directory")
    cd.add_argument("--seed", type=nonneg, default=0,
                    help="bootstrap seed for a ledger computed from a run directory")
    cd.set_defaults(handler=_cmd_claims_diff)


def _cmd_claims_diff(a: argparse.Namespace) -> int:
    from pear.claims.diff import diff, format_diff  # heavy: pandas, only for this command
    table = diff(_ledger_of(a.build_a, a.seed), _ledger_of(a.build_b, a.seed))
    print(format_diff(table, names=(a.build_a, a.build_b)))
    return 0


def _ledger_of(path: str, seed: int) -> list[dict[str, Any]]:
    """A build's claims ledger: saved in a figures directory, or computed from a run
    directory's records with the grid its manifest recorded."""
    from pathlib import Path

    # heavy: pandas, only for this command
    from pear.claims.diff import LEDGER_FILE, ledger_records, read_ledger
    p = Path(path)
    if p.is_file() or (p / LEDGER_FILE).is_file():
        return read_ledger(p)
    from pear.store import manifest
    man = manifest.read(p) if p.is_dir() else None
    if not man or not man.get("experiments"):
        raise FileNotFoundError(f"{path!r} is neither a figures directory with {LEDGER_FILE} "
                                "nor a run directory with a manifest")
    from pear.claims.evaluate import ledger  # heavy: pandas, scipy, only for this command
    from pear.paper.study import load_results  # heavy: pandas, msgspec, only for this command
    from pear.runs.grid import Experiment
    # heavy: pandas, msgspec, only for this command
    from pear.store.validate import ValidationError, validate
    checked = validate(p)  # records from elsewhere are checked before they are trusted
    if not checked.findings.ok:
        raise ValidationError(p, checked.findings)
    exp = Experiment.from_dict(man["experiments"][-1])
    subset = load_results(p, exp, "subset")
    full = load_results(p, exp, "full") if exp.full_datasets else None
    return ledger_records(ledger(subset, full, rng=seed))


def add_ensemble(sub: Any) -> None:
    en = sub.add_parser(
        "ensemble", help="a simulated grid under an ensemble of plausible populations",
        description="Run (or resume) a reduced simulated grid under the grounded population "
                    "and K populations drawn from its fit's sampling distribution (a bootstrap "
                    "over DyLAN's debates), then print the main results and PEAR's gains with "
                    "their range across the ensemble and the share of populations in which "
                    "each claim of the ledger holds.")
    en.add_argument("--k", type=int, default=None,
                    help="bootstrap populations (default 20; growing K keeps the first draws)")
    en.add_argument("--seed", type=nonneg, default=0, help="the bootstrap's seed (default 0)")
    en.add_argument("--preset", default="sim", help="the grid to reduce (default: sim)")
    en.add_argument("--n-questions", type=positive, default=None,
                    help="questions per dataset (default 20)")
    en.add_argument("--seeds", default="", help="run seed: the first of these ('' = preset's)")
    en.add_argument("--methods", type=comma_list(str), default=None,
                    help="methods (default: the study's 14; pear, random, clique and cot_sc "
                         "needed; claims naming others are not evaluated)")
    en.add_argument("--out", default="",
                    help="the ensemble folder (default data/runs/<preset>-simulated-ensemble)")
    en.add_argument("--workers", type=positive, default=None,
                    help="populations run at once, a process each (default: every core)")
    en.add_argument("--family", action="store_true",
                    help="the family of real twins (data/populations/family/) instead of "
                         "bootstrap draws: each claim holds in how many members (default "
                         "folder data/runs/<preset>-simulated-family)")
    en.add_argument("--replay", action="store_true", help="run nothing: read the folder")
    en.add_argument("--progress", action="store_true",
                    help="a progress bar per population (with --workers 1)")
    en.set_defaults(handler=_cmd_ensemble)


def _cmd_ensemble(a: argparse.Namespace) -> int:
    import pandas as pd

    from pear.paper import ensemble  # heavy: pandas, only for this command
    from pear.paper.study import runs_path  # heavy: pandas, msgspec, only for this command
    k = ensemble.DEFAULT_K if a.k is None else a.k
    exp = ensemble.grid(a.preset, a.n_questions or ensemble.DEFAULT_QUESTIONS,
                        seeds=a.seeds, methods=a.methods)
    run_dir = runs_path("", a.preset, SIMULATED)
    root = a.out or beside(run_dir, "family" if a.family else "ensemble")
    ens = ensemble.run(exp, root, k, a.seed, workers=a.workers, progress=a.progress,
                       replay=a.replay, family=a.family)
    print(ensemble.describe_times(ens))
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.max_colwidth", 80, "display.float_format", "{:.3f}".format):
        for table, caption in ((ensemble.table_main, ensemble.caption_main),
                               (ensemble.table_gains, ensemble.caption_gains),
                               (ensemble.table_claims, ensemble.caption_claims)):
            print(f"\n{caption(ens)}\n\n{table(ens).to_string()}")
    return 0
