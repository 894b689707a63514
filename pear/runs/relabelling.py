"""Relabelling grids (issue 73): the same questions with the panel's agents seated by each of
K relabellings (:attr:`pear.core.config.DebateConfig.relabelling`), one variant of a grid
per relabelling, each recorded in its own run directory like every variant of a protocol.

>>> placements(3, agent=1)
[(1, 2, 0), (0, 1, 2), (2, 0, 1)]
>>> len(relabellings(5)), relabellings(5, count=3, seed=0)[0]
(120, (0, 1, 2, 3, 4))
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any, Sequence

import numpy as np

__all__ = ["relabellings", "placements", "relabelled", "perm_name"]


def relabellings(n: int, count: int = 0, seed: int = 0) -> list[tuple[int, ...]]:
    """All n! relabellings when ``count`` is 0 or at least n!, else the identity and
    ``count - 1`` others drawn without replacement (seeded)."""
    total = math.factorial(n)
    if count <= 0 or count >= total:
        return list(itertools.permutations(range(n)))
    rng = np.random.default_rng(seed)
    out = [tuple(range(n))]
    seen = set(out)
    while len(out) < count:
        p = tuple(int(i) for i in rng.permutation(n))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def placements(n: int, agent: int = 0) -> list[tuple[int, ...]]:
    """The n relabellings that seat ``agent`` at each position in turn (the others keep
    their cyclic order): entry p has ``agent`` at position p."""
    if not 0 <= agent < n:
        raise ValueError(f"invalid agent {agent!r}: agents are 0..{n - 1}")
    return [tuple((agent + i - p) % n for i in range(n)) for p in range(n)]


def perm_name(perm: Sequence[int]) -> str:
    """A relabelling as a variant's (and a directory's) name: ``seat-2-0-1``."""
    return "seat-" + "-".join(str(int(i)) for i in perm)


def relabelled(exp: Any, perms: Sequence[Sequence[int]], **debate: Any) -> dict[str, Any]:
    """One variant of grid ``exp`` per relabelling (named :func:`perm_name`), with
    ``debate`` settings (e.g. the panel's ``roles``) applied to each."""
    return {perm_name(p): dataclasses.replace(exp, full_datasets=(), debate=dataclasses.replace(
        exp.debate, relabelling=tuple(int(i) for i in p), **debate)) for p in perms}
