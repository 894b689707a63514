"""The debate engine: every debate in flight advances in lockstep, one backend call per phase.

Per batch of jobs (question x method x seed): one ``generate`` call for the initial answers,
then per round one for all critiques and one for all revisions.  A round is the paper's four
steps (:meth:`Engine._round`): route, critique, revise, update influence.  Round 0 is made
once per (seed, question, agent) and shared by every method of the question (CoT = agent 1's
answer, CoT-SC = the vote of the n answers): comparisons between methods are paired.  A
debate whose request fails for good is dropped (no record), so a later run resumes it.

Extensions (``DebateConfig``; the defaults are the study's protocol): ``stop`` (a debate that
meets its rule leaves the batch: :mod:`pear.core.stopping`); ``roles`` (a role's system-prompt
addition, :func:`pear.core.prompts.with_role`, and ``Request.meta["role"]``; the adversary is
told the gold, recorded in ``gold_shown_to``; :data:`pear.core.config.ROLE_CONFIDENCE` is
enforced); ``agent_models`` (one ``generate`` call per distinct backend each phase); every
agent entry carries its ``role`` and ``model``.  ``relabelling`` seats the agents elsewhere
(each keeps role, model and request seeds; ``Request.meta["member"]``; record:
``relabelling``); an orbit average (``NAME~orbit``) routes with one relabelling per debate
(record: ``orbit``).
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from operator import attrgetter
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

import numpy as np

from pear.core import parsing, prompts
from pear.core.backend import Backend, Completion, Request
from pear.core.hashing import branch_debate_id, debate_id, debate_seed, request_seed, round_seed
from pear.core import methods
from pear.core.config import ROLE_CONFIDENCE, DebateConfig, config_hash
from pear.core.methods import Method
from pear.core.graphs import debate_base_graph
from pear.core.record import (AGENT_KEYS, RECORD_KEYS, ROUND_KEYS, SCHEMA_VERSION,
                              CritiqueEntry, in_schema_order)
from pear.core.router import Decision, RouterState, update_influence
from pear.core.stopping import parse_stop, stop_reason

__all__ = ["Job", "Engine", "IdentityTask", "TaskLike", "copied_calls",
           "recorded_parse_failures", "debate_rounds", "call_budget", "round_calls"]


class TaskLike(Protocol):
    """A dataset's grading as the engine asks it (:meth:`pear.tasks.grading.Task.judge_many`):
    per ``(answers, question)`` of one phase, each answer's ``classes`` and ``correct``."""

    def judge_many(self, batch: Sequence[tuple[Sequence[str], Any]]) -> Sequence[Any]: ...


class IdentityTask:
    """Classes = answers stripped; correct = equal to ``question.gold`` (tests, custom tasks)."""

    def judge_many(self, batch: Sequence[tuple[Sequence[str], Any]]) -> list[Any]:
        classes = [tuple((a or "").strip() for a in answers) for answers, _ in batch]
        return [SimpleNamespace(classes=c, correct=tuple(bool(x) and x == q.gold for x in c))
                for c, (_, q) in zip(classes, batch)]


@dataclass(frozen=True)
class Job:
    """One debate to run: a question (``id``, ``dataset``, ``gold``), a method, a seed."""

    question: Any
    method: Method
    seed: int


def debate_rounds(job: Job, rounds: int, first: int = 0) -> int:
    """Debate-rounds (the unit of progress) ``job`` takes from round ``first`` on, of ``rounds``."""
    return rounds + 1 - first if job.method.is_debate else int(first == 0)


def call_budget(jobs: Sequence[Job], debate: DebateConfig, first: int = 0) -> int:
    """The most model calls ``jobs`` take from round ``first`` on: one per initial answer of
    each (seed, question), two per agent a debate round (:func:`round_calls`); what a run does
    not need of it is counted in ``Engine.calls_unneeded``."""
    calls = 0
    if first == 0:
        initial: dict[tuple, int] = {}
        for j in jobs:
            key = (j.seed, j.question.dataset, j.question.id)
            initial[key] = max(initial.get(key, 0),
                               methods.initial_agents(j.method, debate.n_agents))
        calls = sum(initial.values())
    return calls + sum(round_calls(debate, j, max(first, 1)) for j in jobs)


def round_calls(debate: DebateConfig, job: Job, first: int) -> int:
    """The most calls debate rounds ``first``.. of ``job`` take (two per agent a round)."""
    if not job.method.is_debate:
        return 0
    agents = methods.initial_agents(job.method, debate.n_agents)
    return 2 * agents * max(0, debate.rounds + 1 - first)


