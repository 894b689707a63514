"""Figures: one style (:func:`set_style`), one colour per method, the study's plots
(rliable's shape: ``plot_*(df, *, ax=None, ...) -> Figure``, built on
:class:`matplotlib.figure.Figure` without pyplot state), a grid of panels drawn by one
plot (:func:`facet`) with the "Average" panel it often ends with (:func:`with_average`),
saving (:func:`save_figure`, byte-stable PDF and PNG into
:func:`pear.report.figures_dir`) and showing a figure inline (:func:`display_figure`).
Every plot states its provenance (``source``: backend and model) and, with
``simulated=True``, says "simulated agents" on every panel.

>>> sorted(METHOD_COLORS) == sorted(METHODS)
True
>>> df = pd.DataFrame({"model": "m", "dataset": ["gsm8k", "math500"], "method": "pear",
...                    "accuracy": [0.5, 0.7]})
>>> fig = facet(plot_ablation, with_average(df), rows="model", cols="dataset")
>>> [ax.get_xticklabels()[0].get_text() for ax in fig.axes]
['GSM8K', 'MATH-500', 'Average']
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pear.config import METHODS
from pear.labels import ROUTING_VARIANTS, dataset_label, method_label, order_key
from pear.metrics import pareto_front
from pear.report import figures_dir, output_name

__all__ = [
    "METHOD_COLORS", "set_style", "save_figure", "plot_round_curves", "plot_ablation",
    "plot_pareto", "plot_accuracy_bars", "with_average", "facet", "display_figure",
]

METHOD_COLORS = {  # colour-blind safe (seaborn "colorblind" + Paul Tol muted); fixed per method
    "cot": "#949494", "cot_sc": "#5f5f5f", "clique": "#0173b2", "star": "#56b4e9",
    "chain": "#029e73", "ring": "#ece133", "random": "#ca9161", "pear": "#d55e00",
    "pear_T": "#de8f05", "pear_I": "#cc78bc", "pear_L": "#fbafe4", "pear_TI": "#882255",
    "pear_TL": "#44aa99", "pear_IL": "#332288",
}
"""One colour per method name, the same in every figure."""
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


def save_figure(fig: Figure, name: str, out_dir: str | os.PathLike[str] | None = None
                ) -> tuple[Path, Path]:
    """Write ``<out_dir>/<name>.pdf`` (byte-stable: no creation date) and ``<name>.png``
    (``out_dir`` None: :func:`figures_dir`); returns both paths."""
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pdf, png = out / f"{output_name(name, 'figure')}.pdf", out / f"{name}.png"
    fig.savefig(pdf, bbox_inches="tight",
                metadata={"CreationDate": None, "ModDate": None, "Creator": "pear.figures"})
    fig.savefig(png, bbox_inches="tight", dpi=200, metadata={"Software": None})
    return pdf, png


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
    return sorted(df["dataset"].unique(), key=lambda d: order_key("dataset", d))


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
                   label=method_label(m), marker="o" if style == "-" else None, ms=3)
            if one_model and "std" in cur:
                a.fill_between(cur.index, cur["accuracy"] - cur["std"],
                               cur["accuracy"] + cur["std"], color=METHOD_COLORS.get(m), alpha=0.15)
        a.set(title=dataset_label(ds), xlabel="Round", ylabel="Accuracy")
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
                    label=method_label(m),
                    yerr=None if err is None else err.reindex(datasets), capsize=1.5)
    axes[0].set_xticks(np.arange(len(datasets)), [dataset_label(d) for d in datasets])
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
                      label=method_label(m))
            a.annotate(method_label(m), (row[x], row[y]), fontsize=5,
                       xytext=(3, 3), textcoords="offset points")
        fr = pts[front].sort_values(x)
        a.plot(fr[x], fr[y], "--", color="black", lw=0.8, zorder=2, drawstyle="steps-post")
        a.set_xscale("log")
        a.set(title=dataset_label(ds), xlabel="Tokens per example", ylabel="Accuracy")
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
    axes[0].set_xticks(range(len(order)), [method_label(m) for m in order],
                       rotation=45, ha="right")
    axes[0].set_ylabel("Accuracy")
    return _annotate(fig, axes, title, source, simulated)


# ---------------------------------------------------------------- layout

def with_average(df: pd.DataFrame, over: str = "dataset", label: str = "Average") -> pd.DataFrame:
    """``df`` plus rows ``over = label`` holding the unweighted mean of every numeric column
    over ``over`` (the other key columns, and ``round`` / ``seed``, kept); ``std`` of those
    rows is NaN.

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


def facet(plot: Callable[..., Any], df: pd.DataFrame, *, rows: str | None = "model",
          cols: str | None = "dataset", title: str | None = None, source: str | None = None,
          simulated: bool = False, size: tuple[float, float] = (3.0, 2.4),
          **kwargs: Any) -> Figure:
    """One figure, one panel per (``rows`` value, ``cols`` value), each drawn by a
    ``plot_*`` function with ``ax=``; one legend for the figure, the title,
    the provenance line and (``simulated``) "simulated agents" on every panel.  Datasets
    keep the study's order, other values (e.g. "Average") come last; ``size`` is one
    panel's (width, height) in inches."""
    def values(col: str | None) -> list[Any]:
        if col is None:
            return [None]
        vals = list(df[col].unique())
        return sorted(vals, key=lambda v: order_key("dataset", v)) if col == "dataset" \
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


def display_figure(fig: Figure) -> None:
    """Show a :class:`matplotlib.figure.Figure` in the notebook (the kernel runs ``agg``,
    so figures are not shown on their own)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    display(Image(data=buf.getvalue()))
