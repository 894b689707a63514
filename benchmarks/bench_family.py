"""The family's grid: every member of the family of real twins (and ``grounded``) on the
ensemble's reduced grid, run and read as ``pear ensemble --family`` does, timed (issue 56,
item 4).

Runs :func:`pear.paper.ensemble.run` with ``family=True`` on the ``sim`` preset's grid cut to
``--questions`` questions per dataset (one seed, the study's 14 methods, no full sets) into a
temporary folder, with every core, and prints: the members, the debates written and the
seconds per population (run and read), the wall time, the rate, and what the grid at the
study's size (``--study-questions``, 200 by default: the study's questions per dataset) would
take at that rate, against the issue's 10 minutes.  The rate of a small grid includes each
population's fixed costs (its Math-Verify worker's first reads, its ledger), so the
extrapolation is an upper bound.  Math-Verify's replies are kept in an empty store of this
run's own (:data:`pear.tasks.mathgrade.CACHE_ENV`): a machine's first family run, whose first
members fill it for the others.

    python benchmarks/bench_family.py [--questions 20] [--study-questions 200] [--workers N]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20, help="questions per dataset")
    ap.add_argument("--study-questions", type=int, default=200,
                    help="questions per dataset of the study-size grid extrapolated to")
    ap.add_argument("--workers", type=int, default=None, help="populations at once")
    a = ap.parse_args()

    from pear.paper import ensemble
    from pear.runs.jobs import jobs

    exp = ensemble.grid("sim", a.questions)
    study = ensemble.grid("sim", a.study_questions)
    with tempfile.TemporaryDirectory(prefix="bench-family-") as tmp:
        os.environ["PEAR_GRADING_CACHE"] = os.path.join(tmp, "grading.sqlite")
        t0 = time.perf_counter()
        ens = ensemble.run(exp, tmp, workers=a.workers, family=True, say=None)
        wall = time.perf_counter() - t0
    written = sum(ens.written.values())
    per_member = len(jobs(exp))
    at_study = len(jobs(study))
    populations = len(ens.seconds)
    print(ensemble.describe_times(ens))
    print(f"grid per population: {per_member} debates ({a.questions} questions per dataset, "
          f"{len(exp.methods)} methods, seed {exp.seeds[0]}); {populations} populations: "
          f"{written} debates in {wall:.1f} s ({written / wall:.0f} debates/s, run and read)")
    est = at_study * populations / (written / wall)
    print(f"at the study's size ({a.study_questions} questions per dataset: {at_study} "
          f"debates per population, {at_study * populations} in all) at this rate: "
          f"{est:.0f} s ({est / 60:.1f} min; the issue's aim: 10 min)")


if __name__ == "__main__":
    main()
