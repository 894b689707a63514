"""The case study: which debate to show (:func:`case_study`, chosen from the columnar view's
tables), what kind of debate each one is (:func:`debate_flags`: minority-correct won,
majority-correct lost, stopped early), and one debate round by round, from the one record
read with its texts: as Markdown (:func:`render_transcript`, notebook 08) and as an HTML
page with every text in full (:func:`render_transcript_html`, the results site and
``pear show RUN --debate ID --html``).  Every text of a record is HTML-escaped.

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
from importlib.resources import files
from string import Template
from typing import Any

import numpy as np
import pandas as pd

from pear.catalog.labels import dataset_label, method_label, model_label
from pear.tasks.benchmarks import get_question
from pear.backends.registry import SIMULATED

__all__ = ["choose_case", "case_study", "render_transcript", "render_transcript_html",
           "debate_flags", "KIND_LABELS", "PAGE_CSS", "html_page"]


def _minority_wins(debates: pd.DataFrame, agent_rounds: pd.DataFrame) -> np.ndarray:
    """Per debate: a correct answer held by fewer than half of the agents in round 0 wins
    the final vote (debates with rounds only)."""
    r0 = agent_rounds[agent_rounds["round"] == 0]
    counts = r0.groupby("debate")["correct"].agg(["sum", "size"])
    c = counts.reindex(debates["debate"].to_numpy())
    right, n = c["sum"].to_numpy(float), c["size"].to_numpy(float)
    return ((debates["rounds"].to_numpy() >= 1) & (right > 0) & (right < n / 2)
            & debates["correct"].to_numpy(bool))


def _absent(influence: Any, agent: int) -> str:
    """An agent's influence as shown ("–" where the record has none: imported debates)."""
    return f"{influence[agent]:.2f}" if agent < len(influence) else "–"


KIND_LABELS = {"minority_won": "minority-correct won", "majority_lost": "majority-correct lost",
               "stopped_early": "stopped early", "correct": "correct", "wrong": "wrong"}
"""How the site names each kind of debate (:func:`debate_flags`)."""


def debate_flags(debates: pd.DataFrame, agent_rounds: pd.DataFrame) -> pd.DataFrame:
    """Per debate (rows of ``debates``, same order): ``minority_won`` (a correct answer
    held by fewer than half of the agents in round 0 wins the final vote),
    ``majority_lost`` (more than half of the agents are right in round 0 and the final
    vote is wrong), both for debates with rounds only, and ``stopped_early`` (the record
    says it stopped before its last round: ``stop_reason`` other than ``max_rounds``, or
    fewer rounds than ``max_rounds``; False where records predate early stopping).

    >>> deb = pd.DataFrame({"debate": [0, 1], "rounds": [2, 2], "correct": [True, False]})
    >>> ar = pd.DataFrame({"debate": [0] * 3 + [1] * 3, "round": 0,
    ...                    "correct": [True, False, False, True, True, False]})
    >>> debate_flags(deb, ar).to_dict("list")
    {'minority_won': [True, False], 'majority_lost': [False, True], 'stopped_early': [False, False]}
    """
    r0 = agent_rounds[agent_rounds["round"] == 0]
    counts = r0.groupby("debate")["correct"].agg(["sum", "size"]).reindex(
        debates["debate"].to_numpy())
    right, n = counts["sum"].to_numpy(float), counts["size"].to_numpy(float)
    has_rounds = debates["rounds"].to_numpy() >= 1
    correct = debates["correct"].to_numpy(bool)
    stopped = np.zeros(len(debates), dtype=bool)
    if "stop_reason" in debates:
        reason = debates["stop_reason"].astype(object)
        stopped |= reason.notna().to_numpy() & (reason != "max_rounds").to_numpy()
    if "max_rounds" in debates:
        most = pd.to_numeric(debates["max_rounds"], errors="coerce").to_numpy(float)
        stopped |= np.isfinite(most) & (debates["rounds"].to_numpy(float) < most)
    return pd.DataFrame({
        "minority_won": _minority_wins(debates, agent_rounds),
        "majority_lost": has_rounds & (right > n / 2) & ~correct,
        "stopped_early": stopped}, index=debates.index)


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
    tables (a :class:`pear.paper.study.Results` or :class:`pear.store.view.View`), then only that
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
        q = get_question(rec["dataset"], rec["question_id"])
    except (ValueError, FileNotFoundError, KeyError):
        return []
    lines = ["> " + line for line in _cell(q.question, 1200).splitlines()]
    if q.choices:
        lines += [f"> {chr(65 + i)}. {_cell(c, 200)}" for i, c in enumerate(q.choices)]
    return lines + [""]


