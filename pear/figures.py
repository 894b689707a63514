"""Figure layout for the notebooks: a grid of panels drawn by one ``pear.report.plot_*``
function (:func:`facet`), the "Average" panel it often ends with (:func:`with_average`),
and showing a figure inline under the ``agg`` backend (:func:`display_figure`).

The ``plot_*`` functions themselves, the style and saving live in :mod:`pear.report`.

>>> import pandas as pd
>>> from pear import report
>>> df = pd.DataFrame({"model": "m", "dataset": ["gsm8k", "math500"], "method": "pear",
...                    "accuracy": [0.5, 0.7]})
>>> fig = facet(report.plot_ablation, with_average(df), rows="model", cols="dataset")
>>> [ax.get_xticklabels()[0].get_text() for ax in fig.axes]
['GSM8K', 'MATH-500', 'Average']
"""
from __future__ import annotations

import io
from typing import Any, Callable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pear.metrics import DATASETS

__all__ = ["with_average", "facet", "display_figure"]


def _dataset_pos(d: Any) -> int:
    return DATASETS.index(d) if d in DATASETS else len(DATASETS)


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
    ``pear.report.plot_*`` function with ``ax=``; one legend for the figure, the title,
    the provenance line and (``simulated``) "simulated agents" on every panel.  Datasets
    keep the study's order, other values (e.g. "Average") come last; ``size`` is one
    panel's (width, height) in inches."""
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


def display_figure(fig: Figure) -> None:
    """Show a :class:`matplotlib.figure.Figure` in the notebook (the kernel runs ``agg``,
    so figures are not shown on their own)."""
    from IPython.display import Image, display
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    display(Image(data=buf.getvalue()))
