"""How one part of a claim is judged (:mod:`pear.claims.evaluate`): the printed value's rounding,
the margins a reproduction must reach, and the verdict rules of every test
(:func:`decide`), with the number of questions that would decide an inconclusive one.

>>> decide({"test": "greater"}, 2.0, 0.5, 3.5, "points", 100, None)[0]
'supported'
>>> decide({"test": "greater"}, 1.0, -0.5, 2.5, "points", 100, None)[:2]
('inconclusive', 460)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from pear.analysis.stats import ALPHA, mcnemar_sample_size  # ALPHA: intervals are 95 %
from pear.catalog.labels import QUANTITY_LABELS, method_label

if TYPE_CHECKING:
    from pear.claims.evidence import Source

__all__ = ["MARGINS", "TOKENS_MARGIN_REL", "ALPHA", "POWER", "PartResult", "Values",
           "printed_numbers", "decide", "fixed_part", "mcnemar_needed", "describe",
           "quiet"]

MARGINS = {"fraction": 0.02, "points": 2.0, "percent": 2.0, "rho": 0.1, "edges": 0.0,
           "count": 0.0, "p-value": 0.0}  # our choice: the precision a reproduction needs
TOKENS_MARGIN_REL = 0.05  # our choice: 5 % of the printed token count
POWER = 0.8  # the power an inconclusive part is sized for
_Z, _Z_POWER = 1.959964, 0.841621
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)(k?)")


@dataclass
class PartResult:
    """One evaluated part of a claim (one setting, when the part is per setting)."""

    label: str
    setting: str = ""
    value: float = math.nan
    low: float = math.nan
    high: float = math.nan
    printed: float | None = None
    unit: str = ""
    test: str = ""
    verdict: str = "not covered"
    n_needed: int | None = None
    n_questions: int | None = None
    note: str = ""
    metric: str = ""
    methods: tuple[str, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()


def printed_numbers(text: str) -> list[tuple[float, float]]:
    """The numbers of a printed value with half their last printed digit (their rounding):
    ``32.3k`` is 32300 +- 50; digits inside names (``chi2``, ``S_5``) are skipped.

    >>> printed_numbers("T+L 0.603; I+L 0.604")
    [(0.603, 0.0005), (0.604, 0.0005)]
    >>> printed_numbers("32.3k"), printed_numbers("16-19")
    ([(32300.0, 50.0)], [(16.0, 0.5), (19.0, 0.5)])
    """
    out = []
    for num, k in _NUMBER.findall(text):
        decimals = len(num.split(".")[1]) if "." in num else 0
        scale = 1000.0 if k else 1.0
        out.append((round(float(num) * scale, 9), 0.5 * 10.0 ** -decimals * scale))
    return out


# ----------------------------------------------------------------- values with replicates
def _reduce(x: np.ndarray, agg: str, pos: list[int]) -> np.ndarray | float:
    """Aggregate the last axis of ``x`` over ``pos`` (mean, max or min)."""
    sub = np.take(x, pos, axis=-1)
    fn = {"max": np.nanmax, "min": np.nanmin}.get(agg, np.nanmean)
    with np.errstate(all="ignore"), quiet():
        return fn(sub, axis=-1)



@dataclass
class Values:
    """Point values (per setting) and their replicates (B x settings, or None)."""

    point: np.ndarray
    reps: np.ndarray | None
    methods: tuple[str, ...] = ()

    def _op(self, other: "Values", fn) -> "Values":
        reps = fn(self.reps, other.reps) if self.reps is not None and other.reps is not None \
            else None
        return Values(fn(self.point, other.point), reps, self.methods + other.methods)

    def __sub__(self, other: "Values") -> "Values":
        return self._op(other, np.subtract)

    def __truediv__(self, other: "Values") -> "Values":
        with np.errstate(all="ignore"):
            return self._op(other, np.divide)

    def map(self, fn) -> "Values":
        with np.errstate(all="ignore"):
            return Values(fn(self.point), fn(self.reps) if self.reps is not None else None,
                      self.methods)

    def reduce(self, agg: str, pos: list[int]) -> "Values":
        return Values(np.atleast_1d(_reduce(self.point, agg, pos)),
                  _reduce(self.reps, agg, pos)[:, None] if self.reps is not None else None,
                  self.methods)

class quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


# ----------------------------------------------------------------- tests and verdicts

def target(value: Any, src: Source) -> float | None:
    """A number, or ``1/n``, ``n*k``, ``n*(n-1)`` of the build's protocol (None: unknown)."""
    if not isinstance(value, str):
        return float(value)
    n, k = src.n, src.k
    if n is None or ("k" in value and k is None):
        return None
    return {"1/n": 1 / n, "n*k": n * (k or 0), "n*(n-1)": n * (n - 1)}[value]


def needed(n: int | None, factor: float) -> int | None:
    if n is None or not np.isfinite(factor) or factor <= 0:
        return None
    return max(n + 1, int(math.ceil(n * factor)))


