"""Figures: one style (:func:`set_style`), one colour and legend position per method
(:data:`METHOD_COLORS`), the study's plots (``plot_*(df, *, ax=None, ...) -> Figure``, rliable's
shape, on :class:`matplotlib.figure.Figure` without pyplot state), panel grids (:func:`facet`,
single or double column width, with the "Average" panel of :func:`with_average`), byte-stable
PDF and PNG (:func:`save_figure`) and inline display (:func:`display_figure`).  Every plot
states its provenance (``source``) and, with ``mark`` (:attr:`pear.paper.study.Results.mark`)
or ``simulated=True``, says so on every panel and in the footer.  Accuracy axes stay inside
[0, 1]; log axes label a few round values ("2k", "5k"); adjustText places point labels
(:func:`place_labels`).

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
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from pear.core.methods import METHODS, is_self_consistency
from pear.catalog.labels import (ROUTING_VARIANTS, SIMULATED_MARK, dataset_label, method_label,
                         method_order, model_labels, order_key)
from pear.analysis.metrics import pareto_front
from pear.analysis.report import figures_dir, output_name

__all__ = [
    "METHOD_COLORS", "COLUMN_WIDTHS", "set_style", "save_figure", "plot_round_curves",
    "plot_ablation", "plot_pareto", "plot_accuracy_bars", "with_average", "facet",
    "place_labels", "log_ticks", "display_figure", "annotate",
]

METHOD_COLORS = {  # colour-blind safe (seaborn "colorblind" + Paul Tol muted); fixed per method
    "cot": "#949494", "cot_sc": "#5f5f5f", "clique": "#0173b2", "star": "#56b4e9",
    "chain": "#029e73", "ring": "#ece133", "random": "#ca9161", "pear": "#d55e00",
    "pear_T": "#de8f05", "pear_I": "#cc78bc", "pear_L": "#fbafe4", "pear_TI": "#882255",
    "pear_TL": "#44aa99", "pear_IL": "#332288",
}
"""One colour per method name, the same in every figure."""
COLUMN_WIDTHS = {"single": 3.5, "double": 7.16}  # our choice: common two-column templates
"""Figure widths in inches for one and for two text columns."""


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
                metadata={"CreationDate": None, "ModDate": None,
                          "Creator": "pear.analysis.figures"})
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


def _mark_of(mark: str, simulated: bool) -> str:
    if simulated and SIMULATED_MARK not in mark:
        return "; ".join(x for x in (SIMULATED_MARK, mark) if x)
    return mark


def _watermark(mark: str) -> str:
    """The short panel watermark of a mark: "simulated agents" and/or "pipeline check:
    not evidence"."""
    lines = [SIMULATED_MARK] if SIMULATED_MARK in mark else []
    if "pipeline check" in mark:
        lines.append("pipeline check:\nnot evidence")
    return "\n".join(lines) or mark


def _footer(fig: Figure, mark: str, source: str | None, y: float) -> None:
    """The provenance line at the figure's bottom right, ``y`` in figure fraction."""
    footer = " | ".join(x for x in (mark, source or "") if x)
    if footer:
        fig.text(0.99, y, footer, ha="right", va="top", fontsize=6,
                 color="#b2182b" if mark else "0.3")


def _annotate(fig: Figure, axes: list[Axes], title: str | None, source: str | None,
              mark: str, *, footer: bool = True) -> Figure:
    """Title, provenance footer (mark, backend, model) and the mark as a watermark on
    every panel.  ``footer=False`` when the panels were drawn into a caller's figure
    (``ax=``): the figure's owner writes its one footer."""
    if title:
        (fig.suptitle(title) if len(axes) > 1 else axes[0].set_title(title))
    if footer:
        _footer(fig, mark, source, -0.02)
    if mark:
        for ax in axes:
            ax.text(0.5, 0.5, _watermark(mark), transform=ax.transAxes, ha="center",
                    va="center", rotation=20, fontsize=11, fontweight="bold",
                    color="#b2182b", alpha=0.22, zorder=5, gid="pear-mark")
    return fig


def annotate(fig: Figure, axes: Sequence[Axes], *, title: str | None = None,
             source: str | None = None, mark: str = "", simulated: bool = False) -> Figure:
    """The figures' one annotation for plots made elsewhere (:mod:`pear.paper.beyond`): title,
    provenance footer and the build's mark (``simulated`` adds "simulated agents") on every
    panel."""
    return _annotate(fig, list(axes), title, source, _mark_of(mark, simulated))


