"""A twin held out of sample: fitted on half of a run's questions
(:func:`pear.populations.twin.fit_twin`), checked on the other half in the run's own setting
(:func:`pear.populations.simcheck.check` on those debates alone).

The halves are fixed by the question (sha256 of its dataset and id, so every debate of a
question falls in one half and the split does not depend on the order of the records);
``seed`` draws another split."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from pear.populations.simcheck import SimCheck, check
from pear.core.hashing import int_seed
from pear.populations import reading
from pear.populations.twin import Prior, Twin, fit_twin

__all__ = ["half", "SplitHalf", "split_half", "STATISTICS_AIMED"]

STATISTICS_AIMED = ("vote_gain", "w2r", "r2w", "change_rate")
"""The statistics a twin is held to first (the effect of debate and its two flows)."""


def half(record: Mapping[str, Any], seed: int = 0) -> int:
    """The half (0 or 1) of a record's question.

    >>> half({"dataset": "gsm8k", "question_id": "7"}) in (0, 1)
    True
    """
    return int_seed("split-half", seed, record["dataset"], record["question_id"],
                    nbytes=1) & 1


@dataclass(frozen=True)
class SplitHalf:
    """The twin fitted on half 0 (:attr:`twin`), its check on half 1 (:attr:`twin_check`) and,
    for comparison, the base population's check on the same debates (:attr:`base_check`)."""

    run: str
    twin: Twin
    twin_check: SimCheck
    base_check: SimCheck | None

    def row(self) -> dict[str, Any]:
        """inside / defined, and the vote gain (real [lo, hi], twin, base) of the check."""
        def count(c: SimCheck | None) -> str:
            if c is None:
                return "-"
            defined = [s for s in c.statistics if s["inside"] is not None]
            return f"{sum(bool(s['inside']) for s in defined)}/{len(defined)}"
        gain = {s["statistic"]: s for s in self.twin_check.statistics}.get("vote_gain") or {}
        base_gain = ({s["statistic"]: s for s in self.base_check.statistics}.get("vote_gain")
                     or {}) if self.base_check else {}
        return {"run": self.run, "fit_debates": self.twin.population.info["diagnostics"]
                ["debates"], "check_debates": self.twin_check.setting["debates"],
                "twin": count(self.twin_check), "base": count(self.base_check),
                "vote_gain": gain.get("real"), "lo": gain.get("lo"), "hi": gain.get("hi"),
                "twin_gain": gain.get("simulated"), "base_gain": base_gain.get("simulated"),
                "gain_inside": gain.get("inside")}


def split_half(run: str | os.PathLike[str], *, keep: Callable[[Mapping[str, Any]], bool]
               | None = None, name: str = "", prior: Prior | None = None,
               replicates: int = 20, seed: int = 0, base: str | None = "grounded"
               ) -> SplitHalf:
    """Fit a twin on half 0 of ``run``'s questions (of its debates that ``keep`` accepts) and
    check it on half 1 (``replicates`` simulations); ``base``: also check that population on
    half 1 (None: not)."""
    run = Path(run)
    recs = [r for r in reading.records([run]) if keep is None or keep(r)]
    fit_half = [r for r in recs if half(r, seed) == 0]
    check_half = [r for r in recs if half(r, seed) == 1]
    if not fit_half or not check_half:
        raise ValueError(f"{str(run)!r}: too few questions to split in half "
                         f"({len(recs)} debates)")
    tw = fit_twin([run], name=name or f"twin-{run.name}-half", prior=prior,
                  keep=lambda r: (keep is None or keep(r)) and half(r, seed) == 0)
    twin_check = check(run, tw.population, replicates, seed, records=check_half)
    base_check = check(run, base, replicates, seed, records=check_half) if base else None
    return SplitHalf(name or run.name, tw, twin_check, base_check)
