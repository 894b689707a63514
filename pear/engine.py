"""The debate engine: every debate in flight advances in lockstep, one backend call per phase.

Per batch of jobs (question x method x seed) the engine makes one ``generate`` call for the
initial answers, then per round one for all critiques of all debates and one for all
revisions.  Round 0 is computed once per (seed, question, agent) and shared by every method
of that question (CoT = agent 1's initial answer, CoT-SC = vote of the n initial answers), so
comparisons between methods are paired.  A debate whose request fails for good is dropped
(no record), so a later run resumes it.
"""
from __future__ import annotations

import hashlib
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Protocol, Sequence

import numpy as np

from pear import parsing, prompts
from pear.backends.base import Backend, Completion, Request
from pear.config import DebateConfig, Method, config_hash
from pear.records import SCHEMA_VERSION
from pear.router import RouterState, make_router, route_batch, update_influence

__all__ = ["Job", "Engine", "derive_seed", "IdentityTask", "vote"]


def derive_seed(*parts: Any) -> int:
    """A stable 31-bit seed from any parts (never Python's salted ``hash``).

    >>> derive_seed(0, "pear", "q1") == derive_seed(0, "pear", "q1") != derive_seed(1, "pear", "q1")
    True
    """
    blob = "\x1f".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big") & 0x7FFFFFFF


class TaskLike(Protocol):
    def canonical(self, text: str) -> str: ...
    def buckets(self, canonicals: Sequence[str]) -> list[str]: ...
    def grade(self, prediction: str, question: Any) -> bool: ...


class IdentityTask:
    """Canonicalisation by stripping whitespace; equality of strings; gold = ``question.gold``.
    For tests and custom tasks; the benchmarks use :func:`pear.tasks.get`."""

    def canonical(self, text: str) -> str:
        return (text or "").strip()

    def buckets(self, canonicals: Sequence[str]) -> list[str]:
        return list(canonicals)

    def grade(self, prediction: str, question: Any) -> bool:
        c = self.canonical(prediction)
        return bool(c) and c == question.gold


@dataclass(frozen=True)
class Job:
    """One debate to run: a question (``id``, ``dataset``, ``task``, ``gold``), a method, a seed."""

    question: Any
    method: Method
    seed: int


def vote(answers: Sequence[str], rng: np.random.Generator) -> str:
    """Majority over canonical answers; ties broken uniformly with ``rng``; empty answers
    (parse failures) only win when there is nothing else.

    >>> vote(["4", "5", "4"], np.random.default_rng(0))
    '4'
    """
    counts = Counter(a for a in answers if a) or Counter(answers)
    top = max(counts.values())
    tied = sorted(a for a, c in counts.items() if c == top)
    return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]


@dataclass
class _Agent:
    answer: str
    canonical: str
    confidence: int
    reasoning: str
    correct: bool
    parse_error: str | None

    def entry(self, i: int) -> dict[str, Any]:
        return {"agent": i, "answer": self.answer, "canonical": self.canonical,
                "confidence": self.confidence, "reasoning": self.reasoning,
                "correct": self.correct, "parse_error": self.parse_error}


@dataclass
class _Debate:
    job: Job
    ident: dict[str, Any]
    rng: np.random.Generator
    agents: list[_Agent]
    rounds_data: list[dict[str, Any]]
    influence: np.ndarray
    router: Any = None
    tokens: list[int] = field(default_factory=lambda: [0, 0, 0])
    calls: int = 0
    failed: str | None = None
    started: float = field(default_factory=time.perf_counter)


