"""Simulated agents: a seeded synthetic population that answers requests as JSON text.

A research instrument for tests and routing studies, not a stand-in that makes PEAR win.
It is built with the answer key (real backends never see gold answers) and reads the
structured state the engine puts in ``Request.meta`` (phase, the agent's own answer and
confidence, the targets or the critiques received with their sources' answers and
confidences).  It knows nothing about which method produced a graph.

The population (every parameter is a field of :class:`SimParams`, with its sign):

* **Correlated errors.**  Question q of dataset d has a difficulty ``z_q ~ N(0, 1)`` shared
  by all its agents; agent i has a skill ``u_qi ~ N(0, 1)`` drawn per (question, agent), so
  no agent index is systematically stronger (agents are exchangeable).  Agent i solves q
  with probability ``sigmoid(ease_d + skill_mean + skill_sd * u_qi - difficulty_sd * z_q)``.
  A wrong solve gives the question's *attractive* wrong answer with probability
  ``wrong_focus``, else one of its other ``n_wrong - 1`` plausible wrong answers, so wrong
  agents tend to agree, as samples of one LLM do.
* **Confidence** is informative but miscalibrated: ``round(conf_base + conf_gap * correct +
  conf_sd * N(0, 1))`` clipped to 1..5 (high even when wrong).
* **Persuasion.**  A critique points to its source's answer.  A target accepts a critique
  that agrees with it with probability ``sigmoid(accept_agree)`` (nothing changes), and one
  that differs with ``sigmoid(accept_bias + accept_src * (c_s - 3) - accept_tgt * (c_t - 3)
  + accept_right * [the source is right] - accept_hold * [the target is right])``: the
  source's confidence and correctness help, the target's confidence and correctness resist
  (agents mostly keep a right answer, yet a confident wrong critique can flip them).
* **Revision.**  An agent that accepts a differing critique adopts the answer of the most
  confident source it accepted.  Otherwise it re-solves the question with probability
  ``recheck`` (a revision is a fresh generation: a right agent can lose its answer, a wrong
  one can find the right answer), and a re-solved wrong answer scatters over the question's
  wrong answers (the attractive one only with probability ``revise_focus``), so wrong
  agents do not settle on one answer during the debate; else it keeps its answer.
  Confidence is redrawn when the answer changes.
* **Revision by a fitted model** (a population with a :class:`~pear.sim.population.
  RevisionModel`, e.g. ``grounded``): instead of the persuasion-driven revision above, the
  revised answer is drawn from the conditional logit over the agent's candidates (its own
  answer, each answer of the critiques it received, another right answer, another wrong
  one; :meth:`SimulatedBackend.revise_choice`).  Acceptance is still drawn with the terms
  above (real logs have none), except that a critique pointing to the answer the agent moved
  to is accepted.  Another wrong answer is one of the question's wrong answers nobody in the
  agent's view holds, drawn uniformly.
* A fraction ``malformed_rate`` of completions is truncated or junk (the parser must cope).

Populations (``study``, ``grounded``, or a file) are named, versioned data:
:mod:`pear.sim.population`.  ``SimulatedBackend(answer_key, population="grounded")``.

Draws: question and agent latents from ``(seed, dataset, question_id[, agent])``; every
request's choices from ``(seed, request.seed)`` with a fixed number of uniforms per decision
(common random numbers: a parameter change moves outcomes smoothly, which the calibration
needs): each request has its own generator, numpy's PCG64 started from a state the two
seeds scramble to (:func:`request_uniforms`).  The engine derives round-0 request seeds from
(run seed, question, agent) only, so every method of a question starts from the same initial
answers (CoT, CoT-SC and the debates are paired), and agents keep their skill through a
debate.

Calibration (``benchmarks/calibrate_simulation.py``, :mod:`pear.populations.calibration`): the fields
marked "fitted" were fitted by seeded ``scipy.optimize.least_squares`` to the study's
*baselines only*: per dataset, CoT, CoT-SC and Random accuracy averaged over the study's six
models (``data/paper/main_results.csv``), Random's rise from its round-0 vote to its final
vote, and Random's diagnostics (W2R, R2W per query then averaged, acceptance, cross-answer
rate, source confidence; ``data/paper/diagnostics.csv``).  Clique, Star, Chain and Ring were
held out (validation); PEAR and its ablations entered nothing, so what PEAR does in this
population is a finding.  The other fields are our choices, not identified by those targets.
Reached (200 questions x 2 seeds per dataset, means over datasets): fitted accuracy MAE 0.008,
held-out accuracy MAE 0.026, Random - CoT-SC +0.106 (study +0.104), Random's W2R 0.308
(0.318), R2W 0.146 (0.115), acceptance 0.577 (0.585), source confidence 0.613 (0.612), and
cross-answer rate 0.413 (0.498: this population sustains less disagreement than the study).
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from pear.core.backend import Completion, Request
from pear.core.hashing import hex_id, joined_seed
from pear.sim.population import (DATASET_EASE, FEW_OPTIONS, Population, RevisionModel,
                                 SimParams, expected_accuracy, identity, load, skill_of)

__all__ = ["SimParams", "SimulatedBackend", "DATASET_EASE", "Population"]

@dataclass(frozen=True)
class _Question:
    """What the population knows of one question: its gold answer, difficulty and wrong
    answers (the first is the attractive one)."""

    gold: str
    difficulty: float
    wrong: tuple[str, ...]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def _key(*parts: Any) -> int:
    """A stable 64-bit integer of ``parts`` (the core's :func:`~pear.core.hashing.int_seed`,
    joined here: it runs for every latent draw)."""
    return joined_seed("\x1f".join(map(str, parts)))


_NORMAL = NormalDist()


def _normal(*parts: Any) -> float:
    """A standard normal draw keyed by ``parts``."""
    u = (_key(*parts) + 0.5) / 2**64
    return _NORMAL.inv_cdf(u)


def _solve_rate(p: SimParams, dataset: str, latents: tuple[np.ndarray, np.ndarray],
                weights: Sequence[float] | None) -> float:
    """:meth:`SimulatedBackend.expected_solve_rate` under parameters ``p`` of agents with
    these (skill, difficulty) ``latents``."""
    skill, difficulty = latents
    logits = (p.skill_sd * skill - p.difficulty_sd * difficulty) + p.ease(dataset)
    return float(np.average(1.0 / (1.0 + np.exp(-logits)), weights=weights))


_MASK64 = (1 << 64) - 1
_U64 = np.uint64


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, a bijective scramble of 64-bit integers (uint64, wrapping)."""
    x = x + _U64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


