"""The glue the analysis notebooks share: the records of a preset's subset or full-set
scope with their provenance (:func:`load_results`, :class:`Results`), accuracy shaped for
the study's tables, the study's printed numbers beside the reproduced ones
(:func:`beside_paper`), and the numbers its text quotes, recomputed, as LaTeX macros
(:func:`headline_numbers`, :func:`number_macros`, :func:`quoted_macros`).

Elsewhere: the build and the notebooks' parameters (:mod:`pear.paper`), metrics
(:mod:`pear.metrics`), tables, plots and saving (:mod:`pear.report`), figure layout
(:mod:`pear.figures`), the case-study transcript (:mod:`pear.transcript`).

>>> MAIN_METHODS
('cot', 'cot_sc', 'clique', 'star', 'chain', 'ring', 'random', 'pear')
"""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from pear import metrics, report, stats
from pear.config import FIXED_TOPOLOGIES, METHOD_LABELS
from pear.data import load
from pear.metrics import DATASET_LABELS
from pear.records import agent_rounds_frame, critiques_frame, debates_frame, iter_records

__all__ = [
    "MAIN_METHODS", "Results", "load_results", "accuracy", "select", "cost_accuracy",
    "significance_sets", "paper_model", "display_table", "beside_paper", "headline_numbers",
    "number_macros", "quoted_macros",
]

MAIN_METHODS = ("cot", "cot_sc", *FIXED_TOPOLOGIES, "random", "pear")
"""The methods of the study's main table, in its column order."""


# ----------------------------------------------------------------- loading records

@dataclass
class Results:
    """The records of one scope of a run (``subset``: the grid's seeded subset questions,
    every method and seed; ``full``: the full-set datasets, methods and seeds), their
    DataFrames (built on first use) and their provenance."""

    records: list[dict[str, Any]]
    exp: Any
    scope: str
    runs_dir: Path
    backends: tuple[str, ...] = field(init=False)
    models: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.backends = tuple(sorted({r["backend"] for r in self.records}))
        self.models = tuple(sorted({r["model"] for r in self.records}))

    @cached_property
    def debates(self) -> pd.DataFrame:
        return debates_frame(self.records)

    @cached_property
    def agent_rounds(self) -> pd.DataFrame:
        return agent_rounds_frame(self.records)

    @cached_property
    def critiques(self) -> pd.DataFrame:
        return critiques_frame(self.records)

    @property
    def simulated(self) -> bool:
        """Whether any record comes from simulated agents."""
        return "simulated" in self.backends

    @property
    def source(self) -> str:
        """Provenance for figures (``source=``; the plots add "simulated agents" with
        ``simulated=True``): backend(s) and model(s)."""
        return f"backend {', '.join(self.backends)}; model {', '.join(self.models)}"

    @property
    def label(self) -> str:
        """Provenance for captions: :attr:`source`, prefixed "simulated agents" if so."""
        return f"simulated agents ({self.source})" if self.simulated else self.source

    @property
    def grid(self) -> str:
        """What the records cover, in words."""
        e = self.exp
        if self.scope == "full":
            seeds = ", ".join(map(str, e.full_seeds))
            names = ", ".join(DATASET_LABELS.get(d, d) for d in e.full_datasets)
            return f"full sets ({names}), seed{'s' if len(e.full_seeds) > 1 else ''} {seeds}"
        n = "all" if e.n_questions is None else e.n_questions
        return f"{n} question{'' if n == 1 else 's'} per dataset (question seed " \
               f"{e.question_seed}) x {len(e.seeds)} seed{'s' if len(e.seeds) > 1 else ''}"

    def caption(self, text: str) -> str:
        """``text`` with the grid and the provenance appended."""
        return f"{text} {self.grid[0].upper()}{self.grid[1:]}; {self.label}."

    def summary(self) -> pd.DataFrame:
        """Debates per (model, method) and dataset."""
        d = self.debates
        return d.pivot_table(index=["model", "method"], columns="dataset", values="debate_id",
                             aggfunc="size", fill_value=0)