class Engine:
    """Runs debates for one model through one backend."""

    def __init__(self, backend: Backend, debate: DebateConfig = DebateConfig(), *,
                 task_for: Callable[[str], TaskLike] | None = None, model: str | None = None):
        self.backend = backend
        self.debate = debate
        self._task_for = task_for or (lambda _name: IdentityTask())
        self.model = model or backend.model_id
        self.generate_calls = 0
        self.requests = 0
        self.tokens = 0
        self.cache_hits = 0
        self.failed: list[tuple[str, str]] = []
        self._schemas: dict[tuple, dict[str, Any]] = {}

    # identity ---------------------------------------------------------------
    def identity(self, job: Job) -> dict[str, Any]:
        """The identity fields of ``job``'s record, including its ``debate_id``."""
        chash = config_hash(self.debate, job.method.router)
        ident = {"model": self.model, "backend": self.backend.name,
                 "dataset": job.question.dataset, "method": job.method.name, "seed": job.seed,
                 "question_id": job.question.id, "config_hash": chash}
        did = hashlib.sha256("\x1f".join(str(ident[k]) for k in sorted(ident)).encode())
        return {"debate_id": did.hexdigest()[:20], **ident}

    def debate_id(self, job: Job) -> str:
        return self.identity(job)["debate_id"]

    # backend ----------------------------------------------------------------
    def _generate(self, requests: list[Request]) -> list[Completion]:
        if not requests:
            return []
        out = self.backend.generate(requests)
        if len(out) != len(requests):
            raise RuntimeError(f"backend {self.backend.name!r} returned {len(out)} completions "
                               f"for {len(requests)} requests")
        self.generate_calls += 1
        self.requests += len(requests)
        self.tokens += sum(c.prompt_tokens + c.completion_tokens for c in out)
        self.cache_hits += sum(bool(c.cache_hit) for c in out)
        return out

    def _schema(self, phase: str, n_items: int = 1,
                targets: Sequence[int] | None = None) -> dict[str, Any]:
        key = (phase, n_items, tuple(targets) if targets is not None else None)
        if key not in self._schemas:
            self._schemas[key] = prompts.schema_for(phase, self.debate.max_tokens, n_items,
                                                    targets)
        return self._schemas[key]

    def _request(self, messages, schema, seed: int, meta: dict) -> Request:
        return Request(messages=messages, temperature=self.debate.temperature,
                       max_tokens=self.debate.max_tokens, seed=seed,
                       schema=schema if self.debate.json_mode else None, meta=meta)

    def _agents_from(self, parses: Sequence[parsing.AnswerParse], question: Any) -> list[_Agent]:
        task = self._task_for(question.dataset)
        answers = [p.answer or "" for p in parses]
        if hasattr(task, "judge"):  # one call: classes and grades from one equivalence
            judged = task.judge(answers, question)
            reps, correct = list(judged.classes), list(judged.correct)
        else:
            reps = task.buckets([task.canonical(a) if a else "" for a in answers])
            correct = [bool(a) and task.grade(a, question) for a in answers]
        return [_Agent(p.answer, rep, p.confidence, p.reasoning, bool(p.answer) and ok,
                       p.parse_error) for p, rep, ok in zip(parses, reps, correct)]

    # the run ------------------------------------------------------------------
    def run(self, jobs: Sequence[Job]) -> Iterator[dict[str, Any]]:
        """Run ``jobs`` in lockstep; yield one record per finished debate (CoT/CoT-SC after
        round 0, debates after the last round).  Failed debates are listed in ``failed``."""
        n = self.debate.n_agents
        groups: dict[tuple, list[Job]] = defaultdict(list)
        for job in jobs:
            groups[(job.seed, job.question.dataset, job.question.id)].append(job)

        # round 0: one call for every (seed, question, agent) needed
        reqs, owners = [], []
        for key, gjobs in groups.items():
            seed, dataset, qid = key
            q = gjobs[0].question
            n_needed = 1 if all(j.method.kind == "single" for j in gjobs) else n
            for i in range(n_needed):
                meta = {"phase": "initial", "round": 0, "agent": i, "dataset": dataset,
                        "question_id": qid, **_question_meta(q)}
                reqs.append(self._request(prompts.initial_messages(q.task), self._schema("initial"),
                                          derive_seed(seed, "round0", dataset, qid, i, "initial"), meta))
                owners.append(key)
        outs = self._generate(reqs)
        round0: dict[tuple, list[tuple[parsing.AnswerParse, Completion]]] = defaultdict(list)
        for key, comp in zip(owners, outs):
            round0[key].append((parsing.parse_answer(comp.text) if comp.ok else None, comp))

        debates: list[_Debate] = []
        for key, gjobs in groups.items():
            pairs = round0[key]
            errors = [c.error for _, c in pairs if not c.ok]
            q = gjobs[0].question
            agents = None if errors else self._agents_from([p for p, _ in pairs], q)
            for job in gjobs:
                ident = self.identity(job)
                if errors:
                    self.failed.append((ident["debate_id"], errors[0]))
                    continue
                k = 1 if job.method.kind == "single" else n
                d = _Debate(job, ident, np.random.default_rng(
                    derive_seed(job.seed, job.method.name, q.dataset, q.id, "debate")),
                    [_copy(a) for a in agents[:k]], [], np.zeros(n))
                for _, c in pairs[:k]:
                    _add_tokens(d, c)
                self._close_round(d, 0, np.zeros((0, 2), dtype=np.int64), None, [])
                if job.method.is_debate:
                    d.router = make_router(job.method, self.debate, d.rng)
                    debates.append(d)
                else:
                    yield self._record(d)

        for r in range(1, self.debate.rounds + 1):
            debates = [d for d in debates if d.failed is None]
            if not debates:
                break
            self._round(debates, r)
            for d in debates:
                if d.failed:
                    self.failed.append((d.ident["debate_id"], d.failed))
        for d in debates:
            if d.failed is None:
                yield self._record(d)

    def _round(self, debates: list[_Debate], r: int) -> None:
        # routing and critiques
        plans: list[Any] = []
        batch, slots = [], []
        for d in debates:
            state = RouterState(tuple(a.canonical for a in d.agents),
                                tuple(a.confidence for a in d.agents),
                                tuple(d.influence.tolist()), np.zeros((0, 2), dtype=np.int64))
            item = d.router.batch_item(state, d.rng)
            if item is None:
                plans.append(d.router.choose(state, d.rng))
            else:
                slots.append(len(plans))
                plans.append(None)
                batch.append(item)
        for slot, decision in zip(slots, route_batch(batch)):
            plans[slot] = decision
        reqs, owners = [], []
        for d, decision in zip(debates, plans):
            by_source: dict[int, list[int]] = defaultdict(list)
            for s, t in decision.edges.tolist():
                by_source[s].append(t)
            q = d.job.question
            for s, targets in sorted(by_source.items()):
                own = _view(d.agents[s], s)
                views = [_view(d.agents[t], t) for t in targets]
                meta = {"phase": "critique", "round": r, "agent": s, "dataset": q.dataset,
                        "question_id": q.id, "debate_id": d.ident["debate_id"], "own": own,
                        "targets": views, **_question_meta(q)}
                reqs.append(self._request(
                    prompts.critique_messages(q.task, own, views),
                    self._schema("critique", len(views), targets),
                    derive_seed(d.job.seed, d.job.method.name, q.dataset, q.id, s, r, "critique"),
                    meta))
                owners.append((d, s, targets))
        critiques: dict[int, list[dict[str, Any]]] = defaultdict(list)  # id(debate) -> entries
        for (d, s, targets), comp in zip(owners, self._generate(reqs)):
            _add_tokens(d, comp)
            if not comp.ok:
                d.failed = d.failed or comp.error
                continue
            parsed = parsing.parse_critique(comp.text, targets)
            for t in targets:
                review = parsed.reviews.get(t)
                critiques[id(d)].append({
                    "source": s, "target": t,
                    "critique": review["critique"] if review else "",
                    "recommended_answer": review["recommended_answer"] if review else "",
                    "source_answer": d.agents[s].canonical, "target_answer": d.agents[t].canonical,
                    "source_confidence": d.agents[s].confidence,
                    "target_confidence": d.agents[t].confidence,
                    "delivered": review is not None, "decision": None,
                    "parse_error": None if review else (parsed.parse_error or "missing review")})

        # revisions: every agent, with the critiques delivered to it
        reqs, owners = [], []
        for d in debates:
            if d.failed:
                continue
            q = d.job.question
            for i in range(len(d.agents)):
                received = [c for c in critiques[id(d)] if c["target"] == i and c["delivered"]]
                shown = [{"id": j + 1, "source": c["source"], "critique": c["critique"],
                          "recommended_answer": c["recommended_answer"],
                          "source_confidence": c["source_confidence"],
                          "source_answer": c["source_answer"]} for j, c in enumerate(received)]
                schema = self._schema("revision", len(shown)) if shown else self._schema("initial")
                own = _view(d.agents[i], i)
                meta = {"phase": "revision", "round": r, "agent": i, "dataset": q.dataset,
                        "question_id": q.id, "debate_id": d.ident["debate_id"], "own": own,
                        "critiques": shown, **_question_meta(q)}
                reqs.append(self._request(
                    prompts.revision_messages(q.task, own, shown), schema,
                    derive_seed(d.job.seed, d.job.method.name, q.dataset, q.id, i, r, "revision"),
                    meta))
                owners.append((d, i, received))
        parses: dict[int, list] = defaultdict(list)
        for (d, i, received), comp in zip(owners, self._generate(reqs)):
            _add_tokens(d, comp)
            if not comp.ok:
                d.failed = d.failed or comp.error
                continue
            p = parsing.parse_revision(comp.text, len(received))
            for j, c in enumerate(received, start=1):
                c["decision"] = p.decisions.get(j)
                if c["decision"] is None:
                    c["parse_error"] = f"missing decision from agent {i + 1}"
            if not p.answer:  # documented fallback: keep the previous answer and confidence
                prev = d.agents[i]
                p = parsing.RevisionParse(prev.answer, prev.confidence, p.reasoning or prev.reasoning,
                                          p.parse_error, p.decisions)
            parses[id(d)].append(p)

        for d, decision in zip(debates, plans):
            if d.failed:
                continue
            d.agents = self._agents_from(parses[id(d)], d.job.question)
            entries = critiques[id(d)]
            accepted = [any(c["source"] == s and c["target"] == t and c["decision"] == "ACCEPT"
                            for c in entries) for s, t in decision.edges.tolist()]
            d.influence = update_influence(d.influence, decision.edges, accepted,
                                           d.job.method.router.beta)
            self._close_round(d, r, decision.edges, decision.to_record(), entries)

    def _close_round(self, d: _Debate, r: int, edges: np.ndarray, router: dict | None,
                     critiques: list[dict]) -> None:
        canon = [a.canonical for a in d.agents]
        winner = vote(canon, d.rng)
        won = [a for a in d.agents if a.canonical == winner]
        d.rounds_data.append({
            "round": r, "edges": np.asarray(edges).tolist(), "router": router,
            "agents": [a.entry(i) for i, a in enumerate(d.agents)], "critiques": critiques,
            "influence": [float(x) for x in d.influence],
            "vote": winner, "vote_correct": bool(winner) and won[0].correct})

    def _record(self, d: _Debate) -> dict[str, Any]:
        last = d.rounds_data[-1]
        failures = sum(a["parse_error"] is not None for rd in d.rounds_data for a in rd["agents"])
        failures += sum(c["parse_error"] is not None for rd in d.rounds_data for c in rd["critiques"])
        return {
            "schema": SCHEMA_VERSION, **d.ident, "n_agents": len(d.agents),
            "rounds": len(d.rounds_data) - 1, "gold": d.job.question.gold,
            "rounds_data": d.rounds_data, "final_answer": last["vote"],
            "correct": last["vote_correct"],
            "tokens": {"prompt": d.tokens[0], "completion": d.tokens[1], "cached": d.tokens[2]},
            "calls": d.calls, "parse_failures": failures,
            "latency_s": round(time.perf_counter() - d.started, 4),
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }


def _question_meta(q: Any) -> dict[str, Any]:
    choices = getattr(q, "choices", None)
    return {"n_choices": len(choices) if choices else 0}


def _view(agent: _Agent, i: int) -> dict[str, Any]:
    return {"agent": i, "answer": agent.answer or "(no answer)", "canonical": agent.canonical,
            "confidence": agent.confidence, "reasoning": agent.reasoning}


def _copy(a: _Agent) -> _Agent:
    return _Agent(a.answer, a.canonical, a.confidence, a.reasoning, a.correct, a.parse_error)


def _add_tokens(d: _Debate, c: Completion) -> None:
    d.tokens[0] += c.prompt_tokens
    d.tokens[1] += c.completion_tokens
    d.tokens[2] += c.cached_tokens
    d.calls += 1
