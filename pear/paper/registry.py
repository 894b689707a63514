"""The notebook registry: one entry per notebook of the build (:class:`Notebook`), in build
order (:data:`ENTRIES`), saying what the build, the checks and the tests need to know of it:
the files it writes into the figures directory (one producer per file), whether it calls the
build's backend, whether it writes the grid the others read, why it cannot speak to imported
debates (if so), what it reads besides the grid (other notebooks' records, shipped data), and
its typical time (:func:`typical_seconds`: the last build's measured seconds on the same
backend, :mod:`pear.paper.times`, else the entry's fallback figure), and which of its outputs
names the site's case-study debate (if any).

The build (:mod:`pear.paper.build`, :mod:`pear.paper.kernels`) names no notebook: it reads
these entries.  Derived views: :data:`NOTEBOOKS` (names in build order), :data:`EXPECTED_OUTPUTS`
and :data:`NOT_FOR_IMPORTED`; :func:`select` (an ``--only``), :func:`producer` (an output's
notebook), :func:`missing_inputs` (what a notebook reads that is not there),
:func:`check_outputs` (``pear check outputs DIR``), :func:`write_not_applicable`
(a skipped notebook's outputs as notes).

>>> [n for n in NOTEBOOKS if not EXPECTED_OUTPUTS[n]] == [GRID.name]
True
>>> len({f for files in EXPECTED_OUTPUTS.values() for f in files}) == sum(
...     len(files) for files in EXPECTED_OUTPUTS.values())
True
>>> select("03_abl, 01")
['01_main_results', '03_ablation']
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from pear.paths import EXECUTED_DIR, REPO_ROOT
from pear.paper.times import TIMES_FILE, earlier_times

__all__ = ["Notebook", "ENTRIES", "BY_NAME", "GRID", "NOTEBOOKS", "EXPECTED_OUTPUTS",
           "NOT_FOR_IMPORTED", "entry", "select", "producer", "typical_seconds",
           "missing_inputs", "check_outputs", "write_not_applicable"]


@dataclass(frozen=True)
class Notebook:
    """One notebook of the build (``notebooks/<name>.py``)."""

    name: str
    """Its file's stem; the build runs the notebooks in name order."""
    outputs: tuple[str, ...] = ()
    """Every file it writes into the figures directory (no other notebook writes them)."""
    runs_the_model: bool = False
    """It calls the build's backend (with a server or a GPU engine it then runs alone)."""
    writes_grid: bool = False
    """It records the grid every other notebook reads (runs first and alone, its progress
    relayed)."""
    not_for_imported: str = ""
    """Why it cannot speak to a run of imported debates ('' when it can): a replay build on one
    skips it and writes each of its outputs as a note saying so."""
    reads: tuple[str, ...] = ()
    """What it reads besides the grid and the shipped benchmarks and printed numbers: other
    notebooks of the build (by name) whose records it reads beside the run (it runs after
    them), and shipped data files (paths relative to the repository)."""
    fallback_s: float = 0.0
    """Its seconds when no earlier build on the same backend timed it (a default smoke build on
    llama.cpp, 2 cores): only the order in which side-by-side notebooks start."""
    case_study: str = ""
    """The one of its outputs that names the debate the results site shows as its case study:
    a Markdown transcript holding ``Debate `ID` ``
    (:func:`pear.analysis.transcript.render_transcript`); '' when it writes none.  The site
    (:mod:`pear.paper.publish`) shows that debate when the notebook ran in the build and the
    debate is in the run."""

    def __post_init__(self) -> None:
        if self.writes_grid and (self.outputs or not self.runs_the_model):
            raise ValueError(f"notebook {self.name!r}: the grid's notebook runs the model and "
                             "writes no figure or table")
        if self.fallback_s < 0:
            raise ValueError(f"notebook {self.name!r}: fallback_s {self.fallback_s} < 0")
        if self.case_study and (self.case_study not in self.outputs
                                or not self.case_study.endswith(".md")):
            raise ValueError(f"notebook {self.name!r}: case_study {self.case_study!r} is not "
                             "one of its Markdown outputs")

    @property
    def reads_notebooks(self) -> tuple[str, ...]:
        """The notebooks of :attr:`reads`."""
        return tuple(r for r in self.reads if "/" not in r)

    @property
    def reads_files(self) -> tuple[Path, ...]:
        """The shipped data files of :attr:`reads`."""
        return tuple(REPO_ROOT / r for r in self.reads if "/" in r)


