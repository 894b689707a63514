"""``pear_debate``: an Inspect solver that runs one PEAR debate per sample.

Any registered method runs (PEAR, its ablations, Random, the fixed topologies, CoT, CoT-SC,
``sc@K``, the related-work and outside plug-ins: :func:`pear.methods.names` after
:func:`pear.methods.load_plugins`) through the engine, with the study's prompts and parsing, on
the sample's benchmark question (the tasks of :mod:`pear.harness.tasks` name it in the sample's
metadata).  The protocol is a ``pear run`` preset with the same overrides (``preset="paper"``:
5 agents, 5 rounds; ``smoke``: 3 agents, 1 round, compact prompts), and the debate's seeds are
those ``pear run --seeds S`` gives the same question (the engine derives them from the run seed,
method, question, agent, round and phase), so the same grid sends the same requests.  Epoch e
of an ``--epochs`` run takes run seed ``seed + e - 1``.

The sample keeps the debate's PEAR record (the line ``pear run`` would write:
:class:`pear.core.record.DebateRecord`) in ``state.metadata["pear_record"]`` and what a run
manifest needs of it (protocol, models, backend settings) in ``state.metadata["pear_run"]``;
``state.output.completion`` is the method's answer (the majority vote of the last round).

Models: agent i (numbered from 1, as the prompts and ``pear run --role`` number them) is the
model of Inspect's model role ``agent<i>`` when the eval assigns one (``--model-role
agent2=openai/gpt-4o-mini``), else the task's model; several distinct models make a
mixed-model panel (``DebateConfig.agent_models``, the model names Inspect gives them).
"""
from __future__ import annotations

import asyncio
import re
import weakref
from dataclasses import replace
from typing import Any, Mapping, Sequence

import anyio
import anyio.to_thread
from inspect_ai.model import ChatMessageAssistant, Model, ModelOutput, get_model, model_roles
from inspect_ai.solver import Generate, Solver, TaskState, solver

from pear.core.config import whole_number
from pear.core.engine import Engine, Job
from pear.harness.backend import STRUCTURED, InspectBackend
from pear.methods import load_plugins, method as make_method
from pear.runs.grid import Experiment, preset as make_preset
from pear.tasks import benchmarks, grading

__all__ = ["pear_debate", "agent_models", "debate_experiment", "sample_question", "RECORD_KEY",
           "RUN_KEY"]

RECORD_KEY = "pear_record"
"""The sample metadata key of the debate's PEAR record."""
RUN_KEY = "pear_run"
"""The sample metadata key of what a run manifest needs (protocol, models, settings)."""
THREADS = 256  # our choice: debates in flight at once (a thread each, mostly waiting)

