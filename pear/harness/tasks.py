"""The four benchmarks this repository ships as Inspect tasks, graded as ``pear run`` grades.

``inspect eval pear/gsm8k --model ... -T method=pear -T n_questions=50`` (or
``inspect eval pear/harness/tasks.py@gsm8k``): one sample per question of
:func:`pear.tasks.benchmarks.load` (the seeded subset ``pear run --n-questions N`` asks, ids and
gold answers ours), solved by :func:`pear.harness.solver.pear_debate` and scored by
:func:`pear_grader`, this repository's grader for the dataset (:func:`pear.tasks.grading.get`;
MATH-500 through Math-Verify) applied to the method's answer.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import anyio.to_thread
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import (CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer,
                               stderr)
from inspect_ai.solver import TaskState

from pear.core import prompts
from pear.harness.solver import RECORD_KEY, pear_debate, sample_question
from pear.tasks import benchmarks, grading

__all__ = ["mmlu_pro", "truthfulqa", "gsm8k", "math500", "pear_grader", "samples",
           "benchmark_task"]


def samples(dataset: str, n_questions: int | None = None,
            question_seed: int = 0) -> list[Sample]:
    """One sample per question of ``dataset`` (``n_questions``: the seeded subset of
    :func:`pear.tasks.benchmarks.load`, None: all): its id, the problem as the prompts show it,
    the gold answer as target, and the dataset, question id and subset (``n_questions``,
    ``question_seed``) the solver debates and records."""
    return [Sample(id=q.id, input=prompts.problem_block(q), target=q.gold,
                   metadata={"dataset": dataset, "question_id": q.id,
                             "n_questions": n_questions, "question_seed": question_seed})
            for q in benchmarks.load(dataset, n=n_questions, seed=question_seed)]


@scorer(metrics=[accuracy(), stderr()])
def pear_grader() -> Scorer:
    """The method's answer (``state.output.completion``) graded by this repository's grader
    for the sample's dataset; the explanation names the gold answer and, when the sample
    holds a PEAR record, whether the record's own grade agrees."""

    async def score(state: TaskState, target: Target) -> Score:
        q = sample_question(state)
        answer = state.output.completion or ""
        grade = await anyio.to_thread.run_sync(
            lambda: grading.get(q.dataset).grade_detail(answer, q))
        record = (state.metadata or {}).get(RECORD_KEY) or {}
        meta: dict[str, Any] = {"parse_failure": grade.parse_failure, "timeout": grade.timeout}
        if record:
            meta["record_correct"] = record.get("correct")
        return Score(value=CORRECT if grade.correct else INCORRECT, answer=answer,
                     explanation=f"gold {q.gold!r}; answer {answer or '(none)'!r} "
                                 f"{'correct' if grade.correct else 'wrong'}", metadata=meta)

    return score


def benchmark_task(dataset: str, method: str = "pear", *, n_questions: int | None = None,
                   question_seed: int = 0, seed: int = 0, preset: str = "paper",
                   rounds: int | None = None, agents: int | None = None, k: int | None = None,
                   max_tokens: int | None = None, temperature: float | None = None,
                   prompt_style: str | None = None, stop: str | None = None,
                   agent_roles: Mapping[int, str] | None = None, structured: str = "auto",
                   plugins: Sequence[str] = ()) -> Task:
    """The task of benchmark ``dataset``: its samples, ``pear_debate`` with these settings
    (see :func:`pear.harness.solver.pear_debate`) and :func:`pear_grader`."""
    solver = pear_debate(method, preset=preset, rounds=rounds, agents=agents, k=k,
                         max_tokens=max_tokens, temperature=temperature,
                         prompt_style=prompt_style, stop=stop, agent_roles=agent_roles,
                         seed=seed, structured=structured, plugins=plugins)
    return Task(dataset=MemoryDataset(samples(dataset, n_questions, question_seed),
                                      name=dataset),
                solver=solver, scorer=pear_grader(),
                metadata={"pear": {"dataset": dataset, "method": method, "seed": seed,
                                   "question_seed": question_seed, "preset": preset}})


@task
def mmlu_pro(method: str = "pear", n_questions: int | None = None, question_seed: int = 0,
             seed: int = 0, preset: str = "paper", rounds: int | None = None,
             agents: int | None = None, k: int | None = None, max_tokens: int | None = None,
             temperature: float | None = None, prompt_style: str | None = None,
             stop: str | None = None, structured: str = "auto") -> Task:
    """MMLU-Pro (letters A-J, the benchmark's option order) debated with ``method``."""
    return benchmark_task("mmlu_pro", **locals())


@task
def truthfulqa(method: str = "pear", n_questions: int | None = None, question_seed: int = 0,
               seed: int = 0, preset: str = "paper", rounds: int | None = None,
               agents: int | None = None, k: int | None = None, max_tokens: int | None = None,
               temperature: float | None = None, prompt_style: str | None = None,
               stop: str | None = None, structured: str = "auto") -> Task:
    """TruthfulQA MC1 (options shuffled once per question) debated with ``method``."""
    return benchmark_task("truthfulqa", **locals())


@task
def gsm8k(method: str = "pear", n_questions: int | None = None, question_seed: int = 0,
          seed: int = 0, preset: str = "paper", rounds: int | None = None,
          agents: int | None = None, k: int | None = None, max_tokens: int | None = None,
          temperature: float | None = None, prompt_style: str | None = None,
          stop: str | None = None, structured: str = "auto") -> Task:
    """GSM8K (the final number, compared exactly) debated with ``method``."""
    return benchmark_task("gsm8k", **locals())


@task
def math500(method: str = "pear", n_questions: int | None = None, question_seed: int = 0,
            seed: int = 0, preset: str = "paper", rounds: int | None = None,
            agents: int | None = None, k: int | None = None, max_tokens: int | None = None,
            temperature: float | None = None, prompt_style: str | None = None,
            stop: str | None = None, structured: str = "auto") -> Task:
    """MATH-500 (graded by Math-Verify) debated with ``method``."""
    return benchmark_task("math500", **locals())
