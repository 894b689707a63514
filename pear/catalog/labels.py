"""The names readers see, defined once: the study's dataset order and display names, method
display names (:data:`METHOD_LABELS`) and the one method table order (:func:`method_order`:
the study's, ``sc@K`` beside CoT-SC, plug-ins after them), model display names
(:func:`pear.catalog.models.display_name`: the full identity stays in the manifest and the records),
the labels of every quantity a table prints, the study's row order for sorting, and the
mark a build that is no evidence carries (:func:`evidence_mark`).

>>> DATASETS
('mmlu_pro', 'truthfulqa', 'gsm8k', 'math500')
>>> dataset_label("math500"), method_label("cot_sc"), dataset_label("other")
('MATH-500', 'CoT-SC', 'other')
>>> model_label("SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "b1" * 32)
'SmolLM2-135M (Q4_1)'
"""
from __future__ import annotations

from typing import Any

import re

import pandas as pd

from pear.tasks.benchmarks import DATASETS
from pear.core.methods import ABLATIONS, FIXED_TOPOLOGIES, METHODS, orbit_base, sc_k
from pear import methods as _registry
from pear.catalog.models import display_name

__all__ = ["MAIN_METHODS", "ROUTING_VARIANTS", "DATASET_LABELS", "DATASETS", "DATASET_NAMES",
           "METHOD_LABELS", "METHOD_NAMES", "MODEL_SPELLINGS", "QUANTITY_LABELS", "INDEX_LABELS",
           "SIMULATED_MARK", "dataset_label", "method_label", "model_label", "model_labels",
           "evidence_mark", "order_key", "sort_rows", "display", "with_plugins",
           "method_order", "method_key"]

METHOD_LABELS = {  # the one table of method labels (a plug-in's is on its registration)
    "cot": "CoT", "cot_sc": "CoT-SC", "clique": "Clique", "star": "Star", "chain": "Chain",
    "ring": "Ring", "random": "Random", "pear": "PEAR", "pear_T": "PEAR-T", "pear_I": "PEAR-I",
    "pear_L": "PEAR-L", "pear_TI": "PEAR-TI", "pear_TL": "PEAR-TL", "pear_IL": "PEAR-IL",
}
"""Display names of the study's methods (the paper's spelling); ``sc@K`` reads ``SC@K``, a
plug-in its registered label."""
MAIN_METHODS = ("cot", "cot_sc", *FIXED_TOPOLOGIES, "random", "pear")
"""The methods of the study's main table, in its column order."""
ROUTING_VARIANTS = ("random", *ABLATIONS, "pear")
"""The routing ablation's variants: Random as reference, the six ablations, PEAR."""
DATASET_LABELS = dict(zip(DATASETS, ("MMLU-Pro", "TruthfulQA", "GSM8K", "MATH-500")))
"""Internal dataset name -> the study's display name, in the order of the study's tables
(:data:`pear.tasks.benchmarks.DATASETS`, the one list)."""
DATASET_NAMES = {v: k for k, v in DATASET_LABELS.items()}
"""The study's display name -> internal dataset name."""
METHOD_NAMES = {v: k for k, v in METHOD_LABELS.items()}
"""The study's display name -> internal method name."""
MODEL_SPELLINGS = {"Qwen2.5-14B": "Qwen-2.5-14B"}
"""The study spells one model two ways; its main table's spelling is kept."""
QUANTITY_LABELS = {
    "accuracy": "Accuracy", "best_baseline_acc": "Acc. best fixed (%)",
    "pear_acc": "Acc. PEAR (%)", "p_exact": "p (exact)", "win_rate": "Win rate",
    "wilson_low": "Wilson low", "wilson_high": "Wilson high", "power": "Power",
    "rho": "rho", "p_value": "p",
    "w2r": "W2R (per query)", "r2w": "R2W (per query)", "net": "Net (per query)",
    "w2r_pooled": "W2R (pooled)", "r2w_pooled": "R2W (pooled)", "net_pooled": "Net (pooled)",
    "w2r_endpoints": "W2R (endpoints)", "r2w_endpoints": "R2W (endpoints)",
    "net_endpoints": "Net (endpoints)",
    "acceptance": "Acceptance", "cross_answer": "Cross-answer",
    "source_confidence": "Source conf.", "influence_entropy": "Influence entropy",
    "tokens_per_example": "Tokens / example", "cached_tokens": "Cached / example",
    "calls_per_example": "Calls / example", "parse_failure_rate": "Parse failures",
    "truncation_rate": "Truncated calls", "n_methods": "Methods", "n_pairs": "Pairs"}