def _accuracy_axis(ax: Axes, values: Any = None, *, bars: bool = False) -> None:
    """Accuracy inside [0, 1]: bars from 0 up; lines zoom to the data (whole tenths, at
    least 0.3 tall), never below 0 or above 1."""
    v = np.asarray(values if values is not None else [], dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        lo, hi = 0.0, 1.0
    elif bars:
        lo, hi = 0.0, min(1.0, max(0.3, np.ceil((v.max() + 0.05) * 10) / 10))
    else:
        lo = max(0.0, np.floor((v.min() - 0.05) * 10) / 10)
        hi = min(1.0, np.ceil((v.max() + 0.05) * 10) / 10)
        if hi - lo < 0.3:
            lo, hi = (max(0.0, hi - 0.3), hi) if hi - 0.3 >= 0 else (0.0, 0.3)
    ax.set_ylim(lo, hi)
    ax.set_ylabel("Accuracy")


def _short_number(v: float, _pos: Any = None) -> str:
    """``2000 -> "2k"``, ``1500 -> "1.5k"``, ``3e6 -> "3M"``."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def log_ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """At most ``most`` round tick values (1, 2, 5 x 10^k; 1..9 x 10^k for a narrow range)
    for a log axis spanning [lo, hi].

    >>> log_ticks(1500, 4200)
    [2000.0, 3000.0, 4000.0]
    >>> log_ticks(800, 40000)
    [1000.0, 2000.0, 5000.0, 10000.0, 20000.0]
    """
    lo, hi = max(lo, 1e-12), max(hi, lo * 1.0001)
    decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
    for subs in ((1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8)):
        ticks = [float(m * 10 ** k) for k in decades for m in subs if lo <= m * 10 ** k <= hi]
        if len(ticks) >= 2:
            step = int(np.ceil(len(ticks) / most))
            return ticks[::step]
    return [float(lo), float(hi)]


def _log_x(ax: Axes, values: Any) -> None:
    """A log x axis whose only labels are :func:`log_ticks` ("2k", "5k"), no minor labels."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    ax.set_xscale("log")
    if v.size == 0:
        return
    lo, hi = v.min() / 1.35, v.max() * 1.35
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(FixedLocator(log_ticks(lo, hi)))
    ax.xaxis.set_major_formatter(FuncFormatter(_short_number))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _legend_right(ax: Axes) -> None:
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)


def _datasets(df: pd.DataFrame) -> list[str]:
    return sorted(df["dataset"].unique(), key=lambda d: order_key("dataset", d))


def plot_round_curves(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                      source: str | None = None, simulated: bool = False, mark: str = "",
                      methods: Sequence[str] | None = None) -> Figure:
    """Vote accuracy after each round per method (:func:`pear.analysis.metrics.round_accuracy`), one
    panel per dataset, averaged over models; a band of +- std across seeds (clipped to
    [0, 1]) when the panel holds one model.  Methods without rounds (CoT, CoT-SC) draw
    dashed and flat."""
    _require(df, ["dataset", "method", "round", "accuracy"], "plot_round_curves")
    datasets = _datasets(df)
    fig, axes = _panels(len(datasets), ax)
    keep = [m for m in method_order(df["method"].unique())
            if methods is None or m in methods]
    cols = ["accuracy", "std"] if "std" in df else ["accuracy"]
    for a, ds in zip(axes, datasets):
        part = df[df["dataset"] == ds]
        one_model = part.get("model", pd.Series([0])).nunique() == 1
        shown = []
        for m in keep:
            cur = part[part["method"] == m].groupby("round")[cols].mean()
            if cur.empty:
                continue
            style = "--" if m in ("cot", "cot_sc") else "-"
            a.plot(cur.index, cur["accuracy"], style, color=METHOD_COLORS.get(m),
                   label=method_label(m), marker="o" if style == "-" else None, ms=3,
                   clip_on=False)  # whole markers at accuracy 0 and 1
            shown.append(cur["accuracy"].to_numpy())
            if one_model and "std" in cur and cur["std"].notna().any():
                low = np.clip(cur["accuracy"] - cur["std"], 0, 1)
                high = np.clip(cur["accuracy"] + cur["std"], 0, 1)
                a.fill_between(cur.index, low, high, color=METHOD_COLORS.get(m), alpha=0.08,
                               lw=0)
                shown += [low.to_numpy(), high.to_numpy()]
        a.set(title=dataset_label(ds), xlabel="Round")
        rounds = sorted(part["round"].unique())
        a.set_xticks(rounds if len(rounds) <= 8 else rounds[::2])
        _accuracy_axis(a, np.concatenate(shown) if shown else None)
    _legend_right(axes[-1])
    return _annotate(fig, axes, title, source, _mark_of(mark, simulated),
                     footer=ax is None)


