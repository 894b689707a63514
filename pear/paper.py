"""The paper build: the ordered notebooks, the outputs each one produces, the glue they call,
and ``build()`` (jupytext + papermill) behind ``pear paper``.

showyourwork's rules: every figure, table and quoted number in ``figures/`` has exactly one
producer, listed in :data:`EXPECTED_OUTPUTS`; :data:`NOTEBOOKS` is the one ordered build;
``python -m pear.paper --check figures`` fails naming every missing output.  Notebooks only
call this module, :mod:`pear.metrics`, :mod:`pear.stats` and :mod:`pear.report`; the glue
they share (loading a run with its provenance, facetted figures, the study's numbers beside
the reproduced ones, the case-study transcript) lives here.

>>> [n for n in NOTEBOOKS if not EXPECTED_OUTPUTS[n]]
['00_run_experiments']
>>> len({f for files in EXPECTED_OUTPUTS.values() for f in files}) == sum(
...     len(files) for files in EXPECTED_OUTPUTS.values())
True
"""
from __future__ import annotations

import io
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.config import FIXED_TOPOLOGIES, METHOD_LABELS, METHODS
from pear.metrics import DATASET_LABELS, DATASETS

__all__ = [
    "NOTEBOOKS", "EXPECTED_OUTPUTS", "BACKENDS", "MAIN_METHODS", "REPO_ROOT", "FIGURES_ENV",
    "build", "check_outputs", "main", "figures_dir", "runs_path", "experiment",
    "run_experiments", "describe_runs", "Results", "load_results", "accuracy", "select",
    "with_average", "facet", "display_figure", "display_table", "beside_paper", "headline_numbers",
    "number_macros", "rank_agreement", "significance_sets", "cost_accuracy",
    "case_study", "render_transcript", "save_markdown", "notebook_parameters",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
FIGURES_ENV = "PEAR_FIGURES_DIR"
BACKENDS = ("llamacpp", "vllm", "openai", "simulated", "replay")
"""``replay``: run nothing, read the records already in the run directory."""
MAIN_METHODS = ("cot", "cot_sc", *FIXED_TOPOLOGIES, "random", "pear")
"""The methods of the study's main table, in its column order."""
KERNEL = "pear"

NOTEBOOKS = ("00_run_experiments", "01_main_results", "02_full_dataset", "03_ablation",
             "04_round_curves", "05_diagnostics", "06_significance", "07_cost_pareto",
             "08_case_study")
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
    "05_diagnostics": (*_tab("diagnostics"), *_tab("diagnostics_vs_paper")),
    "06_significance": (*_tab("significance"), *_tab("significance_vs_paper"),
                        *_tab("spearman"), *_tab("spearman_vs_paper")),
    "07_cost_pareto": (*_fig("pareto"), *_tab("tokens"), *_tab("cost_vs_paper")),
    "08_case_study": ("case_study.md",),
}
"""Every file each notebook writes into the figures directory (one producer per file)."""


# ----------------------------------------------------------------- parameters and runs

def figures_dir() -> Path:
    """Where notebooks write: ``$PEAR_FIGURES_DIR`` if set, else ``<repository>/figures``."""
    env = os.environ.get(FIGURES_ENV)
    return Path(env).expanduser().resolve() if env else REPO_ROOT / "figures"


def runs_path(runs_dir: str, preset: str, backend: str) -> Path:
    """The run directory: ``runs_dir`` if given, else ``data/runs/<preset>-<backend>``."""
    return Path(runs_dir).expanduser().resolve() if runs_dir else \
        REPO_ROOT / "data" / "runs" / f"{preset}-{backend}"


def _seeds(seeds: str | Sequence[int]) -> tuple[int, ...] | None:
    if isinstance(seeds, str):
        items = [s.strip() for s in seeds.split(",") if s.strip()]
        if not items:
            return None
        if not all(re.fullmatch(r"\d+", s) for s in items):
            raise ValueError(f"invalid seeds {seeds!r}: give comma-separated non-negative "
                             "integers, e.g. '0,1,2', or '' for the preset's")
        return tuple(int(s) for s in items)
    return tuple(int(s) for s in seeds) or None


