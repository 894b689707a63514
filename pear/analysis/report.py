"""Tables and quoted numbers: the study's tables shaped from metrics (``table_*``: methods
as columns in the order of :data:`pear.core.methods.METHODS`, display names from
:mod:`pear.catalog.labels`), written as LaTeX (booktabs) and Markdown (:func:`save_table`), plus
Markdown text (:func:`save_markdown`) and LaTeX number macros (:func:`write_numbers`).
Every ``save_*`` writes into :func:`figures_dir` unless given ``out_dir``.  Plots live in
:mod:`pear.analysis.figures`.

>>> table_diagnostics(pd.DataFrame({"method": ["pear", "cot"], "w2r": [0.3, 0.0]})).index.tolist()
['W2R (per query)']
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.catalog import labels
from pear.core.methods import METHODS
from pear.methods import plugin_names
from pear.analysis.metrics import DIAGNOSTICS, macro_average

__all__ = [
    "FIGURES_ENV", "figures_dir", "save_table", "save_markdown", "write_numbers",
    "output_name", "display_table", "table_main", "table_diagnostics", "table_significance", "table_tokens",
    "STUDY_DIAGNOSTICS", "stars",
]

FIGURES_ENV = "PEAR_FIGURES_DIR"
"""The environment variable naming the output folder (``pear paper`` sets it for the
notebooks it runs)."""
from pear.paths import FIGURES_DIR, ShownPath  # noqa: E402
STUDY_DIAGNOSTICS = DIAGNOSTICS
"""The rows of the study's diagnostics table (W2R/R2W/Net per query, its definition)."""
_COSTS = ("tokens_per_example", "cached_tokens", "calls_per_example", "parse_failure_rate",
          "truncation_rate")


