"""The claims ledger: a verdict on every claim of the study, from a build's records.

``data/paper/claims.csv`` lists the study's claims (id, quote, kind, printed value, how to
recompute it, the value recomputed from the study's own tables, whether those agree);
``data/paper/claims_recompute.toml`` says, as data, how each one is recomputed here: its
parts (each a number or a comparison over settings and methods, with its test) or the
reason no build can decide it.  :func:`ledger` evaluates every row twice through the same
evaluators: on a build's records (:func:`pear.claims.evidence.build_source`: values with two-way
bootstrap intervals over questions and seeds, or the exact test the claim names) and on the
study's printed tables (:func:`pear.claims.evidence.paper_source`: "recomputed from the tables").

A part's verdict (our rules; every threshold is in the TOML or below):

- ``estimate`` (a printed number): *contradicted* when the 95 % interval misses the printed
  value's rounding interval; *supported* when it meets it and its half-width is within the
  unit's :data:`MARGINS`; else *inconclusive*, with the questions per setting that would
  shrink the interval to the margin (n x (half-width / margin)^2);
- ``greater`` / ``less`` (a comparison with a threshold, ``tol`` allowed on the claimed
  side): *supported* when the interval lies on the claimed side, *contradicted* when it
  lies on the other, else *inconclusive* with the questions per setting that would detect
  the observed difference at 80 % power (normal approximation);
- ``within`` (bounds), ``exact`` (an identity or a count, no sampling), ``mcnemar`` (exact
  test, alpha from the claim; inconclusive with the questions that reach 80 % power at the
  observed discordance), ``power`` (post-hoc power against its threshold).

A claim is *supported* when at least ``quorum`` of its parts are, *contradicted* when too
many are, else *inconclusive*; *not covered by this build* when no part could be evaluated
(a model, dataset, method or scope missing).  Builds of simulated agents and smoke builds
give *not evidence*: the finding is still shown, as a statement about the simulated
mechanism (checks of the router itself, ``about = "router"``, stand in every build).

>>> len(load_claims()), sorted(set(load_claims()["kind"]))[:3]
(104, ['correlation', 'cost', 'count'])
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from pear.claims.checks import (design_parts, rank_parts, relabelling_parts, router_parts,
                                significance_parts)
from pear.claims.values import numeric
from pear.analysis.compare import PAPER_DIR
from pear.claims.evidence import Source
from pear.catalog.labels import method_order, MAIN_METHODS
from pear.claims.verdicts import PartResult, describe, printed_numbers
from pear.claims import evidence
from pear.core.methods import FIXED_TOPOLOGIES

__all__ = ["VERDICTS", "KINDS", "CLAIMS_FILE", "ADDED_CLAIMS_FILE", "RECOMPUTE_FILE",
           "NOTED_TESTS", "NOT_EVIDENCE", "PartResult", "ClaimResult",
           "load_claims", "load_recompute", "printed_numbers", "evaluate", "ledger",
           "methods_named", "not_evidence_text",
           "verdict_counts", "summarise", "fmt"]

IMPORTED_SPEAK_TO = ("diag-", "rounds-")
"""The claim families a build of imported debates (``pear import``) can speak to: the
diagnostics and the round-wise dynamics of debates; every other claim (method comparisons,
costs, the study's grid) is *not covered* by such a build, and its ledger says so."""
VERDICTS = ("supported", "contradicted", "inconclusive", "not covered", "not evidence")
NOT_EVIDENCE = {"simulated": ("simulated agents", "the simulated mechanism"),
                "smoke": ("a smoke build (tiny model, tiny grid)", "the smoke setup")}
"""Why a build's findings are not evidence (the ledger's ``not_evidence`` field): its kind
-> (the agents, what a finding on them is about); :func:`not_evidence_text` says it."""
KINDS = ("number", "count", "ordering", "significance", "correlation", "cost", "trend",
         "mechanism")
CLAIMS_FILE = PAPER_DIR / "claims.csv"
ADDED_CLAIMS_FILE = PAPER_DIR / "claims_added.csv"
"""Claims of the study's text that the transcription (``claims.csv``, copied unchanged)
leaves out, added by this repository in its columns; each sits after the last claim of its
section."""
RECOMPUTE_FILE = PAPER_DIR / "claims_recompute.toml"

# ----------------------------------------------------------------- the claims as data

def load_claims() -> pd.DataFrame:
    """``data/paper/claims.csv`` as strings (empty cells ""), in its order, with the claims of
    :data:`ADDED_CLAIMS_FILE` each after the last claim of its section (at the end when its
    section has none)."""
    claims = pd.read_csv(CLAIMS_FILE, dtype=str, keep_default_na=False)
    if not ADDED_CLAIMS_FILE.is_file():
        return claims
    added = pd.read_csv(ADDED_CLAIMS_FILE, dtype=str, keep_default_na=False)
    if list(added.columns) != list(claims.columns):
        raise ValueError(f"{ADDED_CLAIMS_FILE.name}: columns {list(added.columns)}, not "
                         f"claims.csv's {list(claims.columns)}")
    rows = claims.to_dict("records")
    for row in added.to_dict("records"):
        same = [i for i, r in enumerate(rows) if r["section"] == row["section"]]
        rows.insert(same[-1] + 1 if same else len(rows), row)
    out = pd.DataFrame(rows, columns=claims.columns)
    if out["id"].duplicated().any():
        raise ValueError(f"{ADDED_CLAIMS_FILE.name}: a claim id already in claims.csv")
    return out


def load_recompute() -> dict[str, Any]:
    """The recompute table; an error names a claim without one, an entry without a claim,
    and an entry with neither parts nor a reason."""
    with open(RECOMPUTE_FILE, "rb") as fh:
        raw = tomllib.load(fh)
    ids = list(load_claims()["id"])
    entries = raw.get("claims", {})
    missing = [i for i in ids if i not in entries]
    extra = [i for i in entries if i not in ids]
    empty = [i for i, e in entries.items() if not e.get("parts") and not e.get("reason")]
    for what, bad in (("no recompute entry", missing), ("an entry but no claim", extra),
                      ("neither parts nor a reason", empty)):
        if bad:
            raise ValueError(f"{'claims_recompute.toml'}: {len(bad)} claims with {what} "
                             f"(first: {bad[0]!r})")
    return raw


# ----------------------------------------------------------------- a claim, then the ledger

def _expand(spec: Mapping[str, Any], src: Source) -> list[dict[str, Any]]:
    """Concrete parts: ``r`` over rounds, ``b_each`` over methods, printed numbers looked up."""
    out = [dict(spec)]
    if "b_each" in spec:
        out = [dict(s, b=b, label=f"{s.get('label', '')} {b}".strip())
               for s in out for b in spec["b_each"]]
    if "r" in spec:
        rounds = sorted(int(m.split("_")[1]) for m in src.cells if m.startswith("round_"))
        r = spec["r"]
        last = max(rounds) if rounds else 0
        wanted = list(range(1, last + 1)) if r in ("each", "increments") else list(r)
        if r == "increments":
            wanted = wanted[1:]
        expanded = []
        for s in out:
            for k in wanted:
                t = dict(s, metric=s["metric"].format(r=k))
                if "metric_b" in s:
                    t["metric_b"] = s["metric_b"].format(r=k)
                if r == "increments":
                    t["metric_prev"] = s["metric"].format(r=k - 1)
                t["label"] = f"{s['label']} (round {k})"
                expanded.append(t)
        out = expanded or [dict(spec, metric="round_missing")]
    return out


def _resolve_sets(spec: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with set names of method expressions (``max:fixed``) spelled out."""
    sets = raw.get("sets", {})
    out = dict(spec)
    for key in ("a", "b", "c"):
        if isinstance(out.get(key), str) and ":" in out[key]:
            agg, _, names = out[key].partition(":")
            out[key] = f"{agg}:" + ",".join(m for n in names.split(",")
                                             for m in sets.get(n.strip(), [n.strip()]))
    if "b_each" in out and isinstance(out["b_each"], str):
        out["b_each"] = sets.get(out["b_each"], out["b_each"].split(","))
    return out


_IMPLICIT_METHODS = {"pareto": "main", "spearman": "main", "sig": "fixed+pear"}
"""Parts whose methods are implicit: a cost-accuracy frontier and the rank agreement are
over the study's main table (:data:`pear.catalog.labels.MAIN_METHODS`); the significance
test sets PEAR against the best fixed topology."""


def methods_named(claim_id: str, raw: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The methods claim ``claim_id`` compares, in table order: those its parts name (sets
    spelled out) and those a part's operation implies (:data:`_IMPLICIT_METHODS`).  A build
    without one of them evaluates the claim on fewer methods than it names (``max:fixed``
    on a grid without Star is the best of the others).

    >>> methods_named("intro-beats-fixed-all-settings")
    ('clique', 'star', 'chain', 'ring', 'pear')
    >>> methods_named("abs-benchmarks-models-count")
    ()
    """
    raw = raw if raw is not None else load_recompute()
    entry = raw["claims"].get(claim_id)
    if entry is None:
        raise ValueError(f"unknown claim {claim_id!r}: see {CLAIMS_FILE.name}")
    out: list[str] = []
    for spec in entry.get("parts", []):
        spec = _resolve_sets(spec, raw)
        exprs = [spec[k] for k in ("a", "b", "c") if isinstance(spec.get(k), str)]
        exprs += list(spec.get("b_each", []))
        for e in exprs:
            out += [m.strip() for m in e.partition(":")[2 if ":" in e else 0].split(",")
                    if m.strip()]
        implied = _IMPLICIT_METHODS.get(spec.get("op", ""))
        out += list(MAIN_METHODS if implied == "main" else (*FIXED_TOPOLOGIES, "pear")
                    if implied else ())
    return tuple(method_order(set(out)))


def _evaluate_part(spec: Mapping[str, Any], src: Source, raw: Mapping[str, Any],
                   numbers: list[tuple[float, float]]) -> list[PartResult]:
    spec = _resolve_sets(dict(spec, label=spec.get("label") or describe(spec)), raw)
    if "printed" in spec:
        spec["printed_value"] = numbers[spec["printed"]]
    if "printed_each" in spec:
        spec["printed_numbers"] = numbers
    if spec.get("paper_only") and not src.paper:
        return []   # a statement about the study's own table: the consistency table has it
    op = spec.get("op")
    handler = {"sig": significance_parts, "spearman": rank_parts, "design": design_parts,
               "router": router_parts, "relabelling": relabelling_parts}.get(op)
    results: list[PartResult] = []
    for concrete in _expand(spec, src):
        got = handler(concrete, src, raw) if handler else numeric(concrete, src, raw)
        if isinstance(got, str):
            results.append(PartResult(concrete.get("label") or describe(concrete), note=got))
        else:
            results += got
    return results


def _combine_verdict(parts: list[PartResult], quorum: float) -> tuple[str, int | None]:
    """Contradicted when more parts fail than the quorum allows; else not covered when a
    part could not be evaluated; else supported when the quorum holds, or inconclusive."""
    judged = [p for p in parts if p.verdict != "not covered"]
    if not judged:
        return "not covered", None
    need = math.ceil(quorum * len(parts) - 1e-9)
    sup = sum(p.verdict == "supported" for p in judged)
    con = sum(p.verdict == "contradicted" for p in judged)
    if con > len(parts) - need:
        return "contradicted", None
    if len(judged) < len(parts):
        return "not covered", None
    if sup >= need:
        return "supported", None
    sizes = [p.n_needed for p in judged if p.verdict == "inconclusive" and p.n_needed]
    return "inconclusive", (max(sizes) if sizes else None)


@dataclass
class ClaimResult:
    """One row of the ledger before it becomes a DataFrame row."""

    finding: str
    n_needed: int | None
    parts: list[PartResult]
    table_finding: str
    table_parts: list[PartResult] = field(default_factory=list)
    reason: str = ""


def evaluate(row: Mapping[str, Any], entry: Mapping[str, Any], build: Source,
             paper: Source, raw: Mapping[str, Any]) -> ClaimResult:
    """One claim on a build and on the study's tables."""
    if entry.get("reason"):
        return ClaimResult("not covered", None, [], "not recomputable", [], entry["reason"])
    numbers = printed_numbers(row["printed"])
    quorum = float(entry.get("quorum", 1.0))
    parts = [p for spec in entry["parts"] for p in _evaluate_part(spec, build, raw, numbers)]
    tparts = [p for spec in entry["parts"] for p in _evaluate_part(spec, paper, raw, numbers)]
    finding, needed = _combine_verdict(parts, quorum)
    known = [p for p in tparts if p.verdict != "not covered"]
    tverdict, _ = _combine_verdict(known, quorum)
    table = {"supported": "holds", "contradicted": "does not hold"}.get(tverdict,
                                                                         "not recomputable")
    if table == "holds" and len(known) < len(tparts):
        table = "holds where recomputable"
    reasons = sorted({p.note for p in parts if p.verdict == "not covered" and p.note})
    if finding == "not covered" and not parts:
        reasons = ["a statement about the study's own tables: see the internal-consistency "
                   "table"]
    return ClaimResult(finding, needed, parts, table, tparts,
                       "; ".join(reasons) if finding == "not covered" else "")


_EVIDENCE = {"accuracy": "table:main_results", "tokens": "table:tokens", "w2r": "table:diagnostics",
             "r2w": "table:diagnostics", "net": "table:diagnostics",
             "acceptance": "table:diagnostics", "cross_answer": "table:diagnostics",
             "source_confidence": "table:diagnostics", "influence_entropy": "table:diagnostics",
             "significance": "table:significance", "spearman": "table:spearman"}


def _evidence(entry: Mapping[str, Any], parts: list[PartResult]) -> list[str]:
    """The tables and figures behind a claim (``table:NAME``, ``figure:NAME``), as the
    build writes them into figures/."""
    if "evidence" in entry:
        return list(entry["evidence"])
    out: list[str] = []
    for spec, p in zip(entry.get("parts", []) * max(1, len(parts)), parts):
        m = p.metric or spec.get("metric", "accuracy")
        if spec.get("scope") == "full" or spec.get("op") == "scope_change":
            out.append("table:full_dataset")
        elif m.startswith("round_"):
            out.append("figure:round_curves")
        elif m in _EVIDENCE:
            out.append(_EVIDENCE[m])
        if any(x.startswith("pear_") for x in p.methods):
            out.append("figure:ablation")
        if m == "tokens" or spec.get("op") == "pareto":
            out.append("figure:pareto")
    if not entry.get("parts"):
        out.append("case_study" if "case study" in entry.get("reason", "") else "")
    return [x for x in dict.fromkeys(out) if x]


def _debates(parts: Iterable[PartResult], limit: int = 12) -> list[str]:
    """``model|dataset|method`` of the debates behind a claim's parts (the first ``limit``)."""
    out = []
    for p in parts:
        for model, dataset in p.settings:
            out += [f"{model}|{dataset}|{m}" for m in p.methods]
    return list(dict.fromkeys(out))[:limit]


def fmt(value: float | None, unit: str) -> str:
    """A value as the ledger prints it.

    >>> fmt(0.7012, "fraction"), fmt(4.23, "points"), fmt(32310.0, "tokens"), fmt(None, "")
    ('0.701', '4.2', '32.3k', '–')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if unit == "tokens":
        return f"{value / 1000:.1f}k"
    if unit in ("points", "percent"):
        return f"{value:.1f}"
    if unit == "p-value":
        return f"{value:.2g}"
    if unit in ("count", "edges"):
        return f"{value:g}"
    return f"{value:.3f}"


NOTED_TESTS = ("randomisation", "paired")
"""Tests whose parts show their note (the test's p and what it was against) beside the
value: the relabelling study's (:func:`pear.claims.checks.relabelling_parts`)."""


def summarise(parts: list[PartResult]) -> str:
    """The parts of a claim in one line: each part's value, interval and verdict, or for
    many per-setting parts the counts per verdict and the weakest part."""
    shown = [p for p in parts if p.verdict != "not covered" or not p.note]
    if not shown:
        return ""

    def one(p: PartResult) -> str:
        ci = f" [{fmt(p.low, p.unit)}, {fmt(p.high, p.unit)}]" if p.low != p.high else ""
        where = f" ({p.setting})" if p.setting else ""
        test = f" ({p.note})" if p.test in NOTED_TESTS and p.note else ""
        return f"{p.label}{where}: {fmt(p.value, p.unit)}{ci}{test} {p.verdict}"
    if len(shown) <= 3:
        return "; ".join(one(p) for p in shown)
    counts = pd.Series([p.verdict for p in shown]).value_counts()
    order = ["contradicted", "inconclusive", "supported", "not covered"]
    worst = next(p for v in order for p in shown if p.verdict == v)
    return (f"{len(shown)} parts: " + ", ".join(f"{counts[v]} {v}" for v in order if v in counts)
            + f"; first {worst.verdict}: {one(worst)}")


def ledger(subset: Any = None, full: Any = None, *,
           rng: np.random.Generator | int | None = None,
           n_boot: int | None = None, build: Source | None = None,
           paper: Source | None = None,
           relabelling: evidence.Relabelling | str | None = None) -> pd.DataFrame:
    """One row per claim of ``claims.csv``, in its order: the claim (``id, section, kind,
    quote, printed, unit, scope``), the study's own check (``from_tables``, ``consistent``
    as transcribed; ``recomputed`` and ``table_finding`` by these evaluators from the
    printed tables), and this build's ``reproduced`` values, ``finding`` (supported,
    contradicted, inconclusive, not covered), ``verdict`` (the finding, or "not evidence"
    for simulated and smoke builds), ``not_evidence`` (why not: a key of
    :data:`NOT_EVIDENCE`, "simulated" or "smoke"; None for evidence; :func:`not_evidence_text`
    says it), ``n_needed`` (questions per setting that would decide an inconclusive claim),
    ``reason`` (the finding's own), ``evidence`` (tables and figures), ``debates``
    (``model|dataset|method``), and the evaluated ``parts`` and ``table_parts``.

    ``subset``/``full``: :class:`pear.paper.study.Results` (or views) of a build; or ``build``,
    a ready :class:`pear.claims.evidence.Source`.  ``rng`` (a generator, or the seed of one)
    draws the bootstrap replicates, ``n_boot`` of them (default
    :data:`pear.claims.evidence.N_BOOT`); ``n_boot=0`` judges the point values alone (every
    interval collapses to its value: a comparison holds when its value lies on the claimed
    side, a printed number when the value rounds to it), as :mod:`pear.paper.ensemble`
    counts claims across populations.  ``paper``: the study's side
    (:func:`pear.claims.evidence.paper_source`, made here when not given; the same for every
    build, so a caller that judges many builds makes it once).  ``relabelling``: the build's
    relabelling study (:class:`pear.claims.evidence.Relabelling`: notebook 19's tables from its
    records, :func:`pear.paper.ledger.load_relabelling`) or why it has none (None: the
    ``build``'s own, else :data:`pear.claims.evidence.NO_RELABELLING`)."""
    raw = load_recompute()
    claims = load_claims()
    if build is None:
        if subset is None or rng is None:
            raise ValueError("give subset results and rng=numpy.random.default_rng(seed), or "
                             "build=pear.claims.evidence.build_source(...)")
        if not isinstance(rng, np.random.Generator):
            rng = np.random.default_rng(rng)
        build = evidence.build_source(subset, full, rng=rng,
                                      n_boot=evidence.N_BOOT if n_boot is None else n_boot,
                                      relabelling=relabelling)
    elif relabelling is not None:
        build = dataclasses.replace(build, relabelling=relabelling)
    paper = paper if paper is not None else evidence.paper_source()
    rows = []
    for _, row in claims.iterrows():
        entry = raw["claims"][row["id"]]
        try:
            res = evaluate(row, entry, build, paper, raw)
        except (KeyError, IndexError, ValueError, TypeError) as err:
            raise ValueError(f"claim {row['id']!r}: {type(err).__name__}: {err}") from err
        router = entry.get("about") == "router"
        not_evidence = None if router else "simulated" if build.simulated else \
            "smoke" if build.smoke else None
        reason = res.reason
        if build.imported and not str(row["id"]).startswith(IMPORTED_SPEAK_TO):
            res = dataclasses.replace(res, finding="not covered")
            reason = ("imported debates (another framework's protocol: no PEAR, no "
                      "confidences, critiques or token counts) cannot speak to this claim")
        elif build.imported:
            reason = ("imported debates: the finding is about those debates' round dynamics, "
                      "under their own protocol" + (f"; {reason}" if reason else ""))
        if res.finding == "inconclusive":
            noted = [p.note for p in res.parts if p.test in NOTED_TESTS and p.note
                     and p.verdict == "inconclusive"]
            reason = ((f"{res.n_needed} questions per setting would decide it"
                       if res.n_needed <= 10 ** 6 else "more than a million questions per "
                       "setting would be needed to decide it (an effect near zero)")
                      if res.n_needed else "; ".join(noted) if noted else "the interval "
                      "straddles the claim and no sample size follows from it (a nil "
                      "difference, or a test of ranks)")
        if router:
            reason = ("a check of this repository's router on logged states: it holds "
                      "whatever agents produced them" + (f"; {reason}" if reason else ""))
        rows.append({
            **{k: row[k] for k in ("id", "section", "kind", "quote", "printed", "unit",
                                    "scope", "recompute", "from_tables", "consistent",
                                    "note")},
            "recomputed": summarise(res.table_parts), "table_finding": res.table_finding,
            "reproduced": summarise(res.parts), "finding": res.finding,
            "verdict": "not evidence" if not_evidence else res.finding,
            "not_evidence": not_evidence, "n_needed": res.n_needed, "reason": reason,
            "evidence": _evidence(entry, res.parts), "debates": _debates(res.parts),
            "parts": res.parts, "table_parts": res.table_parts})
    out = pd.DataFrame(rows)
    _check(out, claims)
    return out


def not_evidence_text(kind: str | None, finding: str) -> str:
    """In words, why a finding (``finding``) is not evidence (``kind``: the ledger's
    ``not_evidence``); ``""`` for evidence.

    >>> not_evidence_text("simulated", "supported")
    "simulated agents: the finding (supported) is a statement about the simulated mechanism, not about the study's models"
    """
    if not kind or (isinstance(kind, float) and math.isnan(kind)):
        return ""
    if kind not in NOT_EVIDENCE:
        raise ValueError(f"invalid not_evidence {kind!r}: one of {', '.join(NOT_EVIDENCE)}")
    who, what = NOT_EVIDENCE[kind]
    return f"{who}: the finding ({finding}) is a statement about {what}, not about the study's models"


def _check(out: pd.DataFrame, claims: pd.DataFrame) -> None:
    """Every claim once, in order, with a known verdict, and a reason wherever the verdict
    is not a finding on the build's records (for "not evidence": why not, its field)."""
    if list(out["id"]) != list(claims["id"]):
        raise AssertionError("the ledger does not hold one row per claim, in order")
    bad = out[~out["verdict"].isin(VERDICTS) | ~out["finding"].isin(VERDICTS[:4])]
    if len(bad):
        raise AssertionError(f"claim {bad['id'].iloc[0]!r} has no known verdict")
    unsaid = out["verdict"].isin(["not covered", "inconclusive"]) \
        | out["finding"].isin(["not covered", "inconclusive"])
    silent = out[(unsaid & (out["reason"].str.len() == 0))
                 | ((out["verdict"] == "not evidence") & out["not_evidence"].isna())]
    if len(silent):
        raise AssertionError(f"claim {silent['id'].iloc[0]!r} is {silent['verdict'].iloc[0]} "
                             "without a reason")


def verdict_counts(ledger: pd.DataFrame) -> pd.DataFrame:
    """Claims per verdict and per finding (every verdict listed, zeros included)."""
    return pd.DataFrame({"verdict": ledger["verdict"].value_counts().reindex(VERDICTS,
                                                                             fill_value=0),
                         "finding": ledger["finding"].value_counts().reindex(VERDICTS,
                                                                             fill_value=0)})