def plot_ablation(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                  source: str | None = None, simulated: bool = False,
                  mark: str = "") -> Figure:
    """Grouped bars of the routing variants (:data:`ROUTING_VARIANTS`: random, the six
    ablations, PEAR) per dataset, from :func:`pear.analysis.metrics.accuracy`, averaged over models;
    error bars (std across seeds, clipped to [0, 1]) only when a bar comes from one
    model."""
    _require(df, ["dataset", "method", "accuracy"], "plot_ablation")
    variants = [m for m in ROUTING_VARIANTS if m in set(df["method"])]
    if not variants:
        raise ValueError(f"no routing variant ({', '.join(ROUTING_VARIANTS)}) in the data")
    datasets = _datasets(df)
    fig, axes = _panels(1, ax, size=(2.4 + 1.4 * len(datasets), 2.6))
    width = 0.8 / len(variants)
    tops = []
    for k, m in enumerate(variants):
        part = df[df["method"] == m].groupby("dataset")
        mean, count = part["accuracy"].mean().reindex(datasets), part.size().reindex(datasets)
        err = None
        if "std" in df:
            e = part["std"].mean().where(count == 1).reindex(datasets)  # NaN: no bar
            err = np.vstack([np.minimum(e, mean), np.minimum(e, 1 - mean)])
            tops.append((mean + np.nan_to_num(err[1])).to_numpy())
        tops.append(mean.to_numpy())
        x = np.arange(len(datasets)) + (k - (len(variants) - 1) / 2) * width
        axes[0].bar(x, mean, width, color=METHOD_COLORS.get(m), label=method_label(m),
                    yerr=err, capsize=1.5, error_kw={"lw": 0.6})
    axes[0].set_xticks(np.arange(len(datasets)), [dataset_label(d) for d in datasets])
    _accuracy_axis(axes[0], np.concatenate(tops), bars=True)
    _legend_right(axes[0])
    return _annotate(fig, axes, title, source, _mark_of(mark, simulated),
                     footer=ax is None)


def plot_pareto(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                source: str | None = None, simulated: bool = False, mark: str = "",
                x: str = "tokens_per_example", y: str = "accuracy") -> Figure:
    """Accuracy against tokens per example (log x with a few round labels), one panel per
    dataset, one point per method (averaged over models); Pareto-optimal methods are
    ringed in black and joined by a dashed frontier (:func:`pear.analysis.metrics.pareto_front`).
    Self-consistency at several K (CoT-SC and ``sc@K``) is drawn as one dotted curve with
    its K beside each point (the frontier is that of the other methods and CoT-SC).
    Method names label the points, placed by :func:`place_labels` when the figure is
    laid out (here for a figure of its own, in :func:`facet` for a grid)."""
    _require(df, ["dataset", "method", x, y], "plot_pareto")
    datasets = _datasets(df)
    fig, axes = _panels(len(datasets), ax)
    for a, ds in zip(axes, datasets):
        pts = df[df["dataset"] == ds].groupby("method")[[x, y]].mean()
        pts = pts.loc[method_order(pts.index)]
        sc = pts.loc[[m for m in pts.index if m == "cot_sc" or is_self_consistency(m)]]
        if len(sc) > 1:  # self-consistency at growing K: one dotted curve, its points small
            sc = sc.sort_values(x)
            a.plot(sc[x], sc[y], ":", color=METHOD_COLORS["cot_sc"], lw=1.0, zorder=2,
                   label="SC@K")
            a.scatter(sc[x], sc[y], s=10, color=METHOD_COLORS["cot_sc"], zorder=3)
            pts = pts.drop(index=[m for m in sc.index if m != "cot_sc"])
            for m, row in sc.drop(index=[m for m in sc.index if m == "cot_sc"]).iterrows():
                a.annotate(m.split("@")[1], (row[x], row[y]), fontsize=5, color="0.3",
                           xytext=(0, -6), textcoords="offset points", ha="center")
        front = pareto_front(pts[x], pts[y])
        for (m, row), opt in zip(pts.iterrows(), front):
            a.scatter(row[x], row[y], s=28, color=METHOD_COLORS.get(m, "0.5"), zorder=3,
                      edgecolors="black" if opt else "none", linewidths=1.0,
                      label=method_label(m), clip_on=False)  # whole markers at 0 and 1
        # methods on the same point share one label ("Clique, Star")
        same = pts.assign(label=[method_label(m) for m in pts.index]).groupby(
            [pts[x].round(6), pts[y].round(6)], sort=False)["label"].agg(", ".join)
        texts = [a.text(px, py, text, fontsize=5.5, zorder=4, ha="left", va="bottom")
                 for (px, py), text in same.items()]
        a._pear_labels = (texts, pts[x].to_numpy(float), pts[y].to_numpy(float))
        fr = pts[front].sort_values(x)
        a.plot(fr[x], fr[y], "--", color="black", lw=0.8, zorder=2, drawstyle="steps-post")
        _log_x(a, pts[x])
        a.set(title=dataset_label(ds), xlabel="Tokens per example")
        _accuracy_axis(a, pts[y])
    out = _annotate(fig, axes, title, source, _mark_of(mark, simulated),
                     footer=ax is None)
    if ax is None:
        place_labels(out)
    return out


