"""The study's simulated grid under several populations, side by side: what a simulated build
concludes depends on the population its agents are drawn from.

For each population (default: ``grounded``, the build default; ``grounded-math``, the fit it
replaced; ``study``), the preset's grid (default ``sim``, every dataset, method and seed) is run
on the simulated backend into ``build/populations/<preset>-<population>/`` (resumable: a
finished run is read back, not run again), then printed:

* the main table: accuracy of PEAR, Random, Clique and CoT-SC per dataset (subset scope);
* every claim of the ledger whose finding differs between the populations (95 % intervals on
  the grid, as the notebooks' ledger), and the count per population.

    python benchmarks/compare_populations.py [--preset sim] [--populations grounded,study]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from pear.analysis import metrics
from pear.catalog.labels import dataset_label, method_label
from pear.claims.evaluate import ledger
from pear.paper.study import experiment, load_results
from pear.paths import BUILD_DIR
from pear.sim import population as pop

MAIN = ("pear", "random", "clique", "cot_sc")


def run_population(preset: str, name: str, root: Path) -> Path:
    """The preset's simulated grid under population ``name`` (``pear run``: run, or resumed;
    every core)."""
    out = root / f"{preset}-{name}"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pear", "run", "--preset", preset, "--backend",
                    "simulated", "--population", name, "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"{name}: grid in {out} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="sim")
    ap.add_argument("--populations", default="grounded,grounded-math,study")
    ap.add_argument("--out", default=str(BUILD_DIR / "populations"))
    a = ap.parse_args(argv)
    names = [n for n in a.populations.split(",") if n]
    for n in names:
        pop.load(n)  # every population checked before anything runs
    exp = experiment(a.preset, backend="simulated")
    acc, findings = [], {}
    for n in names:
        res = load_results(run_population(a.preset, n, Path(a.out)), exp, "subset")
        table = metrics.accuracy(res.debates)
        acc.append(table[table["method"].isin(MAIN)].assign(population=n))
        findings[n] = ledger(res, None, rng=0).set_index("id")["finding"]
    main_table = pd.concat(acc).pivot_table(index=["dataset", "method"], columns="population",
                                            values="accuracy")[names]
    main_table.index = [f"{dataset_label(d)} {method_label(m)}" for d, m in main_table.index]
    print(f"Accuracy, {a.preset} grid, simulated agents (subset scope):")
    print(main_table.round(3).to_string())
    claims = pd.DataFrame(findings)
    print("\nClaims per finding:")
    print(claims.apply(pd.Series.value_counts).fillna(0).astype(int).to_string())
    differ = claims[claims.nunique(axis=1) > 1]
    print(f"\n{len(differ)} claims whose finding differs between the populations:")
    print(differ.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