def experiment(preset: str, seeds: str | Sequence[int] = "", n_questions: int = 0,
               model: str = "", backend: str = "") -> Any:
    """The preset's :class:`pear.experiment.Experiment` with the notebook parameters:
    ``seeds`` ("" = the preset's), ``n_questions`` (0 = the preset's) and, for the vllm and
    openai backends, ``model`` as the grid's model.

    >>> e = experiment("smoke", seeds="3,4", n_questions=5)
    >>> e.seeds, e.n_questions
    ((3, 4), 5)
    """
    from pear.experiment import preset as make_preset
    if backend and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    over: dict[str, Any] = {}
    if (parsed := _seeds(seeds)) is not None:
        over["seeds"] = parsed
    if isinstance(n_questions, bool) or not isinstance(n_questions, (int, np.integer)) \
            or n_questions < 0:
        raise ValueError(f"invalid n_questions={n_questions!r}: use 0 (the preset's) or more")
    if n_questions:
        over["n_questions"] = int(n_questions)
    if model and backend in ("vllm", "openai"):
        over["models"] = (model,)
    return make_preset(preset, **over)


def run_experiments(backend: str, exp: Any, runs_dir: str | os.PathLike[str], *,
                    model: str = "", base_url: str = "", progress: bool = True) -> Any:
    """Run (or resume) every debate of ``exp`` into ``runs_dir`` with the CLI's backend
    (responses cached in ``runs_dir/cache.sqlite``); returns the
    :class:`pear.experiment.RunSummary`.  ``backend="replay"`` runs nothing: it checks that
    ``runs_dir`` holds records and returns None."""
    from pear.cli import make_backend
    from pear.experiment import run
    from pear.records import iter_records
    out = Path(runs_dir)
    if backend == "replay":
        if not out.is_dir() or next(iter_records(out), None) is None:
            raise FileNotFoundError(f"backend 'replay' needs recorded debates, but {str(out)!r} "
                                    "holds none: pass --runs DIR of an earlier run")
        print(f"replay: reading the records in {out}; nothing is run")
        return None
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    urls = [base_url] if base_url else None
    cache = out / "cache.sqlite"
    if exp.models:
        def factory(name: str) -> Any:
            return make_backend(backend, exp=exp, model=name, base_urls=urls, cache_path=cache)
        be: Any = factory
    else:
        be = make_backend(backend, exp=exp, model_path=model or None, base_urls=urls,
                          cache_path=cache)
    with warnings.catch_warnings():  # tqdm.auto without ipywidgets falls back to text
        warnings.filterwarnings("ignore", message=".*IProgress not found.*")
        s = run(exp, be, out, progress=progress)
    print(f"{s.written} debates written, {s.already_done} already done, {len(s.failed)} failed "
          f"of {s.total}; {s.requests} requests in {s.generate_calls} backend calls, "
          f"{s.tokens} tokens, {s.cache_hits} cache hits")
    if not s.complete:
        first = s.failed[0][1] if s.failed else "unknown"
        raise RuntimeError(f"the grid is incomplete ({len(s.failed)} debates failed; first: "
                           f"{first}); rerun to resume")
    return s


