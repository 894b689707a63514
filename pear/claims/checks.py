"""The parts of claims that are not means over settings (:mod:`pear.claims.evaluate`): the study's
significance table and rank agreement, the design of its grid, checks of this
repository's router on logged states (:mod:`pear.analysis.theory`), and the relabelling
study's tests (:func:`relabelling_parts`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pear.analysis.metrics import best_fixed
from pear.core.methods import FIXED_TOPOLOGIES, ORBIT
from pear.catalog.labels import method_label
from pear.claims.values import named
from pear.claims.evidence import Relabelling, Source
from pear.claims.verdicts import (ALPHA, PartResult, decide, fixed_part, mcnemar_needed,
                                  needed, printed_numbers)
from pear.analysis import stats, theory
from pear.core.router import score_pool, selection_probabilities

__all__ = ["significance_parts", "rank_parts", "design_parts", "router_parts",
           "relabelling_parts", "RELABELLING_TESTS", "MIN_PAIRS"]

# ----------------------------------------------------------------- significance, ranks, design

@dataclass(frozen=True)
class _SigRow:
    """One row of the significance table as a claim part sees it."""

    where: str
    b: int
    c: int
    n: int
    row: Mapping[str, Any]


def _test_part(spec: Mapping[str, Any], r: _SigRow, src: Source) -> PartResult:
    """``test = "mcnemar"`` (exact p below alpha, in the claimed direction) or ``"power"``
    (post-hoc power at least the threshold)."""
    alpha = float(spec.get("alpha", ALPHA))
    test = spec["test"]
    if test == "mcnemar":
        value = float(r.row["p_exact"])
        verdict = ("supported" if r.b > r.c else "contradicted") if value < alpha \
            else "inconclusive"
        label, unit = f"exact McNemar p < {alpha}", "p-value"
    else:
        value = float(r.row["power"])
        verdict = "supported" if value >= float(spec["threshold"]) else "inconclusive"
        label, unit = f"post-hoc power >= {spec.get('threshold')}", "fraction"
    return PartResult(
        label=spec.get("label") or label, setting=r.where, value=value, low=value, high=value,
        unit=unit, test=test, verdict=verdict,
        n_needed=mcnemar_needed(r.b, r.c, r.n, alpha) if verdict == "inconclusive" else None,
        n_questions=r.n, note=f"b = {r.b}, c = {r.c}", metric="significance",
        methods=("pear",))


def _wilson_part(spec: Mapping[str, Any], r: _SigRow, src: Source) -> PartResult:
    """The Wilson interval of PEAR's win rate among discordant pairs against a threshold."""
    lo, hi = float(r.row["wilson_low"]), float(r.row["wilson_high"])
    t = float(spec.get("threshold", 0.5))
    verdict = "supported" if lo > t else "contradicted" if hi < t else "inconclusive"
    return PartResult(
        label="Wilson interval of the win rate above 0.5", setting=r.where,
        value=r.b / (r.b + r.c) if r.b + r.c else math.nan, low=lo, high=hi, unit="fraction",
        test="greater", verdict=verdict,
        n_needed=mcnemar_needed(r.b, r.c, r.n, ALPHA) if verdict == "inconclusive" else None,
        n_questions=r.n, metric="significance", methods=("pear",))


def _p_from_bc_part(spec: Mapping[str, Any], r: _SigRow, src: Source) -> PartResult | str:
    """The study's printed p recomputed from its printed b and c."""
    if not src.paper:
        return "a statement about the study's own table"
    p = stats.mcnemar(r.b, r.c).pvalue_exact
    printed = printed_numbers(str(r.row["p_printed"]))[0]
    return fixed_part(dict(spec, printed_value=printed), p, r.where, "p-value", src)


def _gap_identity_part(spec: Mapping[str, Any], r: _SigRow, src: Source) -> PartResult:
    """(b - c) / n equals the accuracy gap of the same pairs."""
    gap = (r.b - r.c) / r.n - (float(r.row["pear_acc"]) - float(r.row["best_baseline_acc"]))
    return fixed_part(spec, abs(gap), r.where, "fraction", src)


