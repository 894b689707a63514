"""`pear grade-check`: recorded verdicts against the current graders, on hand-made records
whose recorded verdicts are those of an older grader."""
from __future__ import annotations

import json
import subprocess
import sys

from pear.runs import gradecheck


def _agent(i: int, answer: str, canonical: str, correct: bool) -> dict:
    return {"agent": i, "answer": answer, "canonical": canonical, "confidence": 3,
            "reasoning": "", "correct": correct, "parse_error": None}


def _record(dataset: str, qid: str, gold: str, agents: list[dict], vote: str,
            correct: bool) -> dict:
    return {"schema": 1, "debate_id": f"{dataset}-{qid}", "model": "m", "backend": "b",
            "dataset": dataset, "method": "cot_sc", "seed": 0, "question_id": qid,
            "config_hash": "h", "n_agents": len(agents), "rounds": 0, "gold": gold,
            "rounds_data": [{"round": 0, "edges": [], "router": None, "agents": agents,
                             "critiques": [], "influence": [0.0] * len(agents), "vote": vote,
                             "vote_correct": correct}],
            "final_answer": vote, "correct": correct,
            "tokens": {"prompt": 1, "completion": 1, "cached": 0}, "calls": 1,
            "parse_failures": 0, "latency_s": 0.0, "finished_at": "2025-01-01T00:00:00Z"}


# MATH: the old grader glued prose together ("Thepointis(3,...)") and called it wrong
MATH = _record("math500", "test/precalculus/807.json", r"(3,\frac{\pi}{2})", [
    _agent(0, r"(3, \frac{\pi}{2})", r"(3,\frac{\pi}{2})", True),
    _agent(1, r"The point is (3, \frac{\pi}{2}).", r"Thepointis(3,\frac{\pi}{2})", False),
    _agent(2, "(3, 0)", "(3,0)", False)], vote=r"(3,\frac{\pi}{2})", correct=True)
# GSM8K: a grader that read "1, 8" as 18 called it right, and it won the vote
GSM8K = _record("gsm8k", "gsm8k-0000", "18", [
    _agent(0, "1, 8", "18", True), _agent(1, "17", "17", False)], vote="18", correct=True)


def test_regrade_counts_verdicts_finals_votes_and_pairs() -> None:
    checks = gradecheck.regrade([MATH, GSM8K])
    m, g = checks["math500"], checks["gsm8k"]
    assert (m.debates, m.answers, m.wrong_to_right, m.right_to_wrong) == (1, 3, 1, 0)
    assert (m.final_changed, m.votes_changed, m.pairs, m.pairs_changed) == (0, 0, 3, 1)
    assert [(e.answer, e.recorded, e.now) for e in m.examples] == \
        [(r"The point is (3, \frac{\pi}{2}).", False, True)]
    assert m.pair_examples == [(r"(3, \frac{\pi}{2})", r"The point is (3, \frac{\pi}{2}).", True)]
    assert (g.answers, g.changed, g.right_to_wrong, g.final_changed) == (2, 1, 1, 1)
    assert (g.votes_changed, g.pairs_changed) == (0, 0)
    report = gradecheck.format_report(checks)
    assert "math500" in report and "'wrong' -> " not in report
    assert "The point is" in report and "wrong -> right" in report and "pair now equal" in report


def test_examples_are_capped_per_direction() -> None:
    checks = gradecheck.regrade([GSM8K] * 5, examples=2)
    assert checks["gsm8k"].right_to_wrong == 5 and len(checks["gsm8k"].examples) == 2
    assert gradecheck.regrade([GSM8K], examples=0)["gsm8k"].examples == []


def test_cli_grade_check(tmp_path) -> None:
    run = tmp_path / "run" / "model-x"
    run.mkdir(parents=True)
    (run / "debates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (MATH, GSM8K)))
    p = subprocess.run([sys.executable, "-m", "pear", "grade-check", str(tmp_path / "run")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()
            if line.split() and line.split()[0] in ("gsm8k", "math500")
            and not line.startswith(" ")}  # table rows, not the indented examples
    assert rows["math500"][1:5] == ["1", "3", "1", "1"]  # debates, answers, changed, w->r
    assert rows["gsm8k"][3:7] == ["1", "0", "1", "1"]  # changed, w->r, r->w, final
    (tmp_path / "empty").mkdir()
    for name, needle in (("empty", "no debate records"), ("missing", "does not exist")):
        bad = subprocess.run([sys.executable, "-m", "pear", "grade-check", str(tmp_path / name)],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and needle in bad.stderr and "Traceback" not in bad.stderr