_ROLE = re.compile(r"agent(\d+)")
_limiters: weakref.WeakKeyDictionary[Any, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()


def _limiter() -> anyio.CapacityLimiter:
    """The debates' threads of the running event loop (:data:`THREADS` at once)."""
    loop = asyncio.get_running_loop()
    if loop not in _limiters:
        _limiters[loop] = anyio.CapacityLimiter(THREADS)
    return _limiters[loop]


def debate_experiment(method: str, *, preset: str = "paper", seed: int = 0,
                      question_seed: int = 0, dataset: str | None = None,
                      **settings: Any) -> Experiment:
    """The one-method, one-seed grid a sample's debate belongs to: ``pear run --preset
    PRESET``'s with ``settings`` (``rounds``, ``n_agents``, ``k``, ``max_tokens``,
    ``temperature``, ``prompt_style``, ``stop``, ``roles``: the same overrides, the same
    rules) and no full-set part.

    >>> e = debate_experiment("pear", preset="smoke", rounds=2)
    >>> e.debate.n_agents, e.debate.rounds, e.methods, e.protocol()["question_seed"]
    (3, 2, ('pear',), 0)
    """
    over = {k: v for k, v in settings.items() if v is not None}
    if isinstance(over.get("roles"), Mapping):
        over["roles"] = {int(a): str(r) for a, r in over["roles"].items()}
    extra = {"datasets": (dataset,)} if dataset else {}
    return make_preset(preset, methods=(method,), seeds=(seed,), question_seed=question_seed,
                       full_datasets=(), study_scope=False, n_questions=None, **extra, **over)


def agent_models(n_agents: int) -> list[Model]:
    """The model of each agent: Inspect's model role ``agent<i>`` (i from 1) where the eval
    assigns one, else the task's model.

    A role ``agent0`` or one past the last agent is an error naming it (a typo would
    otherwise leave an agent on the default model unnoticed)."""
    roles = model_roles()
    for name in roles:
        m = _ROLE.fullmatch(name)
        if m and not 1 <= int(m.group(1)) <= n_agents:
            raise ValueError(f"model role {name!r} names no agent of this debate: agents are "
                             f"numbered 1..{n_agents} (agent1..agent{n_agents}), as the "
                             "prompts and `pear run --role` number them")
    return [get_model(role=f"agent{i}") if f"agent{i}" in roles else get_model()
            for i in range(1, n_agents + 1)]


def _backends(models: Sequence[Model], structured: str
              ) -> tuple[InspectBackend | dict[str, InspectBackend], tuple[str, ...]]:
    """One backend for a single model; ``{model name: backend}`` and the agents' model names
    for a mixed panel.  Two agents' models of one name must be one model (a record names an
    agent's model by its name alone)."""
    names = [str(m) for m in models]
    by_name: dict[str, Model] = {}
    for i, (name, m) in enumerate(zip(names, models)):
        if by_name.setdefault(name, m) is not m and by_name[name].config != m.config:
            raise ValueError(f"agent {i + 1}'s model {name!r} has other settings than another "
                             "agent's model of that name: a PEAR record names each agent's "
                             "model by its name alone; give them distinct models")
    if len(by_name) == 1:
        return InspectBackend(models[0], structured=structured), ()
    return ({name: InspectBackend(m, structured=structured, panel=True)
             for name, m in by_name.items()}, tuple(names))


def sample_question(state: TaskState) -> benchmarks.Question:
    """The benchmark question a sample stands for (its metadata's ``dataset`` and
    ``question_id``: the samples of :mod:`pear.harness.tasks`)."""
    meta = state.metadata or {}
    dataset, qid = meta.get("dataset"), meta.get("question_id")
    if dataset not in benchmarks.DATASETS or not isinstance(qid, str):
        raise ValueError(f"sample {state.sample_id!r} names no benchmark question (metadata "
                         f"dataset={dataset!r}, question_id={qid!r}): pear_debate runs the "
                         "samples of pear.harness.tasks (one of "
                         f"{', '.join(benchmarks.DATASETS)} and a question id)")
    return benchmarks.get_question(dataset, qid)


def _summary(record: Mapping[str, Any]) -> str:
    """The transcript's last message: the method's answer and how the debate ended."""
    rounds = record["rounds"]
    tail = f"after round {rounds} of {record.get('max_rounds', rounds)}" if record.get(
        "max_rounds") else "of the initial answers"
    return (f"{record['method']}: {record['final_answer'] or '(no answer)'} (the vote {tail}; "
            f"{record['n_agents']} agents, {record['calls']} calls)")


@solver
def pear_debate(method: str = "pear", *, preset: str = "paper", rounds: int | None = None,
                agents: int | None = None, k: int | None = None,
                max_tokens: int | None = None, temperature: float | None = None,
                prompt_style: str | None = None, stop: str | None = None,
                agent_roles: Mapping[int, str] | None = None, seed: int = 0,
                structured: str = "auto", plugins: Sequence[str] = ()) -> Solver:
    """One PEAR debate per sample with method ``method``.

    Args:
      method: a registered method (``pear methods`` lists them).
      preset: the ``pear run`` preset whose protocol the debate follows (``paper``, ``smoke``,
        ``sim``, ``beyond``); the arguments below override it as ``pear run``'s do.
      rounds: debate rounds R.
      agents: agents n (k follows down to n - 1 unless given).
      k: in-degree of the base role graph.
      max_tokens: generated-token budget of every call.
      temperature: sampling temperature of every call.
      prompt_style: ``paper`` (the study's templates) or ``compact`` (tiny models).
      stop: early stopping: ``none``, ``consensus`` or ``stable:K``.
      agent_roles: ``{agent (from 1): role}``, e.g. ``{2: "adversarial"}``.
      seed: the run seed (epoch e runs ``seed + e - 1``).
      structured: how the JSON schema of each phase reaches the model
        (:data:`pear.harness.backend.STRUCTURED`; ``auto``: the richest form the server takes).
      plugins: modules that register methods (as ``pear run --plugin``).
    """
    if structured not in STRUCTURED:
        raise ValueError(f"invalid structured={structured!r}: choose one of "
                         f"{', '.join(STRUCTURED)}")
    seed = whole_number(seed, "seed", 0, fix="use a non-negative integer")
    load_plugins(list(plugins))
    settings = {"rounds": rounds, "n_agents": agents, "k": k, "max_tokens": max_tokens,
                "temperature": temperature, "prompt_style": prompt_style, "stop": stop,
                "roles": agent_roles}
    base = debate_experiment(method, preset=preset, seed=seed, **settings)  # checks them all
    the_method = make_method(method, base.router)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        q = sample_question(state)
        meta = state.metadata or {}
        run_seed = seed + state.epoch - 1
        exp = replace(base, datasets=(q.dataset,), seeds=(run_seed,),
                      n_questions=meta.get("n_questions"),
                      question_seed=int(meta.get("question_seed", 0)))
        backend, names = _backends(agent_models(exp.debate.n_agents), structured)
        debate = replace(exp.debate, agent_models=names) if names else exp.debate
        exp = replace(exp, debate=debate)
        engine = Engine(backend, debate, task_for=grading.get)
        records = await anyio.to_thread.run_sync(
            lambda: list(engine.run([Job(q, the_method, run_seed)])), limiter=_limiter())
        if not records:
            why = engine.failed[0][1] if engine.failed else "no record"
            raise RuntimeError(f"the {method} debate of {q.dataset} question {q.id!r} (seed "
                               f"{run_seed}) failed: {why}")
        record = records[0]
        parts = backend.values() if isinstance(backend, dict) else [backend]
        state.metadata[RECORD_KEY] = record
        state.metadata[RUN_KEY] = {
            "protocol": exp.protocol(), "experiment": exp.to_dict(), "backend": engine.backend_name,
            "model_ids": [engine.model], "backend_settings": [
                {b.model_id: b.settings() for b in parts} if names else parts[0].settings()]}
        state.output = ModelOutput.from_content(model=engine.model,
                                                content=record["final_answer"])
        state.output.completion = record["final_answer"]
        state.messages.append(ChatMessageAssistant(content=_summary(record),
                                                   model=engine.model, source="generate"))
        return state

    return solve
