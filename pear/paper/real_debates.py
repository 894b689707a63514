"""Notebook 17's glue: real debates recorded by other frameworks (imported with
:func:`pear.store.importing.import_files`) beside the simulated population in the same
setting (:func:`pear.analysis.dynamics.simulate_like`).

The shipped run is DyLAN's gpt-3.5-turbo debates on the MATH-500 problems
(``data/real-debates/``, MIT, see ``data/benchmarks/SOURCES.md``); a user adds any Du et
al. file.  The simulated population is *not* refitted to these data: they are a held-out
check of its round-to-round dynamics; only its ``skill_mean`` is shifted so that its
expected round-0 agent accuracy equals the real run's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pear.analysis import dynamics
from pear.paths import BUILD_DIR, REAL_DEBATES_DIR

__all__ = ["SHIPPED", "Analysis", "imported_run", "shipped_runs", "analyse", "table", "verdicts",
           "plot_real_vs_simulated", "describe"]

SHIPPED = {"dylan-math500": ("dylan", "dylan-math500-gpt35.json.gz", "math500",
                             "gpt-3.5-turbo-0301")}
"""Name -> (format, file under data/real-debates, dataset, model) of each shipped file."""


def imported_run(fmt: str, file: str | os.PathLike[str], out: str | os.PathLike[str], *,
                 dataset: str, model: str = "", grading: str | None = None,
                 skip_bad: bool = False) -> Path:
    """The run directory ``out`` holding ``file`` imported (imported now unless ``out``
    already holds exactly this file's import by this importer, checked by its sha256 and the
    import's version; ``skip_bad``: bad entries are left out and listed in the manifest)."""
    from pear.store import manifest
    from pear.core.hashing import file_sha256
    from pear.store.importing import IMPORT_VERSION, import_files
    out, file = Path(out), Path(file)
    old = manifest.read(out) if out.is_dir() else None
    if old and old.get("imported"):
        files = old["imported"].get("files") or []
        from pear.tasks.benchmarks import sha256_files
        if [f.get("sha256") for f in files] == [file_sha256(file)] and \
                old["imported"].get("version") == IMPORT_VERSION and \
                old["imported"].get("datasets") == [dataset] and \
                old.get("data_sha256") == sha256_files():  # matched against these benchmarks
            return out
    if out.exists():
        import shutil
        shutil.rmtree(out)
    import_files(fmt, [file], out, dataset=dataset, grading=grading, model=model,
                 skip_bad=skip_bad)
    return out


def shipped_runs(du_file: str = "", du_dataset: str = "gsm8k", du_grading: str = "",
                 du_model: str = "", where: str | os.PathLike[str] | None = None
                 ) -> dict[str, Path]:
    """Name -> run directory of each shipped import (under ``where``, default
    ``build/imported``), plus ``du_file`` (a Du et al. file) when given."""
    import hashlib
    import json
    from pear.tasks.benchmarks import sha256_files
    # one folder per benchmark data (PEAR_DATA_DIR): imports matched against other questions
    # never replace each other
    data = hashlib.sha256(json.dumps(sha256_files(), sort_keys=True).encode()).hexdigest()[:8]
    root = Path(where) if where else BUILD_DIR / "imported"
    out = {}
    for name, (fmt, file, dataset, model) in SHIPPED.items():
        out[name] = imported_run(fmt, REAL_DEBATES_DIR / file, root / f"{name}-{data}",
                                 dataset=dataset, model=model)
    if du_file:
        name = f"du-{Path(du_file).name.split('.')[0]}"
        out[name] = imported_run("du", du_file, root / f"{name}-{data}", dataset=du_dataset,
                                 model=du_model, grading=du_grading or None)
    return out


@dataclass(frozen=True)
class Analysis:
    """One imported run against the simulated population."""

    name: str
    run_dir: Path
    manifest: dict[str, Any]
    real: pd.DataFrame
    """:func:`pear.analysis.dynamics.summarize` of the real debates."""
    simulated: pd.DataFrame | None
    """The same of the simulated debates (None: cannot be simulated, see ``note``)."""
    comparison: pd.DataFrame | None
    real_curve: pd.DataFrame
    simulated_curve: pd.DataFrame | None
    mcnemar: Any
    mcnemar_note: str
    sim: Any
    note: str


def analyse(name: str, run_dir: str | os.PathLike[str], *, seed: int = 0,
            n_resamples: int = 2000) -> Analysis:
    """The real run's dynamics with bootstrap intervals, the simulated population's in the
    same setting, their comparison and round curves."""
    from pear.store import manifest
    from pear.store.records import read_records
    from pear.store.view import from_records, load
    from pear.tasks.benchmarks import DATASETS
    run_dir = Path(run_dir)
    v = load(run_dir)
    per = dynamics.per_debate(v.debates, v.agent_rounds, v.rounds)
    real = dynamics.summarize(per, rng=np.random.default_rng(seed), n_resamples=n_resamples)
    curve = dynamics.round_curve(v.debates, v.agent_rounds, v.rounds)
    test, test_note = dynamics.first_last_mcnemar(per)
    datasets = set(v.debates["dataset"])
    sim = sim_summary = comparison = sim_curve = None
    note = ""
    if len(datasets) == 1 and next(iter(datasets)) in DATASETS:
        sim = dynamics.simulate_like(read_records(run_dir), seed=seed)
        sv = from_records(sim.records)
        sper = dynamics.per_debate(sv.debates, sv.agent_rounds, sv.rounds)
        sim_summary = dynamics.summarize(sper, rng=np.random.default_rng(seed),
                                         n_resamples=n_resamples)
        comparison = dynamics.compare(real, sim_summary)
        sim_curve = dynamics.round_curve(sv.debates, sv.agent_rounds, sv.rounds,
                                         horizon=int(v.debates["rounds"].max()))
    else:
        note = (f"dataset {sorted(datasets)} is not one of ours: the simulated population "
                "has no ease for it, so it is not simulated")
    return Analysis(name, run_dir, manifest.read(run_dir) or {}, real, sim_summary, comparison,
                    curve, sim_curve, test, test_note, sim, note)


def describe(a: Analysis) -> str:
    """What was imported and matched, and how the simulation was set (Markdown)."""
    imp = a.manifest.get("imported", {})
    lines = [f"**{a.name}** ({imp.get('format')}, model {imp.get('model')}): "
             f"{imp.get('debates')} debates, {imp.get('matched')} matched to our "
             f"{', '.join(imp.get('datasets', []))} by text, {imp.get('gold_disagree')} "
             f"golds that disagree with ours, {imp.get('bad_count', 0)} bad entries skipped."]
    if a.sim is not None:
        lines.append(f"Simulated population: calibrated defaults, `skill_mean` shifted to "
                     f"{a.sim.skill_mean:+.3f} so that its expected round-0 agent accuracy is "
                     f"{a.sim.expected:.3f} (real {a.sim.target:.3f}); not refitted.")
    if a.mcnemar is not None:
        m = a.mcnemar
        lines.append(f"McNemar, vote in the last round vs round 0 (debates with rounds): "
                     f"b = {m.b} right only in the last, c = {m.c} right only in round 0, "
                     f"exact p = {m.pvalue_exact:.3g}.")
    else:
        lines.append(f"McNemar, vote last vs first round: cannot be computed "
                     f"({a.mcnemar_note}).")
    if a.note:
        lines.append(a.note)
    return "\n\n".join(lines)


def verdicts(analyses: Sequence[Analysis]) -> list[str]:
    """One line per run and statistic: whether the simulated value lies inside the real
    run's interval (or why it cannot be said)."""
    out = []
    for a in analyses:
        if a.comparison is None:
            out.append(f"{a.name}: not compared ({a.note})")
            continue
        out += [f"{a.name}: {line}" for line in a.comparison["verdict"]]
    return out


def table(analyses: Sequence[Analysis]) -> pd.DataFrame:
    """One row per (run, statistic): the real value with its 95% interval, the simulated
    value with its interval, and whether the simulated value is inside the real interval."""
    rows = []
    for a in analyses:
        comp = a.comparison if a.comparison is not None else a.real.rename(columns={
            "value": "value_real", "low": "low_real", "high": "high_real", "n": "n_real"})
        for _, r in comp.iterrows():
            sim = (f"{r['value_sim']:.3f} [{r['low_sim']:.3f}, {r['high_sim']:.3f}]"
                   if "value_sim" in r and np.isfinite(r["value_sim"]) else "n/a")
            real = (f"{r['value_real']:.3f} [{r['low_real']:.3f}, {r['high_real']:.3f}]"
                    if np.isfinite(r["value_real"]) else "n/a")
            inside = r.get("inside")
            rows.append({"run": a.name, "statistic": r["label"], "real [95% CI]": real,
                         "debates": int(r["n_real"]), "simulated [95% CI]": sim,
                         "inside": "n/a" if inside is None or inside != inside
                         else ("yes" if inside else "no")})
    return pd.DataFrame(rows).set_index(["run", "statistic"])


def plot_real_vs_simulated(analyses: Sequence[Analysis]) -> Any:
    """Per run: round curves (agent and vote accuracy, real solid, simulated dashed) and the
    statistics with their intervals (real and simulated side by side)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(analyses), 2, figsize=(10, 3.6 * len(analyses)),
                             squeeze=False)
    for (ax_c, ax_s), a in zip(axes, analyses):
        for col, label, color in (("agent_accuracy", "agents", "C0"),
                                  ("vote_accuracy", "vote", "C1")):
            ax_c.plot(a.real_curve["round"], a.real_curve[col], "-o", color=color,
                      label=f"real {label}")
            if a.simulated_curve is not None:
                ax_c.plot(a.simulated_curve["round"], a.simulated_curve[col], "--s",
                          color=color, alpha=0.7, label=f"simulated {label}")
        ax_c.set_xlabel("round (debates that ended carry their last round)")
        ax_c.set_ylabel("accuracy")
        ax_c.set_xticks(list(a.real_curve["round"]))
        ax_c.set_title(f"{a.name}: round-wise accuracy")
        ax_c.legend(fontsize=7)
        stats = a.real
        y = np.arange(len(stats))
        ax_s.errorbar(stats["value"], y + 0.15, xerr=_err(stats), fmt="o", color="k",
                      label="real (95% bootstrap CI)")
        if a.simulated is not None:
            ax_s.errorbar(a.simulated["value"], y - 0.15, xerr=_err(a.simulated), fmt="s",
                          color="C3", label="simulated")
        ax_s.set_yticks(y)
        ax_s.set_yticklabels(stats["label"], fontsize=8)
        ax_s.invert_yaxis()
        ax_s.set_xlim(-0.02, 1.02)
        ax_s.set_title(f"{a.name}: dynamics, real vs simulated")
        ax_s.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    fig.tight_layout()
    return fig


def _err(df: pd.DataFrame) -> np.ndarray:
    v, lo, hi = (df[c].to_numpy(float) for c in ("value", "low", "high"))
    return np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0)
