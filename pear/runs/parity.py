"""Backend parity: the same seeded grid, greedy, on one model through two or more backends
(llama.cpp in process, llama.cpp's own OpenAI-compatible server, vLLM), compared per phase.

A debate has three phases: ``initial`` (round 0's answers), ``critique`` (one call per source
and round, one review per routed edge) and ``revision`` (one call per agent and round).
:func:`phase_stats` reads a run's records into per-phase call, parse-failure and truncation
counts; :func:`compare` pairs two runs' debates by (dataset, method, seed, question) and
reports, per phase, whether the prompts cost the same tokens, how often the answers and
confidences agree, the parse rates and the final accuracy; :func:`parity_table` writes the
table as Markdown and LaTeX.

Prompt tokens are recorded per debate, not per call.  A CoT debate is one call, so its prompt
tokens are the initial phase's exactly and must be equal on two backends that share the chat
template and tokenizer; later phases quote earlier outputs, so their prompts are equal only
where the transcripts agree.

The runs: ``pear parity-run BACKEND OUT [--model-path P] [--model M] [--base-url U]``
(:func:`run_side`) runs :data:`PARITY_GRID` greedily (temperature 0) into ``OUT`` with the
environment's backend; ``pear parity RUN_A RUN_B ...`` compares them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from pear.paths import cache_path
from pear.runs.factory import make_backend
from pear.runs.grid import preset
from pear.runs.runner import run

__all__ = ["PHASES", "PARITY_GRID", "PhaseStats", "phase_stats", "compare", "parity_table",
           "parity_experiment", "run_side"]

PHASES = ("initial", "critique", "revision")

PARITY_GRID: dict[str, Any] = {
    "datasets": ("gsm8k",), "methods": ("cot", "clique", "pear"), "seeds": (0,),
    "n_questions": 3, "rounds": 1, "n_agents": 3, "temperature": 0.0, "max_tokens": 96,
    "prompt_style": "compact", "full_datasets": (),
}
"""The grid every backend runs for the parity table (our choice: small enough for the
real engine on 2 CPU cores, every phase present; greedy so that backends can agree)."""


@dataclass(frozen=True)
class PhaseStats:
    """One phase of one run: calls (reviews for ``critique``), parse failures, truncations."""

    phase: str
    calls: int
    parse_failures: int
    truncated: int | None
    """Calls stopped at the token budget; None where the records cannot tell."""

    @property
    def parse_rate(self) -> float:
        return 1.0 - self.parse_failures / self.calls if self.calls else float("nan")

    @property
    def truncation_rate(self) -> float | None:
        return None if self.truncated is None or not self.calls else self.truncated / self.calls


def _agents(rec: dict[str, Any], phase: str) -> Iterable[dict[str, Any]]:
    rounds = rec["rounds_data"]
    chosen = rounds[:1] if phase == "initial" else rounds[1:]
    return (a for rd in chosen for a in rd["agents"])


def phase_stats(records: Sequence[dict[str, Any]]) -> dict[str, PhaseStats]:
    """Per phase: how many calls, parse failures and truncated calls ``records`` hold.

    Critique parse failures are counted per review (routed edge); critique truncations are
    the debate's truncated calls that are not answer calls.

    >>> rec = {"rounds_data": [{"agents": [{"parse_error": None, "truncated": True}],
    ...                         "critiques": []}], "truncated_calls": 1}
    >>> phase_stats([rec])["initial"]
    PhaseStats(phase='initial', calls=1, parse_failures=0, truncated=1)
    """
    out = {}
    for phase in ("initial", "revision"):
        agents = [a for r in records for a in _agents(r, phase)]
        out[phase] = PhaseStats(phase, len(agents),
                                sum(a.get("parse_error") is not None for a in agents),
                                sum(bool(a.get("truncated")) for a in agents))
    reviews = [c for r in records for rd in r["rounds_data"][1:] for c in rd["critiques"]]
    known = all(r.get("truncated_calls") is not None for r in records)
    answer_trunc = out["initial"].truncated + out["revision"].truncated
    out["critique"] = PhaseStats(
        "critique", len(reviews), sum(c.get("parse_error") is not None for c in reviews),
        sum(r["truncated_calls"] for r in records) - answer_trunc if known else None)
    return {p: out[p] for p in PHASES}


def _key(rec: dict[str, Any]) -> tuple:
    return rec["dataset"], rec["method"], rec["seed"], rec["question_id"]


def compare(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Compare two runs' records of the same grid, per phase (see the module docstring).

    Returns ``{"paired": n, "backends": (A, B), "phases": {phase: {...}}, "cot_prompt_tokens_equal":
    (equal, of), "accuracy": (acc_a, acc_b), "final_agreement": share}``; each phase holds
    ``answer_agreement`` and ``confidence_agreement`` (over agent answers present in both) and
    both runs' ``parse_rate``/``truncation_rate``.  Raises when the runs share no debate."""
    ia, ib = {_key(r): r for r in a}, {_key(r): r for r in b}
    keys = sorted(set(ia) & set(ib), key=repr)
    if not keys:
        raise ValueError("the two runs share no debate (dataset, method, seed, question): "
                         "run the same grid on both backends")
    pa, pb = [ia[k] for k in keys], [ib[k] for k in keys]
    sa, sb = phase_stats(pa), phase_stats(pb)
    phases: dict[str, dict[str, Any]] = {}
    for phase in PHASES:
        row: dict[str, Any] = {
            "parse_rate": (sa[phase].parse_rate, sb[phase].parse_rate),
            "truncation_rate": (sa[phase].truncation_rate, sb[phase].truncation_rate),
            "calls": (sa[phase].calls, sb[phase].calls)}
        if phase == "critique":
            pairs = [(x, y) for ra, rb in zip(pa, pb)
                     for x, y in _paired_critiques(ra, rb)]
            row["answer_agreement"] = _share(x.get("decision") == y.get("decision")
                                             for x, y in pairs)
            row["confidence_agreement"] = None
        else:
            pairs = [(x, y) for ra, rb in zip(pa, pb)
                     for x, y in zip(_agents(ra, phase), _agents(rb, phase))]
            row["answer_agreement"] = _share(x["canonical"] == y["canonical"] for x, y in pairs)
            row["confidence_agreement"] = _share(x["confidence"] == y["confidence"]
                                                 for x, y in pairs)
        row["paired"] = len(pairs)
        phases[phase] = row
    cot = [(ra, rb) for ra, rb in zip(pa, pb) if ra["method"] == "cot"]
    return {
        "paired": len(keys),
        "backends": (_backend(pa), _backend(pb)),
        "phases": phases,
        "cot_prompt_tokens_equal": (sum(ra["tokens"]["prompt"] == rb["tokens"]["prompt"]
                                        for ra, rb in cot), len(cot)),
        "debate_prompt_tokens_equal": (sum(ra["tokens"]["prompt"] == rb["tokens"]["prompt"]
                                           for ra, rb in zip(pa, pb)), len(keys)),
        "accuracy": (_share(r["correct"] for r in pa), _share(r["correct"] for r in pb)),
        "final_agreement": _share(ra["final_answer"] == rb["final_answer"]
                                  for ra, rb in zip(pa, pb)),
    }


