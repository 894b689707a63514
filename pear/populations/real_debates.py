"""Notebook 17's glue: real debates recorded by other frameworks (imported with
:func:`pear.store.importing.import_files`) beside the simulated population in the same
setting: its source's protocol (:func:`pear.populations.simcheck.check`, as ``pear population sim-check``).

The shipped run is DyLAN's gpt-3.5-turbo debates on the MATH-500 problems
(``data/real-debates/``, MIT, see ``data/benchmarks/SOURCES.md``); a user adds any Du et
al. file.  The simulated population is *not* refitted to these data: they are a held-out
check of its round-to-round dynamics; only its ``skill_mean`` is shifted so that its
expected round-0 agent accuracy equals the real run's.  Datasets we do not ship are
simulated too (the agents need only each question's gold and number of options).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pear.populations import debate_statistics, simcheck
from pear.paths import REAL_DEBATES_DIR, ShownPath
from pear.store import manifest, shipped as shipped_import
from pear.store.import_cache import IMPORTED_DIR, imported_run
from pear.store.readers import DuReader, DylanReader
from pear.tasks.benchmarks import sha256_files

__all__ = ["SHIPPED", "Analysis", "shipped_runs",
           "analyse", "table", "verdicts",
           "plot_real_vs_simulated", "describe"]

SHIPPED = {"dylan-math500": (DylanReader.name, "dylan-math500-gpt35.json.gz", "math500",
                             "gpt-3.5-turbo-0301")}
"""Name -> (format, file under data/real-debates, dataset, model) of each shipped file.  Each
file's import is shipped graded as ``pear.store.shipped.GRADED_DIR / name``: a first build
writes the import from it instead of asking Math-Verify for every answer again (DyLAN's
MATH-500 file: about 6,500 readings and comparisons, 24 s on a 2-core machine)."""


def shipped_runs(du_file: str = "", du_dataset: str = "gsm8k", du_grading: str = "",
                 du_model: str = "", where: str | os.PathLike[str] | None = None,
                 fresh: bool = False) -> dict[str, Path]:
    """Name -> run directory of each shipped import (under ``where``, default
    ``build/imported``; written from its graded copy (:data:`SHIPPED`) when that is
    exactly this import, unless ``fresh``: imported now whatever is there or shipped), plus
    ``du_file`` (a Du et al. file) when given (each a :class:`pear.paths.ShownPath`: the
    notebook shows them without the builder's path)."""
    from pear.core.hashing import content_digest
    # one folder per benchmark data (PEAR_DATA_DIR): imports matched against other questions
    # never replace each other
    data = content_digest(sha256_files(), n=8)
    root = Path(where) if where else IMPORTED_DIR
    out = {}
    for name, (fmt, file, dataset, model) in SHIPPED.items():
        out[name] = ShownPath(imported_run(
            fmt, REAL_DEBATES_DIR / file, root / f"{name}-{data}", dataset=dataset, model=model,
            shipped=shipped_import.GRADED_DIR / name, fresh=fresh))
    if du_file:
        name = f"du-{Path(du_file).name.split('.')[0]}"
        out[name] = ShownPath(imported_run(DuReader.name, du_file, root / f"{name}-{data}",
                                           dataset=du_dataset, model=du_model,
                                           grading=du_grading or None))
    return out


@dataclass(frozen=True)
class Analysis:
    """One imported run against the simulated population (:func:`analyse`)."""

    name: str
    run_dir: Path
    manifest: dict[str, Any]
    check: simcheck.SimCheck
    """The population held against the run in its source's protocol."""
    mcnemar: Any
    mcnemar_note: str

    @property
    def real(self) -> pd.DataFrame:
        """:func:`pear.populations.debate_statistics.summarize` of the real debates."""
        return self.check.real


def analyse(name: str, run_dir: str | os.PathLike[str], *, seed: int = 0,
            n_resamples: int = 2000, population: str = "grounded",
            replicates: int = simcheck.REPLICATES) -> Analysis:
    """The real run's dynamics with bootstrap intervals beside ``population``'s in the
    source's protocol (:func:`pear.populations.simcheck.check`) and McNemar's test of its vote."""
    run_dir = Path(run_dir)
    c = simcheck.check(run_dir, population, replicates, seed, n_resamples=n_resamples)
    test, test_note = debate_statistics.first_last_mcnemar(c.per_debate)
    return Analysis(name, run_dir, manifest.read(run_dir) or {}, c, test, test_note)


def describe(a: Analysis) -> str:
    """What was imported and matched, and how the simulation was set (Markdown)."""
    imp = a.manifest.get("imported", {})
    st = a.check.setting
    lines = [f"**{a.name}** ({imp.get('format')}, model {imp.get('model')}): "
             f"{imp.get('debates')} debates, {imp.get('matched')} matched to our "
             f"{', '.join(imp.get('datasets', []))} by text, {imp.get('gold_disagree')} "
             f"golds that disagree with ours, {imp.get('bad_count', 0)} bad entries skipped.",
             f"Simulated population `{a.check.population.name}` under the source's protocol "
             f"({st['protocol']['name']}), {st['replicates']} replicates: `skill_mean` shifted "
             f"to {st['skill_mean']:+.3f} (mean over replicates) so that its expected round-0 "
             f"agent accuracy is the real run's "
             f"({', '.join(f'{v:.3f}' for v in st['round0_accuracy'].values())}); not refitted."]
    if a.mcnemar is not None:
        m = a.mcnemar
        lines.append(f"McNemar, vote in the last round vs round 0 (debates with rounds): "
                     f"b = {m.b} right only in the last, c = {m.c} right only in round 0, "
                     f"exact p = {m.pvalue_exact:.3g}.")
    else:
        lines.append(f"McNemar, vote last vs first round: cannot be computed "
                     f"({a.mcnemar_note}).")
    return "\n\n".join(lines)


def verdicts(analyses: Sequence[Analysis]) -> list[str]:
    """One line per run and statistic: whether the simulated value lies inside the real
    run's interval (or why it cannot be said)."""
    out = []
    for a in analyses:
        notes = a.check.real.set_index("statistic")["note"]
        for s in a.check.statistics:
            label = debate_statistics.STATISTICS[s["statistic"]]
            if s["inside"] is None:
                why = notes[s["statistic"]] or "the simulated debates do not define it"
                out.append(f"{a.name}: {label}: cannot be compared ({why})")
            else:
                out.append(f"{a.name}: {label}: simulated {s['simulated']:.3f} "
                           f"{'inside' if s['inside'] else 'OUTSIDE'} the real interval "
                           f"[{s['lo']:.3f}, {s['hi']:.3f}] (real {s['real']:.3f})")
    return out


def table(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """One row per (run, statistic): the real value with its 95% interval, the simulated
    value (mean over replicates) with the range of the middle 95% of replicates, and whether
    the simulated value is inside the real interval."""
    def fmt(v: Any, lo: Any, hi: Any) -> str:
        if v is None or not np.isfinite(v):
            return "n/a"
        return f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) and np.isfinite(hi) \
            else f"{v:.3f}"
    rows = []
    for a in analyses:
        sim = a.check.simulated.set_index("statistic")
        for s in a.check.statistics:
            st = s["statistic"]
            rows.append({"run": a.name, "statistic": debate_statistics.STATISTICS[st],
                         "real [95% CI]": fmt(s["real"], s["lo"] if s["lo"] is not None
                                              else np.nan,
                                              s["hi"] if s["hi"] is not None else np.nan),
                         "debates": s["debates"],
                         "simulated [95% of replicates]": fmt(sim.loc[st, "value"],
                                                              sim.loc[st, "low"],
                                                              sim.loc[st, "high"]),
                         "inside": {True: "yes", False: "no", None: "n/a"}[s["inside"]]})
    return pd.DataFrame(rows).set_index(["run", "statistic"])


def plot_real_vs_simulated(analyses: Sequence[Analysis]) -> Any:
    """Per run: round curves (agent and vote accuracy, real solid, simulated dashed) and the
    statistics with their intervals (real and simulated side by side)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(analyses), 2, figsize=(10, 3.6 * len(analyses)),
                             squeeze=False)
    for (ax_c, ax_s), a in zip(axes, analyses):
        curve = a.check.real_curve
        for col, label, color in (("agent_accuracy", "agents", "C0"),
                                  ("vote_accuracy", "vote", "C1")):
            ax_c.plot(curve["round"], curve[col], "-o", color=color,
                      label=f"real {label}")
            ax_c.plot(a.check.simulated_curve["round"], a.check.simulated_curve[col], "--s",
                      color=color, alpha=0.7, label=f"simulated {label}")
        ax_c.set_xlabel("round (debates that ended carry their last round)")
        ax_c.set_ylabel("accuracy")
        ax_c.set_xticks(list(curve["round"]))
        ax_c.set_title(f"{a.name}: round-wise accuracy")
        ax_c.legend(fontsize=7)
        stats = a.real
        y = np.arange(len(stats))
        ax_s.errorbar(stats["value"], y + 0.15, xerr=_err(stats), fmt="o", color="k",
                      label="real (95% bootstrap CI)")
        ax_s.errorbar(a.check.simulated["value"], y - 0.15, xerr=_err(a.check.simulated),
                      fmt="s", color="C3", label=f"simulated ({a.check.population.name}, "
                                                 "95% of replicates)")
        ax_s.set_yticks(y)
        ax_s.set_yticklabels(stats["label"], fontsize=8)
        ax_s.invert_yaxis()
        ax_s.axvline(0, color="0.8", lw=0.8)
        ax_s.set_xlim(min(-0.02, float(np.nanmin(np.r_[stats["low"], stats["value"]])) - 0.05),
                      1.02)
        ax_s.set_title(f"{a.name}: dynamics, real vs simulated")
        ax_s.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    fig.tight_layout()
    return fig


def _err(df: pd.DataFrame) -> np.ndarray:
    v, lo, hi = (df[c].to_numpy(float) for c in ("value", "low", "high"))
    return np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0)