def _acc_identity_part(spec: Mapping[str, Any], r: _SigRow, src: Source) -> PartResult | None:
    """The table's accuracies equal the full-set table's PEAR and best fixed topology."""
    full = src.full.get("accuracy")
    key = (r.row["study"] if src.paper else r.row["model"], r.row["dataset"])
    if full is None or key not in full.settings:
        return None
    point = full.point[full.settings.index(key)]
    pear = point[full.column("pear")]
    accs = {m: point[full.column(m)] for m in FIXED_TOPOLOGIES if full.column(m) is not None}
    fixed = accs[best] if (best := best_fixed(accs)) else np.nan
    dev = max(abs(float(r.row["pear_acc"]) - pear),
              abs(float(r.row["best_baseline_acc"]) - fixed))
    return fixed_part(spec, dev, r.where, "fraction", src)


_SIGNIFICANCE_PARTS = {  # a spec's ``test`` or ``stat`` -> the part it asks for, per row
    "mcnemar": _test_part, "power": _test_part, "wilson_low": _wilson_part,
    "p_from_bc": _p_from_bc_part, "gap_identity": _gap_identity_part,
    "acc_identity": _acc_identity_part,
}


def significance_parts(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]
                       ) -> list[PartResult] | str:
    """The parts of a claim about the significance table: one per testable setting (or one
    for ``stat = "weakest"``), or the reason there is none."""
    if src.sig is None or src.sig.empty:
        return "no full-set significance tests in this build" if not src.paper else \
            "not in the study's tables"
    sig = src.sig.copy()
    sig["study"] = sig["model"].map(lambda m: src.models.get(m, m if src.paper else None))
    models = named(raw, spec.get("models"), "models")
    if models:
        hit = sig[sig["study"].isin(models)]
        if hit.empty:
            if spec.get("rule", "any") == "require" or sig["study"].notna().any():
                return f"the claim's models ({', '.join(models)}) are not in this build"
        else:
            sig = hit
    if spec.get("stat") == "weakest":
        model, dataset = spec["weakest"]
        worst_p = sig.loc[sig["p_exact"].idxmax()]
        worst_power = sig.loc[sig["power"].idxmin()]
        hit = all((r["study"], r["dataset"]) == (model, dataset) for r in (worst_p, worst_power))
        return [fixed_part(spec, float(hit), "", "count", src)]
    kind = spec.get("test") if spec.get("test") in ("mcnemar", "power") else spec.get("stat")
    make = _SIGNIFICANCE_PARTS.get(kind)
    if make is None:
        raise ValueError(f"unknown significance part {kind!r}: choose one of "
                         f"{', '.join(_SIGNIFICANCE_PARTS)}, weakest")
    out = []
    for _, r in sig.iterrows():
        part = make(spec, _SigRow(f"{r['model']} / {r['dataset']}", int(r["b"]), int(r["c"]),
                                  int(r["n_pairs"]), r), src)
        if isinstance(part, str):
            return part
        if part is not None:
            out.append(part)
    return out or "no testable setting"


def rank_parts(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]) -> list[PartResult] | str:
    rows = src.spearman
    if rows is None or rows.empty:
        return "no full-set runs beside the subset in this build"
    rows = rows.copy()
    rows["study"] = rows["model"].map(lambda m: src.models.get(m, m if src.paper else None))
    models = named(raw, spec.get("models"), "models")
    if models:
        hit = rows[rows["study"].isin(models)]
        if hit.empty and (spec.get("rule", "any") == "require" or rows["study"].notna().any()):
            return f"the claim's models ({', '.join(models)}) are not in this build"
        rows = hit if not hit.empty else rows
    if spec.get("paper_only") and not src.paper:
        return "a statement about the study's own table"
    out = []
    for _, r in rows.iterrows():
        where = f"{r['model']} / {r['dataset']}"
        stat = spec["stat"]
        value = float(r["rho" if stat == "rho" else "p_value"])
        lo, hi = (float(r["rho_low"]), float(r["rho_high"])) if stat == "rho" and \
            np.isfinite(r["rho_low"]) else (value, value)
        s2 = dict(spec)
        if "printed_each" in spec:
            s2["printed_value"] = spec["printed_numbers"][spec["printed_each"][
                _study_order(r, src)]]
        verdict, needed, why = decide(s2, value, lo, hi, "rho" if stat == "rho" else "p-value",
                                      None, src)
        if stat == "p" and verdict == "contradicted" and not src.paper:
            verdict, why = "inconclusive", ("not significant: more questions per method would "
                                            "sharpen the accuracies it ranks")
        out.append(PartResult(spec.get("label") or f"Spearman {stat}", where, value, lo, hi,
                              s2.get("printed_value", (None,))[0],
                              "rho" if stat == "rho" else "p-value",
                              s2.get("test", "estimate" if "printed_value" in s2 else "greater"),
                              verdict, needed, None, why, "spearman", ()))
    return out


