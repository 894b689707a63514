"""One figure style, the study's plots, LaTeX/Markdown tables, and quoted-number macros.

Plots follow rliable: ``plot_*(df, *, ax=None, ...) -> Figure``; saving is separate
(:func:`save_figure`).  Figures are built on :class:`matplotlib.figure.Figure` (no pyplot
state).  Every plot states its provenance (``source``: backend and model) and, with
``simulated=True``, says "simulated agents" on every panel.  Tables are shaped by
``table_*`` (methods as columns in the order of :data:`pear.config.METHODS`, display names
from ``METHOD_LABELS``; the significance table has one row per setting) and written by
:func:`save_table`.  Every ``save_*`` and :func:`write_numbers` writes into
:func:`figures_dir` unless given ``out_dir``.

>>> sorted(METHOD_COLORS) == sorted(METHODS)
True
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pear.config import ABLATIONS, METHOD_LABELS, METHODS
from pear.metrics import DATASET_LABELS, DATASETS, macro_average, pareto_front
from pear.stats import stars

__all__ = [
    "METHOD_COLORS", "ROUTING_VARIANTS", "FIGURES_ENV", "figures_dir", "set_style",
    "save_figure", "save_table", "save_markdown", "write_numbers", "plot_round_curves",
    "plot_ablation", "plot_pareto", "plot_accuracy_bars", "table_main", "table_diagnostics",
    "table_significance", "table_tokens",
]

METHOD_COLORS = {  # colour-blind safe (seaborn "colorblind" + Paul Tol muted); fixed per method
    "cot": "#949494", "cot_sc": "#5f5f5f", "clique": "#0173b2", "star": "#56b4e9",
    "chain": "#029e73", "ring": "#ece133", "random": "#ca9161", "pear": "#d55e00",
    "pear_T": "#de8f05", "pear_I": "#cc78bc", "pear_L": "#fbafe4", "pear_TI": "#882255",
    "pear_TL": "#44aa99", "pear_IL": "#332288",
}
"""One colour per method name, the same in every figure."""
ROUTING_VARIANTS = ("random", *ABLATIONS, "pear")
"""The bars of the ablation figure: random as reference, the six ablations, PEAR."""
FIGURES_ENV = "PEAR_FIGURES_DIR"
"""The environment variable naming the output folder (``pear paper`` sets it for the
notebooks it runs)."""
_REPO_ROOT = Path(__file__).resolve().parent.parent
_DIAG_LABELS = {"w2r": "W2R", "r2w": "R2W", "net": "Net", "acceptance": "Acceptance",
                "cross_answer": "Cross-answer", "source_confidence": "Source conf.",
                "influence_entropy": "Influence entropy"}
_COST_LABELS = {"tokens_per_example": "Tokens / example", "cached_tokens": "Cached / example",
                "calls_per_example": "Calls / example", "parse_failure_rate": "Parse failures"}


def set_style(backend: str | None = "agg") -> None:
    """The one figure style: seaborn "paper" context, colour-blind palette, TrueType fonts
    in PDF/PS (fonttype 42), a fixed SVG hash salt; ``backend`` (default ``agg``) is
    selected unless None.  Creation dates are dropped by :func:`save_figure`."""
    import matplotlib
    import seaborn as sns

    if backend:
        matplotlib.use(backend)
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind")
    matplotlib.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42,
                                "svg.hashsalt": "pear", "savefig.dpi": 200})


def figures_dir(out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where outputs go: ``out_dir`` if given, else ``$PEAR_FIGURES_DIR`` if set, else
    ``<repository>/figures`` (found from the package's location, never from the cwd).

    >>> figures_dir("/tmp/out").as_posix()
    '/tmp/out'
    """
    if out_dir is not None:
        return Path(out_dir)
    env = os.environ.get(FIGURES_ENV)
    return Path(env).expanduser().resolve() if env else _REPO_ROOT / "figures"