def plot_accuracy_bars(df: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
                       source: str | None = None, simulated: bool = False,
                       mark: str = "") -> Figure:
    """Mean accuracy per method over every setting in ``df`` (from
    :func:`pear.analysis.metrics.accuracy`), error bars = std across settings (clipped to [0, 1])."""
    _require(df, ["method", "accuracy"], "plot_accuracy_bars")
    g = df.groupby("method")["accuracy"]
    order = method_order(g.groups)
    mean, std = g.mean().reindex(order), g.std(ddof=1).reindex(order).fillna(0.0)
    err = np.vstack([np.minimum(std, mean), np.minimum(std, 1 - mean)])
    fig, axes = _panels(1, ax, size=(0.45 * len(order) + 1.2, 2.4))
    axes[0].bar(range(len(order)), mean, yerr=err, capsize=2,
                color=[METHOD_COLORS.get(m, "0.5") for m in order])
    axes[0].set_xticks(range(len(order)), [method_label(m) for m in order],
                       rotation=45, ha="right")
    _accuracy_axis(axes[0], (mean + err[1]).to_numpy(), bars=True)
    return _annotate(fig, axes, title, source, _mark_of(mark, simulated),
                     footer=ax is None)


def place_labels(fig: Figure, iterations: int = 300) -> Figure:
    """Lay the figure out, then move the point labels of every panel that has them (set by
    :func:`plot_pareto`) with adjustText so that they overlap neither each other nor the
    points, joined to their point by a thin line; the layout is then frozen so the labels
    stay where they were placed.  Deterministic (adjustText's fixed seed, an iteration
    limit, no time limit)."""
    from adjustText import adjust_text
    panels = [a for a in fig.axes if getattr(a, "_pear_labels", None)]
    if not panels:
        return fig
    fig.draw_without_rendering()
    for a in panels:
        texts, xs, ys = a._pear_labels
        adjust_text(texts, x=xs, y=ys, ax=a, iter_lim=iterations, expand=(1.2, 1.5),
                    ensure_inside_axes=True, force_text=(0.3, 0.5),
                    arrowprops={"arrowstyle": "-", "color": "0.45", "lw": 0.4})
    fig.set_layout_engine("none")
    return fig


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