def _fig(name: str) -> tuple[str, str]:
    return f"{name}.pdf", f"{name}.png"


def _tab(name: str) -> tuple[str, str]:
    return f"{name}.tex", f"{name}.md"


_OWN_RUNS = ("it runs its own study variants beside the main run, and a run of imported "
             "debates has no protocol of ours to vary")
_DYLAN_MMLU = "data/real-debates/dylan-mmlu-gpt35.tgz"

ENTRIES: tuple[Notebook, ...] = (
    Notebook("00_run_experiments", runs_the_model=True, writes_grid=True),
    Notebook("01_main_results", (*_tab("main_results"), *_tab("main_results_vs_paper"),
                                 *_tab("main_summary"), "numbers.tex")),
    Notebook("02_full_dataset", (*_tab("full_dataset"), *_tab("full_dataset_vs_paper"))),
    Notebook("03_ablation", (*_fig("ablation"), *_tab("ablation"))),
    Notebook("04_round_curves", _fig("round_curves")),
    Notebook("05_diagnostics", (*_tab("diagnostics"), *_tab("diagnostics_definitions"),
                                *_tab("diagnostics_vs_paper"))),
    Notebook("06_significance", (*_tab("significance"), *_tab("significance_vs_paper"),
                                 *_tab("spearman"), *_tab("spearman_vs_paper"))),
    Notebook("07_cost_pareto", (*_fig("pareto"), *_tab("tokens"), *_tab("cost_vs_paper"),
                                "numbers_cost.tex", *_tab("sc_matched"))),
    Notebook("08_case_study", ("case_study.md",), case_study="case_study.md"),
    Notebook("09_theory_checks", (*_fig("theory_checks"), *_tab("theory_checks")),
             not_for_imported=_OWN_RUNS + " (and its checks need confidences and the router)"),
    Notebook("10_temperature_sweep", (*_fig("temperature_sweep"), *_tab("temperature_sweep"),
                                      *_tab("temperature_gap")),
             runs_the_model=True, not_for_imported=_OWN_RUNS, fallback_s=19),
    Notebook("11_early_stop", (*_fig("early_stop_pareto"), *_tab("early_stop")),
             runs_the_model=True, not_for_imported=_OWN_RUNS),
    Notebook("12_robustness", (*_fig("robustness"), *_tab("robustness")),
             runs_the_model=True, not_for_imported=_OWN_RUNS, fallback_s=56),
    # the ledger judges the relabelling claims on notebook 19's seat variants
    Notebook("13_claims", (*_tab("claims"), *_tab("claims_consistency"), *_fig("claims_forest"),
                           "claims.html", "claims.json", *_tab("ensemble_main"),
                           *_tab("ensemble_gains"), *_tab("ensemble_claims"),
                           *_tab("family_gains"), *_tab("family_claims")),
             reads=("19_relabelling",)),
    Notebook("14_calibration", (*_fig("calibration"), *_tab("calibration")), fallback_s=38),
    Notebook("15_your_method", (*_tab("your_method"), *_tab("your_method_significance"),
                                *_fig("your_method_pareto")),
             runs_the_model=True, not_for_imported=_OWN_RUNS, fallback_s=79),
    Notebook("16_counterfactual", (*_tab("counterfactual"), *_fig("counterfactual")),
             runs_the_model=True,
             not_for_imported="it branches recorded PEAR-protocol debates (router state, "
                              "critiques), which imported debates do not have"),
    Notebook("17_real_debates", (*_tab("real_debates"), *_fig("real_debates"),
                                 *_tab("leave_one_out"), *_tab("leave_one_out_summary")),
             reads=("data/real-debates/dylan-math500-gpt35.json.gz",
                    "data/real-debates/dylan-math-gpt35.tgz", _DYLAN_MMLU), fallback_s=47),
    # on simulated agents whatever the build's backend: it calls no model
    Notebook("18_your_model", (*_tab("your_model_twin"), *_tab("your_model_power"),
                               *_tab("your_model_claims")), reads=(_DYLAN_MMLU,), fallback_s=15),
    # the longest: it starts first, and the ledger waits for it
    Notebook("19_relabelling", (*_fig("relabelling"), *_tab("relabelling_spread"),
                                *_tab("relabelling_by_seat"), *_tab("relabelling_orbit")),
             runs_the_model=True, not_for_imported=_OWN_RUNS, fallback_s=100),
)
"""The build, in order."""