def _check_name(name: str, what: str) -> str:
    if not name or name in (".", "..") or re.search(r"[/\\]", name):
        raise ValueError(f"invalid {what} name {name!r}: give a bare file name without a "
                         "path separator (use out_dir for the folder)")
    return name


def save_figure(fig: Figure, name: str, out_dir: str | os.PathLike[str] | None = None
                ) -> tuple[Path, Path]:
    """Write ``<out_dir>/<name>.pdf`` (byte-stable: no creation date) and ``<name>.png``
    (``out_dir`` None: :func:`figures_dir`); returns both paths."""
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pdf, png = out / f"{_check_name(name, 'figure')}.pdf", out / f"{name}.png"
    fig.savefig(pdf, bbox_inches="tight",
                metadata={"CreationDate": None, "ModDate": None, "Creator": "pear.report"})
    fig.savefig(png, bbox_inches="tight", dpi=200, metadata={"Software": None})
    return pdf, png


# ---------------------------------------------------------------- tables

def _latex_escape(text: str) -> str:
    return re.sub(r"([&%$#_{}])", r"\\\1", text).replace("~", r"\~{}").replace("^", r"\^{}")


def _fmt(v: object, digits: int) -> str | None:
    """A number as the paper prints it, or None for a missing value."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{v:.{digits}f}"
    return str(v)


def _render_cells(values: pd.DataFrame, std: pd.DataFrame | None, bold: pd.DataFrame,
                  digits: int, latex: bool) -> pd.DataFrame:
    cells = values.astype(object).copy()
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values.iat[i, j]
            text = _fmt(v, digits)
            if text is None:
                cells.iat[i, j] = "--"
                continue
            if latex and isinstance(v, str):
                text = _latex_escape(text)
            if bold.iat[i, j]:
                text = rf"\textbf{{{text}}}" if latex else f"**{text}**"
            s = _fmt(std.iat[i, j], digits) if std is not None else None
            if s is not None:
                text = rf"{text}$_{{\pm {s}}}$" if latex else f"{text} ± {s}"
            cells.iat[i, j] = text
    return cells


def _best_mask(values: pd.DataFrame, how: str | None, axis: str, digits: int) -> pd.DataFrame:
    mask = pd.DataFrame(False, index=values.index, columns=values.columns)
    if how is None:
        return mask
    if how not in ("max", "min"):
        raise ValueError(f"invalid bold_best={how!r}: use None, 'max' or 'min'")
    if axis not in ("row", "column"):
        raise ValueError(f"invalid best_axis={axis!r}: use 'row' or 'column'")
    num = values.apply(pd.to_numeric, errors="coerce").astype(float).round(digits)
    best = getattr(num, how)(axis=1 if axis == "row" else 0)
    return num.eq(best, axis=0 if axis == "row" else 1) & num.notna()


def _markdown(cells: pd.DataFrame) -> str:
    idx_names = [str(n) if n is not None else "" for n in cells.index.names]
    cols = [" ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in cells.columns]
    def row(items: Sequence[str]) -> str:
        return "| " + " | ".join(str(x).replace("|", r"\|") for x in items) + " |"
    lines = [row(idx_names + cols), "|" + "|".join([":---"] * len(idx_names)
                                                  + ["---:"] * len(cols)) + "|"]
    for key, vals in zip(cells.index, cells.itertuples(index=False)):
        keys = list(key) if isinstance(key, tuple) else [key]
        lines.append(row([str(k) for k in keys] + list(vals)))
    return "\n".join(lines) + "\n"


def save_table(df: pd.DataFrame, name: str, *, caption: str | None = None,
               label: str | None = None, bold_best: Literal["max", "min"] | None = None,
               best_axis: Literal["row", "column"] = "row", digits: int = 3,
               out_dir: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """Write ``<name>.tex`` (booktabs, via ``Styler.to_latex(hrules=True)``) and ``<name>.md``
    into ``out_dir`` (None: :func:`figures_dir`).

    Columns that form pairs ``(X, "mean"), (X, "std")`` (as :func:`table_main` makes) print
    as one column X: ``0.645$_{\\pm 0.012}$`` in LaTeX, ``0.645 ± 0.012`` in Markdown.
    Floats get ``digits`` decimals, integers none, strings print as given, missing values
    ``--``.  ``bold_best`` bolds the largest (``"max"``) or smallest (``"min"``) value, ties
    included, within each row (``best_axis="row"``: methods as columns) or each column
    (``"column"``).  Returns the two paths.
    """
    _check_name(name, "table")
    std = None
    if isinstance(df.columns, pd.MultiIndex) and "mean" in df.columns.get_level_values(-1):
        values = df.xs("mean", axis=1, level=-1)
        if "std" in df.columns.get_level_values(-1):
            std = df.xs("std", axis=1, level=-1).reindex(columns=values.columns)
    else:
        values = df
    bold = _best_mask(values, bold_best, best_axis, digits)
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tex_cells = _render_cells(values, std, bold, digits, latex=True)
    styler = (tex_cells.style.format_index(escape="latex", axis=0)
              .format_index(escape="latex", axis=1))
    tex = styler.to_latex(hrules=True, caption=caption, label=label or f"tab:{name}",
                          position_float="centering", multirow_align="naive",
                          multicol_align="c",
                          column_format="l" * tex_cells.index.nlevels + "r" * tex_cells.shape[1])
    tex_path, md_path = out / f"{name}.tex", out / f"{name}.md"
    tex_path.write_text(tex, encoding="utf-8")
    md = _markdown(_render_cells(values, std, bold, digits, latex=False))
    md_path.write_text((f"{caption}\n\n" if caption else "") + md, encoding="utf-8")
    return tex_path, md_path


def save_markdown(text: str, name: str, out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write ``text`` to ``<out_dir>/<name>.md`` (``out_dir`` None: :func:`figures_dir`).

    >>> import tempfile
    >>> save_markdown("# Case", "case", tempfile.mkdtemp()).name
    'case.md'
    """
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{_check_name(name, 'markdown')}.md"
    path.write_text(text, encoding="utf-8")
    return path