def describe_runs(runs_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Debates recorded under ``runs_dir``: one row per (model, method), one column per
    dataset."""
    from pear.records import iter_records
    rows = [(r["model"], r["method"], r["dataset"]) for r in iter_records(runs_dir)]
    df = pd.DataFrame(rows, columns=["model", "method", "dataset"])
    table = df.pivot_table(index=["model", "method"], columns="dataset", aggfunc="size",
                           fill_value=0)
    order = {m: i for i, m in enumerate(METHODS)}
    table = table.sort_index(key=lambda ix: ix.map(order) if ix.name == "method" else ix)
    return table[[d for d in DATASETS if d in table] + [d for d in table if d not in DATASETS]]


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
        from pear.records import debates_frame
        return debates_frame(self.records)

    @cached_property
    def agent_rounds(self) -> pd.DataFrame:
        from pear.records import agent_rounds_frame
        return agent_rounds_frame(self.records)

    @cached_property
    def critiques(self) -> pd.DataFrame:
        from pear.records import critiques_frame
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
    from pear.data import load
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
            c["critique"] = ""
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
    from pear.records import iter_records
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
    from pear import metrics
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


def with_average(df: pd.DataFrame, over: str = "dataset", label: str = "Average") -> pd.DataFrame:
    """``df`` plus rows ``over = label`` holding the unweighted mean of every numeric column
    over ``over`` (the other key columns kept); ``std`` of those rows is NaN.

    >>> d = pd.DataFrame({"method": "pear", "dataset": ["a", "b"], "accuracy": [0.5, 0.7]})
    >>> with_average(d)["accuracy"].round(2).tolist()
    [0.5, 0.7, 0.6]
    """
    keys = [c for c in df.columns if c != over and not pd.api.types.is_numeric_dtype(df[c])]
    keys += [c for c in ("round", "seed") if c in df.columns]
    num = [c for c in df.select_dtypes("number").columns if c not in keys]
    avg = df.groupby(keys, sort=False)[num].mean().reset_index().assign(**{over: label})
    if "std" in avg:
        avg["std"] = np.nan
    return pd.concat([df, avg[df.columns]], ignore_index=True)


def cost_accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (:func:`accuracy`) and cost (:func:`pear.metrics.costs`) per (model,
    dataset, method) in one frame: the input of :func:`pear.report.plot_pareto`."""
    from pear import metrics
    return accuracy(debates).merge(metrics.costs(debates), on=list(metrics.GROUP))


def rank_agreement(acc_subset: pd.DataFrame, acc_full: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rho (:func:`pear.stats.spearman`) between the method accuracies of the
    subset and of the full set, per (model, dataset) run on both, over the methods run on
    both: ``model, dataset, n_methods, rho, p_value`` (NaN with fewer than 3 methods)."""
    from pear import stats
    both = acc_subset.merge(acc_full, on=["model", "dataset", "method"],
                            suffixes=("_sub", "_full"))
    rows = []
    for (m, ds), part in both.groupby(["model", "dataset"], sort=False):
        rho = p = np.nan
        if len(part) >= 3:
            with warnings.catch_warnings():  # constant accuracies: rho undefined (NaN)
                warnings.simplefilter("ignore")
                rho, p = stats.spearman(part["accuracy_sub"], part["accuracy_full"])
        rows.append({"model": m, "dataset": ds, "n_methods": len(part), "rho": rho, "p_value": p})
    out = pd.DataFrame(rows, columns=["model", "dataset", "n_methods", "rho", "p_value"])
    return out.sort_values("dataset", key=lambda s: s.map(_dataset_pos)).reset_index(drop=True)


def significance_sets(*results: Results) -> tuple[pd.DataFrame, pd.DataFrame]:
    """PEAR against its strongest fixed topology (:func:`pear.stats.significance`) for each
    scope given, on the first seed of that scope (McNemar needs independent pairs; the
    study tests one full-set run): ``(rows, table)``.  ``table`` holds every scope
    (:func:`pear.report.table_significance` with a leading "Set" level); ``rows`` (with a
    ``set`` column) only the first scope that has a testable setting, the one to set
    beside the study's table (give the full set first)."""
    from pear import report, stats
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


def _dataset_pos(d: str) -> int:
    return DATASETS.index(d) if d in DATASETS else len(DATASETS)


# ----------------------------------------------------------------- figures

def facet(plot: Callable[..., Any], df: pd.DataFrame, *, rows: str | None = "model",
          cols: str | None = "dataset", title: str | None = None, source: str | None = None,
          simulated: bool = False, size: tuple[float, float] = (3.0, 2.4), **kwargs: Any) -> Any:
    """One figure, one panel per (``rows`` value, ``cols`` value), each drawn by a
    ``pear.report.plot_*`` function with ``ax=``; one legend for the figure, the title,
    the provenance line and (``simulated``) "simulated agents" on every panel.  Datasets
    keep the study's order, other values (e.g. "Average") come last."""
    from matplotlib.figure import Figure

    def values(col: str | None) -> list[Any]:
        if col is None:
            return [None]
        vals = list(df[col].unique())
        return sorted(vals, key=lambda v: (_dataset_pos(v), str(v))) if col == "dataset" \
            else sorted(vals, key=str)

    rv, cv = values(rows), values(cols)
    fig = Figure(figsize=(size[0] * len(cv) + 1.2, size[1] * len(rv)), layout="constrained")
    axes = fig.subplots(len(rv), len(cv), squeeze=False)
    for i, r in enumerate(rv):
        for j, c in enumerate(cv):
            part = df[((df[rows] == r) if rows else True) & ((df[cols] == c) if cols else True)]
            ax = axes[i][j]
            if part.empty:
                ax.set_visible(False)
                continue
            plot(part, ax=ax, simulated=simulated, **kwargs)
            if rows and len(rv) > 1:
                ax.set_title(f"{r}\n{ax.get_title()}".strip(), fontsize=8)
    legends = [a for a in axes.flat if a.get_legend() is not None]
    if legends:
        handles, labels = max(legends, key=lambda a: len(a.get_legend_handles_labels()[0])) \
            .get_legend_handles_labels()
        for a in legends:
            a.get_legend().remove()
        fig.legend(handles, labels, loc="outside right upper", fontsize=7, frameon=False)
    for text in list(fig.texts):  # the panels' own footers; one for the figure instead
        text.remove()
    if title:
        fig.suptitle(title)
    footer = " | ".join(x for x in ("simulated agents" if simulated else "", source or "") if x)
    if footer:
        fig.text(0.99, -0.01, footer, ha="right", va="top", fontsize=6,
                 color="#b2182b" if simulated else "0.3")
    return fig


def display_figure(fig: Any) -> None:
    """Show a :class:`matplotlib.figure.Figure` in the notebook (the kernel runs ``agg``)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    display(Image(data=buf.getvalue()))


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
    from pear import metrics
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
    from pear import metrics
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
    from pear import metrics
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
        fmt = "{:.3f}" if prefix[quantity] == "MeanAcc" else "{:.1f}"
        if pd.notna(row["reproduced"]):
            out[macro] = fmt.format(row["reproduced"])
        if pd.notna(row["paper"]):
            out["Paper" + macro] = fmt.format(row["paper"])
    if res is not None:
        def tex(s: str) -> str:
            return re.sub(r"([&%$#_{}])", r"\\\1", s)
        out["ReproBackend"] = tex(", ".join(res.backends))
        out["ReproModels"] = tex(", ".join(res.models))
        out["ReproSeeds"] = str(len(res.exp.seeds))
        out["ReproQuestions"] = str(res.exp.n_questions or "all")
    return out


# ----------------------------------------------------------------- the case study

def _minority_win(rec: dict[str, Any]) -> bool:
    rounds = rec["rounds_data"]
    if len(rounds) < 2:
        return False
    first = rounds[0]["agents"]
    right = sum(bool(a["correct"]) for a in first)
    return 0 < right < len(first) / 2 and bool(rec["correct"])


def case_study(records: Sequence[dict[str, Any]], debate_id: str = "",
               method: str = "pear") -> tuple[dict[str, Any], str]:
    """The debate to show and why it was chosen: ``debate_id`` if given, else the first
    ``method`` debate (then any debate) where a correct answer held by a minority of the
    agents in round 0 wins the final vote, else the first ``method`` debate with rounds."""
    if debate_id:
        for r in records:
            if r["debate_id"] == debate_id:
                return r, f"debate {debate_id} (chosen by the debate_id parameter)"
        raise ValueError(f"no debate {debate_id!r} among the {len(records)} loaded records")
    for pick, why in ((lambda r: r["method"] == method and _minority_win(r),
                       f"the first {METHOD_LABELS.get(method, method)} debate where a minority "
                       "correct answer in round 0 wins at the end"),
                      (_minority_win, "the first debate (any method) where a minority correct "
                                      "answer in round 0 wins at the end"),
                      (lambda r: r["method"] == method and len(r["rounds_data"]) > 1,
                       f"the first {METHOD_LABELS.get(method, method)} debate (no debate has a "
                       "minority correct answer that wins)")):
        for r in records:
            if pick(r):
                return r, why
    raise ValueError(f"no debate with rounds among the {len(records)} loaded records")


def _cell(text: Any, limit: int = 160) -> str:
    s = re.sub(r"\s+", " ", str(text if text is not None else "")).strip()
    s = s if len(s) <= limit else s[: limit - 1] + "…"
    return s.replace("|", r"\|") or "–"


def _question_text(rec: dict[str, Any]) -> list[str]:
    try:
        from pear.data import get_question
        q = get_question(rec["dataset"], rec["question_id"])
    except (ValueError, FileNotFoundError, KeyError):
        return []
    lines = ["> " + line for line in _cell(q.question, 1200).splitlines()]
    if q.choices:
        lines += [f"> {chr(65 + i)}. {_cell(c, 200)}" for i, c in enumerate(q.choices)]
    return lines + [""]


def render_transcript(record: dict[str, Any]) -> str:
    """A debate record as a Markdown transcript, round by round: the routed graph and the
    router's scores, every critique (who critiqued whom, what it recommended, the
    confidences, ACCEPT/REJECT), every agent's answer, confidence and influence, the vote;
    then the final answer against the gold one.  Agents are numbered from 1."""
    r = record
    label = METHOD_LABELS.get(r["method"], r["method"])
    ds = DATASET_LABELS.get(r["dataset"], r["dataset"])
    out = [f"## {label} on {ds}: question {r['question_id']}, seed {r['seed']}", "",
           f"Debate `{r['debate_id']}` · model `{r['model']}` (backend {r['backend']}) · "
           f"{r['n_agents']} agents · {r['rounds']} rounds · gold answer **{_cell(r['gold'])}**",
           ""]
    if r["backend"] == "simulated":
        out += ["*Simulated agents: answers, confidences and decisions come from the simulated "
                "population, not from a language model.*", ""]
    out += _question_text(r)
    for rd in r["rounds_data"]:
        k = rd["round"]
        out.append(f"### Round {k}" + (" (initial answers)" if k == 0 else ""))
        out.append("")
        if rd["edges"]:
            edges = ", ".join(f"{s + 1}→{t + 1}" for s, t in rd["edges"])
            out += [f"Graph (source→target): {edges}", ""]
        if rd.get("router"):
            ro = rd["router"]
            out += [f"Router: pool of {ro['pool_size']} relabellings; chosen score "
                    f"{ro['score']:.3f} (T {ro['T']:.3f}, I {ro['I']:.3f}, L {ro['L']:.3f}; "
                    f"pool range {ro['score_min']:.3f} to {ro['score_max']:.3f})", ""]
        for c in rd["critiques"]:
            decision = c["decision"] if c["delivered"] else "NOT DELIVERED"
            out.append(f"- Agent {c['source'] + 1} → Agent {c['target'] + 1}: "
                       f"{c['source_answer'] or '–'} (conf {c['source_confidence']}) critiques "
                       f"{c['target_answer'] or '–'} (conf {c['target_confidence']}), recommends "
                       f"**{_cell(c['recommended_answer'], 60)}** → **{decision}**"
                       + (f". “{_cell(c['critique'])}”" if c.get("critique") else ""))
        if rd["critiques"]:
            out.append("")
        influence = rd.get("influence") or []
        out += ["| Agent | Answer | Confidence | Correct | Influence |",
                "|---:|:---|---:|:---:|---:|"]
        for a in rd["agents"]:
            rho = influence[a["agent"]] if a["agent"] < len(influence) else 0.0
            out.append(f"| {a['agent'] + 1} | {_cell(a['answer'], 80)} | {a['confidence']} | "
                       f"{'✓' if a['correct'] else '✗'} | {rho:.2f} |")
        out += ["", f"Vote after round {k}: **{_cell(rd['vote'], 80)}** "
                    f"({'correct' if rd['vote_correct'] else 'wrong'})", ""]
    out.append(f"**Final answer: {_cell(r['final_answer'], 80)}** — "
               f"{'correct' if r['correct'] else 'wrong'} (gold {_cell(r['gold'], 80)})")
    return "\n".join(out) + "\n"


def save_markdown(text: str, name: str, out_dir: str | os.PathLike[str] = "figures") -> Path:
    """Write ``<out_dir>/<name>.md`` (a bare name, no path separator)."""
    if not name or re.search(r"[/\\]", name) or name in (".", ".."):
        raise ValueError(f"invalid file name {name!r}: give a bare name without a path")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------- the build

def _notebooks(only: str) -> list[str]:
    prefixes = [p.strip() for p in only.split(",") if p.strip()]
    if not prefixes:
        return list(NOTEBOOKS)
    bad = [p for p in prefixes if not any(n.startswith(p) for n in NOTEBOOKS)]
    if bad:
        raise ValueError(f"--only {bad[0]!r} matches no notebook; notebooks: "
                         f"{', '.join(NOTEBOOKS)}")
    return [n for n in NOTEBOOKS if any(n.startswith(p) for p in prefixes)]


def notebook_parameters(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Name -> default of the assignments in the notebook's ``parameters`` cell (a jupytext
    ``.py`` or an ``.ipynb``); an error names a notebook without exactly one such cell."""
    import ast

    import jupytext
    nb = jupytext.read(path)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"notebook {str(path)!r} has {len(cells)} cells tagged 'parameters'; "
                         "it needs exactly one")
    out = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def _ensure_kernel() -> None:
    """Install the ``pear`` kernel (this interpreter, ``MPLBACKEND=agg``) if missing."""
    from ipykernel.kernelspec import install
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    def ok() -> bool:
        try:
            spec = KernelSpecManager().get_kernel_spec(KERNEL)
        except NoSuchKernel:
            return False
        return (Path(spec.argv[0]).resolve() == Path(sys.executable).resolve()
                and spec.env.get("MPLBACKEND") == "agg")
    if not ok():
        install(prefix=sys.prefix, kernel_name=KERNEL, display_name="Python (pear)",
                env={"MPLBACKEND": "agg"})
        if not ok():
            path = KernelSpecManager().get_kernel_spec(KERNEL).resource_dir
            raise RuntimeError(f"a kernel named {KERNEL!r} at {path} runs another Python than "
                               f"{sys.executable}; remove it (jupyter kernelspec remove {KERNEL})")