"""Column name -> the label tables print (W2R/R2W/Net name their definition)."""
INDEX_LABELS = {"dataset": "Dataset", "model": "Model", "method": "Method",
                "quantity": "Quantity", "key": "Key", "set": "Set"}

_ORDER = {"dataset": {d: i for i, d in enumerate(DATASETS)}}


def dataset_label(name: str) -> str:
    """The study's display name of a dataset (unknown names as given)."""
    return DATASET_LABELS.get(name, name)


def method_label(name: str) -> str:
    """The study's display name of a method, ``SC@K``, or a plug-in's registered label
    (unknown names as given)."""
    name = str(name)
    if name in METHOD_LABELS:
        return METHOD_LABELS[name]
    k = sc_k(name)
    if k is not None:
        return f"SC@{k}"
    if (base := orbit_base(name)) is not None:
        return f"{method_label(base)} (orbit)"
    try:
        return _registry.spec(name).label or name
    except ValueError:  # not registered
        return name


def method_key(name: str) -> tuple[int, int, str]:
    """Sort key of a method, the one table order: the study's in table order, ``sc@K`` by K
    right after CoT-SC, ``NAME~orbit`` right after ``NAME``, then every other name
    alphabetically (stable whatever loaded first)."""
    if name in METHODS:
        return (0, METHODS.index(name), name)
    k = sc_k(name)
    if k is not None:
        return (0, METHODS.index("cot_sc"), f"~{k:03d}")
    if (base := orbit_base(name)) is not None:  # right after the method it averages
        group, at, key = method_key(base)
        return (group, at, key + "~orbit")
    return (1, 0, str(name))


def method_order(names: Any) -> list[str]:
    """Method names without repeats in the one table order (:func:`method_key`).

    >>> method_order(["my_router", "pear", "sc@20", "cot", "cot_sc", "sc@5"])
    ['cot', 'cot_sc', 'sc@5', 'sc@20', 'pear', 'my_router']
    """
    return sorted(dict.fromkeys(str(m) for m in names), key=method_key)


def with_plugins(study_methods: Any, present: Any) -> tuple[str, ...]:
    """``study_methods`` followed by every method in ``present`` (names, or a frame with a
    ``method`` column) that is not one of the study's: what a table of the study shows when
    a run also holds plug-ins (``sc@K`` is not a plug-in: it has its own table, notebook 07).

    >>> with_plugins(MAIN_METHODS[-2:], ["pear", "dar", "ring", "zz", "sc@10"])
    ('random', 'pear', 'dar', 'zz')
    """
    names = present["method"].unique() if isinstance(present, pd.DataFrame) else present
    extra = [m for m in method_order(names)
             if m not in METHODS and sc_k(m) is None]
    return tuple(study_methods) + tuple(extra)


def model_label(model_id: str) -> str:
    """A model's display name (:func:`pear.catalog.models.display_name`): ``Qwen2.5-14B``,
    ``SmolLM2-135M (Q4_1)`` for a GGUF file with its hash, "simulated agents"."""
    return display_name(str(model_id))