def write_numbers(numbers: Mapping[str, float | int | str],
                  out_dir: str | os.PathLike[str] | None = None, name: str = "numbers",
                  digits: int | None = None) -> Path:
    """Write ``<out_dir>/<name>.tex`` (``out_dir`` None: :func:`figures_dir`): one
    ``\\newcommand{\\Name}{value}`` per entry.  Each notebook that quotes numbers writes its
    own file (``numbers``, ``numbers_cost`` ...), so every file has one producer.

    Names must be letters only (LaTeX macro names); floats print with ``digits`` decimals
    (or ``:g`` when None); a NaN is an error naming its key.

    >>> import tempfile
    >>> p = write_numbers({"PearMeanGain": 4.2}, tempfile.mkdtemp())
    >>> p.read_text().splitlines()[-1]
    '\\\\newcommand{\\\\PearMeanGain}{4.2}'
    """
    lines = ["% generated by pear.report.write_numbers; do not edit"]
    for key, value in numbers.items():
        if not re.fullmatch(r"[A-Za-z]+", key):
            raise ValueError(f"invalid macro name {key!r}: LaTeX macro names are letters only")
        if isinstance(value, (float, np.floating)):
            if not math.isfinite(value):
                raise ValueError(f"number {key!r} is {value}: nothing to quote")
            text = f"{value:.{digits}f}" if digits is not None else f"{value:g}"
        else:
            text = str(value)
        lines.append(rf"\newcommand{{\{key}}}{{{text}}}")
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{_check_name(name, 'numbers file')}.tex"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _label_columns(df: pd.DataFrame) -> pd.DataFrame:
    present = [m for m in METHODS if m in df.columns]
    return df[present].rename(columns=METHOD_LABELS)


def _settings_mean(df: pd.DataFrame) -> pd.DataFrame:
    return macro_average(df, ("method",)) if {"model", "dataset"} & set(df.columns) else df


