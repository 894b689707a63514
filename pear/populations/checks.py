"""The shipped population files (``study``, ``grounded``, ``grounded-math`` and ``grounded``'s
bootstrap draws), written from the corpus fit and held against what the shipped data and code
produce now; and the fit held against its own data (:func:`in_sample`).

Command line (:mod:`pear.cli.populations`)::

    pear population shipped check          # import the corpus from scratch and refit; exit 1
                                           # unless the shipped graded import and population
                                           # files match
    pear population shipped write-graded   # import the corpus from scratch and rewrite its
                                           # graded copy, data/real-debates/graded/
    pear population shipped write          # rewrite data/populations/{study,grounded,
                                           # grounded-math}.json and data/populations/ensemble/
    pear population shipped corpus-fit --also RUN  # the fit on the corpus and an imported run
    pear population shipped bootstrap 20   # time 20 bootstrap refits
    pear population shipped in-sample      # the fit held against its own data; exit 1 on a gap
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable

from pear.paths import BUILD_DIR
from pear.sim import population as pop, revision
from pear.sim.population import Population, RevisionModel, SimParams
from pear.populations.corpus_fit import (MATH_ONLY, CorpusFit, fit_corpus, fit_summary,
                                         grounded_population, math_population,
                                         study_population)
from pear.populations.draws import (ENSEMBLE_DIR, ENSEMBLE_K, ENSEMBLE_SEED,
                                    bootstrap_populations, shipped_draws, write_draws)
from pear.populations.graded_copies import check_graded, check_shipped_graded
from pear.store.import_cache import CORPUS, MMLU_CORPUS, MMLU_TEAMS, corpus_run, mmlu_runs

__all__ = ["check", "IN_SAMPLE_MIN", "IN_SAMPLE_TOLERANCE", "in_sample", "check_all",
           "write_populations"]

def _difference(name: str, shipped: Population, now: Population) -> str:
    what = [f"{f}: shipped {getattr(shipped.params, f)!r}, now {getattr(now.params, f)!r}"
            for f in (x.name for x in dataclasses.fields(SimParams))
            if getattr(shipped.params, f) != getattr(now.params, f)]
    if (shipped.revision is None) != (now.revision is None):
        what.append("revision model present in one only")
    elif shipped.revision is not None:
        what += [f"{f}: shipped {a}, now {b}" for f, a, b in zip(
            RevisionModel.COLUMNS + ("critique_weight",),
            (*shipped.revision.vector, shipped.revision.critique_weight),
            (*now.revision.vector, now.revision.critique_weight)) if a != b]
    return (f"{name}: fingerprint {shipped.fingerprint[:12]} shipped, {now.fingerprint[:12]} "
            "from the data and code now (" + "; ".join(what) + ")")


def check(g: CorpusFit | None = None, g_math: CorpusFit | None = None) -> list[str]:
    """What differs between the shipped population files (``study``, ``grounded``,
    ``grounded-math`` and the :data:`ENSEMBLE_K` bootstrap draws of :data:`ENSEMBLE_SEED`) and
    what the shipped data and code produce now (empty: they match).  ``g``:
    :func:`~pear.populations.corpus_fit.fit_corpus`'s
    fit (default: now); ``g_math``: the fit on the MATH corpus alone (default: on ``g``'s
    first run)."""
    g = g or fit_corpus()
    problems = []
    for name, build in (("study", lambda: study_population()),
                        ("grounded", lambda: grounded_population(g)),
                        (MATH_ONLY, lambda: math_population(
                            g_math or fit_corpus(runs=[g.runs[0]])))):
        shipped, now = pop.load(name), build()
        if shipped.fingerprint != now.fingerprint:
            problems.append(_difference(name, shipped, now))
    shipped_draws_ = shipped_draws(ENSEMBLE_K, ENSEMBLE_SEED)
    if shipped_draws_ is None:
        return problems + [f"{ENSEMBLE_DIR.name}: the {ENSEMBLE_K} bootstrap draws of seed "
                           f"{ENSEMBLE_SEED} of the shipped grounded are not shipped "
                           f"({ENSEMBLE_DIR}): run `pear population shipped write`"]
    for shipped, now in zip(shipped_draws_,
                            bootstrap_populations(ENSEMBLE_K, ENSEMBLE_SEED, g)):
        if shipped.fingerprint != now.fingerprint:
            problems.append(_difference(f"{ENSEMBLE_DIR.name}/{shipped.name}", shipped, now))
    return problems


IN_SAMPLE_MIN = 100
"""Choice sets a situation needs for :func:`in_sample` to hold it (our choice)."""
IN_SAMPLE_TOLERANCE = 0.08
"""The largest gap between a real and a predicted share (keep, adopt, produce another) of a
situation that :func:`in_sample` accepts (our choice: a few points; the sampling error of a
situation of 100 choice sets is about 0.05)."""


def in_sample(g: CorpusFit, replicates: int = 20, seed: int = 0) -> tuple[Any, Any, list[str]]:
    """The fit held against its own data: the choice level (:func:`pear.sim.revision.
    predictive_table` of ``grounded`` refitted on ``g``'s choice sets) and the debate level
    (every debate of the corpus simulated under its own protocol, :func:`pear.analysis.
    simcheck.check`, with the population :func:`grounded_population` writes); and what fails:
    a situation of at least :data:`IN_SAMPLE_MIN` choice sets whose real share of keeping,
    adopting or producing another answer is more than :data:`IN_SAMPLE_TOLERANCE` from the
    predicted one, or whose share ending right is more than 4 standard deviations from it."""
    from pear.populations import simcheck  # heavy: pandas and the simulator, only for this function
    point = grounded_population(g)
    table = revision.predictive_table(g.transitions, point.revision)
    problems = []
    for (space, own, heard), row in table.iterrows():
        if row["n"] < IN_SAMPLE_MIN:
            continue
        where = f"{space} answers, own answer {own}, heard {heard}"
        for k in ("keep", "adopt", "another"):
            if abs(row[k] - row[f"{k}_pred"]) > IN_SAMPLE_TOLERANCE:
                problems.append(f"{where} ({row['n']:.0f} choice sets): {k} {row[k]:.3f} "
                                f"real, {row[f'{k}_pred']:.3f} predicted")
        if abs(row["z_right"]) > 4:
            problems.append(f"{where}: ended right {row['right']:.3f} real, "
                            f"{row['right_pred']:.3f} predicted (z {row['z_right']:+.1f})")
    debates = simcheck.check(g.runs[0], point, replicates, seed)
    return table, debates, problems


def check_all(log: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
    """The reproducibility check (``pear population shipped check``, run by CI): DyLAN's MATH corpus
    imported from scratch (never from the shipped graded copy it checks) and held against that
    copy (:func:`check_graded`), so are notebook 17's shipped files
    (:func:`pear.populations.graded_copies.check_shipped_graded`), its MMLU teams imported from
    scratch, the whole fitted, and the shipped population files held against that fit
    (:func:`check`).  Returns what differs: the
    graded copy's records and the population files (both empty: everything as shipped).
    ``log`` is told each step's time and the fit as it goes (minutes in all)."""
    say = log or (lambda line: None)
    t0 = time.perf_counter()
    run = corpus_run(fresh=True)
    graded = check_graded(run)
    say(f"imported {CORPUS.name} from scratch in {time.perf_counter() - t0:.0f} s ({run}); "
        f"shipped graded copy: {'DIFFERS' if graded else 'the same records'}")
    from pear.populations.graded_copies import SHIPPED, shipped_runs
    t0 = time.perf_counter()
    others = check_shipped_graded(shipped_runs(where=BUILD_DIR / "imported", fresh=True))
    say(f"imported {', '.join(f for _, f, _, _ in SHIPPED.values())} from scratch in "
        f"{time.perf_counter() - t0:.0f} s; shipped graded copies: "
        f"{'DIFFER' if others else 'the same records'}")
    graded += others
    t0 = time.perf_counter()
    g = fit_corpus(runs=[run, *mmlu_runs(fresh=True)])
    say(f"imported {MMLU_CORPUS.name}'s {len(MMLU_TEAMS)} teams from scratch and fitted in "
        f"{time.perf_counter() - t0:.0f} s")
    say(fit_summary(g))
    return graded, check(g)


def write_populations(g: CorpusFit | None = None
                      ) -> tuple[list[tuple[Path, Population]], Path]:
    """Write the shipped populations from ``g`` (:func:`~pear.populations.corpus_fit.fit_corpus`'s
    fit; default: now):
    ``study``, ``grounded`` and ``grounded-math`` (fitted on ``g``'s first run) in
    :data:`~pear.sim.population.POPULATIONS_DIR`, and the :data:`ENSEMBLE_K` bootstrap draws
    of :data:`ENSEMBLE_SEED` from that ``grounded`` (:func:`write_draws`).  Returns each
    population file written with what it holds, and the draws' record."""
    g = g or fit_corpus()
    pop.POPULATIONS_DIR.mkdir(parents=True, exist_ok=True)
    point = grounded_population(g)
    written = [(p.write(pop.POPULATIONS_DIR / f"{p.name}.json"), p)
               for p in (study_population(), point, math_population(fit_corpus(runs=[g.runs[0]])))]
    draws = bootstrap_populations(ENSEMBLE_K, ENSEMBLE_SEED, g)
    return written, write_draws(draws, ENSEMBLE_SEED, point)