def check_outputs(figures: str | os.PathLike[str],
                  notebooks: Sequence[str] = NOTEBOOKS) -> list[Path]:
    """The expected outputs of ``notebooks`` missing or empty in ``figures``."""
    root = Path(figures)
    return [root / f for n in notebooks for f in EXPECTED_OUTPUTS[n]
            if not (root / f).is_file() or (root / f).stat().st_size == 0]


def build(backend: str = "llamacpp", preset: str = "smoke", model: str = "", runs: str = "",
          seeds: str = "", n_questions: int = 0, base_url: str = "", only: str = "", *,
          figures: str | os.PathLike[str] | None = None,
          build_dir: str | os.PathLike[str] | None = None,
          notebooks_dir: str | os.PathLike[str] | None = None) -> int:
    """Execute the notebooks in order (``only``: comma-separated name prefixes): each
    ``notebooks/<name>.py`` is converted by jupytext to ``build/notebooks/src/<name>.ipynb``
    and executed by papermill into ``build/notebooks/<name>.ipynb`` with the ``pear``
    kernel, cwd = the repository root, and the parameters it declares among ``backend,
    preset, runs_dir, model, seeds, n_questions, base_url``.  Outputs go to ``figures``
    (default ``$PEAR_FIGURES_DIR`` or ``figures/``).  Returns 0, or 1 after the first
    failing notebook (its error and executed path are printed)."""
    from pear.experiment import PRESETS
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(PRESETS)}")
    experiment(preset, seeds, n_questions, model, backend)  # validate before any kernel starts
    names = _notebooks(only)
    src_dir = Path(notebooks_dir) if notebooks_dir else REPO_ROOT / "notebooks"
    out_dir = Path(build_dir) if build_dir else REPO_ROOT / "build" / "notebooks"
    (out_dir / "src").mkdir(parents=True, exist_ok=True)
    fig_dir = Path(figures).resolve() if figures else figures_dir()
    params = {"backend": backend, "preset": preset,
              "runs_dir": str(runs_path(runs, preset, backend)), "model": model,
              "seeds": seeds, "n_questions": int(n_questions), "base_url": base_url}
    _ensure_kernel()
    env = {"MPLBACKEND": "agg", FIGURES_ENV: str(fig_dir)}  # inherited by the kernels
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return _execute(names, src_dir, out_dir, fig_dir, params)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(names: Sequence[str], src_dir: Path, out_dir: Path, fig_dir: Path,
             params: Mapping[str, Any]) -> int:
    import jupytext
    import papermill
    print(f"pear paper: {len(names)} notebooks, backend {params['backend']}, preset "
          f"{params['preset']}, runs {params['runs_dir']}, figures {fig_dir}", flush=True)
    start = time.perf_counter()
    for name in names:
        src = src_dir / f"{name}.py"
        if not src.is_file():
            raise FileNotFoundError(f"notebook {name!r} not found: {src}")
        ipynb, executed = out_dir / "src" / f"{name}.ipynb", out_dir / f"{name}.ipynb"
        jupytext.write(jupytext.read(src), ipynb)
        declared = notebook_parameters(src)
        given = {k: v for k, v in params.items() if k in declared}
        stream = name == NOTEBOOKS[0]  # the runs: show their progress as it happens
        t0 = time.perf_counter()
        try:
            papermill.execute_notebook(
                str(ipynb), str(executed), parameters=given, kernel_name=KERNEL,
                progress_bar=True, cwd=str(REPO_ROOT), stdout_file=sys.stdout if stream else None,
                stderr_file=sys.stderr if stream else None)
        except Exception as err:  # noqa: BLE001 - papermill/kernel errors end the build
            print(f"FAILED {name} after {time.perf_counter() - t0:.1f} s\n{err}\n"
                  f"executed notebook: {executed}", file=sys.stderr, flush=True)
            return 1
        print(f"ok {name} in {time.perf_counter() - t0:.1f} s -> {executed}", flush=True)
    produced = [fig_dir / f for n in names for f in EXPECTED_OUTPUTS[n]]
    print(f"built {len(names)} notebooks in {time.perf_counter() - start:.1f} s; "
          f"{len(produced)} outputs in {fig_dir}:")
    for p in produced:
        print(f"  {p.name} ({p.stat().st_size if p.exists() else 'MISSING'} bytes)")
    missing = check_outputs(fig_dir, names)
    if missing:
        print(f"missing outputs: {', '.join(p.name for p in missing)}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pear.paper --check DIR``: exit 1 naming every missing or empty output."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m pear.paper", description="Check that every "
                                "expected output of the build exists and is not empty.")
    p.add_argument("--check", metavar="DIR", required=True, help="the figures directory")
    p.add_argument("--only", default="", help="comma-separated notebook name prefixes")
    a = p.parse_args(argv)
    try:
        names = _notebooks(a.only)
    except ValueError as err:
        print(f"pear.paper: error: {err}", file=sys.stderr)
        return 2
    missing = check_outputs(a.check, names)
    expected = sum(len(EXPECTED_OUTPUTS[n]) for n in names)
    if missing:
        print(f"{len(missing)} of {expected} expected outputs missing or empty in {a.check}:",
              file=sys.stderr)
        for path in missing:
            producer = next(n for n in names if path.name in EXPECTED_OUTPUTS[n])
            print(f"  {path.name} (from {producer})", file=sys.stderr)
        return 1
    print(f"all {expected} expected outputs present in {a.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
