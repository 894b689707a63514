"""Cost plan of an experiment grid, without loading a model: debates, model calls, prompt
and completion tokens, cached-prefix share and GPU-hours.

Two bases:

* a dry run (default): the real engine runs a sample of the grid (``sample`` questions per
  dataset and method, every method of each sampled question, plus CoT-SC to measure the
  shared initial answers) against :class:`pear.backends.dry.DryBackend`, whose replies
  follow the schemas and have ``fill`` x the token budget; prompts are rendered from the
  templates in use, so the estimate follows them.  Costs per debate are extrapolated to the
  whole grid by (dataset, method); initial answers shared by the methods of one (seed,
  question) are counted once, as the engine makes them.
* ``from_run``: the same extrapolation from an existing run's records (measured averages).
  A run with a different protocol (agents, rounds, budget, ...) only lends its measured
  completion length (as a share of its budget) to a dry run.

Call counts are exact for CoT, CoT-SC and the fixed topologies; routed methods draw a
random base graph per debate (out-degrees vary, so the number of critique calls varies) and
are counted as the sample's mean.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pear.backends.dry import CHARS_PER_TOKEN, DryBackend
from pear.core.engine import Engine, Job
from pear.runs.grid import Experiment, model_grid
from pear.runs.jobs import jobs
from pear.store.manifest import read as read_manifest
from pear.catalog.models import PAPER_DIR, display_name
from pear.core.config import DebateConfig
from pear.methods import initial_agents, method as make_method
from pear.store.records import read_records

__all__ = ["Cost", "estimate", "format_plan", "PaperCost", "paper_costs"]

SAMPLE_QUESTIONS = 2  # our choice: per dataset and method; costs vary little by question


@dataclass(frozen=True)
class Cost:
    """The estimated cost of one model's grid."""

    model: str
    debates: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    cached_tokens: float
    basis: str
    """How the numbers were obtained (dry run settings or the run directory)."""
    per_debate: Mapping[str, float]
    """Mean tokens (prompt + completion) per debate by method, initial answers included
    (the study's "tokens per example")."""

    @property
    def tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cached_share(self) -> float:
        """Share of prompt tokens served from the prefix cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def gpu_hours(self, throughput: float) -> float:
        """Hours at ``throughput`` computed tokens per second (prompt tokens not served from
        the prefix cache, plus completion tokens)."""
        if not throughput or throughput <= 0:
            raise ValueError(f"invalid throughput={throughput!r}: tokens per second, > 0")
        return (self.prompt_tokens - self.cached_tokens + self.completion_tokens) \
            / throughput / 3600.0


# ------------------------------------------------------------------------ cost model

def _key(job: Job) -> tuple:
    return (job.seed, job.question.dataset, job.question.id)


def _round0_calls(group: Sequence[Job], n_agents: int) -> int:
    """Initial-answer calls the engine makes for one (seed, question) group."""
    return max(initial_agents(j.method, n_agents) for j in group)


def _initial(record: Mapping[str, Any]) -> int:
    """The initial answers a record's debate holds: 1 (CoT), K (``sc@K``) or n — the
    record's own agent count (the engine records one entry per agent that answered)."""
    return int(record["n_agents"])


@dataclass
class _Unit:
    """Costs measured from records: per dataset one shared initial call, per (dataset,
    method) what a debate adds beyond the initial answers."""

    round0: dict[str, list[float]]  # dataset -> [prompt, completion, cached] of one call
    extra: dict[tuple[str, str], list[float]]  # (dataset, method) -> [calls, p, c, cached]
    per_debate: dict[str, float]  # method -> mean tokens per debate


def _units(records: Iterable[Mapping[str, Any]], n_agents: int) -> _Unit:
    recs = list(records)
    if not recs:
        raise ValueError("no debate records to measure costs from")
    first_calls: dict[str, list[list[float]]] = defaultdict(list)
    for r in recs:  # one initial call: CoT's record, or CoT-SC's n calls / n
        t = r["tokens"]
        if r["method"] == "cot":
            first_calls[r["dataset"]].append([t["prompt"], t["completion"], t["cached"]])
        elif r["method"] == "cot_sc":
            k = r["calls"]
            first_calls[r["dataset"]].append([t["prompt"] / k, t["completion"] / k,
                                              t["cached"] / k])
    round0 = {ds: [sum(c[i] for c in v) / len(v) for i in range(3)]
              for ds, v in first_calls.items()}
    extra_lists: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    totals: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        ds, t = r["dataset"], r["tokens"]
        if ds not in round0:
            raise ValueError(f"the records hold no CoT or CoT-SC debate on {ds!r}: the cost "
                             "of the shared initial answers cannot be separated")
        k = _initial(r)
        base = round0[ds]
        extra_lists[(ds, r["method"])].append(
            [r["calls"] - k, t["prompt"] - k * base[0], t["completion"] - k * base[1],
             t["cached"] - k * base[2]])
        totals[r["method"]].append(t["prompt"] + t["completion"])
    extra = {key: [sum(v[i] for v in vals) / len(vals) for i in range(4)]
             for key, vals in extra_lists.items()}
    return _Unit(round0, extra, {m: sum(v) / len(v) for m, v in totals.items()})