def _paired_critiques(ra: dict[str, Any], rb: dict[str, Any]) -> list[tuple[dict, dict]]:
    """Critiques on the same (round, source, target) in both debates."""
    def index(rec):
        return {(rd["round"], c["source"], c["target"]): c
                for rd in rec["rounds_data"][1:] for c in rd["critiques"]}
    xa, xb = index(ra), index(rb)
    return [(xa[k], xb[k]) for k in sorted(set(xa) & set(xb))]


def _share(flags: Iterable[bool]) -> float | None:
    flags = list(flags)
    return sum(bool(f) for f in flags) / len(flags) if flags else None


def _backend(records: Sequence[dict[str, Any]]) -> str:
    return "+".join(sorted({r["backend"] for r in records}))


def _pct(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.0f}%"


def parity_table(runs: dict[str, Sequence[dict[str, Any]]]) -> tuple[str, str]:
    """Markdown and LaTeX tables comparing every run with the first (``{label: records}``)."""
    labels = list(runs)
    if len(labels) < 2:
        raise ValueError(f"parity needs two runs or more, got {len(labels)}")
    ref = labels[0]
    head = ["vs " + ref, "phase", "prompt tokens equal", "answer agreement",
            "confidence agreement", "parse rate (ref / other)", "truncation (ref / other)"]
    rows: list[list[str]] = []
    for other in labels[1:]:
        c = compare(runs[ref], runs[other])
        eq, of = c["cot_prompt_tokens_equal"]
        deq, dof = c["debate_prompt_tokens_equal"]
        for phase in PHASES:
            p = c["phases"][phase]
            tokens = (f"{eq}/{of} (CoT calls)" if phase == "initial"
                      else f"{deq}/{dof} debates" if phase == "revision" else "")
            rows.append([other, phase, tokens, _pct(p["answer_agreement"]),
                         _pct(p["confidence_agreement"]),
                         " / ".join(_pct(x) for x in p["parse_rate"]),
                         " / ".join(_pct(x) for x in p["truncation_rate"])])
        acc = " / ".join(_pct(x) for x in c["accuracy"])
        rows.append([other, "final", "", _pct(c["final_agreement"]), "", f"accuracy {acc}",
                     f"{c['paired']} debates"])
    md = "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
    md += "".join("| " + " | ".join(r) + " |\n" for r in rows)
    tex = ("\\begin{tabular}{" + "l" * len(head) + "}\n\\toprule\n"
           + " & ".join(head) + " \\\\\n\\midrule\n"
           + "".join(" & ".join(x.replace("%", "\\%").replace("_", "\\_") for x in r)
                     + " \\\\\n" for r in rows)
           + "\\bottomrule\n\\end{tabular}\n")
    return md, tex


# ----------------------------------------------------------------- producing the runs

def parity_experiment(**overrides: Any) -> Any:
    """The smoke preset narrowed to :data:`PARITY_GRID` (plus ``overrides``)."""
    return preset("smoke", **{**PARITY_GRID, **overrides})


def run_side(backend: str, out: str | os.PathLike[str], *, model: str | None = None,
             model_path: str | None = None, base_url: str | None = None,
             **overrides: Any) -> Any:
    """Run the parity grid on one backend (as ``pear run`` builds it) into ``out``."""
    exp = parity_experiment(**overrides)
    be = make_backend(backend, exp=exp, model=model, model_path=model_path,
                      base_urls=[base_url] if base_url else None,
                      cache_path=cache_path(out))
    return run(exp, be, out, progress=False)