def _grid(n: int, width: float) -> int:
    """Panels per row: as many of at least 1.7 in as ``width`` holds, balanced over rows
    (5 panels at 7.16 in: 3 + 2)."""
    most = max(1, int(width // 1.7))
    lines = -(-n // most)
    return -(-n // lines)


def empty_figure(title: str | None, why: str, *, source: str | None = None,
                 mark: str = "") -> Figure:
    """A figure that says why it has nothing to draw (instead of failing), e.g. a run of
    imported debates without the methods a figure compares."""
    fig = Figure(figsize=(COLUMN_WIDTHS["single"], 1.6), layout="constrained")
    ax = fig.subplots()
    ax.axis("off")
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True, fontsize=8)
    _annotate(fig, [ax], title, source, mark)
    return fig


def facet(plot: Callable[..., Any], df: pd.DataFrame, *, rows: str | None = "model",
          cols: str | None = "dataset", title: str | None = None, source: str | None = None,
          simulated: bool = False, mark: str = "", width: str | float = "double",
          size: tuple[float, float] | None = None, **kwargs: Any) -> Figure:
    """One figure, one panel per (``rows`` value, ``cols`` value), each drawn by a
    ``plot_*`` function with ``ax=``; one legend for the figure (below the panels, methods
    in :data:`pear.core.methods.METHODS` order), the title, the provenance line and the mark
    (``mark`` / ``simulated``) on every panel.  Datasets keep the study's order, other
    values (e.g. "Average") come last; models are titled by display name.

    ``width`` ("single", "double" or inches, :data:`COLUMN_WIDTHS`) is the figure's width:
    each row value's panels wrap onto as many lines as needed for panels of at least
    1.7 in.  ``size`` (one panel's width, height in inches) instead lays all panels of a
    row value on one line.  Point labels are placed last (:func:`place_labels`)."""
    def values(col: str | None) -> list[Any]:
        if col is None:
            return [None]
        vals = list(df[col].unique())
        return sorted(vals, key=lambda v: order_key("dataset", v)) if col == "dataset" \
            else sorted(vals, key=str)

    if df.empty:  # e.g. an imported run has none of the methods this figure compares
        return empty_figure(title, "no records for this figure in this run (its methods or "
                                   "datasets are not there)", source=source, mark=mark)
    rv, cv = values(rows), values(cols)
    if size is not None:
        ncols, panel_w, panel_h = len(cv), size[0], size[1]
    else:
        total = COLUMN_WIDTHS.get(width, width) if isinstance(width, str) else float(width)
        if not isinstance(total, (int, float)) or total <= 0:
            raise ValueError(f"invalid width {width!r}: use 'single', 'double' or inches > 0")
        ncols = _grid(len(cv), total)
        panel_w = total / ncols
        panel_h = min(2.6, max(1.9, panel_w * 0.78))
    lines = -(-len(cv) // ncols)
    fig = Figure(figsize=(panel_w * ncols, panel_h * lines * len(rv) + 0.5),
                 layout="constrained")
    grid = fig.subplots(lines * len(rv), ncols, squeeze=False)
    names = model_labels([r for r in rv if r is not None]) if rows == "model" else {}
    used = set()
    for i, r in enumerate(rv):
        for j, c in enumerate(cv):
            ax = grid[i * lines + j // ncols][j % ncols]
            part = df[((df[rows] == r) if rows else True) & ((df[cols] == c) if cols else True)]
            if part.empty:
                continue
            used.add(id(ax))
            plot(part, ax=ax, mark=_mark_of(mark, simulated), **kwargs)
            if rows and len(rv) > 1:
                ax.set_title(f"{names.get(str(r), r)}\n{ax.get_title()}".strip(), fontsize=8)
    for ax in grid.flat:
        if id(ax) not in used:
            ax.set_visible(False)
    legends = [a for a in grid.flat if a.get_legend() is not None]
    height = fig.get_figheight()
    bottom = 0.2 / height  # the footer's line
    if legends:
        handles, labels = max(legends, key=lambda a: len(a.get_legend_handles_labels()[0])) \
            .get_legend_handles_labels()
        for a in legends:
            a.get_legend().remove()
        per_line = max(1, min(len(labels), int(panel_w * ncols // 0.85)))
        top = bottom + (0.17 * -(-len(labels) // per_line) + 0.08) / height
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, top),
                   bbox_transform=fig.transFigure, fontsize=7, frameon=False,
                   ncols=per_line, handlelength=1.6, columnspacing=1.0, borderaxespad=0)
        bottom = top
    fig.get_layout_engine().set(rect=(0, bottom, 1, 1 - bottom))
    if title:
        fig.suptitle(title)
    _footer(fig, _mark_of(mark, simulated), source, 0.12 / height)
    return place_labels(fig)


def display_figure(fig: Figure) -> None:
    """Show a :class:`matplotlib.figure.Figure` in the notebook (the kernel runs ``agg``,
    so figures are not shown on their own)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    display(Image(data=buf.getvalue()))
