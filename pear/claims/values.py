"""The numeric parts of claims (:mod:`pear.claims.evaluate`): the settings a part is about, method
expressions over them (a method; ``max:``/``min:``/``mean:``/``spread:`` a set per setting;
``best:``/``worst:`` the set's member with the highest / lowest mean), and the ops that
combine them (value, diff, rel, ratio, share, increment, scope_change, last_rise, pareto,
net_identity, strength_gain), each with its bootstrap replicates.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Mapping

import numpy as np

from pear.claims.evidence import METRIC_UNITS, PSEUDO_MODELS, Cell, Source
from pear.claims.verdicts import PartResult, Values, decide, describe, quiet
from pear.analysis.metrics import pareto_front
from pear.analysis.stats import spearman_rho

__all__ = ["named", "numeric"]

# ----------------------------------------------------------------- selecting cells

def named(raw: Mapping[str, Any], value: Any, table: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value in raw.get(table, {}):
            return list(raw[table][value])
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def _select(cell: Cell, spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]
            ) -> tuple[list[int], str] | str:
    """Indices of the settings the part is about, and a note; or why none."""
    models = named(raw, spec.get("models"), "models")
    datasets = spec.get("datasets")
    keep = list(range(len(cell.settings)))
    if datasets:
        keep = [i for i in keep if cell.settings[i][1] in datasets or
                cell.settings[i][0] in PSEUDO_MODELS and not src.paper]
        if not keep:
            return f"no {', '.join(datasets)} in this {'table' if src.paper else 'build'}"
    note = ""
    if models:
        study = {i: src.models.get(cell.settings[i][0]) for i in keep}
        hit = [i for i in keep if cell.settings[i][0] in PSEUDO_MODELS or study[i] in models]
        if not hit:
            if spec.get("rule", "any") == "require" or any(study.values()):
                return f"the claim's models ({', '.join(models)}) are not in this build"
            hit = keep
            note = (f"on this build's models ({', '.join(sorted({cell.settings[i][0] for i in keep}))}"
                    f"); the study's: {', '.join(models)}")
        keep = hit
    return (keep, note) if keep else "no setting of this build fits the claim"


def _method_values(expr: str, cell: Cell, rows: list[int]) -> tuple[np.ndarray, np.ndarray | None,
                                                                    tuple[str, ...]] | str:
    """(point values per selected setting, replicates (B x settings) or None, methods) of a
    method expression: a method, or ``max:`` / ``min:`` / ``mean:`` / ``spread:`` a set."""
    if expr.startswith(("best:", "worst:")):
        return _ranked(expr, cell, rows)
    agg, _, names = expr.partition(":") if ":" in expr else ("", "", expr)
    members = [m.strip() for m in names.split(",") if m.strip()]
    cols = [cell.column(m) for m in members if cell.column(m) is not None]
    point = cell.point[rows][:, cols] if cols else np.zeros((len(rows), 0))
    present = [c for j, c in enumerate(cols) if not np.isnan(point[:, j]).all()]
    if not present:
        return f"no {' or '.join(members)} in this build"
    point = cell.point[rows][:, present]
    reps = cell.reps[:, rows][:, :, present] if cell.reps is not None else None
    used = tuple(cell.methods[c] for c in present)
    fn = {"": lambda x, axis: np.take(x, 0, axis=axis), "max": np.nanmax, "min": np.nanmin,
          "mean": np.nanmean,
          "spread": lambda x, axis: np.nanmax(x, axis=axis) - np.nanmin(x, axis=axis)}[agg]
    with np.errstate(all="ignore"), quiet():
        return fn(point, axis=-1), (fn(reps, axis=-1) if reps is not None else None), used


def _ranked(expr: str, cell: Cell, rows: list[int]) -> tuple[np.ndarray, np.ndarray | None,
                                                              tuple[str, ...]] | str:
    """``best:SET`` / ``worst:SET``: the member with the highest / lowest mean over the
    selected settings (chosen again in every replicate), its value per setting."""
    kind, _, names = expr.partition(":")
    cols = [c for c in (cell.column(m.strip()) for m in names.split(",")) if c is not None
            and not np.isnan(cell.point[rows, c]).all()]
    if not cols:
        return f"no {names.replace(',', ' or ')} in this build"
    pick = np.nanargmax if kind == "best" else np.nanargmin
    point = cell.point[rows][:, cols]
    with quiet():
        chosen = pick(np.nanmean(point, axis=0))
        reps = None
        if cell.reps is not None:
            r = cell.reps[:, rows][:, :, cols]
            means = np.nanmean(r, axis=1)
            means = np.where(np.isnan(means), -np.inf if kind == "best" else np.inf, means)
            idx = pick(means, axis=1)
            reps = np.take_along_axis(r, idx[:, None, None], axis=2)[:, :, 0]
    return point[:, chosen], reps, (cell.methods[cols[chosen]],)


def _groups(cell: Cell, rows: list[int], agg: str) -> list[tuple[str, list[int]]]:
    """(label, positions among ``rows``) of each value the aggregation gives."""
    keys = [cell.settings[i] for i in rows]
    if agg in ("mean", "max", "min"):
        return [("", list(range(len(rows))))]
    if agg == "each":
        return [(f"{m} / {d}", [j]) for j, (m, d) in enumerate(keys)]
    level = 0 if agg == "per_model" else 1
    names = list(dict.fromkeys(k[level] for k in keys))
    return [(n, [j for j, k in enumerate(keys) if k[level] == n]) for n in names]



def _values(cells: Mapping[str, Cell], metric: str, expr: str,
            keys: list[tuple[str, str]]) -> Values | str:
    cell = cells.get(metric)
    if cell is None:
        return f"no {metric} in this build"
    rows = [cell.settings.index(k) for k in keys if k in cell.settings]
    if len(rows) != len(keys):
        return f"{metric} misses settings of this claim"
    got = _method_values(expr, cell, rows)
    if isinstance(got, str):
        return got
    return Values(*got)


def _expression(cells: Mapping[str, Cell], spec: Mapping[str, Any], keys, metric: str,
                metric_b: str | None = None) -> Values | str:
    """``a`` (op value) or ``a - b`` on ``metric`` (``b`` on ``metric_b`` if given)."""
    a = _values(cells, metric, spec["a"], keys)
    if isinstance(a, str) or spec.get("b") is None:
        return a
    b = _values(cells, metric_b or metric, spec["b"], keys)
    return b if isinstance(b, str) else a - b


def _unit(spec: Mapping[str, Any], metric: str) -> str:
    if "unit" in spec:
        return spec["unit"]
    if spec.get("op") in ("rel", "ratio"):
        return "percent"
    if spec.get("scale", 1) == 100:
        return "points"
    if metric.startswith("round_"):
        return "fraction"
    return METRIC_UNITS.get(metric, "fraction")


def numeric(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]) -> list[PartResult] | str:
    """A part over settings and methods (the ops value, diff, rel, ratio, share, increment,
    scope_change, last_rise, pareto, net_identity, strength_gain)."""
    op = spec.get("op", "diff" if spec.get("b") is not None else "value")
    metric = spec.get("metric", "accuracy")
    primary = src.full if spec.get("scope", "subset") == "full" or op == "scope_change" \
        else src.cells
    first = primary.get("net" if op == "net_identity" else metric)
    if first is None:
        return f"no {metric} {'on the full sets ' if primary is src.full else ''}in this " \
               f"{'table' if src.paper else 'build'}"
    sel = _select(first, spec, src, raw)
    if isinstance(sel, str):
        return sel
    rows, note = sel
    keys = [first.settings[i] for i in rows]
    agg = spec.get("agg", "mean")
    scale = float(spec.get("scale", 1))
    whole = _SPECIAL[op](spec, src, keys, agg) if op in ("pareto", "net_identity") else None
    if isinstance(whole, str):
        return whole
    nq = dict(zip(first.settings, first.n_questions)) if len(first.n_questions) else {}
    single = op in ("last_rise", "strength_gain")
    results: list[PartResult] = []
    skipped: list[str] = []
    for label, pos in _groups(first, rows, "mean" if single else agg):
        gkeys = [keys[j] for j in pos]
        if whole is not None:
            v: Values | str = whole.reduce("mean", pos)
        elif single:
            v = _SPECIAL[op](spec, src, gkeys, agg)
        else:
            v = _combine(op, spec, src, gkeys, metric)
            if not isinstance(v, str) and op != "share":
                v = v.reduce(agg if agg in ("max", "min") else "mean", list(range(len(gkeys))))
        if isinstance(v, str):
            if len(pos) < len(rows):   # one setting of several lacks a method: left out
                skipped.append(label)
                continue
            return v
        v = v.map(lambda x: x * scale)
        n = [nq.get(k) for k in gkeys if nq.get(k)]
        results.append(value_part(spec, v, label, _unit(spec, metric), min(n) if n else None,
                             note, metric, tuple(gkeys), src))
    if not results:
        return f"no setting of this build has every method of the claim ({', '.join(skipped)})"
    if skipped:
        for r in results:
            r.note = "; ".join(x for x in (r.note, f"left out (methods missing): "
                                                    f"{', '.join(skipped)}") if x)
    return results


def _combine(op: str, spec: Mapping[str, Any], src: Source, keys, metric: str) -> Values | str:
    cells = src.full if spec.get("scope", "subset") == "full" else src.cells
    if op in ("value", "diff"):
        return _expression(cells, spec, keys, metric, spec.get("metric_b"))
    if op in ("rel", "ratio"):
        a, b = (_values(cells, metric, spec[k], keys) for k in ("a", "b"))
        if isinstance(a, str) or isinstance(b, str):
            return a if isinstance(a, str) else b
        q = a / b
        return q.map(lambda x: 1 - x) if op == "rel" else q.map(lambda x: x - 1)
    if op == "share":
        parts = [_values(cells, metric, spec[k], keys) for k in ("a", "b", "c")]
        bad = next((p for p in parts if isinstance(p, str)), None)
        if bad:
            return bad
        a, b, c = (p.reduce("mean", list(range(len(keys)))) for p in parts)
        return (a - b) / (c - b)
    if op == "increment":
        now = _expression(cells, spec, keys, metric)
        before = _expression(cells, spec, keys, spec["metric_prev"])
        return now if isinstance(now, str) else before if isinstance(before, str) \
            else now - before
    if op == "scope_change":
        full = _expression(src.full, spec, keys, metric)
        sub = _expression(src.cells, spec, keys, metric)
        return full if isinstance(full, str) else sub if isinstance(sub, str) else full - sub
    raise ValueError(f"unknown op {op!r} in {'claims_recompute.toml'}")


def _last_rise(spec, src: Source, keys, agg) -> Values | str:
    """Last round whose mean accuracy rises by more than 0.5 point, method a minus b."""
    rounds = sorted(int(m.split("_")[1]) for m in src.cells if m.startswith("round_"))
    if len(rounds) < 3:
        return "fewer than two debate rounds in this build"
    curves = {}
    for side in ("a", "b"):
        vals = [_values(src.cells, f"round_{r}", spec[side], keys) for r in rounds]
        bad = next((v for v in vals if isinstance(v, str)), None)
        if bad:
            return bad
        mean = [v.reduce("mean", list(range(len(keys)))) for v in vals]
        point = np.array([m.point[0] for m in mean])
        reps = np.stack([m.reps[:, 0] for m in mean], axis=1) \
            if mean[0].reps is not None else None

        def last(c: np.ndarray) -> np.ndarray:
            rise = np.diff(c, axis=-1) > 0.005
            idx = np.arange(1, c.shape[-1])
            return np.where(rise, idx, 0).max(axis=-1).astype(float)
        curves[side] = Values(np.atleast_1d(last(point)),
                          last(reps)[:, None] if reps is not None else None)
    return curves["a"] - curves["b"]


def _pareto(spec, src: Source, keys, agg) -> Values | str:
    acc, tok = src.cells.get("accuracy"), src.cells.get("tokens")
    if tok is None or any(k not in tok.settings for k in keys):
        return "no tokens per setting in this " + ("table" if src.paper else "build")
    out = np.zeros(len(keys))
    boot = acc.reps is not None and tok.reps is not None
    reps = np.zeros((acc.reps.shape[0], len(keys))) if boot else None
    for label, pos in _groups(acc, [acc.settings.index(k) for k in keys], agg):
        rows = [acc.settings.index(keys[j]) for j in pos]
        trow = [tok.settings.index(keys[j]) for j in pos]
        methods = [m for m in acc.methods if m in tok.methods]
        if spec["a"] not in methods:
            continue
        ac, tc = [acc.column(m) for m in methods], [tok.column(m) for m in methods]
        with quiet():
            a = np.nanmean(acc.point[rows][:, ac], axis=0)
            t = np.nanmean(tok.point[trow][:, tc], axis=0)
        ok = ~(np.isnan(a) | np.isnan(t))
        front = dict(zip(np.array(methods)[ok], pareto_front(t[ok], a[ok])))
        out[pos] = float(front.get(spec["a"], False))
        if boot:  # membership in each replicate: a flip between builds is then noise
            with quiet():  # unless the replicates of both builds agree
                a_b = np.nanmean(acc.reps[:, rows][:, :, ac], axis=1)
                t_b = np.nanmean(tok.reps[:, trow][:, :, tc], axis=1)
            for b in range(len(a_b)):
                ok = ~(np.isnan(a_b[b]) | np.isnan(t_b[b]))
                front = dict(zip(np.array(methods)[ok], pareto_front(t_b[b][ok], a_b[b][ok])))
                reps[b, pos] = float(front.get(spec["a"], False))
    return Values(out, reps)


def _net_identity(spec, src: Source, keys, agg) -> Values | str:
    if any(q not in src.cells for q in ("w2r", "r2w")):
        return "no W2R or R2W in this " + ("table" if src.paper else "build")
    cells = [src.cells[q] for q in ("w2r", "r2w", "net")]
    rows = [[c.settings.index(k) for k in keys] for c in cells]
    methods = [m for m in cells[2].methods if all(c.column(m) is not None for c in cells)]
    with warnings.catch_warnings():  # a method without a value in every row: NaN, said below
        warnings.simplefilter("ignore", RuntimeWarning)
        w, r, n = (np.nanmean(c.point[rw][:, [c.column(m) for m in methods]], axis=0)
                   for c, rw in zip(cells, rows))
    dev = np.nanmax(np.abs(n - (w - r))) if len(methods) else math.nan
    return Values(np.full(len(keys), dev), None)


def _strength_gain(spec, src: Source, keys, agg) -> Values | str:
    """Spearman's rho across models between strength (mean of b) and gain (mean a - b)."""
    models = list(dict.fromkeys(k[0] for k in keys))
    if len(models) < 3:
        return f"needs at least 3 backbones; this build has {len(models)}"
    d = _expression(src.cells, spec, keys, "accuracy")
    b = _values(src.cells, "accuracy", spec["b"], keys)
    if isinstance(d, str) or isinstance(b, str):
        return d if isinstance(d, str) else b
    pos = [[j for j, k in enumerate(keys) if k[0] == m] for m in models]

    def rho(gain: np.ndarray, strength: np.ndarray) -> np.ndarray:
        g = np.stack([np.nanmean(gain[..., p], axis=-1) for p in pos], axis=-1)
        s = np.stack([np.nanmean(strength[..., p], axis=-1) for p in pos], axis=-1)
        return spearman_rho(g, s)
    reps = rho(d.reps, b.reps)[:, None] if d.reps is not None else None
    return Values(np.atleast_1d(rho(d.point, b.point)), reps)


_SPECIAL = {"last_rise": _last_rise, "pareto": _pareto, "net_identity": _net_identity,
            "strength_gain": _strength_gain}


def value_part(spec: Mapping[str, Any], v: Values, label: str, unit: str, nq: int | None, note: str,
          metric: str, settings: tuple, src: Source) -> PartResult:
    value = float(v.point[0])
    lo = hi = value
    if v.reps is not None and np.isfinite(v.reps[:, 0]).any():
        lo, hi = (float(x) for x in np.nanpercentile(v.reps[:, 0], [2.5, 97.5]))
    verdict, n_needed, why = decide(spec, value, lo, hi, unit, nq, src)
    name = spec.get("label") or describe(spec)
    return PartResult(name, label, value, lo, hi, spec.get("printed_value", (None,))[0], unit,
                      spec.get("test", "estimate" if "printed_value" in spec else "greater"),
                      verdict, n_needed, nq, "; ".join(x for x in (note, why) if x), metric,
                      v.methods, settings)