def table_main(acc: pd.DataFrame, average: bool = True) -> pd.DataFrame:
    """Main results: rows (Dataset, Model) with datasets in the study's order and models in
    their input order, columns (method label, mean/std) from
    :func:`pear.metrics.accuracy`; ``average`` adds an "Average" row (mean over settings,
    no std).  Render with ``save_table(..., bold_best="max")``."""
    ds_order = {d: i for i, d in enumerate(DATASETS)}
    parts = {}
    acc = acc if "std" in acc else acc.assign(std=np.nan)
    for stat, col in (("mean", "accuracy"), ("std", "std")):
        t = acc.pivot_table(index=["dataset", "model"], columns="method", values=col,
                            dropna=False)
        parts[stat] = _label_columns(t)
    mean, std = parts["mean"], parts["std"]
    if average:
        mean.loc[("Average", ""), :] = mean.mean()
        std.loc[("Average", ""), :] = np.nan
    models = {m: i for i, m in enumerate(dict.fromkeys(acc["model"]))}   # input order
    order = sorted(mean.index, key=lambda k: (k[0] == "Average", ds_order.get(k[0], 99),
                                              str(k[0]), models.get(k[1], -1)))
    out = pd.concat({"mean": mean.loc[order], "std": std.loc[order]}, axis=1)
    out = out.swaplevel(0, 1, axis=1)[[(m, s) for m in mean.columns for s in ("mean", "std")]]
    out.index = pd.MultiIndex.from_tuples([(DATASET_LABELS.get(d, d), m) for d, m in order],
                                          names=["Dataset", "Model"])
    out.columns.names = [None, None]
    return out


def table_diagnostics(diag: pd.DataFrame) -> pd.DataFrame:
    """Trajectory diagnostics: rows the metrics (W2R ... Influence entropy), methods as
    columns; a frame with several settings is averaged over them first
    (:func:`pear.metrics.macro_average`)."""
    per_method = _settings_mean(diag).set_index("method")
    rows = [c for c in _DIAG_LABELS if c in per_method]
    return _label_columns(per_method[rows].T).rename(index=_DIAG_LABELS)


def table_tokens(cost: pd.DataFrame) -> pd.DataFrame:
    """Cost per example from :func:`pear.metrics.costs`: rows tokens, cached tokens,
    calls, parse-failure rate; methods as columns (averaged over settings)."""
    per_method = _settings_mean(cost).set_index("method")
    rows = [c for c in _COST_LABELS if c in per_method]
    t = _label_columns(per_method[rows].T).rename(index=_COST_LABELS).astype(object)
    for row in ("Tokens / example", "Cached / example"):
        if row in t.index:
            t.loc[row] = [v if pd.isna(v) else int(round(v)) for v in t.loc[row]]
    return t


def table_significance(sig: pd.DataFrame) -> pd.DataFrame:
    """PEAR against its strongest fixed topology per (dataset, model): accuracies, the
    discordant pairs b/c, exact McNemar p with stars, the discordant win rate with its
    Wilson interval, and power, from :func:`pear.stats.significance` (or the printed table
    mapped by :func:`pear.metrics.to_internal`; its ``best_baseline`` column is optional).
    Without discordant pairs (b = c = 0) the win rate and its interval are undefined and
    print as an en dash "–", as does a missing p-value."""
    def known(*values: object) -> bool:
        return all(_fmt(v, 3) is not None for v in values)
    rows = {}
    for r in sig.to_dict("records"):
        key = (DATASET_LABELS.get(r["dataset"], r["dataset"]), r["model"])
        base = r.get("best_baseline")
        p, win = r["p_exact"], (r["win_rate"], r["wilson_low"], r["wilson_high"])
        rows[key] = {**({} if base is None else {"Best fixed": METHOD_LABELS.get(base, base)}),
                     "Acc. best": r["best_baseline_acc"], "Acc. PEAR": r["pear_acc"],
                     "b": int(r["b"]), "c": int(r["c"]),
                     "p (exact)": f"{p:.4f}{stars(p)}" if known(p) else "–",
                     "Win rate [95% CI]": "{:.3f} [{:.3f}, {:.3f}]".format(*win)
                                          if known(*win) else "–",
                     "Power": r["power"]}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index = pd.MultiIndex.from_tuples(out.index, names=["Dataset", "Model"])
    return out


