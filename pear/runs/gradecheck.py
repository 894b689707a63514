"""Regrade a run's recorded answers with the current graders: which verdicts would change.

For every recorded agent answer (every round), the verdict stored in the record (the grader of
the run's time) is compared with :meth:`pear.tasks.grading.Task.judge` now.  Also counted: final
answers whose verdict changes (the recorded vote winner regraded), votes whose recorded winner
is no longer a plurality class, and same-round agent pairs that the vote and the router would
now compare differently (equal before, unequal now, or the reverse).

>>> rec = {"dataset": "gsm8k", "question_id": "gsm8k-0000", "gold": "18", "correct": False,
...        "final_answer": "1", "rounds_data": [{"vote": "1", "agents": [
...            {"answer": "1, 8", "canonical": "1", "correct": False},
...            {"answer": "$18", "canonical": "18", "correct": True}]}]}
>>> check = regrade([rec])["gsm8k"]
>>> check.answers, check.changed, check.final_changed
(2, 0, 0)
"""
from __future__ import annotations

import dataclasses
import os
import time

from dataclasses import dataclass, field
from typing import Any, Iterable

from pear.core.vote import leaders
from pear.store.records import iter_records
from pear.tasks import benchmarks as data, mathgrade, grading as tasks

__all__ = ["Change", "DatasetCheck", "regrade", "check_run", "format_report"]


@dataclass(frozen=True)
class Change:
    """One recorded answer whose verdict changes."""

    question_id: str
    method: str
    round: int
    gold: str
    answer: str
    recorded: bool
    now: bool
    recorded_class: str
    now_class: str


@dataclass
class DatasetCheck:
    """The regrading of one dataset's records."""

    debates: int = 0
    answers: int = 0
    """Recorded agent answers (all rounds)."""
    wrong_to_right: int = 0
    right_to_wrong: int = 0
    final_changed: int = 0
    """Debates whose final verdict changes (the recorded vote winner regraded)."""
    votes_changed: int = 0
    """Round votes whose recorded winner is no longer among the plurality classes."""
    pairs: int = 0
    """Same-round agent pairs compared by the vote and the router."""
    pairs_changed: int = 0
    """Pairs equal before and unequal now, or the reverse."""
    seconds: float = 0.0
    """Time spent regrading (question loading and grader start-up excluded)."""
    examples: list[Change] = field(default_factory=list)
    pair_examples: list[tuple[str, str, bool]] = field(default_factory=list)
    """Changed pairs: (answer, answer, equal now), distinct ones, in record order."""

    @property
    def changed(self) -> int:
        """Answers whose verdict changes."""
        return self.wrong_to_right + self.right_to_wrong


def _question(dataset: str, question_id: str, gold: str) -> Any:
    q = data.get_question(dataset, question_id)
    # multiple choice: the recorded letter refers to the option order the run showed
    return dataclasses.replace(q, gold=gold) if q.choices else q


def regrade(records: Iterable[dict[str, Any]], *, examples: int = 3) -> dict[str, DatasetCheck]:
    """Per dataset, how the current graders change the verdicts of ``records``; the first
    ``examples`` changed answers of each direction (wrong->right, right->wrong) are kept."""
    out: dict[str, DatasetCheck] = {}
    for rec in records:
        ds = rec["dataset"]
        if ds not in out and isinstance(tasks.get(ds), tasks.MathTask):
            mathgrade.verify("1", "1")  # start the worker: its start-up is not grading time
        check = out.setdefault(ds, DatasetCheck())
        task, q = tasks.get(ds), _question(ds, rec["question_id"], rec["gold"])
        start = time.perf_counter()
        check.debates += 1
        final_now = False
        for r, rd in enumerate(rec["rounds_data"]):
            agents = rd["agents"]
            judged = task.judge([a["answer"] or "" for a in agents], q)
            for a, cls, now in zip(agents, judged.classes, judged.correct):
                check.answers += 1
                if bool(a["correct"]) != now:
                    check.wrong_to_right += now
                    check.right_to_wrong += not now
                    if (check.wrong_to_right if now else check.right_to_wrong) <= examples:
                        check.examples.append(Change(
                            rec["question_id"], rec.get("method", ""), rd.get("round", r),
                            rec["gold"], a["answer"], bool(a["correct"]), now,
                            a["canonical"], cls))
            for i in range(len(agents)):
                for j in range(i + 1, len(agents)):
                    before = agents[i]["canonical"] != "" and \
                        agents[i]["canonical"] == agents[j]["canonical"]
                    after = judged.classes[i] != "" and judged.classes[i] == judged.classes[j]
                    check.pairs += 1
                    check.pairs_changed += before != after
                    example = (agents[i]["answer"], agents[j]["answer"], after)
                    if before != after and len(check.pair_examples) < examples and \
                            example not in check.pair_examples:
                        check.pair_examples.append(example)
            winner = next((k for k, a in enumerate(agents) if a["canonical"] == rd.get("vote")),
                          None)
            top = set(leaders(judged.classes))
            if winner is not None and judged.classes[winner] not in top:
                check.votes_changed += 1
            final_now = winner is not None and judged.correct[winner]
        check.final_changed += bool(rec["correct"]) != final_now
        check.seconds += time.perf_counter() - start
    for check in out.values():
        check.examples.sort(key=lambda c: c.recorded)
    return out


def check_run(run_dir: str | os.PathLike[str], *, examples: int = 3) -> dict[str, DatasetCheck]:
    """:func:`regrade` on every record under ``run_dir``."""
    checks = regrade(iter_records(run_dir), examples=examples)
    if not checks:
        raise ValueError(f"no debate records under {str(run_dir)!r}")
    return checks


def format_report(checks: dict[str, DatasetCheck]) -> str:
    """A plain-text table per dataset and the example changes."""
    head = (f"{'dataset':<11} {'debates':>7} {'answers':>8} {'changed':>8} {'wrong>right':>11} "
            f"{'right>wrong':>11} {'final':>6} {'votes':>6} {'pairs':>7} {'pairs chg':>9} "
            f"{'ms/answer':>9}")
    lines = ["Recorded verdicts vs the current graders (every agent answer, every round)", head]
    for ds, c in sorted(checks.items()):
        ms = 1000 * c.seconds / max(1, c.answers)
        lines.append(f"{ds:<11} {c.debates:>7} {c.answers:>8} {c.changed:>8} "
                     f"{c.wrong_to_right:>11} {c.right_to_wrong:>11} {c.final_changed:>6} "
                     f"{c.votes_changed:>6} {c.pairs:>7} {c.pairs_changed:>9} {ms:>9.2f}")
    lines.append("final: debates whose final verdict changes; votes: round votes whose recorded "
                 "winner is no longer a plurality class; pairs chg: same-round agent pairs the "
                 "vote and the router now compare differently")
    for ds, c in sorted(checks.items()):
        for a, b, now in c.pair_examples:
            lines.append(f"  {ds} pair now {'equal' if now else 'unequal'}: {a[:80]!r} vs "
                         f"{b[:80]!r}")
        for e in c.examples:
            lines.append(f"  {ds} {e.question_id} ({e.method}, round {e.round}): gold "
                         f"{e.gold!r}, answer {e.answer[:120]!r}: "
                         f"{'right' if e.recorded else 'wrong'} -> {'right' if e.now else 'wrong'}"
                         f" (class {e.recorded_class[:40]!r} -> {e.now_class[:40]!r})")
    return "\n".join(lines)