_PRINTED_ORDER = [("truthfulqa", "Qwen-2.5-14B"), ("truthfulqa", "Llama-3.1-8B"),
                  ("math500", "Qwen-2.5-14B"), ("math500", "Llama-3.1-8B"),
                  ("truthfulqa", "GPT-5.4-nano"), ("truthfulqa", "Claude-Haiku-4.5"),
                  ("math500", "GPT-5.4-nano"), ("math500", "Claude-Haiku-4.5")]
"""The order of the study's per-setting lists (its significance and rank tables)."""


def _study_order(row: pd.Series, src: Source) -> int:
    key = (row["dataset"], row["study"])
    return _PRINTED_ORDER.index(key) if key in _PRINTED_ORDER else 0


def design_parts(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]) -> list[PartResult] | str:
    """The study's design as the build ran it: a match supports the claim, anything else
    leaves it not covered (a smaller grid does not contradict a design)."""
    what, d = spec["what"], src.design
    models = named(raw, spec.get("models"), "models")
    if what == "graphs_checked":
        if src.paper:
            return "not in the study's tables"
        if not src.graphs_checked or not src.graphs_checked[0]:
            return "no run manifest: the graphs could not be checked against the base graph"
        return [fixed_part(dict(spec, test="exact", target=0), src.graphs_checked[1], "",
                            "count", src)]
    if what == "full_models":
        have = {src.models.get(m, m) for m in d.get("full_models", ())}
        if not models or not set(models) & have:
            if src.paper:
                return [fixed_part(dict(spec, test="exact", target=1), 0.0, "", "count", src)]
            return f"no full-set records of {', '.join(models or [])} in this build"
        return [fixed_part(dict(spec, test="exact", target=1), 1.0, "", "count", src)]
    if what in ("datasets", "models", "seeds"):
        if what not in d:
            return "not in the study's tables"
        value = float(d[what])
    elif what == "questions":
        if src.paper:
            return "not in the study's tables"
        per = {k: n for k, n in d["questions"].items()
               if not models or src.models.get(k[0]) in models}
        if not per:
            return f"the claim's models ({', '.join(models or [])}) are not in this build"
        value = float(min(per.values()))
    elif what == "full_questions":
        per = {k: n for k, n in d.get("full_questions", {}).items()
               if k in spec.get("datasets", [k])}
        if not per:
            return "no full-set runs of these datasets in this build"
        value = float(min(per.values()))
    else:
        raise ValueError(f"unknown design part {what!r}")
    printed = spec["printed_value"][0]
    part = fixed_part(dict(spec, test="exact", target=printed), value, "", "count", src)
    if part.verdict == "contradicted" and not src.paper:
        part.verdict, part.note = "not covered", f"this build: {value:g}; the study: {printed:g}"
    return [part]


# ----------------------------------------------------------------- the router itself

