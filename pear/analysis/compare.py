"""The study's printed numbers beside the reproduced ones: reading ``data/paper/``
(:func:`load_paper`, :func:`to_internal`), side-by-side tables with the difference
(:func:`compare_with_paper`, :func:`beside_paper`), the numbers the study's text quotes
recomputed from records and from its tables (:func:`headline_numbers`), and both as LaTeX
macros (:func:`number_macros`, :func:`quoted_macros`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

import pandas as pd

from pear.catalog import labels
from pear.analysis import metrics
from pear.core.methods import FIXED_TOPOLOGIES

__all__ = ["PAPER_DIR", "load_paper", "to_internal", "compare_with_paper", "paper_model",
           "beside_paper", "headline_numbers", "number_macros", "quoted_macros"]

from pear.paths import PAPER_DIR  # noqa: E402


def load_paper(name: str) -> pd.DataFrame:
    """The study's printed numbers ``data/paper/<name>.csv`` as printed (display names).

    >>> load_paper("cost").set_index("method").loc["PEAR", "tokens_per_example"]
    np.int64(32300)
    """
    path = PAPER_DIR / f"{name}.csv"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PAPER_DIR.glob("*.csv")))
        raise FileNotFoundError(f"no paper table {name!r} ({path}); known: {known}")
    return pd.read_csv(path)


def to_internal(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with the paper's display names mapped to internal ones in the ``dataset``,
    ``method`` and ``model`` columns (names already internal are kept).

    >>> to_internal(pd.DataFrame({"dataset": ["MATH-500"], "method": ["CoT-SC"]})).values.tolist()
    [['math500', 'cot_sc']]
    """
    out = df.copy()
    for col, mapping in (("dataset", labels.DATASET_NAMES), ("method", labels.METHOD_NAMES),
                         ("model", labels.MODEL_SPELLINGS)):
        if col in out:
            out[col] = out[col].map(lambda v, m=mapping: m.get(v, v))
    return out


def compare_with_paper(reproduced: pd.DataFrame, paper: pd.DataFrame,
                       keys: Sequence[str] = metrics.GROUP, value: str = "accuracy",
                       model_map: Mapping[str, str] | None = None,
                       how: Literal["inner", "left", "right", "outer"] = "inner",
                       ) -> pd.DataFrame:
    """Reproduced and printed ``value`` side by side: columns ``*keys, reproduced, paper,
    diff`` (reproduced - paper).  Paper names are mapped with :func:`to_internal`;
    ``model_map`` renames reproduced models (e.g. ``{"Qwen/Qwen2.5-14B-Instruct":
    "Qwen-2.5-14B"}``).  Rows sharing ``keys`` on one side are averaged first, so
    ``keys=("method",)`` compares per-method means over all settings.

    >>> rep = pd.DataFrame({"method": ["pear", "cot"], "tokens_per_example": [30000, 900]})
    >>> compare_with_paper(rep, load_paper("cost"), keys=["method"],
    ...                    value="tokens_per_example").values.tolist()
    [['cot', 900.0, 800.0, 100.0], ['pear', 30000.0, 32300.0, -2300.0]]
    """
    keys = list(keys)
    rep = reproduced.copy()
    if model_map and "model" in rep:
        rep["model"] = rep["model"].map(lambda v: model_map.get(v, v))
    rep_g, pap_g = (side.groupby(keys)[value].mean().rename(name).reset_index()
                    for side, name in ((rep, "reproduced"), (to_internal(paper), "paper")))
    out = rep_g.merge(pap_g, on=keys, how=how)
    out["diff"] = out["reproduced"] - out["paper"]
    return labels.sort_rows(out, keys)


_PAPER_SCALE = {"significance": {"pear_acc": 100.0, "best_baseline_acc": 100.0}}
"""Columns the study prints on another scale (percent) than the records give."""
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


