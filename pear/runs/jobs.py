"""The debates of a grid, and its deterministic parts (shards).

:func:`jobs` lists every debate of a grid for one model, grouped by (seed, question) so that
all methods of a question share round 0.  Scale-out: ``Experiment.shard = (i, N)`` keeps the
i-th of N deterministic parts of the grid (whole (seed, question) groups, balanced by debate
count), so N machines can each run a part into their own directory;
:func:`pear.runs.merge.merge` combines the parts after checking that their manifests agree.
"""
from __future__ import annotations

import re
from dataclasses import replace

from pear.core.engine import Job
from pear.methods import method
from pear.runs.grid import Experiment, grid_questions

__all__ = ["jobs", "parse_shard", "shard_text", "shard_sizes"]


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` as ``(i, N)``.

    >>> parse_shard("2/4")
    (2, 4)
    >>> parse_shard("3/2")
    Traceback (most recent call last):
    ...
    ValueError: invalid shard '3/2': use i/N with 1 <= i <= N, e.g. 1/4
    """
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"invalid shard {text!r}: use i/N with 1 <= i <= N, e.g. 1/4")
    return int(m.group(1)), int(m.group(2))


def shard_text(shard: tuple[int, int] | None) -> str | None:
    """``(i, N)`` as ``"i/N"`` (None stays None), as the manifest records it.

    >>> shard_text(parse_shard("2/4"))
    '2/4'
    """
    return None if shard is None else f"{shard[0]}/{shard[1]}"


def jobs(exp: Experiment) -> list[Job]:
    """Every debate of the grid for one model (subset: all methods x seeds; full sets:
    ``full_methods`` x ``full_seeds``), grouped by (seed, question).  The jobs of a method
    share one method object (the engine hashes each object's configuration once)."""
    out, seen = [], set()
    made = {m: method(m, exp.router) for m in dict.fromkeys((*exp.methods, *exp.full_methods))}
    for q, in_subset in grid_questions(exp):
        plans = []
        if in_subset:
            plans.append((exp.seeds, exp.methods))
        if q.dataset in exp.full_datasets:
            plans.append((exp.full_seeds, exp.full_methods))
        for seeds, methods in plans:
            for seed in seeds:
                for m in methods:
                    if (seed, q.dataset, q.id, m) not in seen:
                        seen.add((seed, q.dataset, q.id, m))
                        out.append(Job(q, made[m], seed))
    out.sort(key=lambda j: (j.seed, j.question.dataset))  # stable: keeps question order
    return _shard(out, exp.shard) if exp.shard else out


def _shard(all_jobs: list[Job], shard: tuple[int, int]) -> list[Job]:
    """The jobs of part ``i`` of ``N`` (:func:`_parts`)."""
    i, n = shard
    part = _parts(all_jobs, n)
    return [j for j in all_jobs if part[(j.seed, j.question.dataset, j.question.id)] == i - 1]


def _parts(all_jobs: list[Job], n: int) -> dict[tuple, int]:
    """The part (0-based) of every (seed, dataset, question) group: whole groups (they share
    round 0), each given in grid order to the part with the fewest debates so far (lowest
    index on ties), so the parts are disjoint, cover the grid and differ by at most one
    group."""
    groups: dict[tuple, int] = {}
    for j in all_jobs:
        key = (j.seed, j.question.dataset, j.question.id)
        groups[key] = groups.get(key, 0) + 1
    load = [0] * n
    part: dict[tuple, int] = {}
    for key, size in groups.items():
        p = min(range(n), key=lambda q: (load[q], q))
        load[p] += size
        part[key] = p
    return part


def shard_sizes(exp: Experiment, n: int) -> list[int]:
    """Debates in each of the ``n`` shards of ``exp``'s grid (``len(jobs(...shard=(i, n)))``
    for i = 1..n, from one pass over the grid).

    >>> from pear.runs.grid import preset
    >>> shard_sizes(preset("smoke"), 3)
    [28, 21, 14]
    """
    counts = [0] * n
    all_jobs = jobs(replace(exp, shard=None))
    part = _parts(all_jobs, n)
    for j in all_jobs:
        counts[part[(j.seed, j.question.dataset, j.question.id)]] += 1
    return counts