_PCG_INC = 0xDA3E39CB94B95BDB  # the increment of every request's generator (odd)


def request_uniforms(seed: int, request_seeds: Sequence[int], width: int) -> np.ndarray:
    """The first ``width`` uniforms of each request's generator, one row per request: numpy's
    ``PCG64`` (increment :data:`_PCG_INC`) started from the state that (backend ``seed``,
    request seed) scramble to, drawn with ``Generator.random``."""
    key = (int(seed) * 0x100000001B3) & _MASK64
    with np.errstate(over="ignore"):
        hi = _mix64(np.asarray(request_seeds, dtype=_U64) ^ _U64(key))
        lo = _mix64(hi ^ _U64(0xD1B54A32D192ED03))
    bits = np.random.PCG64()
    rng, state = np.random.Generator(bits), bits.state
    state["state"]["inc"] = _PCG_INC
    out = np.empty((len(hi), width))
    for row, h, l in zip(out, hi.tolist(), lo.tolist()):
        state["state"]["state"] = (h << 64) | l
        bits.state = state
        rng.random(out=row)
    return out


class SimulatedBackend:
    """Answers every request from the simulated population; see the module docstring.

    ``population``: a shipped population's name (``study``, ``grounded``), a population file
    or a :class:`Population` (None: ``study``, :data:`pear.sim.population.DEFAULT`);
    ``params``: a :class:`SimParams` that replaces the population's parameters, or a mapping
    of fields to change in them (the revision model is kept either way).

    One method per decision (``solve``, ``confidence``, ``critique``, ``accept``,
    ``revise``), each taking the uniforms it needs, so that agent roles can override one
    decision without touching the others.
    """

    name = "simulated"
    on_completion = None
    """Set by the engine while generate runs (pear.core.backend); called after each request
    only when requests take time (``latency_s``): a phase of instant replies is counted when
    ``generate`` returns."""

    def __init__(self, answer_key: Mapping[tuple[str, str], str] | None = None,
                 params: SimParams | Mapping[str, Any] | None = None, seed: int = 0,
                 n_agents: int = 5, population: str | os.PathLike[str] | Population | None
                 = None, skill_shift: Sequence[float] = ()):
        self.answer_key = answer_key if answer_key is not None else {}
        """Gold answer per ``(dataset, question id)`` (any mapping, e.g. one that looks
        answers up lazily: :class:`pear.tasks.benchmarks.GoldAnswers`)."""
        pop = load(population)
        if isinstance(params, SimParams):
            pop = dataclasses.replace(pop, params=params)
        elif params:
            pop = pop.with_params(**params)
        self.population = pop
        """The population the agents are drawn from (name, parameters, revision model)."""
        self.params = pop.params
        self.revision: RevisionModel | None = pop.revision
        self._skill_of: dict[str, float] = {}
        self.seed = int(seed)
        self.n_agents = int(n_agents)
        self.skill_shift = tuple(float(x) for x in skill_shift)
        """A panel of unlike agents (our extension): agent a's skill is shifted by
        ``skill_shift[a]`` standard units (negative: a weaker agent), wherever it sits
        (``meta["member"]``); ``()``: the population's exchangeable agents."""
        if self.skill_shift and len(self.skill_shift) != self.n_agents:
            raise ValueError(f"invalid skill_shift={list(self.skill_shift)!r}: give one shift "
                             f"per agent ({self.n_agents})")
        if not any(self.skill_shift):
            self.skill_shift = ()
        self.calls = 0
        self._questions: dict[tuple[str, str, int], _Question] = {}
        self._skills: dict[tuple[str, str, int], float] = {}
        self._difficulties: dict[tuple[str, str], float] = {}
        self._cdfs: dict[tuple[Any, ...], list[float]] = {}  # revision choice, by structure
        self._choices: dict[tuple[Any, ...], tuple[list[str], list[float]]] = {}

    @property
    def model_id(self) -> str:
        ident: dict[str, Any] = identity(self.params)  # latency is not part of the model
        if self.revision is not None:
            ident["revision"] = list(self.revision.coef)
            if self.revision.features != RevisionModel.FEATURES:
                ident["features"] = list(self.revision.features)
            if self.revision.critique_weight != 1.0:  # ids of weight-1 runs stay as they were
                ident["critique_weight"] = self.revision.critique_weight
            if "own_x_agree" in self.revision.features:  # since it applies after missed quorums
                ident["own_x_agree"] = "after a missed quorum only"
        if self.skill_shift:  # a panel of unlike agents is another panel
            ident["skill_shift"] = list(self.skill_shift)
        blob = json.dumps(ident, sort_keys=True)
        return f"simulated-{hex_id(blob, n=10, sep='')}-s{self.seed}"

    def settings(self) -> dict[str, Any]:
        """The run manifest's record of the population: its seed and every parameter."""
        return {"seed": self.seed, "params": dataclasses.asdict(self.params),
                "n_agents": self.n_agents, "population": self.population.manifest(),
                **({"skill_shift": list(self.skill_shift)} if self.skill_shift else {}),
                "reproducibility": {"simulated": "deterministic", "seed": self.seed}}

    # latents ----------------------------------------------------------------------
    def question(self, meta: Mapping[str, Any]) -> _Question:
        """The latent state of the request's question (cached)."""
        ck = (meta["dataset"], meta["question_id"], int(meta.get("n_choices") or 0))
        q = self._questions.get(ck)
        if q is None:
            dataset, qid, n_choices = ck
            if (dataset, qid) not in self.answer_key:
                raise KeyError(f"simulated backend has no answer for question {(dataset, qid)}")
            gold = self.answer_key[(dataset, qid)]
            q = _Question(gold, self._difficulty(dataset, qid),
                          self._wrong_answers(dataset, qid, gold, n_choices))
            self._questions[ck] = q
        return q

    def skill(self, meta: Mapping[str, Any]) -> float:
        """The standardised skill of the request's agent on its question (cached): the
        agent's own (``meta["member"]`` when the panel is relabelled), plus its shift."""
        a = int(meta.get("member", meta["agent"]))
        u = self._skill(meta["dataset"], meta["question_id"], a)
        return u + self.skill_shift[a] if a < len(self.skill_shift) else u

    def _skill(self, dataset: str, qid: str, agent: int) -> float:
        ck = (dataset, qid, agent)
        s = self._skills.get(ck)
        if s is None:
            s = self._skills[ck] = _normal(self.seed, "skill", *ck)
        return s

    def _difficulty(self, dataset: str, qid: str) -> float:
        """The standardised difficulty of a question (cached)."""
        ck = (dataset, qid)
        d = self._difficulties.get(ck)
        if d is None:
            d = self._difficulties[ck] = _normal(self.seed, "difficulty", *ck)
        return d

    def _wrong_answers(self, dataset: str, qid: str, gold: str, n_choices: int
                       ) -> tuple[str, ...]:
        n = self.params.n_wrong
        if n_choices:
            pool = [chr(65 + i) for i in range(n_choices) if chr(65 + i) != gold]
        else:
            try:
                g = int(float(gold))
                base = [str(g + o) for o in (1, -1, 2, 10, -2, 5, 3, -10, 100, 4)]
            except (ValueError, OverflowError):
                g = 10 + _key(self.seed, "anchor", dataset, qid) % 90
                base = [str(g + o) for o in range(12)]
            pool = [w for w in dict.fromkeys(base) if w != gold]
        head = f"{self.seed}\x1fwrong\x1f{dataset}\x1f{qid}\x1f"  # _key(seed, "wrong", ..., w)
        pool.sort(key=lambda w: joined_seed(head + w))
        return tuple(pool[:n])

    def _p_solve(self, q: _Question, meta: Mapping[str, Any]) -> float:
        p = self.params
        return _sigmoid(p.ease(meta["dataset"]) + p.skill_sd * self.skill(meta)
                        - p.difficulty_sd * q.difficulty)

    def expected_solve_rate(self, dataset: str, agents: Sequence[tuple[str, int]],
                            weights: Sequence[float] | None = None) -> float:
        """The expected share (weighted by ``weights``, default equal) of right initial
        answers of the agents ``(question id, agent index)`` of ``dataset`` under these
        latents (their difficulties and skills as drawn; only the final coin flips are
        averaged out)."""
        return _solve_rate(self.params, dataset, self._latents(dataset, agents), weights)

    def _latents(self, dataset: str, agents: Sequence[tuple[str, int]]
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The standard normal skill of each agent ``(question id, agent index)`` and the
        difficulty of its question, as :meth:`skill` and :meth:`question` draw them."""
        if not agents:
            raise ValueError("no agents to average over")
        return (np.array([self._skill(dataset, q, a) for q, a in agents]),
                np.array([self._difficulty(dataset, q) for q, _ in agents]))

    def matched(self, dataset: str, agents: Sequence[tuple[str, int]], rate: float,
                weights: Sequence[float] | None = None, tol: float = 1e-4
                ) -> "SimulatedBackend":
        """A backend of this population with ``skill_mean`` shifted (nothing else changed:
        no refit) so that :meth:`expected_solve_rate` of ``agents`` is ``rate`` (bisection;
        ``rate`` in (0, 1); the agents' latents, which the shift does not move, drawn once)."""
        if not 0 < rate < 1:
            raise ValueError(f"invalid rate={rate!r}: must be in (0, 1)")
        latents = self._latents(dataset, agents)
        lo, hi = -30.0, 30.0
        while hi - lo > tol:
            mid = (lo + hi) / 2
            shifted = self.population.with_params(skill_mean=mid).params
            if _solve_rate(shifted, dataset, latents, weights) < rate:
                lo = mid
            else:
                hi = mid
        out = SimulatedBackend(self.answer_key, {"skill_mean": (lo + hi) / 2},
                               seed=self.seed, n_agents=self.n_agents,
                               population=self.population)
        out._skills, out._difficulties = self._skills, self._difficulties  # the same draws
        return out

    # decisions ----------------------------------------------------------------------
    def solve(self, q: _Question, meta: Mapping[str, Any], u: Sequence[float],
              focus: float | None = None) -> tuple[str, bool]:
        """An answer to ``q`` (right with the agent's solve probability; a wrong one is the
        attractive answer with probability ``focus``, default ``wrong_focus``, or
        ``wrong_focus_options`` on a multiple-choice question where it is set, and
        ``wrong_focus_many`` on one of more than :data:`~pear.sim.population.FEW_OPTIONS`
        options where that is set; an initial one
        is ``""``, read by no grader, ``unread_wrong`` of the time); 2 uniforms."""
        if u[0] < self._p_solve(q, meta) or not q.wrong:
            return q.gold, True
        unread = self.params.unread_wrong if meta.get("phase") == "initial" else None
        w = u[1]
        if unread:  # the same uniform: below ``unread`` no answer is read, above it rescaled
            if w < unread:
                return "", False
            w = (w - unread) / (1 - unread)
        if focus is None:
            focus = self.params.wrong_focus
            if meta.get("n_choices") and self.params.wrong_focus_options is not None:
                focus = self.params.wrong_focus_options
            if (int(meta.get("n_choices") or 0) > FEW_OPTIONS
                    and self.params.wrong_focus_many is not None):
                focus = self.params.wrong_focus_many
        if w < focus or len(q.wrong) == 1:
            return q.wrong[0], False
        rest = len(q.wrong) - 1
        v = (w - focus) / (1 - focus)
        return q.wrong[1 + min(rest - 1, int(v * rest))], False

    def confidence(self, correct: bool, meta: Mapping[str, Any], u: float) -> int:
        """A confidence on 1..5 for an answer (right or wrong); 1 uniform."""
        p = self.params
        z = _NORMAL.inv_cdf(min(max(u, 1e-12), 1 - 1e-12))
        return int(min(5, max(1, round(p.conf_base + p.conf_gap * correct + p.conf_sd * z))))

    def critique(self, own: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
        """The review of ``target`` by an agent holding ``own``: it points to own's answer."""
        mine = own["canonical"] or own["answer"]
        if target["canonical"] == mine:
            return {"target": target["agent"] + 1, "step_loc": "No error identified",
                    "correction": "", "assessment": "Strong"}
        return {"target": target["agent"] + 1, "step_loc": "the final step",
                "correction": f"the answer should be {mine}", "assessment": "Flawed"}

    def accept(self, own: Mapping[str, Any], critique: Mapping[str, Any], gold: str,
               u: float) -> bool:
        """Whether the agent holding ``own`` accepts ``critique``; 1 uniform."""
        p = self.params
        mine = own["canonical"] or own["answer"]
        if critique["source_answer"] == mine:
            return u < _sigmoid(p.accept_agree)
        logit = (p.accept_bias + p.accept_src * (critique["source_confidence"] - 3)
                 - p.accept_tgt * (int(own["confidence"]) - 3)
                 + p.accept_right * (critique["source_answer"] == gold)
                 - p.accept_hold * (mine == gold))
        return u < _sigmoid(logit)

    def revise(self, q: _Question, meta: Mapping[str, Any], accepted: Sequence[Mapping],
               u: Sequence[float]) -> tuple[str, int]:
        """The revised (answer, confidence) after the decisions; 5 uniforms."""
        own = meta["own"]
        mine = own["canonical"] or own["answer"]
        moves = [c for c in accepted if c["source_answer"] != mine]
        if moves:
            top = max(c["source_confidence"] for c in moves)
            best = [c for c in moves if c["source_confidence"] == top]
            answer = best[min(len(best) - 1, int(u[0] * len(best)))]["source_answer"]
        elif u[1] < self.params.recheck:
            answer, _ = self.solve(q, meta, u[2:4], focus=self.params.revise_focus)
        else:
            return mine, int(own["confidence"])
        if answer == mine:
            return mine, int(own["confidence"])
        return answer, self.confidence(answer == q.gold, meta, u[4])

    def population_skill(self, dataset: str) -> float:
        """The revision model's skill on ``dataset``: the logit of the population's expected
        round-0 agent accuracy there (:func:`pear.sim.population.expected_accuracy`)."""
        s = self._skill_of.get(dataset)
        if s is None:
            s = self._skill_of[dataset] = skill_of(expected_accuracy(self.params, dataset))
        return s

    def _choice_set(self, seen: tuple[Any, ...]) -> tuple[list[str], list[float]]:
        """:meth:`revise_choice`'s candidates and the cumulative probabilities of choosing
        each, made once per distinct ``seen`` (own answer, answers heard, whether each is
        fresh, gold, round, dataset, whether it has options, missed quorum)."""
        mine, heard, fresh, gold, round_, dataset, options, missed_quorum = seen
        names, counts, right, recent = RevisionModel.candidates(mine, heard, gold, fresh=fresh)
        key = (RevisionModel.structure(names, counts, right, mine, heard, recent), round_,
               dataset, options, missed_quorum)
        cdf = self._cdfs.get(key)
        if cdf is None:  # RevisionModel.design's features; a choice set's shape recurs
            X = RevisionModel.feature_rows(key[0], round_, self.population_skill(dataset),
                                           options)
            cdf = self._cdfs[key] = np.cumsum(self.revision.probabilities(
                X, critiques=True, missed_quorum=missed_quorum)).tolist()
        if len(self._choices) >= 1 << 16:  # our choice: bounded
            self._choices.clear()
        got = self._choices[seen] = (names, cdf)
        return got

    def revise_choice(self, q: _Question, meta: Mapping[str, Any], u: Sequence[float]
                      ) -> tuple[str, int]:
        """The revised (answer, confidence) drawn from the population's revision model
        (:class:`~pear.sim.population.RevisionModel`): the candidates are the agent's
        own answer, the answers of the critiques it received (``meta["critiques"]``), another
        right answer and another wrong one; 3 uniforms (the choice, which other wrong answer,
        the confidence of a new answer)."""
        own = meta["own"]
        mine = own["canonical"] or own["answer"] or None
        said = [c for c in meta["critiques"] if c["source_answer"]]
        heard = tuple(c["source_answer"] for c in said)
        fresh = tuple(bool(c.get("fresh")) for c in said)
        seen = (mine, heard, fresh, q.gold, int(meta["round"]), meta["dataset"],
                bool(meta.get("n_choices")), bool(meta.get("missed_quorum")))
        names, cdf = self._choices.get(seen) or self._choice_set(seen)
        pick = names[min(len(names) - 1, bisect.bisect_right(cdf, u[0] * cdf[-1]))]
        if pick == RevisionModel.NEW_RIGHT:
            pick = q.gold
        elif pick == RevisionModel.NEW_WRONG:
            taken = set(names)
            free = [w for w in q.wrong if w not in taken] or list(q.wrong) or [q.gold]
            pick = free[min(len(free) - 1, int(u[1] * len(free)))]
        if mine is not None and pick == mine:
            return mine, int(own["confidence"])
        return pick, self.confidence(pick == q.gold, meta, u[2])

    # phases -----------------------------------------------------------------------
    def _initial(self, meta: Mapping[str, Any], u: Sequence[float]) -> dict[str, Any]:
        q = self.question(meta)
        answer, correct = self.solve(q, meta, u[:2])
        return {"answer": answer, "confidence": self.confidence(correct, meta, u[2]),
                "reasoning": "simulated reasoning"}

    def _critique(self, meta: Mapping[str, Any], u: Sequence[float]) -> dict[str, Any]:
        return {"reviews": [self.critique(meta["own"], t) for t in meta["targets"]]}

    def _revision(self, meta: Mapping[str, Any], u: Sequence[float]) -> dict[str, Any]:
        q = self.question(meta)
        own = meta["own"]
        crits = meta["critiques"]
        draws = u[6:6 + len(crits)]  # after the request's fixed six (:meth:`_complete`)
        responses, accepted = {}, []
        for c, v in zip(crits, draws):
            ok = self.accept(own, c, q.gold, v)
            responses[str(c["source"] + 1)] = {"decision": "ACCEPT" if ok else "REJECT",
                                               "reason": "simulated"}
            if ok:
                accepted.append(c)
        if self.revision is not None:
            answer, conf = self.revise_choice(q, meta, u[:3])
            mine = own["canonical"] or own["answer"]
            for c in crits:  # moving to a critique's answer is accepting it
                if answer != mine and c["source_answer"] == answer:
                    responses[str(c["source"] + 1)]["decision"] = "ACCEPT"
        else:
            answer, conf = self.revise(q, meta, accepted, u[:5])
        return {"answer": answer, "confidence": conf, "reasoning": "simulated revision",
                "critique_response": responses}

    def _complete(self, req: Request, u: Sequence[float]) -> Completion:
        """The completion of ``req`` from its generator's uniforms ``u``: six fixed ones (the
        phase's own first), then one per critique a revision received, then the junk draw."""
        meta = req.meta
        phase = meta["phase"]
        if phase not in ("initial", "critique", "revision"):
            raise ValueError(f"simulated backend: unknown phase {phase!r}")
        obj = getattr(self, "_" + phase)(meta, u)
        if meta.get("role", "honest") != "honest":
            obj = _role_reply(obj, meta, self.question(meta).wrong[0])
        text = _reply_text(obj)
        if self.params.malformed_rate and u[5] < self.params.malformed_rate:
            v = u[6 + _extra_draws(meta)]
            text = text[: max(1, int(v * (len(text) - 1)))] if v < 0.7 \
                else "I cannot answer in JSON."
        prompt_tokens = sum(len(m["content"]) for m in req.messages) // 4
        return Completion(text=text, prompt_tokens=prompt_tokens,
                          completion_tokens=max(1, len(text) // 4), finish_reason="stop")

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """One completion per request, in input order (each request's draws from its own
        generator, :func:`request_uniforms`)."""
        self.calls += 1
        width = 6 + max(map(_extra_draws, (r.meta for r in requests)), default=0) \
            + bool(self.params.malformed_rate)  # the junk draw, where junk is drawn at all
        draws = request_uniforms(self.seed, [int(r.seed) & _MASK64 for r in requests],
                                 width).tolist()
        if not self.params.latency_s:  # a phase takes milliseconds: counted when it returns
            return [self._complete(r, u) for r, u in zip(requests, draws)]
        out = []
        for r, u in zip(requests, draws):
            time.sleep(self.params.latency_s)
            out.append(self._complete(r, u))
            if self.on_completion is not None:
                self.on_completion()
        return out


def _extra_draws(meta: Mapping[str, Any]) -> int:
    """The uniforms a request draws after its fixed six and before the junk draw: one per
    critique a revision received."""
    return len(meta["critiques"]) if meta["phase"] == "revision" else 0


# the reply's text ---------------------------------------------------------------------------
_str = json.encoder.encode_basestring_ascii  # json.dumps's own string escaping (ASCII)


def _reply_text(obj: Mapping[str, Any]) -> str:
    """``json.dumps(obj)`` of a phase's reply (answer, confidence, reasoning and, in a
    revision, critique_response; or reviews), written by template: the same text
    (tests/test_simulated.py holds them equal), without a generic encoder per request."""
    if "reviews" in obj:
        return '{"reviews": [' + ", ".join(
            f'{{"target": {r["target"]}, "step_loc": {_str(r["step_loc"])}, '
            f'"correction": {_str(r["correction"])}, "assessment": {_str(r["assessment"])}}}'
            for r in obj["reviews"]) + "]}"
    text = (f'{{"answer": {_str(obj["answer"])}, "confidence": {obj["confidence"]}, '
            f'"reasoning": {_str(obj["reasoning"])}')
    if "critique_response" not in obj:
        return text + "}"
    return text + ', "critique_response": {' + ", ".join(
        f'{_str(k)}: {{"decision": {_str(v["decision"])}, "reason": {_str(v["reason"])}}}'
        for k, v in obj["critique_response"].items()) + "}}"


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
        if phase == "revision":
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