PARSE_MEMO = 1 << 13  # our choice: parsed replies an engine keeps (cleared when full)


@dataclass(slots=True)
class _Agent:
    """One agent's answer after a round: the record's agent entry (:data:`pear.core.record.
    AGENT_KEYS`).  Never changed: a round makes new agents; a question's methods share round 0's."""

    agent: int
    answer: str
    canonical: str
    confidence: int
    reasoning: str
    correct: bool
    parse_error: str | None
    truncated: bool = False
    role: str = "honest"
    model: str = ""
    _view: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def entry(self) -> dict[str, Any]:
        """The record's entry (:class:`pear.core.record.AgentEntry`), keys in schema order."""
        return dict(zip(AGENT_KEYS, _agent_values(self)))

    def view(self) -> dict[str, Any]:
        """What other agents' prompts (and backends' ``meta``) show of this agent: made once,
        read, never changed."""
        v = self._view
        if v is None:
            v = self._view = {"agent": self.agent, "answer": self.answer or "(no answer)",
                              "canonical": self.canonical, "confidence": self.confidence,
                              "reasoning": self.reasoning}
        return v


_agent_values = attrgetter(*AGENT_KEYS)


_NO_REVIEW = {"step_loc": "", "correction": "", "assessment": ""}  # a critique without review


def _received(c: CritiqueEntry) -> dict[str, Any]:
    """A received critique as its revision request holds it (``meta["critiques"]``): what the
    prompt shows and, for the backend, the source's answer and confidence."""
    return {"source": c["source"], "step_loc": c["step_loc"], "correction": c["correction"],
            "assessment": c["assessment"], "source_answer": c["source_answer"],
            "source_confidence": c["source_confidence"]}


@dataclass
class _Debate:
    job: Job
    ident: dict[str, Any]
    seed: int
    """The debate's seed (:func:`pear.core.hashing.debate_seed`)."""
    agents: list[_Agent]
    rounds_data: list[dict[str, Any]]
    influence: np.ndarray
    base: np.ndarray | None = None  # the base role graph (from (seed, question) alone)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0
    truncated_calls: int = 0
    parse_failures: int = 0  # agents' and critiques' parse errors so far
    failed: str | None = None
    stop_reason: str | None = None  # pear.core.stopping.stop_reason; None while it runs
    started: float = field(default_factory=time.perf_counter)
    closed: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Tokens (prompt, completion, cached) and truncated calls when the last round closed."""
    branched_from: dict[str, Any] | None = None  # a branch's parent (Engine.branch)
    rng: np.random.Generator | None = None  # this round's generator: routing, vote ties
    orbit: tuple[int, ...] | None = None  # an orbit average's relabelling (methods.orbit)

    def start_round(self, r: int) -> None:
        """Round ``r`` draws from its own generator, derived from the debate seed and r."""
        self.rng = np.random.default_rng(round_seed(self.seed, r))

    def charge(self, c: Completion) -> bool:
        """Count ``c``'s tokens and call; False (the debate marked failed) if it failed."""
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        self.cached_tokens += c.cached_tokens
        self.calls += 1
        self.truncated_calls += c.finish_reason == "length"
        if not c.ok:
            self.failed = self.failed or c.error
        return c.ok