def beside_paper(reproduced: pd.DataFrame, name: str, values: Sequence[str],
                 keys: Sequence[str] = ("dataset", "model", "method")) -> tuple[pd.DataFrame, str]:
    """The study's printed ``values`` (``data/paper/<name>.csv``) beside the reproduced ones,
    with the difference (reproduced - paper): ``(table, note)``.

    Rows are the reproduced rows' ``keys`` (display names; with several values, one row
    per value under "Quantity"), columns ``reproduced, paper, diff``
    (:func:`compare_with_paper`).  Reproduced models are matched to the study's
    by name (:func:`paper_model`); when none matches, ``model`` is dropped from the keys and
    both sides are averaged over their models, which ``note`` says (it is "" otherwise).
    A key the study's table lacks (e.g. ``set``) splits the reproduced rows, each part
    compared with the whole study's table."""
    if reproduced.empty:  # e.g. imported debates: none of the study's methods or settings
        return (pd.DataFrame({"note": ["nothing in these records to set beside the study's "
                                       "numbers"]}),
                "Nothing in these records can be set beside the study's numbers.")
    pap = to_internal(load_paper(name))
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
            shown = labels.model_labels(names)
            note = (f"No reproduced model ({', '.join(shown.values())}) is one of the "
                    f"study's; its "
                    f"numbers are averaged over its {len(known)} models "
                    f"({', '.join(known)}) and the reproduced ones over theirs.")
    split = [k for k in keys if k not in pap.columns]
    shared = [k for k in keys if k in pap.columns]
    groups = rep.groupby(split, sort=False) if split else [((), rep)]
    parts = []
    for part_key, part in groups:
        extra = dict(zip(split, part_key if isinstance(part_key, tuple) else (part_key,)))
        for v in values:
            cmp = compare_with_paper(part, pap, keys=shared, value=v, how="left")
            parts.append(cmp.assign(quantity=v, **extra))
    out = labels.display(pd.concat(parts, ignore_index=True))
    index = keys + (["quantity"] if len(values) > 1 else [])
    out = out.set_index(index)[["reproduced", "paper", "diff"]]
    out.index = out.index.set_names([labels.INDEX_LABELS.get(k, k) for k in index])
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
    acc = acc[acc["method"].isin(labels.MAIN_METHODS)]
    means = metrics.macro_average(acc, ("method",))
    rows = [("mean_accuracy", labels.method_label(m), v)
            for m, v in zip(means["method"], means["accuracy"])]
    if "pear" in set(acc["method"]) and set(FIXED_TOPOLOGIES) & set(acc["method"]):
        summ = metrics.gain_summary(metrics.gains(acc, "pear", "best_fixed"))
        for level, key, gain in zip(summ["level"], summ["key"], summ["gain"]):
            key = {"dataset": labels.dataset_label(key),
                   "model": f"model {labels.model_label(key)}"}.get(level, _ALL)
            rows.append(("gain_best_fixed", key, gain))
        vs = metrics.gains_versus(acc, "pear")
        rows += [("gain_over", labels.method_label(ref), gain)
                 for ref, gain in zip(vs["reference"], vs["gain"]) if ref != "best_fixed"]
    return pd.DataFrame(rows, columns=["quantity", "key", "value"])


def headline_numbers(acc: pd.DataFrame) -> pd.DataFrame:
    """The numbers the study's text quotes, recomputed from ``acc`` (per-setting accuracy,
    :func:`accuracy`) and from its printed main table: mean accuracy per method, PEAR's gain
    over the best fixed topology per dataset, per model and overall, and its mean gain over
    Random and each fixed topology.  Rows (Quantity, Key), columns ``reproduced, paper,
    diff``; :func:`number_macros` turns them into LaTeX macros."""
    pap_acc = to_internal(load_paper("main_results"))
    names = {m: paper_model(m, pap_acc["model"].unique()) for m in acc["model"].unique()}
    rep = _headline(acc.assign(model=acc["model"].map(lambda m: names[m] or m)))
    pap = _headline(pap_acc).rename(columns={"value": "paper"})
    out = rep.rename(columns={"value": "reproduced"}).merge(pap, on=["quantity", "key"],
                                                            how="left")
    out["diff"] = out["reproduced"] - out["paper"]
    out["quantity"] = out["quantity"].map(lambda q: _QUANTITIES[q][0])
    return out.set_index(["quantity", "key"]).rename_axis(["Quantity", "Key"])


def number_macros(numbers: pd.DataFrame, res: Any = None) -> dict[str, str]:
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
        out["ReproModels"] = tex(", ".join(getattr(res, "model_names", res.models)))
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