def _critique_line(c: dict[str, Any]) -> str:
    """One critique: who critiqued whom, the answers and confidences, the review (the
    paper's step_loc / correction / assessment; none where the source gave none) and the
    decision with the target's reason."""
    decision = c["decision"] if c["delivered"] else "NOT DELIVERED"
    head = (f"- Agent {c['source'] + 1} → Agent {c['target'] + 1}: "
            f"{c['source_answer'] or '–'} (conf {c['source_confidence']}) critiques "
            f"{c['target_answer'] or '–'} (conf {c['target_confidence']})")
    review = ""
    if any(c.get(k) for k in ("step_loc", "correction", "assessment")):
        review = (f", assessment **{c.get('assessment') or '–'}**"
                  + (f", at {_cell(c['step_loc'], 60)}" if c.get("step_loc") else "")
                  + (f": “{_cell(c['correction'])}”" if c.get("correction") else ""))
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
    if r["backend"] == SIMULATED:
        out += ["*Simulated agents: answers, confidences and decisions come from the simulated "
                "population, not from a language model.*", ""]
    if r.get("prompt_style") == "compact":
        out += ["*Compact prompts (a stand-in for the study's templates, for tiny models).*",
                ""]
    if r.get("imported"):
        out += [f"*Imported from {_cell(r['imported']['format'])} records "
                f"({_cell(r['imported']['file'], 80)}): every agent saw every other agent's "
                "answer; no confidences, critiques or influence were recorded (–).*", ""]
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
            rho = _absent(influence, a["agent"])
            cut = " (truncated)" if a.get("truncated") else ""
            conf = "–" if a["confidence"] is None else a["confidence"]
            out.append(f"| {a['agent'] + 1} | {_cell(a['answer'], 80)}{cut} | {conf} | "
                       f"{'✓' if a['correct'] else '✗'} | {rho} |")
        out += ["", f"Vote after round {k}: **{_cell(rd['vote'], 80)}** "
                    f"({'correct' if rd['vote_correct'] else 'wrong'})", ""]
    out.append(f"**Final answer: {_cell(r['final_answer'], 80)}** — "
               f"{'correct' if r['correct'] else 'wrong'} (gold {_cell(r['gold'], 80)})")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------- HTML

def _asset(name: str) -> str:
    """A file of ``pear/analysis/assets/`` (package data: the pages' style and template)."""
    return files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


PAGE_CSS = _asset("page.css")
"""The style of every page of the results site (inlined, so a page opens on its own)."""
_PAGE = Template(_asset("page.html"))
"""A standalone page: ``$title`` (escaped), ``$css`` and ``$body`` (HTML)."""


def html_page(title: str, body: str, *, css: str = "") -> str:
    """A standalone HTML page (``title`` is escaped; ``body`` is HTML already)."""
    return _PAGE.substitute(title=html.escape(title), css=PAGE_CSS + css, body=body)


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _full(text: Any, limit: int = 80) -> str:
    """A short cell with the full text one click away (``<details>``) when it is long."""
    s = "" if text is None else str(text)
    if len(s) <= limit and "\n" not in s:
        return _e(s) or "–"
    short = re.sub(r"\s+", " ", s)[: limit - 1] + "…"
    return f"<details><summary>{_e(short)}</summary><div class=\"text\">{_e(s)}</div></details>"


def _question_html(rec: dict[str, Any]) -> str:
    try:
        q = get_question(rec["dataset"], rec["question_id"])
    except (ValueError, FileNotFoundError, KeyError):
        return ""
    out = f"<blockquote><div class=\"text\">{_e(q.question)}</div>"
    if q.choices:
        out += "<ol type=\"A\">" + "".join(f"<li>{_e(c)}</li>" for c in q.choices) + "</ol>"
    return out + "</blockquote>"


def _critique_rows(critiques: list[dict[str, Any]]) -> str:
    rows = []
    for c in critiques:
        decision = c["decision"] if c["delivered"] else "NOT DELIVERED"
        cls = {"ACCEPT": "accept", "REJECT": "reject"}.get(str(decision), "muted")
        review = "<br>".join(x for x in (
            _e(c.get("assessment") or ""),
            f"<span class=\"muted\">at</span> {_full(c.get('step_loc'), 60)}"
            if c.get("step_loc") else "",
            _full(c.get("correction"), 160) if c.get("correction") else "") if x) or "–"
        rows.append(
            f"<tr><td>{c['source'] + 1} → {c['target'] + 1}</td>"
            f"<td>{_full(c['source_answer'], 40)} ({_e(c['source_confidence'])})</td>"
            f"<td>{_full(c['target_answer'], 40)} ({_e(c['target_confidence'])})</td>"
            f"<td>{review}</td><td class=\"{cls}\">{_e(decision)}</td>"
            f"<td>{_full(c.get('reason'), 100)}</td></tr>")
    if not rows:
        return ""
    return ("<table><tr><th>Source → target</th><th>Source answer (conf.)</th>"
            "<th>Target answer (conf.)</th><th>Review</th><th>Decision</th>"
            "<th>Target's reason</th></tr>" + "".join(rows) + "</table>")


