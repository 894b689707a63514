"""The case study: which debate to show (:func:`case_study`, chosen from the columnar view's
tables) and the debate as a Markdown transcript, round by round (:func:`render_transcript`,
from the one record read with its texts), for notebook 08 and for anyone inspecting a
recorded run.

>>> import pandas as pd
>>> deb = pd.DataFrame({"debate": [0, 1], "debate_id": ["a", "b"], "method": "pear",
...                     "rounds": [1, 1], "correct": [True, True]})
>>> ar = pd.DataFrame({"debate": [0, 0, 0, 1, 1, 1], "round": 0,
...                    "correct": [True, True, False, True, False, False]})
>>> choose_case(deb, ar)
('b', 'the first PEAR debate where a minority correct answer in round 0 wins at the end')
>>> choose_case(deb, ar, debate_id="z")
Traceback (most recent call last):
ValueError: no debate 'z' among the 2 loaded debates
"""
from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
import pandas as pd

from pear.labels import dataset_label, method_label

__all__ = ["choose_case", "case_study", "render_transcript"]


def _minority_wins(debates: pd.DataFrame, agent_rounds: pd.DataFrame) -> np.ndarray:
    """Per debate: a correct answer held by fewer than half of the agents in round 0 wins
    the final vote (debates with rounds only)."""
    r0 = agent_rounds[agent_rounds["round"] == 0]
    counts = r0.groupby("debate")["correct"].agg(["sum", "size"])
    c = counts.reindex(debates["debate"].to_numpy())
    right, n = c["sum"].to_numpy(float), c["size"].to_numpy(float)
    return ((debates["rounds"].to_numpy() >= 1) & (right > 0) & (right < n / 2)
            & debates["correct"].to_numpy(bool))


def choose_case(debates: pd.DataFrame, agent_rounds: pd.DataFrame, debate_id: str = "",
                method: str = "pear") -> tuple[str, str]:
    """The id of the debate to show and why it was chosen: ``debate_id`` if given, else the
    first ``method`` debate (then any debate) where a correct answer held by a minority of
    the agents in round 0 wins the final vote, else the first ``method`` debate with
    rounds.  "First" is record order (the view's ``debate`` numbering)."""
    if debate_id:
        if not (debates["debate_id"] == debate_id).any():
            raise ValueError(f"no debate {debate_id!r} among the {len(debates)} loaded debates")
        return debate_id, f"debate {debate_id} (chosen by the debate_id parameter)"
    deb = debates.sort_values("debate", kind="stable")
    wins = _minority_wins(deb, agent_rounds)
    is_method = (deb["method"] == method).to_numpy()
    label = method_label(method)
    for pick, why in ((is_method & wins, f"the first {label} debate where a minority correct "
                       "answer in round 0 wins at the end"),
                      (wins, "the first debate (any method) where a minority correct answer "
                       "in round 0 wins at the end"),
                      (is_method & (deb["rounds"].to_numpy() >= 1),
                       f"the first {label} debate (no debate has a minority correct answer "
                       "that wins)")):
        hit = np.flatnonzero(pick)
        if hit.size:
            return str(deb["debate_id"].iloc[hit[0]]), why
    raise ValueError(f"no debate with rounds among the {len(debates)} loaded debates")


def case_study(res: Any, debate_id: str = "", method: str = "pear"
               ) -> tuple[dict[str, Any], str]:
    """The record to show (texts included) and why: :func:`choose_case` on ``res``'s
    tables (a :class:`pear.study.Results` or :class:`pear.view.View`), then only that
    debate's record is read."""
    chosen, why = choose_case(res.debates, res.agent_rounds, debate_id, method)
    return res.record(chosen), why


def _cell(text: Any, limit: int = 160) -> str:
    """Record text (model text: data, never markup) on one line, cut to ``limit``, with
    ``& < >`` escaped so that no page rendering the Markdown runs or loads anything."""
    s = re.sub(r"\s+", " ", str(text if text is not None else "")).strip()
    s = s if len(s) <= limit else s[: limit - 1] + "…"
    return html.escape(s, quote=False).replace("|", r"\|") or "–"


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


def _critique_line(c: dict[str, Any]) -> str:
    """One critique: who critiqued whom, the answers and confidences, the review (the
    paper's step_loc / correction / assessment, or an older record's recommended answer
    and text) and the decision with the target's reason."""
    decision = c["decision"] if c["delivered"] else "NOT DELIVERED"
    head = (f"- Agent {c['source'] + 1} → Agent {c['target'] + 1}: "
            f"{c['source_answer'] or '–'} (conf {c['source_confidence']}) critiques "
            f"{c['target_answer'] or '–'} (conf {c['target_confidence']})")
    if any(c.get(k) for k in ("step_loc", "correction", "assessment")):
        review = (f", assessment **{c.get('assessment') or '–'}**"
                  + (f", at {_cell(c['step_loc'], 60)}" if c.get("step_loc") else "")
                  + (f": “{_cell(c['correction'])}”" if c.get("correction") else ""))
    else:
        review = (f", recommends **{_cell(c.get('recommended_answer'), 60)}**"
                  + (f": “{_cell(c['critique'])}”" if c.get("critique") else ""))
    reason = f" ({_cell(c['reason'])})" if c.get("reason") else ""
    return f"{head}{review} → **{decision}**{reason}"


def render_transcript(record: dict[str, Any]) -> str:
    """A debate record as a Markdown transcript, round by round: the routed graph and the
    router's scores, every critique (who critiqued whom, the review, the confidences,
    ACCEPT/REJECT with the target's reason), every agent's answer, confidence and
    influence, the vote; then the final answer against the gold one.  Agents are
    numbered from 1; an answer cut at the token budget is marked "(truncated)"."""
    r = record
    label = method_label(r["method"])
    ds = dataset_label(r["dataset"])
    out = [f"## {label} on {ds}: question {_cell(r['question_id'], 80)}, seed {r['seed']}", "",
           f"Debate `{r['debate_id']}` · model `{r['model']}` (backend {r['backend']}) · "
           f"{r['n_agents']} agents · {r['rounds']} rounds · gold answer **{_cell(r['gold'])}**",
           ""]
    if r["backend"] == "simulated":
        out += ["*Simulated agents: answers, confidences and decisions come from the simulated "
                "population, not from a language model.*", ""]
    if r.get("prompt_style") == "compact":
        out += ["*Compact prompts (a stand-in for the study's templates, for tiny models).*",
                ""]
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
            out.append(_critique_line(c))
        if rd["critiques"]:
            out.append("")
        influence = rd.get("influence") or []
        out += ["| Agent | Answer | Confidence | Correct | Influence |",
                "|---:|:---|---:|:---:|---:|"]
        for a in rd["agents"]:
            rho = influence[a["agent"]] if a["agent"] < len(influence) else 0.0
            cut = " (truncated)" if a.get("truncated") else ""
            out.append(f"| {a['agent'] + 1} | {_cell(a['answer'], 80)}{cut} | {a['confidence']} | "
                       f"{'✓' if a['correct'] else '✗'} | {rho:.2f} |")
        out += ["", f"Vote after round {k}: **{_cell(rd['vote'], 80)}** "
                    f"({'correct' if rd['vote_correct'] else 'wrong'})", ""]
    out.append(f"**Final answer: {_cell(r['final_answer'], 80)}** — "
               f"{'correct' if r['correct'] else 'wrong'} (gold {_cell(r['gold'], 80)})")
    return "\n".join(out) + "\n"
