"""How another framework's debates ran: who answers when, who hears whom, what an agent sees,
when a debate stops and who leaves it.  An imported run states its source's protocol in its
manifest (``imported.protocol``, written by ``pear import``); simulated agents compared with
that run are run under the same protocol (:meth:`Protocol.from_dict` reads it back).

The known sources (:mod:`pear.store.readers`; the facts, with where they come from, in
docs/records.md):

* Du et al. (``du``): every agent answers in every round, all at once; each hears the full
  answers of every other agent of the previous round; no early stop, no one leaves.
* DyLAN's CoT baseline (``dylan``): up to 4 agents and 3 rounds; agents answer one after
  another, each hearing every other agent's latest answer; after each answer from the
  3rd agent of a round on, the debate stops when more than floor(2/3 x answered) of that
  round's answers agree (agents that had not answered yet are left out of the record); before
  the last round a judge keeps the 2 best agents.

>>> p = Protocol(name="du", agents=3, rounds=2)
>>> p.stop is None and p.order == "simultaneous" and Protocol.from_dict(p.to_dict()) == p
True
>>> Quorum(share=2 / 3, after=3).reached(answered=4, agreeing=3)
True
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, Mapping

__all__ = ["Protocol", "Quorum", "Drop", "ORDERS", "HEARS", "quorum_misses"]

ORDERS = ("simultaneous", "sequential")
"""``simultaneous``: a round's agents answer at once, each hearing the others' answers of the
previous round; ``sequential``: they answer in turn, each hearing every other agent's latest
answer (those before it in this round's order already revised)."""


HEARS = ("all_others", "all_answered")
"""Whom an agent hears (:attr:`Protocol.hears`)."""


@dataclass(frozen=True)
class Quorum:
    """Early stop: checked after each answer of a round from the ``after``-th agent on; the
    debate stops when more than ``floor(share * answered)`` of the round's answers so far are
    the same answer.  Agents that had not answered in that round are not in the record."""

    share: float
    after: int
    miss: float = 0.0
    """The share of the quorums our grader sees that the source's own check missed, so that
    its debate went on (DyLAN compares answer strings: ``\\frac{1}{2}`` and ``0.5`` differ),
    measured on its records (:func:`quorum_misses`); a simulated twin misses as often.  Where
    :attr:`miss_right` is given, the share of the quorums on a wrong answer."""
    miss_right: float | None = None
    """The share of the quorums on the right answer that the check missed (None: :attr:`miss`
    for every quorum).  DyLAN misses right answers far more often: a right answer is written
    in many ways, a shared wrong one mostly in one (its MATH corpus: 0.18 of the quorums on
    the right answer, 0.07 of those on a wrong one)."""

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1 or isinstance(self.after, bool) or self.after < 1 \
                or not 0 <= self.miss < 1 or not (self.miss_right is None
                                                  or 0 <= self.miss_right < 1):
            raise ValueError(f"invalid Quorum(share={self.share!r}, after={self.after!r}, "
                             f"miss={self.miss!r}, miss_right={self.miss_right!r}): share in "
                             "(0, 1], after an integer >= 1, miss and miss_right in [0, 1)")

    def missed(self, right: bool) -> float:
        """The share of quorums on the right (``right``) or a wrong answer the check misses."""
        return self.miss_right if right and self.miss_right is not None else self.miss

    def reached(self, answered: int, agreeing: int) -> bool:
        """Whether ``agreeing`` equal answers among ``answered`` stop the debate."""
        return answered >= self.after and agreeing > math.floor(self.share * answered)


@dataclass(frozen=True)
class Drop:
    """Agents leave: before round ``before_round`` a judge (``by``) keeps the ``keep`` best
    agents; the others leave the debate and the record.  If the kept agents already agree
    (the stop rule), the debate ends there."""

    before_round: int
    keep: int
    by: str = "llm_ranker"

    def __post_init__(self) -> None:
        if min(self.before_round, self.keep) < 1:
            raise ValueError(f"invalid Drop(before_round={self.before_round!r}, "
                             f"keep={self.keep!r}): both integers >= 1")


@dataclass(frozen=True)
class Protocol:
    """A debate protocol of another framework, as its code and records show it."""

    name: str
    agents: int
    """Agents at the start of a debate."""
    rounds: int
    """The most rounds a debate runs, round 0 (the first answers) included."""
    order: Literal["simultaneous", "sequential"] = "simultaneous"
    hears: Literal["all_others", "all_answered"] = "all_others"
    """Whom an agent hears from round 1 on: every other agent still in the debate
    (``all_others``), or every other agent that has answered, with its latest answer, those a
    :class:`Drop` removed included (``all_answered``: DyLAN's prompts quote them)."""
    sees: Literal["full_answers"] = "full_answers"
    """What it gets of each: the full text of its answer (no summary, no extracted answer)."""
    confidences: bool = False
    """Whether agents state or hear confidences."""
    critiques: bool = False
    """Whether agents write or receive critiques (PEAR's critique phase)."""
    stop: Quorum | None = None
    """The early stop; None: every debate runs all ``rounds``."""
    drop: Drop | None = None
    """Who leaves the debate before its end; None: no one."""
    source: str = ""
    """Where the facts come from (code and records)."""

    def __post_init__(self) -> None:
        if min(self.agents, self.rounds) < 1 or self.order not in ORDERS or \
                self.hears not in HEARS or self.sees != "full_answers":
            raise ValueError(f"invalid protocol {self.name!r}: agents and rounds >= 1, order "
                             f"one of {', '.join(ORDERS)}, hears one of {', '.join(HEARS)}, sees "
                             f"'full_answers' (got {self.agents!r}, {self.rounds!r}, "
                             f"{self.order!r}, {self.hears!r}, {self.sees!r})")
        if self.drop is not None and not (self.drop.before_round < self.rounds
                                          and self.drop.keep < self.agents):
            raise ValueError(f"invalid protocol {self.name!r}: {self.drop} must keep fewer "
                             f"than {self.agents} agents before a round below {self.rounds}")

    def to_dict(self) -> dict[str, Any]:
        """The protocol as JSON-ready data (the manifest's ``imported.protocol``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Protocol:
        """The protocol written by :meth:`to_dict`; an error names a missing or unknown key.

        >>> Protocol.from_dict({"name": "x"})
        Traceback (most recent call last):
        ...
        ValueError: not a protocol: missing agents, rounds
        """
        names = {f.name for f in fields(cls)}
        required = ("name", "agents", "rounds")
        missing = [k for k in required if k not in data]
        unknown = sorted(set(data) - names)
        if missing or unknown:
            raise ValueError("not a protocol: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else [])
                + ([f"unknown {', '.join(unknown)}"] if unknown else [])))
        values = dict(data)
        if values.get("stop") is not None:
            values["stop"] = Quorum(**values["stop"])
        if values.get("drop") is not None:
            values["drop"] = Drop(**values["drop"])
        return cls(**values)


def quorum_misses(records: Any, quorum: Quorum, right: bool | None = None) -> tuple[int, int]:
    """How many quorums our grader sees in ``records`` (imported debates: the first answer of a
    round, in record order, from the ``after``-th on, at which more than ``floor(share *
    answered)`` of the round's read answers so far are one class), and how many of them the
    source missed (the debate went on after it): the numbers behind :attr:`Quorum.miss`.
    ``right``: only the quorums on the right answer (True) or on a wrong one (False)."""
    seen = missed = 0
    for rec in records:
        rounds = rec["rounds_data"]
        for r, rd in enumerate(rounds):
            answers = [a.get("canonical") or "" for a in rd["agents"]]
            for k in range(quorum.after, len(answers) + 1):
                counts = Counter(x for x in answers[:k] if x)
                top, agreeing = counts.most_common(1)[0] if counts else ("", 0)
                if quorum.reached(k, agreeing):  # never with no answer read (0 agree)
                    ok = any(a.get("correct") for a in rd["agents"][:k]
                             if (a.get("canonical") or "") == top)
                    if right is None or ok == right:
                        seen += 1
                        missed += not (r == len(rounds) - 1 and k == len(answers))
                    break
    return seen, missed