# ---------------------------------------------------------------- plots

def _require(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what} needs columns {missing}; got {list(df.columns)}")


def _panels(n: int, ax: Axes | None, size: tuple[float, float] = (3.0, 2.4)
            ) -> tuple[Figure, list[Axes]]:
    if ax is not None:
        if n != 1:
            raise ValueError(f"the data span {n} panels (datasets); pass ax=None or one dataset")
        return ax.figure, [ax]
    fig = Figure(figsize=(size[0] * n, size[1]), layout="constrained")
    return fig, list(fig.subplots(1, n, squeeze=False)[0])


def _annotate(fig: Figure, axes: list[Axes], title: str | None, source: str | None,
              simulated: bool) -> Figure:
    """Title, provenance footer (backend, model) and, for simulated agents, a watermark on
    every panel plus the footer prefix "simulated agents"."""
    if title:
        (fig.suptitle(title) if len(axes) > 1 else axes[0].set_title(title))
    footer = " | ".join(x for x in ("simulated agents" if simulated else "", source or "") if x)
    if footer:
        fig.text(0.99, -0.02, footer, ha="right", va="top", fontsize=6,
                 color="#b2182b" if simulated else "0.3")
    if simulated:
        for ax in axes:
            ax.text(0.5, 0.5, "simulated agents", transform=ax.transAxes, ha="center",
                    va="center", rotation=20, fontsize=13, fontweight="bold",
                    color="#b2182b", alpha=0.22, zorder=5)
    return fig


def _legend_right(ax: Axes) -> None:
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)


def _datasets(df: pd.DataFrame) -> list[str]:
    pos = {d: i for i, d in enumerate(DATASETS)}
    return sorted(df["dataset"].unique(), key=lambda d: (pos.get(d, len(pos)), str(d)))


def plot_round_curves(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                      source: str | None = None, simulated: bool = False,
                      methods: Sequence[str] | None = None) -> Figure:
    """Vote accuracy after each round per method (:func:`pear.metrics.round_accuracy`), one
    panel per dataset, averaged over models; a band of +- std across seeds when the panel
    holds one model.  Methods without rounds (CoT, CoT-SC) draw dashed and flat."""
    _require(df, ["dataset", "method", "round", "accuracy"], "plot_round_curves")
    datasets = _datasets(df)
    fig, axes = _panels(len(datasets), ax)
    keep = [m for m in METHODS if m in set(df["method"]) and (methods is None or m in methods)]
    cols = ["accuracy", "std"] if "std" in df else ["accuracy"]
    for a, ds in zip(axes, datasets):
        part = df[df["dataset"] == ds]
        one_model = part.get("model", pd.Series([0])).nunique() == 1
        for m in keep:
            cur = part[part["method"] == m].groupby("round")[cols].mean()
            if cur.empty:
                continue
            style = "--" if m in ("cot", "cot_sc") else "-"
            a.plot(cur.index, cur["accuracy"], style, color=METHOD_COLORS.get(m),
                   label=METHOD_LABELS.get(m, m), marker="o" if style == "-" else None, ms=3)
            if one_model and "std" in cur:
                a.fill_between(cur.index, cur["accuracy"] - cur["std"],
                               cur["accuracy"] + cur["std"], color=METHOD_COLORS.get(m), alpha=0.15)
        a.set(title=DATASET_LABELS.get(ds, ds), xlabel="Round", ylabel="Accuracy")
    _legend_right(axes[-1])
    return _annotate(fig, axes, title, source, simulated)