class Engine:
    """Runs debates for one panel: one backend, or (``DebateConfig.agent_models``) a mapping
    ``{model name: backend}``.  The main flow (:meth:`run`, :meth:`_round`, closing a round)
    comes first, the plumbing after it."""

    def __init__(self, backend: Backend | Mapping[str, Backend],
                 debate: DebateConfig = DebateConfig(), *,
                 task_for: Callable[[str], TaskLike] | None = None, model: str | None = None):
        self.debate = debate
        self.style = debate.prompt_style
        self.stop_rule = parse_stop(debate.stop)
        self._task_for = task_for or (lambda _name: IdentityTask())
        self.agent_backends = _agent_backends(backend, debate)
        self.backend = self.agent_backends[0]
        self.agent_model_ids = ids = [b.model_id for b in self.agent_backends]
        self.model = model or (ids[0] if len(set(ids)) == 1 else "+".join(ids))  # the panel's
        self.backend_name = "+".join(dict.fromkeys(b.name for b in self.agent_backends))
        self.generate_calls = 0
        self.requests = 0
        self.tokens = 0
        self.cache_hits = 0
        self.failed: list[tuple[str, str]] = []
        self._schemas: dict[tuple, dict[str, Any]] = {}
        self._parses: dict[tuple, Any] = {}
        self._config_hashes: dict[Method, str] = {}
        self.phase = ""  # what it does now ("round 2: critiques"), for progress displays
        self.calls_done = 0  # model calls completed (within a phase too, where reported)
        self.rounds_done = 0  # debate-rounds finished, a skipped round when its debate leaves
        self.calls_unneeded = 0
        """Calls of :func:`call_budget` not needed (no critiques to send, a debate stopped or
        failed): ``calls_done + calls_unneeded`` reaches the budget at the end."""
        self.on_progress: Callable[[], None] | None = None  # called when any of these moves

    # the run ------------------------------------------------------------------
    def run(self, jobs: Sequence[Job]) -> Iterator[dict[str, Any]]:
        """Run ``jobs`` in lockstep; yield each record as its debate ends (CoT/CoT-SC after
        round 0, a debate after its last round or its stop rule); failed ones go to ``failed``."""
        debates: list[_Debate] = []
        for d in self._round_zero(jobs):
            if d.job.method.is_debate and not self._stops(d, 0):
                debates.append(d)
            else:
                self._progress(rounds=self.steps(d.job, 1),
                               unneeded=round_calls(self.debate, d.job, 1))
                yield self._record(d)
        yield from self._rounds(debates, 1)

    def branch(self, starts: Sequence[tuple[Job, Mapping[str, Any]]],
               from_round: int) -> Iterator[dict[str, Any]]:
        """Counterfactual branches: each ``(job, parent record)`` continues the parent's debate
        after round ``from_round`` under ``job``'s method (earlier rounds copied, never asked);
        later rounds draw what a full run of ``job`` draws, so a branch under the parent's
        method reproduces it.  Records carry ``branched_from``; tokens and calls their own."""
        if not (rounds := self.debate.rounds) > from_round >= 0:
            raise ValueError(f"invalid from_round={from_round!r}: the debate has {rounds} "
                             f"rounds; branch after round 0..{rounds - 1}")
        debates = [self._from_record(job, parent, from_round) for job, parent in starts]
        return self._rounds(debates, from_round + 1)

    def _round_zero(self, jobs: Sequence[Job]) -> list[_Debate]:
        """Initial answers: one request per (seed, question, agent), shared by the question's
        methods; the routed methods share one base role graph (paired)."""
        n, member = self.debate.n_agents, self.debate.member
        groups: dict[tuple, list[Job]] = defaultdict(list)
        for job in jobs:
            groups[(job.seed, job.question.dataset, job.question.id)].append(job)
        reqs, owners = [], []
        for key, gjobs in groups.items():
            seed, dataset, qid = key
            q = gjobs[0].question
            n_needed = max(methods.initial_agents(j.method, n) for j in gjobs)
            for i in range(n_needed):
                meta = {"phase": "initial", "round": 0, "agent": i, "dataset": dataset,
                        "question_id": qid, **_question_meta(q)}
                reqs.append(self._request(q, prompts.initial_messages(q, i, self.style), "initial",
                                          request_seed(seed, "", dataset, qid, member(i), 0,
                                                       "initial"), meta))
                owners.append(key)
        round0: dict[tuple, list[Completion]] = defaultdict(list)
        self._progress(phase="round 0: initial answers")
        for key, comp in zip(owners, self._generate(reqs)):
            round0[key].append(comp)

        errors = {key: next((c.error for c in round0[key] if not c.ok), None) for key in groups}
        answered = [key for key in groups if not errors[key]]
        initial = dict(zip(answered, self._agents_from([
            ([self._parsed(parsing.parse_answer, c.text) for c in round0[key]],
             groups[key][0].question,
             [c.finish_reason == "length" for c in round0[key]]) for key in answered])))
        out: list[_Debate] = []
        for key, gjobs in groups.items():
            comps, error, agents = round0[key], errors[key], initial.get(key)
            q = gjobs[0].question
            bases: dict[str, np.ndarray] = {}  # per kind of base graph, drawn once
            for job in gjobs:
                ident = self.identity(job)
                if error:
                    self.failed.append((ident["debate_id"], error))
                    self._progress(rounds=self.steps(job),
                                   unneeded=round_calls(self.debate, job, 1))
                    continue
                k = methods.initial_agents(job.method, n)
                d = _Debate(job, ident, debate_seed(job.seed, job.method.name, q.dataset, q.id),
                            agents[:k], [], np.zeros(max(k, n)))
                for c in comps[:k]:
                    d.charge(c)
                if job.method.is_debate:
                    kind = job.method.router.base_graph
                    d.base = bases.get(kind)
                    if d.base is None:
                        d.base = bases[kind] = self._base(job, n)
                    d.orbit = self._orbit(d)
                d.start_round(0)
                self._close(d, 0, None, [])
                out.append(d)
        self._progress(rounds=len(out))
        return out

    def _rounds(self, debates: list[_Debate], first: int) -> Iterator[dict[str, Any]]:
        """Rounds ``first``.. for the debates in flight, in lockstep; one record per debate
        as it ends."""
        for r in range(first, self.debate.rounds + 1):
            if not debates:
                break
            self._round(debates, r)
            self._progress(rounds=len(debates))
            going = []
            for d in debates:
                if d.failed:
                    self.failed.append((d.ident["debate_id"], d.failed))
                elif self._stops(d, r):
                    yield self._record(d)
                else:
                    going.append(d)
                    continue
                self._progress(rounds=self.steps(d.job, r + 1),  # the rounds it skips
                               unneeded=round_calls(self.debate, d.job, r + 1))
            debates = going  # stopped and failed debates leave the lockstep batch

    # one round, as the paper states it ---------------------------------------------
    def _round(self, debates: list[_Debate], r: int) -> None:
        """Round ``r`` of every debate in flight: route, critique, revise, update influence,
        close (the method's vote, the record's round entry)."""
        for d in debates:
            d.start_round(r)
        self._progress(phase=f"round {r}: critiques")
        plans = self._route(debates, r)
        critiques = self._critique(debates, plans, r)
        self._progress(phase=f"round {r}: revisions")
        critiques = self._revise(debates, critiques, r)
        self._update_influence(debates, [[(c["source"], c["decision"] == "ACCEPT")
                                          for c in crits] for crits in critiques])
        for d, plan, crits in zip(debates, plans, critiques):
            if not d.failed:
                self._close(d, r, plan, crits)

    def _route(self, debates: list[_Debate], r: int) -> list[Decision]:
        """Each debate's graph for round ``r`` (:func:`pear.core.methods.route_debates`)."""
        k = self.debate.k
        return methods.route_debates([
            (d.job.method, RouterState(tuple(a.canonical for a in d.agents),
                                       tuple(a.confidence for a in d.agents),
                                       tuple(d.influence.tolist()), d.base, round=r, k=k,
                                       config=d.job.method.router, orbit=d.orbit), d.rng)
            for d in debates])

    def _critique(self, debates: list[_Debate], plans: list[Decision],
                  r: int) -> list[list[CritiqueEntry]]:
        """Every source with out-edges reviews all its targets in one request; per debate, one
        critique entry (:class:`pear.core.record.CritiqueEntry`) per edge, in edge order."""
        reqs, owners = [], []
        for j, (d, plan) in enumerate(zip(debates, plans)):
            by_source: dict[int, list[int]] = defaultdict(list)
            for s, t in plan.edges.tolist():
                by_source[s].append(t)
            q, job, views = d.job.question, d.job, [a.view() for a in d.agents]
            for s, targets in sorted(by_source.items()):
                shown = [views[t] for t in targets]
                meta = {"phase": "critique", "round": r, "agent": s, "dataset": q.dataset,
                        "question_id": q.id, "debate_id": d.ident["debate_id"],
                        "own": views[s], "targets": shown, **_question_meta(q)}
                reqs.append(self._request(
                    q, prompts.critique_messages(q, views[s], shown, self.style), "critique",
                    request_seed(job.seed, job.method.name, q.dataset, q.id, self.debate.member(s),
                                 r, "critique"),
                    meta, targets=targets))
                owners.append((j, s, targets))
        out: list[list[CritiqueEntry]] = [[] for _ in debates]
        for (j, s, targets), comp in zip(owners, self._generate(reqs, debates)):  # no out-edges
            d = debates[j]
            if not d.charge(comp):
                continue
            parsed = self._parsed(parsing.parse_critique, comp.text, tuple(targets))
            src = d.agents[s]
            for t in targets:
                review, tgt = parsed.reviews.get(t), d.agents[t]
                out[j].append({  # CritiqueEntry, CRITIQUE_KEYS' order
                    "source": s, "target": t, "source_answer": src.canonical,
                    "target_answer": tgt.canonical, "source_confidence": src.confidence,
                    "target_confidence": tgt.confidence, "delivered": review is not None,
                    "decision": None,
                    "parse_error": None if review else (parsed.parse_error or "missing review"),
                    **(review or _NO_REVIEW), "reason": ""})
        return out

    def _revise(self, debates: list[_Debate], critiques: list[list[CritiqueEntry]],
                r: int) -> list[list[CritiqueEntry]]:
        """Every agent answers the critiques delivered to it and revises (no answer: it keeps
        its previous one); each delivered critique gets its target's verdict, in place."""
        reqs, owners = [], []
        for j, d in enumerate(debates):
            if d.failed:
                continue
            q, job = d.job.question, d.job
            received: list[list[CritiqueEntry]] = [[] for _ in d.agents]
            for c in critiques[j]:
                if c["delivered"]:
                    received[c["target"]].append(c)
            for i, agent in enumerate(d.agents):
                heard = [_received(c) for c in received[i]]
                own = agent.view()
                meta = {"phase": "revision", "round": r, "agent": i, "dataset": q.dataset,
                        "question_id": q.id, "debate_id": d.ident["debate_id"], "own": own,
                        "critiques": heard, **_question_meta(q)}
                reqs.append(self._request(
                    q, prompts.revision_messages(q, own, heard, self.style), "revision",
                    request_seed(job.seed, job.method.name, q.dataset, q.id, self.debate.member(i),
                                 r, "revision"),
                    meta, sources=[c["source"] for c in received[i]]))
                owners.append((j, i, received[i]))
        revised: dict[int, tuple[list[parsing.AnswerParse], list[bool]]] = {}
        for (j, i, received_i), comp in zip(owners, self._generate(reqs, debates)):  # failed
            d = debates[j]
            if not d.charge(comp):
                continue
            p = self._parsed(parsing.parse_revision, comp.text,
                             tuple(c["source"] for c in received_i))
            miss = f"missing decision from agent {i + 1}"
            for c in received_i:  # a delivered critique has no parse error of its own
                c["decision"] = p.decisions.get(c["source"])
                c["reason"] = p.reasons.get(c["source"], "")
                c["parse_error"] = None if c["source"] in p.decisions else miss
            if not p.answer:  # documented fallback: keep the previous answer and confidence
                prev = d.agents[i]
                p = parsing.AnswerParse(prev.answer, prev.confidence,
                                        p.reasoning or prev.reasoning, p.parse_error)
            parses, truncated = revised.setdefault(j, ([], []))
            parses.append(p)
            truncated.append(comp.finish_reason == "length")
        going = [j for j in revised if not debates[j].failed]
        batch = [(parses, debates[j].job.question, truncated)
                 for j in going for parses, truncated in [revised[j]]]
        for j, agents in zip(going, self._agents_from(batch)):
            debates[j].agents = agents
        return critiques

    def _update_influence(self, debates: list[_Debate],
                          decisions: list[list[tuple[int, bool]]]) -> None:
        """The paper's influence update of every debate still running from its ``(source,
        accepted)`` pairs, one per critique, in any order."""
        for d, pairs in zip(debates, decisions):
            if not d.failed:
                d.influence = update_influence(d.influence, pairs, d.job.method.router.beta)

    # closing a round, writing a record ---------------------------------------------
    def _close(self, d: _Debate, r: int, plan: Decision | None,
               critiques: list[CritiqueEntry]) -> None:
        """Aggregate (the method's, by default the majority vote) and append round ``r`` to
        the debate's record."""
        agents = d.agents
        winner = methods.aggregate(d.job.method, [a.canonical for a in agents],
                                   [a.confidence for a in agents], d.rng)
        correct = bool(winner) and next(a.correct for a in agents if a.canonical == winner)
        d.parse_failures += sum(a.parse_error is not None for a in agents) \
            + sum(c["parse_error"] is not None for c in critiques)
        now = (d.prompt_tokens, d.completion_tokens, d.cached_tokens, d.truncated_calls)
        spent = [a - b for a, b in zip(now, d.closed)]
        d.closed = now
        d.rounds_data.append(in_schema_order(ROUND_KEYS, {
            "round": r, "edges": plan.edges.tolist() if plan is not None else [],
            "router": plan.to_record() if plan is not None else None,
            "agents": [a.entry() for a in agents],
            "critiques": critiques,
            "influence": d.influence.tolist(), "vote": winner, "vote_correct": correct,
            "tokens": {"prompt": spent[0], "completion": spent[1], "cached": spent[2]},
            "truncated_calls": spent[3]}))

    def _stops(self, d: _Debate, r: int) -> bool:
        """Whether debate ``d`` ends after round ``r`` (sets its ``stop_reason``)."""
        d.stop_reason = stop_reason(
            self.stop_rule, votes=[rd["vote"] for rd in d.rounds_data],
            answers=[a.canonical for a in d.agents], r=r, rounds=self.debate.rounds)
        return d.stop_reason is not None

    def _record(self, d: _Debate) -> dict[str, Any]:
        """The debate's record (:class:`pear.core.record.DebateRecord`, keys in schema order)."""
        last, debate = d.rounds_data[-1], d.job.method.is_debate
        values = {
            "schema": SCHEMA_VERSION, **d.ident, "prompt_style": self.style,
            "n_agents": len(d.agents), "rounds": len(d.rounds_data) - 1,
            "max_rounds": self.debate.rounds if debate else 0,
            "stop_reason": d.stop_reason if debate else None,
            "gold_shown_to": [i for i, a in enumerate(d.agents) if a.role == "adversarial"],
            "gold": d.job.question.gold, "rounds_data": d.rounds_data,
            "final_answer": last["vote"], "correct": last["vote_correct"],
            "tokens": {"prompt": d.prompt_tokens, "completion": d.completion_tokens,
                       "cached": d.cached_tokens},
            "calls": d.calls, "truncated_calls": d.truncated_calls,
            "parse_failures": d.parse_failures,
            "latency_s": round(time.perf_counter() - d.started, 4),
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        if self.debate.relabelling:
            values["relabelling"] = list(self.debate.relabelling)
        if d.orbit is not None:
            values["orbit"] = list(d.orbit)
        if p := d.job.method.provenance():
            values["plugin"] = p
        if d.branched_from:
            values["branched_from"] = d.branched_from
        return in_schema_order(RECORD_KEYS, values)

    # identity ---------------------------------------------------------------
    def identity(self, job: Job) -> dict[str, Any]:
        """The identity fields of ``job``'s record, including its ``debate_id``."""
        m = job.method
        try:  # once per method: a grid's jobs each hold an equal copy
            chash = self._config_hashes.get(m) or self._config_hashes.setdefault(
                m, config_hash(self.debate, *m.hash_parts()))
        except TypeError:  # a method with unhashable parameters
            chash = config_hash(self.debate, *m.hash_parts())
        ident = {"model": self.model, "backend": self.backend_name,
                 "dataset": job.question.dataset, "method": job.method.name, "seed": job.seed,
                 "question_id": job.question.id, "config_hash": chash}
        return {"debate_id": debate_id(ident), **ident}

    def debate_id(self, job: Job) -> str:
        return self.identity(job)["debate_id"]

    def branch_identity(self, job: Job, parent_id: str, from_round: int) -> dict[str, Any]:
        """The identity of ``job`` as a branch of debate ``parent_id`` after ``from_round``
        (:func:`pear.core.hashing.branch_debate_id`)."""
        ident = self.identity(job)
        del ident["debate_id"]
        bid = branch_debate_id(ident, {"debate_id": parent_id, "round": from_round})
        return {"debate_id": bid, **ident}

    # progress -----------------------------------------------------------------
    def steps(self, job: Job, first: int = 0) -> int:
        """:func:`debate_rounds` of ``job`` under this engine's protocol."""
        return debate_rounds(job, self.debate.rounds, first)

    def _progress(self, phase: str | None = None, rounds: int = 0, unneeded: int = 0) -> None:
        """The phase, debate-rounds done and calls not needed (a phase's: :meth:`_generate`)."""
        self.phase = phase if phase is not None else self.phase
        self.rounds_done += rounds
        self.calls_unneeded += unneeded
        if self.on_progress is not None:
            self.on_progress()

    def _completed(self) -> None:
        """A backend finished one request (``on_completion``, see :mod:`pear.core.backend`)."""
        self.calls_done += 1
        if self.on_progress is not None:  # :meth:`_progress` with nothing else moved
            self.on_progress()

    # backend calls and requests ---------------------------------------------------
    def _generate(self, requests: list[Request],
                  debates: Sequence[_Debate] = ()) -> list[Completion]:
        """Complete ``requests``: one ``generate`` call per distinct backend, completions in
        input order; the one place calls are counted (with ``debates``, those not needed)."""
        self.calls_unneeded += sum(len(d.agents) for d in debates) - len(requests) \
            if debates else 0
        if not requests:
            return []
        parts: dict[int, list[int]] = {}
        for i, r in enumerate(requests):
            parts.setdefault(id(self._backend_of(r.meta["agent"])), []).append(i)
        out: list[Completion | None] = [None] * len(requests)
        for idx in parts.values():
            be = self._backend_of(requests[idx[0]].meta["agent"])
            before, hooked = self.calls_done, hasattr(be, "on_completion")
            if hooked:
                be.on_completion = self._completed
            try:
                got = be.generate([requests[i] for i in idx])
            finally:
                if hooked:
                    be.on_completion = None
            self.calls_done = before + len(idx)  # exact, whatever the backend reported
            if len(got) != len(idx):
                raise RuntimeError(f"backend {be.name!r} returned {len(got)} completions "
                                   f"for {len(idx)} requests")
            for i, c in zip(idx, got):
                out[i] = c
            self.generate_calls += 1
        done: list[Completion] = out  # type: ignore[assignment]
        self.requests += len(requests)
        self.tokens += sum(c.prompt_tokens + c.completion_tokens for c in done)
        self.cache_hits += sum(bool(c.cache_hit) for c in done)
        self._progress()
        return done

    def _parsed(self, parse: Callable[..., Any], text: str, *args: Any) -> Any:
        """``parse(text, *args)``, memoized: a pure function of replies that recur (a
        question's few answers); the result is read, never changed."""
        key = (parse, text, *args)
        got = self._parses.get(key)
        if got is None:
            if len(self._parses) >= PARSE_MEMO:
                self._parses.clear()
            got = self._parses[key] = parse(text, *args)
        return got

    def _backend_of(self, agent: int) -> Backend:
        """The backend of the agent at position ``agent`` (its model's, wherever it sits; the
        extra samples of ``sc@K`` take the agents' backends in turn)."""
        return self.agent_backends[self.debate.member(agent) % len(self.agent_backends)]

    def _orbit(self, d: _Debate) -> tuple[int, ...] | None:
        """An orbit average's relabelling of debate ``d`` (None for other methods)."""
        if not d.job.method.orbit_of:
            return None
        return methods.orbit_relabelling(d.seed, len(d.agents))

    def _request(self, question: Any, messages, phase: str, seed: int, meta: dict, *,
                 targets: Sequence[int] = (), sources: Sequence[int] = ()) -> Request:
        """Agent ``meta["agent"]``'s request: its role's system-prompt addition and
        ``meta["role"]``; the phase's reply schema (made once per phase, targets, sources)."""
        role = self.debate.role(meta["agent"])
        if role != "honest":  # the prompts made ``messages`` for this request alone
            messages = prompts.with_role(messages, role, question.gold
                                         if role == "adversarial" else None)
        schema = None
        if self.debate.json_mode:
            key = (phase, tuple(targets), tuple(sources))
            schema = self._schemas.get(key)
            if schema is None:
                schema = self._schemas[key] = prompts.schema_for(
                    phase, self.style, self.debate.max_tokens, targets=targets, sources=sources)
        meta["role"] = role
        if self.debate.relabelling:  # who sits there: its latents (a simulated agent's)
            meta["member"] = self.debate.member(meta["agent"])
        return Request(messages=messages, max_tokens=self.debate.max_tokens,
                       temperature=self.debate.temperature_of(meta["agent"]),
                       seed=seed, schema=schema, meta=meta)

    def _agents_from(self, batch: Sequence[tuple[Sequence[parsing.AnswerParse], Any,
                                                 Sequence[bool] | None]]) -> list[list[_Agent]]:
        """Per ``(parses, question, truncated)`` of one phase, the agents (a role's fixed
        confidence overrides the stated one); each dataset judged in one ``judge_many``."""
        judged: list[Any] = [None] * len(batch)  # per debate, its answers' judgement
        by_dataset: dict[str, list[int]] = defaultdict(list)
        for j, (_, question, _) in enumerate(batch):
            by_dataset[question.dataset].append(j)
        for dataset, idx in by_dataset.items():
            items = [([p.answer or "" for p in batch[j][0]], batch[j][1]) for j in idx]
            for j, got in zip(idx, self._task_for(dataset).judge_many(items)):
                judged[j] = got
        role, models, member = self.debate.role, self.agent_model_ids, self.debate.member
        out = []
        for (parses, _, truncated), got in zip(batch, judged):
            cut = truncated if truncated is not None else [False] * len(parses)
            agents = []
            for i, (p, rep, ok, c) in enumerate(zip(parses, got.classes, got.correct, cut)):
                r = role(i)
                agents.append(_Agent(i, p.answer, rep, ROLE_CONFIDENCE.get(r, p.confidence),
                                     p.reasoning, bool(p.answer) and ok, p.parse_error, c, r,
                                     models[member(i) % len(models)]))
            out.append(agents)
        return out

    def _base(self, job: Job, n: int) -> np.ndarray:
        """The debate's base role graph (:func:`pear.core.graphs.debate_base_graph`), read-only."""
        q = job.question
        base = debate_base_graph(job.seed, q.dataset, q.id, n, self.debate.k,
                                 job.method.router.base_graph)
        base.flags.writeable = False
        return base

    # branching ------------------------------------------------------------------
    def _from_record(self, job: Job, parent: Mapping[str, Any], from_round: int) -> _Debate:
        """A debate in flight after round ``from_round`` of ``parent`` (see :meth:`branch`)."""
        if not job.method.is_debate:
            raise ValueError(f"method {job.method.name!r} has no debate rounds to branch into")
        if parent["rounds"] < from_round or parent["n_agents"] != self.debate.n_agents:
            raise ValueError(f"debate {parent['debate_id']} has {parent['rounds']} rounds of "
                             f"{parent['n_agents']} agents: it cannot be branched after round "
                             f"{from_round} with {self.debate.n_agents} agents")
        q, rounds = job.question, parent["rounds_data"][:from_round + 1]
        d = _Debate(job, self.branch_identity(job, parent["debate_id"], from_round),
                    debate_seed(job.seed, job.method.name, q.dataset, q.id),
            [_Agent(i, a["answer"], a["canonical"], a["confidence"], a["reasoning"],
                    a["correct"], a["parse_error"], a.get("truncated", False),
                    a.get("role", "honest"), a.get("model", ""))
             for i, a in enumerate(rounds[-1]["agents"])],
            json.loads(json.dumps(rounds)), np.asarray(rounds[-1]["influence"], dtype=float))
        d.parse_failures = recorded_parse_failures(rounds)
        d.base = self._base(job, len(d.agents))
        d.orbit = self._orbit(d)
        d.branched_from = {"debate_id": parent["debate_id"], "method": parent["method"],
                           "round": from_round, "calls_copied": copied_calls(rounds)}
        return d


def copied_calls(rounds: Sequence[Mapping[str, Any]]) -> int:
    """The model calls recorded rounds cost: one per agent in round 0, then per round one per
    source with out-edges and one per agent.

    >>> copied_calls([{"agents": [0] * 3, "edges": []},
    ...               {"agents": [0] * 3, "edges": [[0, 1], [0, 2], [2, 1]]}])
    8
    """
    calls = len(rounds[0]["agents"]) if rounds else 0
    for rd in rounds[1:]:
        calls += len({s for s, _ in rd["edges"]}) + len(rd["agents"])
    return calls


def recorded_parse_failures(rounds: Sequence[Mapping[str, Any]]) -> int:
    """The parse failures recorded rounds count (as :meth:`Engine._close` adds them up).

    >>> recorded_parse_failures([{"agents": [{"parse_error": None}, {"parse_error": "x"}],
    ...                           "critiques": [{"parse_error": "y"}]}])
    2
    """
    return sum(x["parse_error"] is not None for rd in rounds
               for x in (*rd["agents"], *rd["critiques"]))


def _agent_backends(backend: Backend | Mapping[str, Backend],
                    debate: DebateConfig) -> list[Backend]:
    """Every agent's backend: ``backend``, or ``backend[agent_models[i]]``."""
    names = debate.agent_models
    if isinstance(backend, Mapping):
        if not names:
            raise ValueError("a mapping of backends needs DebateConfig.agent_models "
                             "(one model name per agent)")
        missing = [m for m in dict.fromkeys(names) if m not in backend]
        if missing:
            raise ValueError(f"no backend for agent model {missing[0]!r}; have "
                             f"{', '.join(map(repr, backend))}")
        return [backend[m] for m in names]
    if len(set(names)) > 1:
        raise ValueError(f"agent_models={','.join(names)!r} names {len(set(names))} models: "
                         f"pass a mapping {{model name: backend}}, one backend per model")
    return [backend] * debate.n_agents


def _question_meta(q: Any) -> dict[str, Any]:
    choices = getattr(q, "choices", None)
    return {"n_choices": len(choices) if choices else 0}