def _extrapolate(all_jobs: Sequence[Job], unit: _Unit, n_agents: int) -> list[float]:
    """[calls, prompt, completion, cached] of ``all_jobs`` from measured units."""
    groups: dict[tuple, list[Job]] = defaultdict(list)
    for j in all_jobs:
        groups[_key(j)].append(j)
    out = [0.0, 0.0, 0.0, 0.0]
    for (_, ds, _), group in groups.items():
        if ds not in unit.round0:
            raise ValueError(f"no measured cost for dataset {ds!r}")
        r0 = _round0_calls(group, n_agents)
        out[0] += r0
        for i in range(3):
            out[i + 1] += r0 * unit.round0[ds][i]
        for j in group:
            add = unit.extra.get((ds, j.method.name))
            if add is None:
                raise ValueError(f"no measured cost for method {j.method.name!r} on {ds!r}: "
                                 "the run directory does not hold it")
            for i in range(4):
                out[i] += add[i]
    return out


def _reply_share(records: Sequence[Mapping[str, Any]], n_agents: int, budget: int) -> float:
    """Mean completion tokens per backend request of a recorded run, as a share of its
    budget (initial answers shared by a question's methods counted once)."""
    unit = _units(records, n_agents)
    methods: dict[tuple, int] = {}
    calls = completion = 0.0
    for r in records:
        k = _initial(r)
        key = (r["seed"], r["dataset"], r["question_id"])
        methods[key] = max(methods.get(key, 0), k)
        calls += r["calls"] - k
        completion += r["tokens"]["completion"] - k * unit.round0[r["dataset"]][1]
    for (_, ds, _), r0 in methods.items():
        calls += r0
        completion += r0 * unit.round0[ds][1]
    return min(1.0, completion / calls / budget)


def _sample(all_jobs: Sequence[Job], per_pair: int) -> list[Job]:
    """Whole (seed, question) groups, in grid order, until every (dataset, method) of the
    grid appears ``per_pair`` times; each sampled group also gets a CoT-SC debate (which
    measures the shared initial answers)."""
    groups: dict[tuple, list[Job]] = defaultdict(list)
    for j in all_jobs:
        groups[_key(j)].append(j)
    seen: dict[tuple[str, str], int] = defaultdict(int)
    out: list[Job] = []
    for group in groups.values():
        pairs = [(j.question.dataset, j.method.name) for j in group]
        if all(seen[p] >= per_pair for p in pairs):
            continue
        for p in pairs:
            seen[p] += 1
        out += group
        if not any(j.method.name == "cot_sc" for j in group):
            g = group[0]
            out.append(Job(g.question, make_method("cot_sc", g.method.router), g.seed))
    return out


# ------------------------------------------------------------------------ public API

def estimate(exp: Experiment, model: str | None = None, *,
             from_run: str | Path | None = None, fill: float = 1.0,
             chars_per_token: float = CHARS_PER_TOKEN,
             sample: int = SAMPLE_QUESTIONS) -> Cost:
    """The cost of ``model``'s grid of ``exp`` (:func:`pear.runs.grid.model_grid`).

    Dry run with completions of ``fill`` x the budget, or measured averages of the run
    directory ``from_run`` (see the module docstring).  Loads no model.
    """
    if sample < 1:
        raise ValueError(f"invalid sample={sample!r}: use >= 1")
    grid = model_grid(exp, model)
    all_jobs = jobs(grid)
    n = grid.debate.n_agents
    label = model or "(backend default)"
    if not all_jobs:
        return Cost(label, 0, 0, 0, 0, 0, "empty grid", {})
    if from_run is not None:
        manifest = read_manifest(from_run)
        records = read_records(from_run)
        if manifest is None or not records:
            raise FileNotFoundError(f"{str(from_run)!r} holds no recorded run to measure")
        same = manifest.get("protocol", {}).get("debate") == grid.protocol()["debate"]
        if same:
            unit = _units(records, n)
            totals = _extrapolate(all_jobs, unit, n)
            return Cost(label, len(all_jobs), *totals,
                        basis=f"measured averages of {from_run} ({len(records)} debates)",
                        per_debate=unit.per_debate)
        debate = manifest["protocol"]["debate"]
        fill = _reply_share(records, debate["n_agents"], debate["max_tokens"])
    backend = DryBackend(fill=fill, chars_per_token=chars_per_token)
    engine = Engine(backend, grid.debate)
    records = list(engine.run(_sample(all_jobs, sample)))
    if engine.failed:
        raise RuntimeError(f"the dry run failed: {engine.failed[0][1]}")
    unit = _units(records, n)
    totals = _extrapolate(all_jobs, unit, n)
    basis = (f"dry run of {len(records)} debates, replies of {fill:.0%} of the "
             f"{grid.debate.max_tokens}-token budget"
             + (" (an upper bound)" if fill >= 1.0 else
                f" (measured in {from_run})" if from_run is not None else "")
             + f", {chars_per_token:g} characters a token")
    return Cost(label, len(all_jobs), *totals, basis=basis, per_debate=unit.per_debate)