def router_parts(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]) -> list[PartResult] | str:
    """Checks of this repository's router (:mod:`pear.analysis.theory`) on states logged in the
    build's PEAR debates."""
    if src.paper:
        return "not in the study's tables"
    if not src.states:
        return "no routed PEAR round in this build"
    cfg, check = src.router, spec["check"]
    rng = np.random.default_rng(0)
    values = []
    for st in src.states:
        if check == "equivariance":
            dev = theory.equivariance_deviation(st, cfg, rng, n_perms=5)
            values.append(max(dev["score"], dev["probability"]))
        elif check == "monotonicity":
            if cfg.tau <= 0:
                return "the build's router is an argmax (tau = 0): no derivative"
            for j in range(st.n):
                d = theory.influence_derivative(st, cfg, j)
                values.append(max(abs(d["numeric"] - d["formula"]), d["numeric"]))
        elif check == "softmax_bound":
            scores = score_pool(theory.relabelling_pool(st), st.answers, st.confidences, st.influence, cfg).score
            p = selection_probabilities(scores, cfg.tau)
            values.append(float(p @ scores - (scores.max() - cfg.tau * np.log(len(scores)))))
        elif check == "relative_confidence":
            pool = theory.relabelling_pool(st)
            before = score_pool(pool, st.answers, st.confidences, st.influence, cfg).score
            shifted = tuple(min(5, c + 1) for c in st.confidences)
            after = score_pool(pool, st.answers, shifted, st.influence, cfg).score
            values.append(float(np.abs(after - before).max() > 1e-12))
        else:
            raise ValueError(f"unknown router check {check!r}")
    value = float(np.mean(values) if check == "relative_confidence" else
                  np.min(values) if check == "softmax_bound" else np.max(values))
    part = fixed_part(spec, value, f"{len(src.states)} logged states", "count", src)
    part.metric = "router"
    return [part]



# ----------------------------------------------------------------- the relabelling study

MIN_PAIRS = 10
"""Fewer pairs than this (questions x seeds at each seat; (question, seed, seat) for a router
and its orbit average) leave "preserved" and "equal" inconclusive whatever their interval
(one question gives a spread of 0 by sampling alone; our choice, ``min_n`` in the TOML)."""

RELABELLING_TESTS = ("beyond_sampling", "high_spread", "within_sampling", "orbit")
"""The parts a relabelling claim asks for (``op = "relabelling"``, ``test``): a method's
spread of accuracy across the odd agent's seats beyond what sampling alone gives (a
positional effect), beyond it and at least ``threshold`` (a high sensitivity), within it
(accuracy preserved), and a router beside its orbit average."""


def _spread_part(test: str, method: str, row: Mapping[str, Any], rel: Relabelling,
                 spec: Mapping[str, Any]) -> PartResult:
    """The randomisation test at matched seeds (:func:`pear.analysis.stats.relabelling_spread`)
    of one method's spread across seats: ``beyond_sampling`` is supported when p < alpha (else
    inconclusive: within sampling); ``high_spread`` when also the spread is at least
    ``threshold`` [0.1]; ``within_sampling`` is contradicted when p < alpha and
    supported when, within sampling, sampling alone spreads accuracy by at most ``margin``
    on at least ``min_n`` (:data:`MIN_PAIRS`) pairs (else inconclusive, with the questions
    that would bring it there)."""
    alpha = float(spec.get("alpha", ALPHA))
    spread, null, p, n = (float(row["spread"]), float(row["null_spread"]),
                          float(row["p_value"]), int(row["n"]))
    beyond = p < alpha
    note = (f"p = {p:.2g} against a spread of {null:.3f} from sampling alone, {n} (question, "
            f"seed) pairs at each seat: {'beyond' if beyond else 'within'} sampling")
    n_needed = None
    if test == "beyond_sampling":
        verdict = "supported" if beyond else "inconclusive"
    elif test == "high_spread":
        threshold = float(spec.get("threshold", 0.1))
        verdict = "supported" if beyond and spread >= threshold - 1e-12 else "inconclusive"
        if beyond and verdict == "inconclusive":
            note += f", but below the {threshold:g} read as high"
    else:
        margin = float(spec.get("margin", 0.05))
        least = int(spec.get("min_n", MIN_PAIRS))
        if beyond:
            verdict = "contradicted"
        elif n < least:
            verdict, n_needed = "inconclusive", least
            note += f", on too few to call it preserved (at least {least})"
        elif null <= margin:
            verdict = "supported"
        else:
            verdict = "inconclusive"
            n_needed = needed(n, (null / margin) ** 2)
            note += (f", but sampling alone spreads accuracy by more than the margin "
                     f"{margin:g}")
    return PartResult(
        label=(f"{method_label(method)}: spread of accuracy across the {rel.odd} agent's "
               f"{rel.seats} seats (randomisation test at matched seeds)"),
        value=spread, low=spread, high=spread, unit="fraction", test="randomisation",
        verdict=verdict, n_needed=n_needed, n_questions=n, note=note, metric="relabelling",
        methods=(method,))