def render_transcript_html(record: dict[str, Any], *, flags: dict[str, bool] | None = None,
                           back: str = "") -> str:
    """A debate record as a standalone HTML page: what :func:`render_transcript` shows
    (graph and router terms per round, who critiqued whom with the review and
    ACCEPT/REJECT, every agent's answer, confidence, correctness and influence, the vote)
    with every text in full (reasoning, corrections, reasons) behind a click, and the
    model's display name beside its full identity.  ``flags`` (from
    :func:`debate_flags`) are listed; ``back`` links to the listing.  All record texts
    are HTML-escaped."""
    r = record
    title = f"{method_label(r['method'])} on {dataset_label(r['dataset'])}: question " \
            f"{r['question_id']}, seed {r['seed']}"
    out = [f"<nav><a href=\"{_e(back)}\">← all debates</a></nav>" if back else "",
           f"<h1>{_e(title)}</h1>",
           f"<p>Debate <code>{_e(r['debate_id'])}</code> · model <b>{_e(model_label(r['model']))}"
           f"</b> <span class=\"muted\">({_e(r['model'])}, backend {_e(r['backend'])})</span>"
           f" · {_e(r['n_agents'])} agents · {_e(r['rounds'])} rounds"
           + (f" (stopped: {_e(r.get('stop_reason'))})" if r.get("stop_reason") else "")
           + f" · gold answer <b>{_e(r['gold'])}</b></p>"]
    if r["backend"] == SIMULATED:
        out.append("<p class=\"mark\">Simulated agents: answers, confidences and decisions "
                   "come from the simulated population, not from a language model.</p>")
    if r.get("prompt_style") == "compact":
        out.append("<p class=\"muted\">Compact prompts (a stand-in for the study's templates, "
                   "for tiny models).</p>")
    if r.get("imported"):
        out.append(f"<p class=\"muted\">Imported from {_e(r['imported']['format'])} records "
                   f"({_e(r['imported']['file'])}): every agent saw every other agent's "
                   "answer; no confidences, critiques or influence were recorded (–).</p>")
    shown = [KIND_LABELS.get(k, k) for k, v in (flags or {}).items() if v]
    if shown:
        out.append(f"<p>This debate: <b>{_e(', '.join(shown))}</b></p>")
    out.append(_question_html(r))
    for rd in r["rounds_data"]:
        k = rd["round"]
        out.append(f"<h2>Round {k}{' (initial answers)' if k == 0 else ''}</h2>")
        if rd["edges"]:
            out.append("<p>Graph (source → target): " + ", ".join(
                f"{s + 1}→{t + 1}" for s, t in rd["edges"]) + "</p>")
        if rd.get("router"):
            ro = rd["router"]
            out.append(f"<p>Router: pool of {_e(ro['pool_size'])} relabellings; chosen score "
                       f"{ro['score']:.3f} (T {ro['T']:.3f}, I {ro['I']:.3f}, "
                       f"L {ro['L']:.3f}; pool range {ro['score_min']:.3f} to "
                       f"{ro['score_max']:.3f})</p>")
        out.append(_critique_rows(rd["critiques"]))
        influence = rd.get("influence") or []
        rows = []
        for a in rd["agents"]:
            rho = _absent(influence, a["agent"])
            cut = " <span class=\"muted\">(truncated)</span>" if a.get("truncated") else ""
            ok = "<span class=\"ok\">✓</span>" if a["correct"] else "<span class=\"bad\">✗</span>"
            rows.append(f"<tr><td class=\"num\">{a['agent'] + 1}</td>"
                        f"<td>{_full(a['answer'], 60)}{cut}</td>"
                        f"<td class=\"num\">{_e('–' if a['confidence'] is None else a['confidence'])}"
                        f"</td><td>{ok}</td><td class=\"num\">{_e(rho)}</td>"
                        f"<td>{_full(a.get('reasoning'), 90)}</td></tr>")
        out.append("<table><tr><th>Agent</th><th>Answer</th><th>Confidence</th>"
                   "<th>Correct</th><th>Influence</th><th>Reasoning</th></tr>"
                   + "".join(rows) + "</table>")
        verdict = "correct" if rd["vote_correct"] else "wrong"
        out.append(f"<p>Vote after round {k}: <b>{_full(rd['vote'], 80)}</b> ({verdict})</p>")
    verdict = '<span class="ok">correct</span>' if r["correct"] else '<span class="bad">wrong</span>'
    out.append(f"<h2>Final answer</h2><p><b>{_full(r['final_answer'], 80)}</b> — {verdict} "
               f"(gold {_e(r['gold'])})</p>")
    return html_page(title, "\n".join(x for x in out if x))
