"""The bootstrap draws of ``grounded``: the revision model refitted on debates resampled with
replacement (seeded), the fit's sampling distribution, for an ensemble.  The first
:data:`ENSEMBLE_K` draws of seed :data:`ENSEMBLE_SEED` are shipped too
(``data/populations/ensemble/``: ``grounded-b<i>.json`` and ``ensemble.json``, the seed and every
fingerprint), so that an ensemble of at most that size needs neither DyLAN's corpus imported nor
a refit; ``pear population shipped check`` refits them as well (:mod:`pear.populations.checks`).
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from pear.paths import write_json
from pear.sim import population as pop, revision
from pear.sim.population import Population
from pear.populations.corpus_fit import CorpusFit, fit_corpus, population_from

__all__ = ["CRITIQUE_WEIGHTS", "ENSEMBLE_DIR", "ENSEMBLE_K", "ENSEMBLE_SEED",
           "bootstrap_populations", "shipped_draws", "write_draws", "bootstrap_spread"]

ENSEMBLE_DIR = pop.POPULATIONS_DIR / "ensemble"
"""The shipped bootstrap draws of ``grounded`` (:func:`write_draws`)."""
ENSEMBLE_K = 20  # issue 35: an ensemble of 20
"""How many bootstrap draws are shipped."""
ENSEMBLE_SEED = 0  # our choice
"""The bootstrap seed of the shipped draws."""
ENSEMBLE_RECORD = "ensemble.json"


CRITIQUE_WEIGHTS = (1.0, 0.5)
"""The ensemble's draws of PEAR's protocol mapping (:attr:`pear.sim.population.RevisionModel.
critique_weight`): draw i maps a received critique to "heard" with weight
``CRITIQUE_WEIGHTS[i % 2]`` (a peer's answer quoted in full, or discounted by half); ``grounded``
itself uses 1.  Our choice: no real log we hold has critiques, so the mapping is an assumption
the ensemble spans, not a fitted value."""


def bootstrap_populations(k: int = 20, seed: int = 0, g: CorpusFit | None = None
                          ) -> list[Population]:
    """``k`` grounded populations (``grounded-b<i>``), each with the revision model refitted on
    the debates resampled with replacement (:func:`pear.sim.revision.bootstrap`, seeded by
    ``seed``; the same-wrong-answer share stays the whole data's; the spread of the skill
    interactions is the strength dependence's) and PEAR's protocol mapped with the critique
    weight :data:`CRITIQUE_WEIGHTS` ``[i % 2]``: an ensemble over both.  Without ``g``, the shipped
    draws when they hold these (:func:`shipped_draws`: what ``pear population shipped check`` holds
    equal to a refit), else refitted on :func:`~pear.populations.corpus_fit.fit_corpus`'s fit."""
    if g is None:
        shipped = shipped_draws(k, seed)
        if shipped is not None:
            return shipped
    g = g or fit_corpus()
    fits = revision.bootstrap(g.transitions, k, seed, start=g.fit.model.coef,
                              features=g.fit.model.features)
    return [population_from(g, dataclasses.replace(
        f.model, critique_weight=CRITIQUE_WEIGHTS[i % len(CRITIQUE_WEIGHTS)]), None,
        _draw_name(i), {**f.diagnostics(), "bootstrap": {"seed": seed, "draw": i}})
            for i, f in enumerate(fits)]


def _draw_name(i: int) -> str:
    return f"grounded-b{i}"


def shipped_draws(k: int, seed: int, where: Path | None = None) -> list[Population] | None:
    """The first ``k`` shipped bootstrap draws of ``seed`` (``where``, default
    :data:`ENSEMBLE_DIR`), or None when they are not shipped: another seed, more than are
    shipped, or drawn from another ``grounded`` than the shipped one."""
    root = Path(where) if where is not None else ENSEMBLE_DIR
    try:
        record = json.loads((root / ENSEMBLE_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = [_draw_name(i) for i in range(k)]
    if record.get("seed") != seed or any(n not in record.get("populations", {}) for n in names) \
            or record.get("point", {}).get("fingerprint") != pop.load("grounded").fingerprint:
        return None
    draws = [pop.load(root / f"{n}.json") for n in names]
    for p in draws:
        if p.fingerprint != record["populations"][p.name]:
            raise ValueError(f"shipped draw {str(root / (p.name + '.json'))!r}: fingerprint "
                             f"{p.fingerprint[:12]}, {ENSEMBLE_RECORD} says "
                             f"{record['populations'][p.name][:12]}")
    return draws


def write_draws(draws: Sequence[Population], seed: int, point: Population,
                where: Path | None = None) -> Path:
    """Write the bootstrap draws of ``seed`` from ``point`` as shipped data (``where``,
    default :data:`ENSEMBLE_DIR`): one file each and the record of the seed and every
    fingerprint.  Files of other draws there are removed."""
    root = Path(where) if where is not None else ENSEMBLE_DIR
    root.mkdir(parents=True, exist_ok=True)
    keep = {f"{p.name}.json" for p in draws} | {ENSEMBLE_RECORD}
    for old in root.glob("*.json"):
        if old.name not in keep:
            old.unlink()
    for p in draws:
        p.write(root / f"{p.name}.json")
    return write_json(root / ENSEMBLE_RECORD, {
        "seed": seed, "k": len(draws), "point": point.manifest(),
        "populations": {p.name: p.fingerprint for p in draws}}, newline=True)


def bootstrap_spread(k: int, seed: int = 0, g: CorpusFit | None = None
                     ) -> tuple[float, dict[str, float]]:
    """``k`` bootstrap refits of ``g`` (:func:`bootstrap_populations`, seeded by ``seed``;
    default: :func:`~pear.populations.corpus_fit.fit_corpus` now): the seconds they took and each
    coefficient's standard
    deviation across them."""
    if k < 1:
        raise ValueError(f"bootstrap needs at least one refit, got {k}")
    g = g or fit_corpus()
    t0 = time.perf_counter()
    pops = bootstrap_populations(k, seed, g)
    dt = time.perf_counter() - t0
    coefs = np.array([p.revision.coef for p in pops])
    return dt, {f: float(s) for f, s in zip(pops[0].revision.features, coefs.std(0))}
