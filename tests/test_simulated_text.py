"""The simulated backend's completions: written by template, the same text as ``json.dumps``
of the reply, and read by the engine's parser exactly as a real model's JSON reply of the same
content (issue 36, item 2)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pear.sim.backend import SimulatedBackend, _reply_text
from pear.core import parsing
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job
from pear.core.methods import method
from record_factory import arithmetic_questions

QS = arithmetic_questions(12)
KEY = {(q.dataset, q.id): q.gold for q in QS}
texts = st.text(max_size=30)  # any unicode: quotes, backslashes (LaTeX), control characters


class _Recording(SimulatedBackend):
    """The simulated backend, keeping every request and completion it makes."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen: list[tuple[object, object]] = []

    def generate(self, requests):
        out = super().generate(requests)
        self.seen += list(zip(requests, out))
        return out


@settings(max_examples=200, deadline=None)
@given(answer=texts, conf=st.integers(1, 5), reasoning=texts,
       responses=st.dictionaries(st.from_regex(r"[1-9]", fullmatch=True),
                                 st.tuples(st.sampled_from(["ACCEPT", "REJECT"]), texts)),
       reviews=st.lists(st.tuples(st.integers(1, 9), texts, texts,
                                  st.sampled_from(["Strong", "Flawed", ""])), max_size=4))
def test_reply_text_is_json_dumps_of_the_reply(answer, conf, reasoning, responses, reviews):
    initial = {"answer": answer, "confidence": conf, "reasoning": reasoning}
    revision = {**initial, "critique_response": {k: {"decision": d, "reason": r}
                                                 for k, (d, r) in responses.items()}}
    critique = {"reviews": [{"target": t, "step_loc": s, "correction": c, "assessment": a}
                            for t, s, c, a in reviews]}
    for obj in (initial, revision, critique):
        assert _reply_text(obj) == json.dumps(obj)


def test_every_completion_of_a_run_is_the_json_dumps_of_its_reply():
    """Every phase, honest and non-honest roles, through the engine."""
    be = _Recording(KEY, population="grounded")
    cfg = DebateConfig(rounds=2, roles=("adversarial", "underconfident", "honest", "honest",
                                        "overconfident"))
    jobs = [Job(q, method(m), 0) for q in QS for m in ("cot", "random", "pear")]
    assert len(list(Engine(be, cfg).run(jobs))) == len(jobs)
    phases = {r.meta["phase"] for r, _ in be.seen}
    assert len(phases) == 3 and "initial" in phases and "critique" in phases
    assert {r.meta["role"] for r, _ in be.seen} == {"adversarial", "underconfident", "honest",
                                                     "overconfident"}
    for _, c in be.seen:
        assert c.text == json.dumps(json.loads(c.text))


def _real_style(obj: dict) -> str:
    """The same content as a real model writes it: prose, a fenced block, indented, keys in
    another order."""
    body = json.dumps(dict(reversed(list(obj.items()))), indent=2, ensure_ascii=False)
    return f"Here is my reply.\n\n```json\n{body}\n```\n"


def test_simulated_text_is_parsed_as_a_real_models_reply():
    be = _Recording(KEY, population="grounded")
    jobs = [Job(q, method("pear"), 0) for q in QS]
    list(Engine(be, DebateConfig(rounds=2)).run(jobs))
    checked = {"initial": 0, "critique": 0, "revision": 0}
    for req, comp in be.seen:
        phase = req.meta["phase"]
        real = _real_style(json.loads(comp.text))
        if phase == "initial":
            got, want = parsing.parse_answer(comp.text), parsing.parse_answer(real)
        elif phase == "critique":
            targets = [t["agent"] for t in req.meta["targets"]]
            got, want = (parsing.parse_critique(comp.text, targets),
                         parsing.parse_critique(real, targets))
            assert got.reviews and set(got.reviews) == set(targets)
        else:
            sources = [c["source"] for c in req.meta["critiques"]]
            got, want = (parsing.parse_revision(comp.text, sources),
                         parsing.parse_revision(real, sources))
            assert set(got.decisions) == set(sources)
        assert got == want and got.parse_error is None
        checked[phase if phase in checked else "revision"] += 1
    assert min(checked.values()) > 10