@dataclass(frozen=True)
class PaperCost:
    """The study's printed tokens per example (``data/paper/cost.csv``)."""

    method: str
    tokens_per_example: float


def paper_costs() -> list[PaperCost]:
    """The study's printed tokens per example, by method key."""
    import csv
    from pear.catalog.labels import METHOD_NAMES  # heavy: pandas, only for this function
    with open(PAPER_DIR / "cost.csv", newline="", encoding="utf-8") as fh:
        return [PaperCost(METHOD_NAMES.get(r["method"], r["method"]),
                          float(r["tokens_per_example"]))
                for r in csv.DictReader(fh)]


def _num(x: float) -> str:
    if x >= 1e9:
        return f"{x / 1e9:.2f} G"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    return f"{x:,.0f}"


def format_plan(exp: Experiment, costs: Sequence[Cost], *, backend: str,
                throughput: float | None = None) -> str:
    """The plan as text: the grid, one line per model, totals, GPU-hours, and the study's
    printed tokens per example beside the estimate."""
    d = exp.debate
    lines = [f"pear plan: preset {exp.name!r}, backend {backend!r}; n={d.n_agents} agents, "
             f"R={d.rounds} rounds, k={d.k}, {d.max_tokens} tokens a call"
             + (f"; shard {exp.shard[0]}/{exp.shard[1]}" if exp.shard else "")]
    for c in costs:
        lines.append(f"  {c.model}: {c.basis}")
    head = f"{'model':<26}{'debates':>10}{'calls':>12}{'prompt tok':>13}" \
           f"{'completion tok':>16}{'cached':>8}"
    rates = [throughput] if throughput else [1_000.0, 5_000.0, 20_000.0]
    head += "".join(f"{'GPU-h @' + _num(r) + '/s':>16}" for r in rates)
    lines += ["", head]
    total = Cost("total", sum(c.debates for c in costs), sum(c.calls for c in costs),
                 sum(c.prompt_tokens for c in costs), sum(c.completion_tokens for c in costs),
                 sum(c.cached_tokens for c in costs), "", {})
    for c in list(costs) + ([total] if len(costs) > 1 else []):
        name = display_name(c.model) if c is not total else "total"
        row = f"{name[:25]:<26}{c.debates:>10,}{c.calls:>12,.0f}{_num(c.prompt_tokens):>13}" \
              f"{_num(c.completion_tokens):>16}{c.cached_share:>8.0%}"
        row += "".join(f"{c.gpu_hours(r):>16,.1f}" for r in rates)
        lines.append(row)
    lines.append("")
    lines.append("GPU-hours count computed tokens (prompt tokens not served from the prefix "
                 "cache, plus completion tokens)"
                 + ("" if throughput else "; the three rates are illustrative: measure yours "
                    "and pass --throughput TOKENS_PER_S"))
    study = {p.method: p.tokens_per_example for p in paper_costs()}
    shown = [(m, costs[0].per_debate[m]) for m in study if costs and m in costs[0].per_debate]
    paper = DebateConfig()
    if shown and (d.n_agents, d.rounds, d.max_tokens) == (paper.n_agents, paper.rounds,
                                                            paper.max_tokens):
        lines.append("tokens per debate (" + display_name(costs[0].model) + ") vs the study's "
                     "printed tokens per example: "
                     + ", ".join(f"{m} {v:,.0f} (study {study[m]:,.0f})" for m, v in shown))
    lines.append("early stopping (--stop consensus): not estimated; the dry run assumes no "
                 "debate stops early (its agents never agree), an upper bound; "
                 "--from RUN_DIR of a run made with early stopping measures the saving")
    return "\n".join(lines)