def _selection(exp: Any, scope: str) -> tuple[dict[str, set[str]], set[str], set[int]]:
    if scope == "subset":
        qids = {ds: {q.id for q in load(ds, n=exp.n_questions, seed=exp.question_seed)}
                for ds in exp.datasets}
        return qids, set(exp.methods), set(exp.seeds)
    if scope == "full":
        if not exp.full_datasets:
            raise ValueError(f"preset {exp.name!r} runs no full dataset (full_datasets is "
                             "empty): nothing to load for scope 'full'")
        return ({ds: {q.id for q in load(ds)} for ds in exp.full_datasets},
                set(exp.full_methods), set(exp.full_seeds))
    raise ValueError(f"unknown scope {scope!r}: use 'subset' or 'full'")


def _strip_text(rec: dict[str, Any]) -> dict[str, Any]:
    for rd in rec["rounds_data"]:
        for a in rd["agents"]:
            a["reasoning"] = ""
        for c in rd["critiques"]:
            for key in ("step_loc", "correction", "reason", "critique"):
                if key in c:
                    c[key] = ""
    return rec


def load_results(runs_dir: str | os.PathLike[str], exp: Any, scope: str = "subset", *,
                 keep_text: bool = False) -> Results:
    """The records of ``runs_dir`` that belong to ``exp``'s grid in ``scope`` (``subset``:
    the seeded subset questions of ``exp.datasets``, ``exp.methods`` x ``exp.seeds``;
    ``full``: every question of ``exp.full_datasets``, ``exp.full_methods`` x
    ``exp.full_seeds``; full-set runs share their subset questions' records).

    A (model, dataset, method) cell of the grid without any record is an error naming it;
    missing questions inside a cell are a warning.  Reasoning and critique texts are
    dropped unless ``keep_text`` (the DataFrames never use them)."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"run directory {str(root)!r} does not exist: run notebook "
                                "00_run_experiments (or `pear run`) first")
    qids, methods, seeds = _selection(exp, scope)
    seen: set[str] = set()
    recs = []
    for r in iter_records(root):
        if (r["method"] in methods and r["seed"] in seeds
                and r["question_id"] in qids.get(r["dataset"], ()) and r["debate_id"] not in seen):
            seen.add(r["debate_id"])
            recs.append(r if keep_text else _strip_text(r))
    if not recs:
        raise FileNotFoundError(f"no records of the {scope} grid of preset {exp.name!r} under "
                                f"{str(root)!r}: run notebook 00_run_experiments with the same "
                                "preset, seeds and n_questions")
    res = Results(recs, exp, scope, root)
    counts = res.debates.groupby(["model", "dataset", "method"]).size()
    missing, short = [], 0
    for m in res.models:
        for ds, ids in qids.items():
            for meth in sorted(methods):
                have = int(counts.get((m, ds, meth), 0))
                if have == 0:
                    missing.append(f"{m} x {ds} x {meth}")
                short += len(ids) * len(seeds) - have
    if missing:
        raise FileNotFoundError(f"{len(missing)} cells of the {scope} grid have no record under "
                                f"{str(root)!r} (first: {missing[0]}): run notebook "
                                "00_run_experiments to finish the grid")
    if short:
        warnings.warn(f"{short} debates of the {scope} grid are missing under {root}; results "
                      "use the recorded ones", RuntimeWarning, stacklevel=2)
    return res


# ----------------------------------------------------------------- computing and shaping

def accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """:func:`pear.metrics.accuracy`, with ``std`` NaN where a cell has one seed (tables
    then print no ``± 0.000``)."""
    acc = metrics.accuracy(debates)
    acc.loc[acc["n_seeds"] < 2, "std"] = np.nan
    return acc


def select(df: pd.DataFrame, methods: Iterable[str] | None = None,
           datasets: Iterable[str] | None = None) -> pd.DataFrame:
    """The rows of ``df`` with these methods / datasets (None = all)."""
    keep = pd.Series(True, index=df.index)
    if methods is not None:
        keep &= df["method"].isin(list(methods))
    if datasets is not None:
        keep &= df["dataset"].isin(list(datasets))
    return df[keep].reset_index(drop=True)


def cost_accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (:func:`accuracy`) and cost (:func:`pear.metrics.costs`) per (model,
    dataset, method) in one frame: the input of :func:`pear.report.plot_pareto`."""
    return accuracy(debates).merge(metrics.costs(debates), on=list(metrics.GROUP))


