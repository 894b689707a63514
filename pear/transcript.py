"""The case study: which debate to show (:func:`case_study`) and the debate as a Markdown
transcript, round by round (:func:`render_transcript`), for notebook 08 and for anyone
inspecting a recorded run.  Both read records only (:mod:`pear.records`).

>>> case_study([], debate_id="d1")
Traceback (most recent call last):
ValueError: no debate 'd1' among the 0 loaded records
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from pear.config import METHOD_LABELS
from pear.metrics import DATASET_LABELS

__all__ = ["case_study", "render_transcript"]


def _minority_win(rec: dict[str, Any]) -> bool:
    rounds = rec["rounds_data"]
    if len(rounds) < 2:
        return False
    first = rounds[0]["agents"]
    right = sum(bool(a["correct"]) for a in first)
    return 0 < right < len(first) / 2 and bool(rec["correct"])


def case_study(records: Sequence[dict[str, Any]], debate_id: str = "",
               method: str = "pear") -> tuple[dict[str, Any], str]:
    """The debate to show and why it was chosen: ``debate_id`` if given, else the first
    ``method`` debate (then any debate) where a correct answer held by a minority of the
    agents in round 0 wins the final vote, else the first ``method`` debate with rounds."""
    if debate_id:
        for r in records:
            if r["debate_id"] == debate_id:
                return r, f"debate {debate_id} (chosen by the debate_id parameter)"
        raise ValueError(f"no debate {debate_id!r} among the {len(records)} loaded records")
    for pick, why in ((lambda r: r["method"] == method and _minority_win(r),
                       f"the first {METHOD_LABELS.get(method, method)} debate where a minority "
                       "correct answer in round 0 wins at the end"),
                      (_minority_win, "the first debate (any method) where a minority correct "
                                      "answer in round 0 wins at the end"),
                      (lambda r: r["method"] == method and len(r["rounds_data"]) > 1,
                       f"the first {METHOD_LABELS.get(method, method)} debate (no debate has a "
                       "minority correct answer that wins)")):
        for r in records:
            if pick(r):
                return r, why
    raise ValueError(f"no debate with rounds among the {len(records)} loaded records")


def _cell(text: Any, limit: int = 160) -> str:
    s = re.sub(r"\s+", " ", str(text if text is not None else "")).strip()
    s = s if len(s) <= limit else s[: limit - 1] + "…"
    return s.replace("|", r"\|") or "–"


def _question_text(rec: dict[str, Any]) -> list[str]:
    try:
        from pear.data import get_question
        q = get_question(rec["dataset"], rec["question_id"])
    except (ValueError, FileNotFoundError, KeyError):
        return []
    lines = ["> " + line for line in _cell(q.question, 1200).splitlines()]
    if q.choices:
        lines += [f"> {chr(65 + i)}. {_cell(c, 200)}" for i, c in enumerate(q.choices)]
    return lines + [""]


def render_transcript(record: dict[str, Any]) -> str:
    """A debate record as a Markdown transcript, round by round: the routed graph and the
    router's scores, every critique (who critiqued whom, its assessment and step, the
    confidences, ACCEPT/REJECT), every agent's answer, confidence and influence, the vote;
    then the final answer against the gold one.  Agents are numbered from 1."""
    r = record
    label = METHOD_LABELS.get(r["method"], r["method"])
    ds = DATASET_LABELS.get(r["dataset"], r["dataset"])
    out = [f"## {label} on {ds}: question {r['question_id']}, seed {r['seed']}", "",
           f"Debate `{r['debate_id']}` · model `{r['model']}` (backend {r['backend']}) · "
           f"{r['n_agents']} agents · {r['rounds']} rounds · gold answer **{_cell(r['gold'])}**",
           ""]
    if r["backend"] == "simulated":
        out += ["*Simulated agents: answers, confidences and decisions come from the simulated "
                "population, not from a language model.*", ""]
    out += _question_text(r)
    for rd in r["rounds_data"]:
        k = rd["round"]
        out.append(f"### Round {k}" + (" (initial answers)" if k == 0 else ""))
        out.append("")
        if rd["edges"]:
            edges = ", ".join(f"{s + 1}→{t + 1}" for s, t in rd["edges"])
            out += [f"Graph (source→target): {edges}", ""]
        if rd.get("router"):
            ro = rd["router"]
            out += [f"Router: pool of {ro['pool_size']} relabellings; chosen score "
                    f"{ro['score']:.3f} (T {ro['T']:.3f}, I {ro['I']:.3f}, L {ro['L']:.3f}; "
                    f"pool range {ro['score_min']:.3f} to {ro['score_max']:.3f})", ""]
        for c in rd["critiques"]:
            decision = c["decision"] if c["delivered"] else "NOT DELIVERED"
            out.append(f"- Agent {c['source'] + 1} → Agent {c['target'] + 1}: "
                       f"{c['source_answer'] or '–'} (conf {c['source_confidence']}) critiques "
                       f"{c['target_answer'] or '–'} (conf {c['target_confidence']}): "
                       f"{c.get('assessment') or 'no assessment'} → **{decision}**"
                       + (f". Step: “{_cell(c['step_loc'])}”" if c.get("step_loc") else "")
                       + (f"; correction: “{_cell(c['correction'])}”" if c.get("correction")
                          else ""))
        if rd["critiques"]:
            out.append("")
        influence = rd.get("influence") or []
        out += ["| Agent | Answer | Confidence | Correct | Influence |",
                "|---:|:---|---:|:---:|---:|"]
        for a in rd["agents"]:
            rho = influence[a["agent"]] if a["agent"] < len(influence) else 0.0
            out.append(f"| {a['agent'] + 1} | {_cell(a['answer'], 80)} | {a['confidence']} | "
                       f"{'✓' if a['correct'] else '✗'} | {rho:.2f} |")
        out += ["", f"Vote after round {k}: **{_cell(rd['vote'], 80)}** "
                    f"({'correct' if rd['vote_correct'] else 'wrong'})", ""]
    out.append(f"**Final answer: {_cell(r['final_answer'], 80)}** — "
               f"{'correct' if r['correct'] else 'wrong'} (gold {_cell(r['gold'], 80)})")
    return "\n".join(out) + "\n"
