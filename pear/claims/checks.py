"""The parts of claims that are not means over settings (:mod:`pear.claims.evaluate`): the study's
significance table and rank agreement, the design of its grid, and checks of this
repository's router on logged states (:mod:`pear.analysis.theory`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pear.core.config import FIXED_TOPOLOGIES
from pear.claims.values import named
from pear.claims.evidence import Source
from pear.claims.verdicts import ALPHA, PartResult, decide, fixed_part, mcnemar_needed, printed_numbers

__all__ = ["significance_parts", "rank_parts", "design_parts", "router_parts"]

# ----------------------------------------------------------------- significance, ranks, design

def significance_parts(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any]) -> list[PartResult] | str:
    from pear.analysis import stats
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
    stat, test = spec.get("stat"), spec.get("test")
    alpha = float(spec.get("alpha", ALPHA))
    out = []
    if stat == "weakest":
        model, dataset = spec["weakest"]
        worst_p = sig.loc[sig["p_exact"].idxmax()]
        worst_power = sig.loc[sig["power"].idxmin()]
        hit = all((r["study"], r["dataset"]) == (model, dataset) for r in (worst_p, worst_power))
        return [fixed_part(spec, float(hit), "", "count", src)]
    for i, (_, r) in enumerate(sig.iterrows()):
        where = f"{r['model']} / {r['dataset']}"
        b, c, n = int(r["b"]), int(r["c"]), int(r["n_pairs"])
        if test in ("mcnemar", "power"):
            needed = mcnemar_needed(b, c, n, alpha)
            if test == "mcnemar":
                p = float(r["p_exact"])
                verdict = ("supported" if b > c else "contradicted") if p < alpha \
                    else "inconclusive"
                value = p
            else:
                value = float(r["power"])
                verdict = "supported" if value >= float(spec["threshold"]) else "inconclusive"
            name = spec.get("label") or (f"exact McNemar p < {alpha}" if test == "mcnemar"
                                         else f"post-hoc power >= {spec.get('threshold')}")
            out.append(PartResult(name, where, value,
                                  value, value, None, "p-value" if test == "mcnemar" else
                                  "fraction", test, verdict,
                                  needed if verdict == "inconclusive" else None, n,
                                  f"b = {b}, c = {c}", "significance", ("pear",)))
        elif stat == "wilson_low":
            lo, hi = float(r["wilson_low"]), float(r["wilson_high"])
            t = float(spec.get("threshold", 0.5))
            verdict = "supported" if lo > t else "contradicted" if hi < t else "inconclusive"
            out.append(PartResult("Wilson interval of the win rate above 0.5", where, b / (b + c)
                                  if b + c else math.nan, lo, hi, None, "fraction", "greater",
                                  verdict, mcnemar_needed(b, c, n, ALPHA)
                                  if verdict == "inconclusive" else None, n, "",
                                  "significance", ("pear",)))
        elif stat == "p_from_bc":
            if not src.paper:
                return "a statement about the study's own table"
            p = stats.mcnemar(b, c).pvalue_exact
            printed = printed_numbers(str(r["p_printed"]))[0]
            s2 = dict(spec, printed_value=printed)
            out.append(fixed_part(s2, p, where, "p-value", src))
        elif stat == "gap_identity":
            gap = (b - c) / n - (float(r["pear_acc"]) - float(r["best_baseline_acc"]))
            out.append(fixed_part(spec, abs(gap), where, "fraction", src))
        elif stat == "acc_identity":
            full = src.full.get("accuracy")
            key = (r["study"] if src.paper else r["model"], r["dataset"])
            if full is None or key not in full.settings:
                continue
            row = full.point[full.settings.index(key)]
            pear = row[full.column("pear")]
            fixed = np.nanmax([row[full.column(m)] for m in FIXED_TOPOLOGIES
                               if full.column(m) is not None])
            dev = max(abs(float(r["pear_acc"]) - pear), abs(float(r["best_baseline_acc"]) - fixed))
            out.append(fixed_part(spec, dev, where, "fraction", src))
        else:
            raise ValueError(f"unknown significance part {stat or test!r}")
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
    from pear.analysis import theory
    from pear.core.router import score_pool, selection_probabilities
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