def significance_sets(*results: Results) -> tuple[pd.DataFrame, pd.DataFrame]:
    """PEAR against its strongest fixed topology (:func:`pear.stats.significance`) for each
    scope given, on the first seed of that scope (McNemar needs independent pairs; the
    study tests one full-set run): ``(rows, table)``.  ``table`` holds every scope
    (:func:`pear.report.table_significance` with a leading "Set" level); ``rows`` (with a
    ``set`` column) only the first scope that has a testable setting, the one to set
    beside the study's table (give the full set first)."""
    parts, tables = [], {}
    for res in results:
        seed = min(res.exp.full_seeds if res.scope == "full" else res.exp.seeds)
        sig = stats.significance(res.debates[res.debates["seed"] == seed])
        if sig.empty:
            continue
        name = f"{'full set' if res.scope == 'full' else 'subset'}, seed {seed}"
        parts.append(sig.assign(set=name))
        tables[name] = report.table_significance(sig)
    if not parts:
        raise ValueError("no setting has both PEAR and a fixed topology: nothing to test")
    return parts[0], pd.concat(tables, names=["Set"])


# ----------------------------------------------------------------- the study's numbers

_PAPER_SCALE = {"significance": {"pear_acc": 100.0, "best_baseline_acc": 100.0}}
"""Columns the study prints on another scale (percent) than the records give."""
_QUANTITY_LABELS = {
    "accuracy": "Accuracy", "best_baseline_acc": "Acc. best fixed (%)",
    "pear_acc": "Acc. PEAR (%)", "p_exact": "p (exact)", "win_rate": "Win rate",
    "wilson_low": "Wilson low", "wilson_high": "Wilson high", "power": "Power",
    "rho": "rho", "p_value": "p", "w2r": "W2R", "r2w": "R2W", "net": "Net",
    "acceptance": "Acceptance", "cross_answer": "Cross-answer",
    "source_confidence": "Source conf.", "influence_entropy": "Influence entropy",
    "tokens_per_example": "Tokens / example"}
_INDEX_LABELS = {"dataset": "Dataset", "model": "Model", "method": "Method",
                 "quantity": "Quantity", "key": "Key", "set": "Set"}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def paper_model(model: str, paper_models: Iterable[str]) -> str | None:
    """The study's name of ``model`` (an id such as ``Qwen/Qwen2.5-14B-Instruct``), matched
    ignoring case and punctuation, or None.

    >>> paper_model("meta-llama/Llama-3.1-8B-Instruct", ["Llama-3.1-8B", "Qwen-2.5-14B"])
    'Llama-3.1-8B'
    >>> paper_model("simulated-1a2b-s0", ["Llama-3.1-8B"]) is None
    True
    """
    key = _norm(Path(model).name if "/" in model else model)
    hits = [p for p in paper_models if _norm(p) and _norm(p) in key]
    return max(hits, key=len) if hits else None