def model_labels(model_ids: Any) -> dict[str, str]:
    """Model id -> display name for several ids; ids that would share a display name
    (e.g. two builds of one GGUF file) keep them apart with a short suffix of the id.

    >>> h = "@sha256:"
    >>> sorted(model_labels(["m.Q4_0.gguf" + h + "aa" * 32, "m.Q4_0.gguf" + h + "bb" * 32]).values())
    ['m (Q4_0) [aaaaaaaa]', 'm (Q4_0) [bbbbbbbb]']
    """
    ids = list(dict.fromkeys(str(m) for m in model_ids))
    names = {m: model_label(m) for m in ids}
    seen: dict[str, int] = {}
    for name in names.values():
        seen[name] = seen.get(name, 0) + 1
    for m, name in names.items():
        if seen[name] > 1:
            tail = m.rsplit(":", 1)[-1] if "@sha256:" in m else m
            names[m] = f"{name} [{re.sub(r'[^0-9A-Za-z]', '', tail)[:8]}]"
    return names


SIMULATED_MARK = "simulated agents"
"""The mark of every figure and table made from simulated records."""


def evidence_mark(*, simulated: bool, preset: str = "", models: Any = (),
                  n_questions: int | None = None) -> str:
    """What a build's outputs must say about themselves: "simulated agents" for simulated
    records; for the ``smoke`` preset (a pipeline check on a tiny model and one or two
    questions) "pipeline check (<size> model, N questions): not evidence"; both joined
    by "; "; "" for a real run of another preset.

    >>> evidence_mark(simulated=False, preset="smoke", n_questions=1,
    ...               models=["SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "0" * 64])
    'pipeline check (135M model, 1 question per dataset): not evidence'
    >>> evidence_mark(simulated=True, preset="sim")
    'simulated agents'
    >>> evidence_mark(simulated=False, preset="paper", models=["Qwen/Qwen2.5-14B-Instruct"])
    ''
    """
    marks = [SIMULATED_MARK] if simulated else []
    if preset == "smoke":
        names = [model_label(m) for m in models]
        sizes = [hit.group(1) for n in names
                 if (hit := re.search(r"(?<![\d.])(\d+(?:\.\d+)?[MB])\b", n))]
        who = [] if simulated else \
            [f"{', '.join(dict.fromkeys(sizes))} model" if sizes and len(sizes) == len(names)
             else ", ".join(names) or "small model"]
        if n_questions is not None:
            who.append(f"{n_questions} question{'' if n_questions == 1 else 's'} per dataset")
        marks.append(f"pipeline check ({', '.join(who)}): not evidence" if who
                     else "pipeline check: not evidence")
    return "; ".join(marks)


def order_key(column: str, value: Any) -> tuple[Any, ...]:
    """Sort key placing methods (:func:`method_key`) and datasets in the study's table order,
    others after.

    >>> sorted(["pear", "x", "cot"], key=lambda m: order_key("method", m))
    ['cot', 'pear', 'x']
    """
    if column == "method":
        return method_key(str(value))
    pos = _ORDER.get(column, {})
    return pos.get(value, len(pos)), str(value)


def sort_rows(df: pd.DataFrame, keys: Any) -> pd.DataFrame:
    """Rows sorted by ``keys`` (those present), methods and datasets in table order.

    >>> sort_rows(pd.DataFrame({"method": ["pear", "cot"], "x": [1, 2]}), ["method"])["x"].tolist()
    [2, 1]
    """
    keys = [k for k in keys if k in df.columns]
    if not keys:
        return df

    def rank(col: pd.Series) -> pd.Series:
        if col.name not in ("method", *_ORDER):
            return col
        return col.map(lambda v: order_key(str(col.name), v))
    return df.sort_values(keys, key=rank).reset_index(drop=True)


def display(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with display names in the ``dataset``, ``method``, ``model`` and ``quantity``
    columns.

    >>> display(pd.DataFrame({"model": ["Qwen/Qwen2.5-14B-Instruct"], "method": ["cot_sc"]}))
             model  method
    0  Qwen2.5-14B  CoT-SC
    """
    out = df.copy()
    if "model" in out:
        names = model_labels(out["model"].unique())
        out["model"] = out["model"].map(lambda m: names.get(str(m), m))
    for col, fn in (("dataset", dataset_label), ("method", method_label),
                    ("quantity", lambda q: QUANTITY_LABELS.get(q, q))):
        if col in out:
            out[col] = out[col].map(fn)
    return out