def figures_dir(out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where outputs go: ``out_dir`` if given, else ``$PEAR_FIGURES_DIR`` if set, else
    ``<repository>/figures`` (found from the package's location, never from the cwd).  A
    :class:`pear.paths.ShownPath`, as are the paths the writers below return: a notebook
    shows what it wrote without the builder's absolute path.

    >>> figures_dir("/tmp/out").as_posix()
    '/tmp/out'
    """
    if out_dir is not None:
        return ShownPath(out_dir)
    env = os.environ.get(FIGURES_ENV)
    return ShownPath(Path(env).expanduser().resolve() if env else FIGURES_DIR)


def output_name(name: str, what: str) -> str:
    """``name`` if it is a bare file name (no folder), else an error naming it."""
    if not name or name in (".", "..") or re.search(r"[/\\]", name):
        raise ValueError(f"invalid {what} name {name!r}: give a bare file name without a "
                         "path separator (use out_dir for the folder)")
    return name


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
    output_name(name, "table")
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
    path = out / f"{output_name(name, 'markdown')}.md"
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
    lines = ["% generated by pear.analysis.report.write_numbers; do not edit"]
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
    path = out / f"{output_name(name, 'numbers file')}.tex"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def display_table(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``df`` indexed by ``keys`` with display names (datasets, methods, models, index
    names, quantity columns such as ``p_value`` -> "p").

    >>> display_table(pd.DataFrame({"dataset": ["gsm8k"], "p_value": [0.5]}), ["dataset"])
               p
    Dataset     
    GSM8K    0.5
    """
    out = labels.display(df).set_index(list(keys)).rename(columns=labels.QUANTITY_LABELS)
    out.index = out.index.set_names([labels.INDEX_LABELS.get(k, k) for k in keys])
    return out


def _label_columns(df: pd.DataFrame) -> pd.DataFrame:
    present = [m for m in labels.method_order(df.columns)
               if m in METHODS or labels.method_label(m) != m or m in _registered()]
    return df[present].rename(columns={m: labels.method_label(m) for m in present})


def _registered() -> set[str]:
    return set(plugin_names())


def _settings_mean(df: pd.DataFrame) -> pd.DataFrame:
    return macro_average(df, ("method",)) if {"model", "dataset"} & set(df.columns) else df


def table_main(acc: pd.DataFrame, average: bool = True) -> pd.DataFrame:
    """Main results: rows (Dataset, Model) with datasets in the study's order and models in
    their input order, columns (method label, mean/std) from
    :func:`pear.analysis.metrics.accuracy`; ``average`` adds an "Average" row (mean over settings,
    no std).  Render with ``save_table(..., bold_best="max")``."""
    ds_order = {d: i for i, d in enumerate(labels.DATASETS)}
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
    names = labels.model_labels(models)
    out.index = pd.MultiIndex.from_tuples([(labels.dataset_label(d), names.get(m, m))
                                           for d, m in order], names=["Dataset", "Model"])
    out.columns.names = [None, None]
    return out


def table_diagnostics(diag: pd.DataFrame, quantities: Sequence[str] = STUDY_DIAGNOSTICS
                      ) -> pd.DataFrame:
    """Trajectory diagnostics: rows the ``quantities`` present (default the study's table:
    W2R, R2W, Net per query, acceptance, cross-answer, source confidence, influence
    entropy; each W2R/R2W/Net row names its definition), methods as columns; a frame with
    several settings is averaged over them first (:func:`pear.analysis.metrics.macro_average`)."""
    per_method = _settings_mean(diag).set_index("method")
    rows = [c for c in quantities if c in per_method]
    return _label_columns(per_method[rows].T).rename(index=labels.QUANTITY_LABELS)


def table_tokens(cost: pd.DataFrame) -> pd.DataFrame:
    """Cost per example from :func:`pear.analysis.metrics.costs`: rows tokens, cached tokens,
    calls, parse-failure rate and, where the records say, the truncation rate (calls
    stopped at the token budget / calls); methods as columns (averaged over settings)."""
    per_method = _settings_mean(cost).set_index("method")
    rows = [c for c in _COSTS if c in per_method and per_method[c].notna().any()]
    t = _label_columns(per_method[rows].T).rename(index=labels.QUANTITY_LABELS).astype(object)
    for row in ("tokens_per_example", "cached_tokens"):
        label = labels.QUANTITY_LABELS[row]
        if label in t.index:
            t.loc[label] = [v if pd.isna(v) else int(round(v)) for v in t.loc[label]]
    return t


def stars(p: float) -> str:
    """Significance marker: ``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05, else ``""``.

    >>> [stars(p) for p in (0.0004, 0.0079, 0.0444, 0.2)]
    ['***', '**', '*', '']
    """
    if p is None or not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def table_significance(sig: pd.DataFrame) -> pd.DataFrame:
    """PEAR against its strongest fixed topology per (dataset, model): accuracies, the
    discordant pairs b/c, exact McNemar p with stars, and where ``sig`` has them (from
    :func:`pear.paper.study.significance_sets`) the Holm-adjusted p across the table's settings
    (``p_holm``, starred by itself) and the paired bootstrap 95% CI of PEAR minus the best
    fixed topology (``diff``, ``diff_low``, ``diff_high``, accuracy points); the discordant
    win rate with its Wilson interval, and power, from :func:`pear.analysis.stats.significance` (or
    the printed table mapped by :func:`pear.analysis.compare.to_internal`; its ``best_baseline``
    column is optional).  Without discordant pairs (b = c = 0) the win rate and its interval
    are undefined and print as an en dash "–", as does a missing p-value."""
    def known(*values: object) -> bool:
        return all(_fmt(v, 3) is not None for v in values)
    names = labels.model_labels(sig["model"].unique()) if len(sig) else {}
    rows = {}
    for r in sig.to_dict("records"):
        key = (labels.dataset_label(r["dataset"]), names.get(r["model"], r["model"]))
        base = r.get("best_baseline")
        p, win = r["p_exact"], (r["win_rate"], r["wilson_low"], r["wilson_high"])
        row = {**({} if base is None else {"Best fixed": labels.method_label(base)}),
               "Acc. best": r["best_baseline_acc"], "Acc. PEAR": r["pear_acc"],
               "b": int(r["b"]), "c": int(r["c"]),
               "p (exact)": f"{p:.4f}{stars(p)}" if known(p) else "–"}
        if "p_holm" in r:
            ph = r["p_holm"]
            row["p (Holm-adjusted)"] = f"{ph:.4f}{stars(ph)}" if known(ph) else "–"
        if "diff" in r:
            ci = (r["diff"], r["diff_low"], r["diff_high"])
            row["PEAR - best fixed [95% bootstrap CI]"] = (
                "{:+.3f} [{:+.3f}, {:+.3f}]".format(*ci) if known(*ci) else "–")
        row["Win rate [95% CI]"] = "{:.3f} [{:.3f}, {:.3f}]".format(*win) \
            if known(*win) else "–"
        row["Power"] = r["power"]
        rows[key] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index = pd.MultiIndex.from_tuples(out.index, names=["Dataset", "Model"])
    return out