def _labelled(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    if "dataset" in out:
        out["dataset"] = out["dataset"].map(lambda d: DATASET_LABELS.get(d, d))
    if "method" in out:
        out["method"] = out["method"].map(lambda m: METHOD_LABELS.get(m, m))
    if "quantity" in out:
        out["quantity"] = out["quantity"].map(lambda q: _QUANTITY_LABELS.get(q, q))
    return out


def display_table(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``df`` indexed by ``keys`` with display names (datasets, methods, index names)."""
    out = _labelled(df).set_index(list(keys))
    out.index = out.index.set_names([_INDEX_LABELS.get(k, k) for k in keys])
    return out


def beside_paper(reproduced: pd.DataFrame, name: str, values: Sequence[str],
                 keys: Sequence[str] = ("dataset", "model", "method")) -> tuple[pd.DataFrame, str]:
    """The study's printed ``values`` (``data/paper/<name>.csv``) beside the reproduced ones,
    with the difference (reproduced - paper): ``(table, note)``.

    Rows are the reproduced rows' ``keys`` (display names; with several values, one row
    per value under "Quantity"), columns ``reproduced, paper, diff``
    (:func:`pear.metrics.compare_with_paper`).  Reproduced models are matched to the study's
    by name (:func:`paper_model`); when none matches, ``model`` is dropped from the keys and
    both sides are averaged over their models, which ``note`` says (it is "" otherwise).
    A key the study's table lacks (e.g. ``set``) splits the reproduced rows, each part
    compared with the whole study's table."""
    pap = metrics.to_internal(metrics.load_paper(name))
    rep = reproduced.copy()
    for col, factor in _PAPER_SCALE.get(name, {}).items():
        if col in rep:
            rep[col] = rep[col] * factor
    keys, note = list(keys), ""
    if "model" in keys:
        known = list(pap["model"].unique()) if "model" in pap else []
        names = {m: paper_model(m, known) for m in rep["model"].unique()}
        if any(names.values()):
            rep["model"] = rep["model"].map(lambda m: names[m] or m)
        else:
            keys.remove("model")
            note = (f"No reproduced model ({', '.join(names)}) is one of the study's; its "
                    f"numbers are averaged over its {len(known)} models "
                    f"({', '.join(known)}) and the reproduced ones over theirs.")
    split = [k for k in keys if k not in pap.columns]
    shared = [k for k in keys if k in pap.columns]
    groups = rep.groupby(split, sort=False) if split else [((), rep)]
    parts = []
    for part_key, part in groups:
        extra = dict(zip(split, part_key if isinstance(part_key, tuple) else (part_key,)))
        for v in values:
            cmp = metrics.compare_with_paper(part, pap, keys=shared, value=v, how="left")
            parts.append(cmp.assign(quantity=v, **extra))
    out = _labelled(pd.concat(parts, ignore_index=True))
    index = keys + (["quantity"] if len(values) > 1 else [])
    out = out.set_index(index)[["reproduced", "paper", "diff"]]
    out.index = out.index.set_names([_INDEX_LABELS.get(k, k) for k in index])
    return out, note


_QUANTITIES = {"mean_accuracy": ("Mean accuracy", "MeanAcc"),
               "gain_best_fixed": ("PEAR gain over the best fixed topology (points)",
                                   "GainBestFixed"),
               "gain_over": ("PEAR mean gain over (points)", "GainOver")}
_DIGIT_WORDS = dict(zip("0123456789", ["Zero", "One", "Two", "Three", "Four", "Five", "Six",
                                       "Seven", "Eight", "Nine"]))
_ALL = "all settings"


def _macro(*parts: str) -> str:
    """A LaTeX macro name from display names (letters only; digits spelled out).

    >>> _macro("GainBestFixed", "MATH-500"), _macro("MeanAcc", "CoT-SC")
    ('GainBestFixedMATHFiveZeroZero', 'MeanAccCoTSC')
    """
    text = "".join(parts)
    return re.sub(r"[^A-Za-z]", "", "".join(_DIGIT_WORDS.get(ch, ch) for ch in text))


def _headline(acc: pd.DataFrame) -> pd.DataFrame:
    acc = select(acc, methods=MAIN_METHODS)
    means = metrics.macro_average(acc, ("method",))
    rows = [("mean_accuracy", METHOD_LABELS.get(m, m), v)
            for m, v in zip(means["method"], means["accuracy"])]
    if "pear" in set(acc["method"]) and set(FIXED_TOPOLOGIES) & set(acc["method"]):
        summ = metrics.gain_summary(metrics.gains(acc, "pear", "best_fixed"))
        for level, key, gain in zip(summ["level"], summ["key"], summ["gain"]):
            key = {"dataset": DATASET_LABELS.get(key, key),
                   "model": f"model {key}"}.get(level, _ALL)
            rows.append(("gain_best_fixed", key, gain))
        vs = metrics.gains_versus(acc, "pear")
        rows += [("gain_over", METHOD_LABELS.get(ref, ref), gain)
                 for ref, gain in zip(vs["reference"], vs["gain"]) if ref != "best_fixed"]
    return pd.DataFrame(rows, columns=["quantity", "key", "value"])


def headline_numbers(acc: pd.DataFrame) -> pd.DataFrame:
    """The numbers the study's text quotes, recomputed from ``acc`` (per-setting accuracy,
    :func:`accuracy`) and from its printed main table: mean accuracy per method, PEAR's gain
    over the best fixed topology per dataset, per model and overall, and its mean gain over
    Random and each fixed topology.  Rows (Quantity, Key), columns ``reproduced, paper,
    diff``; :func:`number_macros` turns them into LaTeX macros."""
    pap_acc = metrics.to_internal(metrics.load_paper("main_results"))
    names = {m: paper_model(m, pap_acc["model"].unique()) for m in acc["model"].unique()}
    rep = _headline(acc.assign(model=acc["model"].map(lambda m: names[m] or m)))
    pap = _headline(pap_acc).rename(columns={"value": "paper"})
    out = rep.rename(columns={"value": "reproduced"}).merge(pap, on=["quantity", "key"],
                                                            how="left")
    out["diff"] = out["reproduced"] - out["paper"]
    out["quantity"] = out["quantity"].map(lambda q: _QUANTITIES[q][0])
    return out.set_index(["quantity", "key"]).rename_axis(["Quantity", "Key"])


def number_macros(numbers: pd.DataFrame, res: Results | None = None) -> dict[str, str]:
    """LaTeX macros of :func:`headline_numbers` (accuracy 3 decimals, gains in points 1
    decimal): ``\\<Name>`` the reproduced value, ``\\Paper<Name>`` the study's (e.g.
    ``MeanAccPEAR``, ``GainBestFixed``, ``GainBestFixedMATHFiveZeroZero``,
    ``GainOverRandom``; per-model gains get none); with ``res`` also the run's backend,
    models, number of seeds and questions per dataset (``ReproBackend`` ...)."""
    prefix = {label: code for label, code in _QUANTITIES.values()}
    out: dict[str, str] = {}
    for (quantity, key), row in numbers.iterrows():
        if key.startswith("model "):
            continue
        macro = prefix[quantity] + ("" if key == _ALL else _macro(key))
        _both(out, macro, row, 3 if prefix[quantity] == "MeanAcc" else 1)
    if res is not None:
        def tex(s: str) -> str:
            return re.sub(r"([&%$#_{}])", r"\\\1", s)
        out["ReproBackend"] = tex(", ".join(res.backends))
        out["ReproModels"] = tex(", ".join(res.models))
        out["ReproSeeds"] = str(len(res.exp.seeds))
        out["ReproQuestions"] = str(res.exp.n_questions or "all")
    return out


def quoted_macros(table: pd.DataFrame, name: str, digits: int = 0) -> dict[str, str]:
    """LaTeX macros of a one-quantity :func:`beside_paper` table: per row ``\\<name><Key>``
    the reproduced value and ``\\Paper<name><Key>`` the study's, with ``digits`` decimals
    (Key: the row's display name(s), letters only, digits spelled out).

    >>> t = pd.DataFrame({"reproduced": [30000.4, 900.0], "paper": [32300, None]},
    ...                  index=pd.Index(["PEAR", "CoT-SC"], name="Method"))
    >>> quoted_macros(t, "Tokens")
    {'TokensPEAR': '30000', 'PaperTokensPEAR': '32300', 'TokensCoTSC': '900'}
    """
    out: dict[str, str] = {}
    for key, row in table.iterrows():
        macro = _macro(name, *map(str, key if isinstance(key, tuple) else (key,)))
        if macro in out:
            raise ValueError(f"two rows of the table give the macro name {macro!r}")
        _both(out, macro, row, digits)
    return out


def _both(out: dict[str, str], macro: str, row: pd.Series, digits: int) -> None:
    """``out[macro]`` the reproduced value, ``out["Paper" + macro]`` the study's, if known."""
    for prefix, col in (("", "reproduced"), ("Paper", "paper")):
        if pd.notna(row[col]):
            out[prefix + macro] = f"{row[col]:.{digits}f}"