def decide(spec: Mapping[str, Any], v: float, lo: float, hi: float, unit: str,
            nq: int | None, src: Source) -> tuple[str, int | None, str]:
    """(verdict, questions per setting that would decide it, note) of one value."""
    test = spec.get("test", "estimate" if "printed_value" in spec else "greater")
    if not np.isfinite(v):
        return "not covered", None, "no value (no defined query)"
    if test == "estimate":
        p, half = spec["printed_value"]
        margin = spec.get("margin", p * TOKENS_MARGIN_REL if unit == "tokens"
                          else MARGINS.get(unit, 0.0))
        if src.paper or lo == hi:   # no sampling: agree within both roundings
            ok = abs(v - p) <= 2 * half + 1e-12
            return ("supported" if ok else "contradicted"), None, ""
        if hi < p - half or lo > p + half:
            return "contradicted", None, ""
        width = (hi - lo) / 2
        if width <= max(margin, half):
            return "supported", None, ""
        return "inconclusive", needed(nq, (width / max(margin, half)) ** 2), \
            f"interval half-width {width:.3g} above the margin {margin:.3g}"
    if test in ("greater", "less"):
        t = target(spec.get("threshold", 0.0), src)
        if t is None:
            return "not covered", None, "the protocol's n or k is unknown"
        tol = float(spec.get("tol", 0.0))
        sign = 1 if test == "greater" else -1
        lo_s, hi_s = (lo, hi) if sign > 0 else (-hi, -lo)
        t_s = sign * t
        if hi_s < t_s:
            return "contradicted", None, ""
        if lo_s > t_s - tol:
            return "supported", None, ""
        d = sign * v - t_s
        se = (hi - lo) / (2 * _Z)
        return "inconclusive", (needed(nq, ((_Z + _Z_POWER) * se / abs(d)) ** 2)
                                if d and se else None), ""
    if test == "within":
        b0, b1 = spec["bounds"]
        if lo >= b0 and hi <= b1:
            return "supported", None, ""
        if hi < b0 or lo > b1:
            return "contradicted", None, ""
        width = (hi - lo) / 2
        return "inconclusive", needed(nq, (width / ((b1 - b0) / 2)) ** 2), ""
    if test == "exact":
        t = target(spec.get("target", 0), src)
        if t is None:
            return "not covered", None, "the protocol's n or k is unknown"
        ok = abs(v - t) <= float(spec.get("tol", 1e-9))
        return ("supported" if ok else "contradicted"), None, ""
    raise ValueError(f"unknown test {test!r} in {'claims_recompute.toml'}")


def mcnemar_needed(b: int, c: int, n: int, alpha: float) -> int | None:
    """Questions that give McNemar's test 80 % power at the observed discordance."""
    return mcnemar_sample_size(b, c, n, alpha, POWER)


def fixed_part(spec: Mapping[str, Any], value: float, where: str, unit: str,
                src: Source) -> PartResult:
    verdict, needed, why = decide(spec, value, value, value, unit, None, src)
    return PartResult(spec.get("label") or spec.get("stat") or spec.get("what", ""), where,
                      value, value, value, spec.get("printed_value", (None,))[0], unit,
                      spec.get("test", "estimate" if "printed_value" in spec else "exact"),
                      verdict, needed, None, why)


def describe(spec: Mapping[str, Any]) -> str:
    """A part in words, from its (unresolved) spec.

    >>> describe({"a": "pear", "b": "max:fixed", "scale": 100})
    'Accuracy: PEAR - highest fixed'
    >>> describe({"metric": "tokens", "op": "rel", "a": "pear", "b": "clique"})
    'tokens: 1 - PEAR / Clique'
    """
    if spec.get("op") in ("sig", "spearman", "design", "router", "relabelling"):
        return ""   # their evaluators name them
    words = {"max": "highest", "min": "lowest", "mean": "mean of", "spread": "spread of",
             "best": "best", "worst": "worst"}

    def name(expr: Any) -> str:
        if not isinstance(expr, str):
            return str(expr)
        agg, _, rest = expr.partition(":")
        if not rest:
            return method_label(expr)
        members = ", ".join(method_label(m).replace("_", " ") for m in rest.split(","))
        return f"{words.get(agg, agg)} {members}"
    metric = spec.get("metric", "accuracy")
    a, b = name(spec.get("a", "")), name(spec.get("b")) if spec.get("b") else None
    op = spec.get("op", "diff" if b else "value")
    text = {"value": a, "diff": f"{a} - {b}", "rel": f"1 - {a} / {b}",
            "ratio": f"{a} / {b} - 1", "increment": f"step of {a}" + (f" - {b}" if b else "")
            }.get(op, op.replace("_", " "))
    what = "Accuracy by round" if metric.startswith("round_") else \
        QUANTITY_LABELS.get(metric, metric)
    return f"{what}: {text}"
