"""Simulated agents: a seeded synthetic population that answers requests as JSON text.

A research instrument for tests and routing studies, not a stand-in that makes PEAR win.
It is built with the answer key (real backends never see gold answers) and reads the
structured state the engine puts in ``Request.meta`` (phase, the agent's own answer and
confidence, the targets or the critiques received with their sources' answers and
confidences).  It knows nothing about which method produced a graph.

Model (all draws from ``numpy.random.default_rng(request.seed)``, so runs are reproducible):

* question difficulty ``d_q ~ N(0, difficulty_sd)`` and agent skill
  ``s_i = skill_mean + skill_spread * z_i`` (fixed, evenly spread z in [-1, 1]);
* an initial answer is correct with probability ``sigmoid(s_i - d_q)``, else one of
  ``n_wrong`` plausible wrong answers of the question drawn with decaying weights, so wrong
  agents can agree;
* confidence is informative but noisy: ``round(N(conf_base + conf_gap * correct, conf_sd))``
  clipped to 1..5;
* a target accepts a critique with probability ``sigmoid(accept_bias + accept_src *
  (c_s - 3) - accept_tgt * (c_t - 3) + accept_right * [critique points to the right
  answer] + accept_agree * [critique agrees with the target])``, where a critique points to
  its source's own answer; accepting a differing critique switches to that answer, so a
  wrong-but-confident critique can still flip a right agent;
* a fraction ``malformed_rate`` of completions is truncated or junk (the parser must cope).

The default parameters were calibrated once, under the ``random`` method only (with the
documented signs enforced), toward the study's baseline diagnostics
(data/paper/diagnostics.csv) and a CoT accuracy near 0.6 by the random search of
``benchmarks/calibrate_simulation.py`` (4 datasets x 40 questions x 2 seeds).  Reached:
W2R 0.33 (target 0.32), acceptance 0.57 (0.58), R2W 0.20 (0.11), cross-answer rate 0.38
(0.45-0.50), CoT 0.52 (0.60): this population is more fickle and converges faster than the
study's agents.  Whatever PEAR then does in simulation is a finding, not an input.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from pear.backends.base import Completion, Request

__all__ = ["SimParams", "SimulatedBackend"]


@dataclass(frozen=True)
class SimParams:
    """Parameters of the simulated population (defaults: calibrated, see module docstring)."""

    skill_mean: float = 0.605
    skill_spread: float = 0.6
    difficulty_sd: float = 1.506
    n_wrong: int = 4
    wrong_decay: float = 0.735
    conf_base: float = 2.676
    conf_gap: float = 0.454
    conf_sd: float = 1.0
    accept_bias: float = 0.047
    accept_src: float = 0.016
    accept_tgt: float = 0.335
    accept_right: float = 0.315
    accept_agree: float = 0.089
    recheck: float = 0.06
    """Probability that an agent without an accepted critique re-solves the question."""
    malformed_rate: float = 0.0
    latency_s: float = 0.0
    """Sleep per generate call per request (to emulate a slow backend in tests)."""


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _unit(*parts: Any) -> float:
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


class SimulatedBackend:
    """Answers every request from the simulated population; see the module docstring."""

    name = "simulated"

    def __init__(self, answer_key: Mapping[tuple[str, str], str] | None = None,
                 params: SimParams | Mapping[str, Any] | None = None, seed: int = 0,
                 n_agents: int = 5):
        self.answer_key = dict(answer_key or {})
        self.params = params if isinstance(params, SimParams) else SimParams(**(params or {}))
        self.seed = seed
        z = np.linspace(-1, 1, n_agents) if n_agents > 1 else np.zeros(1)
        self.skills = self.params.skill_mean + self.params.skill_spread * z
        self.calls = 0

    @property
    def model_id(self) -> str:
        ident = {k: v for k, v in dataclasses.asdict(self.params).items() if k != "latency_s"}
        blob = json.dumps(ident, sort_keys=True)  # latency is not part of the model
        return f"simulated-{hashlib.sha256(blob.encode()).hexdigest()[:10]}-s{self.seed}"

    def settings(self) -> dict[str, Any]:
        return {"seed": self.seed, "params": dataclasses.asdict(self.params),
                "n_agents": len(self.skills)}

    # population -----------------------------------------------------------------
    def _gold(self, meta: Mapping[str, Any]) -> str:
        key = (meta["dataset"], meta["question_id"])
        if key not in self.answer_key:
            raise KeyError(f"simulated backend has no answer for question {key}")
        return self.answer_key[key]

    def _wrong(self, meta: Mapping[str, Any], gold: str) -> list[str]:
        n_choices = int(meta.get("n_choices") or 0)
        if n_choices:
            letters = [chr(65 + i) for i in range(n_choices) if chr(65 + i) != gold]
            order = sorted(letters, key=lambda l: _unit(self.seed, meta["question_id"], l))
            return order[: self.params.n_wrong]
        try:
            g = int(float(gold))
        except ValueError:
            g = int(_unit(self.seed, meta["question_id"]) * 90) + 10
        offsets = [o for o in (1, -1, 2, 10, -2, 5) if str(g + o) != gold]
        order = sorted(offsets, key=lambda o: _unit(self.seed, meta["question_id"], "w", o))
        return [str(g + o) for o in order[: self.params.n_wrong]]

    def _solve(self, meta: Mapping[str, Any], rng: np.random.Generator) -> tuple[str, bool]:
        p = self.params
        gold = self._gold(meta)
        difficulty = p.difficulty_sd * _normal_from(_unit(self.seed, "difficulty",
                                                          meta["dataset"], meta["question_id"]))
        skill = self.skills[int(meta["agent"]) % len(self.skills)]
        if rng.random() < _sigmoid(skill - difficulty):
            return gold, True
        wrong = self._wrong(meta, gold)
        w = p.wrong_decay ** np.arange(len(wrong))
        return wrong[int(rng.choice(len(wrong), p=w / w.sum()))], False

    def _confidence(self, correct: bool, rng: np.random.Generator) -> int:
        p = self.params
        return int(np.clip(round(rng.normal(p.conf_base + p.conf_gap * correct, p.conf_sd)), 1, 5))

    # phases ---------------------------------------------------------------------
    def _initial(self, meta, rng) -> dict[str, Any]:
        answer, correct = self._solve(meta, rng)
        return {"answer": answer, "confidence": self._confidence(correct, rng),
                "reasoning": "simulated reasoning"}

    def _critique(self, meta, rng) -> dict[str, Any]:
        own = meta["own"]["canonical"] or meta["own"]["answer"]
        reviews = []
        for t in meta["targets"]:
            agree = t["canonical"] == own
            reviews.append({"target": t["agent"] + 1,
                            "step_loc": "No error identified" if agree else "the final step",
                            "correction": "" if agree else f"the answer should be {own}",
                            "assessment": "Strong" if agree else "Flawed"})
        return {"reviews": reviews}

    def _update(self, meta, rng) -> dict[str, Any]:
        p = self.params
        gold = self._gold(meta)
        own = meta["own"]
        answer, conf = own["canonical"] or own["answer"], int(own["confidence"])
        responses, switch = {}, []
        for c in meta["critiques"]:
            rec = c["source_answer"]  # a critique points to its source's own answer
            logit = (p.accept_bias + p.accept_src * (c["source_confidence"] - 3)
                     - p.accept_tgt * (own["confidence"] - 3) + p.accept_right * (rec == gold)
                     + p.accept_agree * (rec == answer))
            ok = rng.random() < _sigmoid(logit)
            responses[str(c["source"] + 1)] = {"decision": "ACCEPT" if ok else "REJECT",
                                               "reason": "simulated"}
            if ok and rec != answer:
                switch.append((c["source_confidence"], rng.random(), rec))
        if switch:
            answer = max(switch)[2]
            conf = self._confidence(answer == gold, rng)
        elif rng.random() < p.recheck:
            answer, correct = self._solve(meta, rng)
            conf = self._confidence(correct, rng)
        return {"answer": answer, "confidence": conf, "reasoning": "simulated revision",
                "critique_response": responses}

    def _complete(self, req: Request) -> Completion:
        meta = req.meta
        rng = np.random.default_rng([self.seed, req.seed])
        obj = getattr(self, "_" + meta["phase"])(meta, rng)
        if meta.get("role", "honest") != "honest":
            obj = _role_reply(obj, meta, self._wrong(meta, self._gold(meta))[0])
        text = json.dumps(obj)
        if rng.random() < self.params.malformed_rate:
            text = text[: int(rng.integers(1, max(2, len(text) - 1)))] if rng.random() < 0.7 \
                else "I cannot answer in JSON."
        prompt_tokens = sum(len(m["content"]) for m in req.messages) // 4
        return Completion(text=text, prompt_tokens=prompt_tokens,
                          completion_tokens=max(1, len(text) // 4), finish_reason="stop")

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """One completion per request, in input order."""
        self.calls += 1
        if self.params.latency_s:
            time.sleep(self.params.latency_s * len(requests))
        return [self._complete(r) for r in requests]


# roles (issue 14) --------------------------------------------------------------------------
_ROLE_CONFIDENCE = {"adversarial": 5, "overconfident": 5, "underconfident": 1}


def _role_reply(obj: dict[str, Any], meta: Mapping[str, Any], wrong: str) -> dict[str, Any]:
    """The reply of an agent with a non-honest ``meta["role"]``, from the population's reply
    ``obj``: an adversary answers the question's most plausible wrong answer ``wrong`` in every
    phase, rejects every critique, and recommends ``wrong`` to every target that differs;
    confidence roles state their fixed confidence."""
    role, phase = meta["role"], meta["phase"]
    obj = dict(obj)
    if role == "adversarial" and phase == "critique":
        obj["reviews"] = [_adversarial_review(t, wrong) for t in meta["targets"]]
    elif role == "adversarial":
        obj["answer"] = wrong
        if phase == "update":
            obj["critique_response"] = {k: {"decision": "REJECT", "reason": "simulated"}
                                        for k in obj["critique_response"]}
    if "confidence" in obj and role in _ROLE_CONFIDENCE:
        obj["confidence"] = _ROLE_CONFIDENCE[role]
    return obj


def _adversarial_review(target: Mapping[str, Any], wrong: str) -> dict[str, Any]:
    agree = (target["canonical"] or target["answer"]) == wrong
    return {"target": target["agent"] + 1,
            "step_loc": "No error identified" if agree else "the final step",
            "correction": "" if agree else f"the answer should be {wrong}",
            "assessment": "Strong" if agree else "Flawed"}


def _normal_from(u: float) -> float:
    """A standard normal quantile of a uniform in (0, 1) (Acklam-free: via the error function)."""
    from statistics import NormalDist
    return NormalDist().inv_cdf(min(max(u, 1e-9), 1 - 1e-9))