def plot_ablation(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                  source: str | None = None, simulated: bool = False) -> Figure:
    """Grouped bars of the routing variants (:data:`ROUTING_VARIANTS`: random, the six
    ablations, PEAR) per dataset, from :func:`pear.metrics.accuracy`, averaged over models;
    error bars (std across seeds) only when a bar comes from one model."""
    _require(df, ["dataset", "method", "accuracy"], "plot_ablation")
    variants = [m for m in ROUTING_VARIANTS if m in set(df["method"])]
    if not variants:
        raise ValueError(f"no routing variant ({', '.join(ROUTING_VARIANTS)}) in the data")
    datasets = _datasets(df)
    fig, axes = _panels(1, ax, size=(2.4 + 1.4 * len(datasets), 2.6))
    width = 0.8 / len(variants)
    for k, m in enumerate(variants):
        part = df[df["method"] == m].groupby("dataset")
        mean, count = part["accuracy"].mean(), part.size()
        err = part["std"].mean().where(count == 1) if "std" in df else None
        x = np.arange(len(datasets)) + (k - (len(variants) - 1) / 2) * width
        axes[0].bar(x, mean.reindex(datasets), width, color=METHOD_COLORS.get(m),
                    label=METHOD_LABELS.get(m, m),
                    yerr=None if err is None else err.reindex(datasets), capsize=1.5)
    axes[0].set_xticks(np.arange(len(datasets)), [DATASET_LABELS.get(d, d) for d in datasets])
    axes[0].set_ylabel("Accuracy")
    _legend_right(axes[0])
    return _annotate(fig, axes, title, source, simulated)


def plot_pareto(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                source: str | None = None, simulated: bool = False,
                x: str = "tokens_per_example", y: str = "accuracy") -> Figure:
    """Accuracy against tokens per example (log x), one panel per dataset, one point per
    method (averaged over models); Pareto-optimal methods are ringed in black and joined by
    a dashed frontier (:func:`pear.metrics.pareto_front`)."""
    _require(df, ["dataset", "method", x, y], "plot_pareto")
    datasets = _datasets(df)
    fig, axes = _panels(len(datasets), ax)
    for a, ds in zip(axes, datasets):
        pts = df[df["dataset"] == ds].groupby("method")[[x, y]].mean()
        pts = pts.loc[[m for m in METHODS if m in pts.index] +
                      [m for m in pts.index if m not in METHODS]]
        front = pareto_front(pts[x], pts[y])
        for (m, row), opt in zip(pts.iterrows(), front):
            a.scatter(row[x], row[y], s=28, color=METHOD_COLORS.get(m, "0.5"), zorder=3,
                      edgecolors="black" if opt else "none", linewidths=1.0,
                      label=METHOD_LABELS.get(m, m))
            a.annotate(METHOD_LABELS.get(m, m), (row[x], row[y]), fontsize=5,
                       xytext=(3, 3), textcoords="offset points")
        fr = pts[front].sort_values(x)
        a.plot(fr[x], fr[y], "--", color="black", lw=0.8, zorder=2, drawstyle="steps-post")
        a.set_xscale("log")
        a.set(title=DATASET_LABELS.get(ds, ds), xlabel="Tokens per example", ylabel="Accuracy")
    return _annotate(fig, axes, title, source, simulated)


def plot_accuracy_bars(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                       source: str | None = None, simulated: bool = False) -> Figure:
    """Mean accuracy per method over every setting in ``df`` (from
    :func:`pear.metrics.accuracy`), error bars = std across settings."""
    _require(df, ["method", "accuracy"], "plot_accuracy_bars")
    g = df.groupby("method")["accuracy"]
    order = [m for m in METHODS if m in g.groups]
    mean, std = g.mean().reindex(order), g.std(ddof=1).reindex(order).fillna(0.0)
    fig, axes = _panels(1, ax, size=(0.45 * len(order) + 1.2, 2.4))
    axes[0].bar(range(len(order)), mean, yerr=std, capsize=2,
                color=[METHOD_COLORS.get(m, "0.5") for m in order])
    axes[0].set_xticks(range(len(order)), [METHOD_LABELS.get(m, m) for m in order],
                       rotation=45, ha="right")
    axes[0].set_ylabel("Accuracy")
    return _annotate(fig, axes, title, source, simulated)