def _orbit_part(row: Mapping[str, Any], rel: Relabelling, spec: Mapping[str, Any],
                src: Source) -> PartResult:
    """A router beside its orbit average: the difference (orbit - router) of accuracy over
    the (question, seed, seat) pairs with its paired bootstrap interval, judged against the
    equivalence ``margin`` (``within`` [-margin, margin]); inconclusive on fewer than
    ``min_n`` (:data:`MIN_PAIRS`) pairs."""
    margin = float(spec.get("margin", 0.05))
    router = str(row["router"])
    v, lo, hi, n = (float(row["difference"]), float(row["diff_low"]),
                    float(row["diff_high"]), int(row["n_pairs"]))
    least = int(spec.get("min_n", MIN_PAIRS))
    if not (np.isfinite(lo) and np.isfinite(hi)) or n < least:
        lo, hi = (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else (v, v)
        verdict, n_needed = "inconclusive", least  # too few pairs to call them equal
    else:
        # sized in (question, seed) pairs at each seat, as the spread's parts
        verdict, n_needed, _ = decide({"test": "within", "bounds": [-margin, margin]}, v, lo,
                                      hi, "fraction", max(1, n // max(1, rel.seats)), src)
    p = float(row["p_value"])
    note = (f"McNemar p = {p:.2g} over {n} (question, seed, seat) pairs"
            if np.isfinite(p) else f"{n} (question, seed, seat) pairs: no test")
    note += (f"; spread of accuracy across seats {float(row['router_spread']):.3f} (router) "
             f"against {float(row['orbit_spread']):.3f} (orbit average)")
    return PartResult(
        label=(f"{method_label(router + ORBIT)} - {method_label(router)}: accuracy over the "
               f"{rel.odd} agent's {rel.seats} seats (paired bootstrap; equivalence within "
               f"+-{margin:g})"),
        value=v, low=lo, high=hi, unit="fraction", test="paired", verdict=verdict,
        n_needed=n_needed, n_questions=n, note=note, metric="relabelling",
        methods=(router, router + ORBIT))


def relabelling_parts(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]
                      ) -> list[PartResult] | str:
    """The parts of a claim about agents relabelled (:class:`pear.claims.evidence.Relabelling`):
    ``test`` one of :data:`RELABELLING_TESTS`; ``methods`` (a set name of the TOML or a list)
    the methods whose spread is tested; ``orbit`` takes every router the study ran beside its
    orbit average.  The reason there is none: no relabelling study (notebook 19 not run) or
    none of the methods in it."""
    if src.paper:
        return "not in the study's tables"
    rel = src.relabelling
    if isinstance(rel, str):
        return rel
    test = spec.get("test")
    if test not in RELABELLING_TESTS:
        raise ValueError(f"unknown relabelling test {test!r}: choose one of "
                         f"{', '.join(RELABELLING_TESTS)}")
    if test == "orbit":
        rows = list(rel.orbit.to_dict("records"))
        if not rows:
            return "the relabelling runs hold no router beside its orbit average"
        return [_orbit_part(r, rel, spec, src) for r in rows]
    wanted = spec.get("methods", [])
    if isinstance(wanted, str):
        wanted = raw.get("sets", {}).get(wanted, wanted.split(","))
    by = rel.spread.set_index("method")
    have = [m for m in wanted if m in by.index]
    if not have:
        return (f"the relabelling runs hold none of {', '.join(map(method_label, wanted))}")
    return [_spread_part(test, m, by.loc[m], rel, spec) for m in have]