BY_NAME: dict[str, Notebook] = {e.name: e for e in ENTRIES}
(GRID,) = (e for e in ENTRIES if e.writes_grid)
"""The notebook that records the grid."""
NOTEBOOKS: tuple[str, ...] = tuple(BY_NAME)
"""The notebooks' names in build order."""
EXPECTED_OUTPUTS: dict[str, tuple[str, ...]] = {e.name: e.outputs for e in ENTRIES}
"""Every file each notebook writes into the figures directory (one producer per file)."""
NOT_FOR_IMPORTED: dict[str, str] = {e.name: e.not_for_imported for e in ENTRIES
                                    if e.not_for_imported}
"""Notebooks that cannot speak to a run of imported debates (``pear import``), and why."""


def entry(name: str) -> Notebook:
    """The entry of notebook ``name``; an unknown name is an error naming the notebooks."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no notebook {name!r}; notebooks: {', '.join(NOTEBOOKS)}") from None


def select(only: str) -> list[str]:
    """The notebooks, in build order, whose names start with one of ``only``'s
    comma-separated prefixes (every notebook when it names none); a prefix that matches no
    notebook is an error naming it."""
    prefixes = [p.strip() for p in only.split(",") if p.strip()]
    if not prefixes:
        return list(NOTEBOOKS)
    bad = [p for p in prefixes if not any(n.startswith(p) for n in NOTEBOOKS)]
    if bad:
        raise ValueError(f"--only {bad[0]!r} matches no notebook; notebooks: "
                         f"{', '.join(NOTEBOOKS)}")
    return [n for n in NOTEBOOKS if any(n.startswith(p) for p in prefixes)]


def producer(output: str) -> str:
    """The notebook that writes the file named ``output``.

    >>> producer("claims.json")
    '13_claims'
    """
    found = next((e.name for e in ENTRIES if output in e.outputs), None)
    if found is None:
        raise KeyError(f"no notebook writes {output!r}")
    return found


def typical_seconds(backend: str, times: str | os.PathLike[str] | None = None
                    ) -> dict[str, float]:
    """Each notebook's typical seconds on ``backend``: what the last build on it measured
    (``times``, default ``build/notebooks/build-times.json``: :mod:`pear.paper.times`, the
    notebooks that finished there), else its entry's :attr:`Notebook.fallback_s`."""
    path = Path(times) if times is not None else EXECUTED_DIR / TIMES_FILE
    return {**{e.name: e.fallback_s for e in ENTRIES}, **earlier_times(path, backend)}


def missing_inputs(names: Sequence[str], entries: Mapping[str, Notebook] | None = None
                   ) -> list[str]:
    """What the notebooks ``names`` read that is not there: one line per shipped data file of
    :attr:`Notebook.reads` missing, naming the notebook (the build stops on them before any
    kernel starts)."""
    by_name = BY_NAME if entries is None else entries
    return [f"notebook {n} reads {f.relative_to(REPO_ROOT).as_posix()}, which is missing"
            for n in names for f in by_name[n].reads_files if not f.is_file()]


def check_outputs(figures: str | os.PathLike[str],
                  notebooks: Sequence[str] = NOTEBOOKS) -> list[Path]:
    """The expected outputs of ``notebooks`` missing or empty in ``figures``."""
    root = Path(figures)
    return [root / f for n in notebooks for f in entry(n).outputs
            if not (root / f).is_file() or (root / f).stat().st_size == 0]


def write_not_applicable(name: str, fig_dir: Path, why: str = "") -> list[Path]:
    """Each expected output of notebook ``name`` as a note that it cannot be computed from
    imported debates and why (``why``, default its entry's; tables: one-line Markdown/LaTeX;
    figures: a figure saying so)."""
    from pear.analysis import figures  # heavy: matplotlib, only for this function
    text = (f"Not computed: notebook {name} cannot speak to imported debates: "
            f"{why or entry(name).not_for_imported}.")
    out = []
    for f in entry(name).outputs:
        path = fig_dir / f
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in (".md", ".tex"):
            path.write_text(text + "\n")
        elif path.suffix == ".pdf":
            figures.save_figure(figures.empty_figure(name, text), path.stem, out_dir=fig_dir)
        out.append(path)
    return out
