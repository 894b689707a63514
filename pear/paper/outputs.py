"""The build's outputs table: the ordered notebooks (:data:`NOTEBOOKS`), the files each one
writes into the figures directory (:data:`EXPECTED_OUTPUTS`, one producer per file), the
notebooks that cannot speak to imported debates (:data:`NOT_FOR_IMPORTED`, their outputs
written as notes by :func:`write_not_applicable`), the notebooks an ``--only`` names
(:func:`select`) and the outputs missing from a figures directory (:func:`check_outputs`;
``pear check outputs DIR`` names them).

>>> [n for n in NOTEBOOKS if not EXPECTED_OUTPUTS[n]]
['00_run_experiments']
>>> len({f for files in EXPECTED_OUTPUTS.values() for f in files}) == sum(
...     len(files) for files in EXPECTED_OUTPUTS.values())
True
>>> select("03_abl, 01")
['01_main_results', '03_ablation']
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

__all__ = ["NOTEBOOKS", "EXPECTED_OUTPUTS", "NOT_FOR_IMPORTED", "select", "producer",
           "check_outputs", "write_not_applicable"]

NOTEBOOKS = ("00_run_experiments", "01_main_results", "02_full_dataset", "03_ablation",
             "04_round_curves", "05_diagnostics", "06_significance", "07_cost_pareto",
             "08_case_study", "09_theory_checks", "10_temperature_sweep", "11_early_stop",
             "12_robustness", "13_claims", "14_calibration", "15_your_method",
             "16_counterfactual", "17_real_debates", "18_your_model", "19_relabelling")
"""The build, in order (``notebooks/<name>.py``)."""


def _fig(name: str) -> tuple[str, str]:
    return f"{name}.pdf", f"{name}.png"


def _tab(name: str) -> tuple[str, str]:
    return f"{name}.tex", f"{name}.md"


EXPECTED_OUTPUTS: dict[str, tuple[str, ...]] = {
    "00_run_experiments": (),
    "01_main_results": (*_tab("main_results"), *_tab("main_results_vs_paper"),
                        *_tab("main_summary"), "numbers.tex"),
    "02_full_dataset": (*_tab("full_dataset"), *_tab("full_dataset_vs_paper")),
    "03_ablation": (*_fig("ablation"), *_tab("ablation")),
    "04_round_curves": _fig("round_curves"),
    "05_diagnostics": (*_tab("diagnostics"), *_tab("diagnostics_definitions"),
                       *_tab("diagnostics_vs_paper")),
    "06_significance": (*_tab("significance"), *_tab("significance_vs_paper"),
                        *_tab("spearman"), *_tab("spearman_vs_paper")),
    "07_cost_pareto": (*_fig("pareto"), *_tab("tokens"), *_tab("cost_vs_paper"),
                       "numbers_cost.tex", *_tab("sc_matched")),
    "08_case_study": ("case_study.md",),
    "09_theory_checks": (*_fig("theory_checks"), *_tab("theory_checks")),
    "10_temperature_sweep": (*_fig("temperature_sweep"), *_tab("temperature_sweep"),
                             *_tab("temperature_gap")),
    "11_early_stop": (*_fig("early_stop_pareto"), *_tab("early_stop")),
    "12_robustness": (*_fig("robustness"), *_tab("robustness")),
    "13_claims": (*_tab("claims"), *_tab("claims_consistency"), *_fig("claims_forest"),
                  "claims.html", "claims.json", *_tab("ensemble_main"),
                  *_tab("ensemble_gains"), *_tab("ensemble_claims"),
                  *_tab("family_gains"), *_tab("family_claims")),
    "14_calibration": (*_fig("calibration"), *_tab("calibration")),
    "15_your_method": (*_tab("your_method"), *_tab("your_method_significance"),
                       *_fig("your_method_pareto")),
    "16_counterfactual": (*_tab("counterfactual"), *_fig("counterfactual")),
    "17_real_debates": (*_tab("real_debates"), *_fig("real_debates"), *_tab("leave_one_out"),
                        *_tab("leave_one_out_summary")),
    "18_your_model": (*_tab("your_model_twin"), *_tab("your_model_power"),
                      *_tab("your_model_claims")),
    "19_relabelling": (*_fig("relabelling"), *_tab("relabelling_spread"),
                       *_tab("relabelling_by_seat"), *_tab("relabelling_orbit")),
}
"""Every file each notebook writes into the figures directory (one producer per file)."""

_OWN_RUNS = ("it runs its own study variants beside the main run, and a run of imported "
             "debates has no protocol of ours to vary")
NOT_FOR_IMPORTED: dict[str, str] = {
    "09_theory_checks": _OWN_RUNS + " (and its checks need confidences and the router)",
    "10_temperature_sweep": _OWN_RUNS, "11_early_stop": _OWN_RUNS, "12_robustness": _OWN_RUNS,
    "15_your_method": _OWN_RUNS, "19_relabelling": _OWN_RUNS,
    "16_counterfactual": "it branches recorded PEAR-protocol debates (router state, "
                         "critiques), which imported debates do not have",
}
"""Notebooks that cannot speak to a run of imported debates (``pear import``), and why:
``pear paper --backend replay`` on such a run skips them and writes each of their outputs
as a note saying so (:func:`write_not_applicable`)."""


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
    found = next((n for n, files in EXPECTED_OUTPUTS.items() if output in files), None)
    if found is None:
        raise KeyError(f"no notebook writes {output!r}")
    return found


def check_outputs(figures: str | os.PathLike[str],
                  notebooks: Sequence[str] = NOTEBOOKS) -> list[Path]:
    """The expected outputs of ``notebooks`` missing or empty in ``figures``."""
    root = Path(figures)
    return [root / f for n in notebooks for f in EXPECTED_OUTPUTS[n]
            if not (root / f).is_file() or (root / f).stat().st_size == 0]


def write_not_applicable(name: str, fig_dir: Path, why: str) -> list[Path]:
    """Each expected output of notebook ``name`` as a note that it cannot be computed from
    imported debates and why (tables: one-line Markdown/LaTeX; figures: a figure saying
    so)."""
    from pear.analysis import figures  # heavy: matplotlib, only for this function
    text = f"Not computed: notebook {name} cannot speak to imported debates: {why}."
    out = []
    for f in EXPECTED_OUTPUTS[name]:
        path = fig_dir / f
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in (".md", ".tex"):
            path.write_text(text + "\n")
        elif path.suffix == ".pdf":
            figures.save_figure(figures.empty_figure(name, text), path.stem, out_dir=fig_dir)
        out.append(path)
    return out
