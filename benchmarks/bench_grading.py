"""Grading speed and verdicts: per answer and per debate, on run records and hand-written answers.

Prints, per dataset: the time of one grade of a distinct (question, answer) pair (median, max;
each pair graded once, so Math-Verify caches are cold for it), the grading work of one debate as
the engine does it (each round's answers judged together; median, max), the verdict of each
hand-written realistic answer in ``PROBES``, and how the benchmarks' own worked solutions
(MATH-500: all 500, GSM8K: 300) grade as long-form answers (all should be right).

``--compare-with DIR`` also runs this script on another checkout (e.g. the code before a grader
change: ``git worktree add /tmp/old <commit>``) in a subprocess and prints both side by side,
with the probes whose verdict differs.  Only the interface both share is used: ``canonical``,
``buckets`` and ``grade``, or ``judge`` where the task has it.

    python benchmarks/bench_grading.py --runs /tmp/grading-sim /tmp/grading-smoke
    python benchmarks/bench_grading.py --runs /tmp/grading-smoke --compare-with /tmp/old
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROBES: dict[str, list[tuple[str, str]]] = {  # dataset -> (gold, answer as a model wrote it)
    "gsm8k": [
        ("18", "18"), ("18", "$18"), ("18", "18 dollars"), ("18", "The answer is 18."),
        ("18", "#### 18"), ("18", "\\boxed{18}"), ("18", "9 * 2 = 18"), ("18", "18.00"),
        ("18", "Janet makes $18 every day."), ("18", "16 - 3 - 4 = 9 eggs; 9 * 2 = $18"),
        ("1000", "1,000"), ("1000", "$1,000.00"), ("1234", "1, 234"), ("18", "eighteen"),
        ("8", "1.33"), ("70000", "70,000"), ("5", "5 apples and 3 pears"),
    ],
    "math500": [
        ("(2,2),(6,2)", r"\boxed{(2,2)} and \boxed{(6,2)}"),
        ("(6,2)", r"\boxed{(2,2)} and \boxed{(6,2)}"),
        ("34", "Final Answer: The largest $n$ is 34."), ("34", "The largest n is 34."),
        (r"28\%", "28 percent"), ("1234", "1, 234"), ("(1,234)", "1, 234"),
        (r"1 - \frac{1}{\mathrm{e}}", r"1 - \frac{1}{\mathrm{e}}"),
        ("1", r"1 - \frac{1}{\mathrm{e}}"),
        (r"1 - \frac{1}{\mathrm{e}}", "1"), (r"\frac{1}{2}", "The answer is 1/2."),
        (r"2\sqrt{5}", r"The answer is 2\sqrt{5}."), (r"2\sqrt{5}", r"2 \sqrt{5}"),
        (r"\left( 3, \frac{\pi}{2} \right)", r"(3, \frac{\pi}{2})"),
        (r"\left( 3, \frac{\pi}{2} \right)", r"\left(3,\frac\pi2\right)"),
        (r"\text{Evelyn}", "Evelyn"), (r"30^\circ", "30 degrees"), (r"\$18.90", "$18.90"),
        ("[0,1]", "The domain of the function is [0, 1] in interval notation."),
        (r"(2,12) \cup (12,102)", "The domain of the function is [0, 1] and the answer is [0, 1]."),
        (r"\frac{\sqrt{3}}{3}", r"\frac{1}{\sqrt{3}}"), ("x^3+3x-6", "3x+x^3-6"),
        ("5", "x = 5"), (r"\frac{1}{3}", "0.33"), (r"\sqrt{2}", "sqrt(2)"), ("10080", r"10,\!080"),
    ],
    "mmlu_pro": [
        ("C", "C"), ("C", "(C)"), ("C", "C. the option text"), ("C", "The answer is (C)."),
        ("C", "Answer: C"), ("C", "\\boxed{C}"), ("C", "I think C is correct"), ("C", "Option C"),
        ("C", "c"), ("C", "The correct answer is C) because"), ("C", "A and C"),
        ("F", "2. Sex determination in somedioecious organisms is randomly decided."),
        ("F", "Demonstrate a clear understanding of the genetic code"), ("C", "K"),
        ("C", "The answer is (K), so C"), ("C", "(i), (ii) and (iii): C"),
    ],
    "truthfulqa": [
        ("B", "B"), ("B", "(B)"), ("B", "B. Nothing happens"), ("B", "The answer is B."),
        ("B", "Answer: (B)"), ("B", "I don't know"), ("B", "E"), ("B", "The answer is E, so B"),
    ],
}
N_OPTIONS = {"mmlu_pro": 10, "truthfulqa": 4}


def _question(dataset: str, gold: str) -> Any:
    from pear.tasks.benchmarks import Question
    n = N_OPTIONS.get(dataset)
    choices = None if n is None else tuple(f"option {i}" for i in range(n))
    return Question(id="probe", dataset=dataset, question="q", task="q", choices=choices,
                    gold=gold, gold_raw=gold, permutation=None if n is None else tuple(range(n)),
                    meta={})


def _summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "median_ms": 1000 * statistics.median(xs) if xs else 0.0,
            "max_ms": 1000 * max(xs) if xs else 0.0}


def _round_work(task: Any, answers: list[str], q: Any) -> None:
    """The per-round grading of the engine: classes and grades of the agents' answers."""
    if hasattr(task, "judge"):
        task.judge(answers, q)
    else:
        task.buckets([task.canonical(a) if a else "" for a in answers])
        for a in answers:
            if a:
                task.grade(a, q)


def measure(runs: list[str]) -> dict[str, Any]:
    """Timings and probe verdicts with the ``pear`` on ``sys.path``."""
    from pear.tasks import benchmarks as data, mathgrade, grading as tasks
    from pear.store.records import iter_records
    mathgrade.verify("1", "1")  # start the worker: its start-up is not grading time
    out: dict[str, Any] = {"probes": {}, "per_grade": {}, "per_debate": {}}
    for ds, rows in PROBES.items():
        out["probes"][ds] = [tasks.get(ds).grade(a, _question(ds, g)) for g, a in rows]
    out["solutions"] = {}
    for ds, qs in (("math500", data.load("math500")), ("gsm8k", data.load("gsm8k", n=300))):
        times, wrong = [], 0
        for q in qs:  # the benchmark's own worked solutions, graded as long-form answers
            start = time.perf_counter()
            wrong += not tasks.get(ds).grade(q.meta["solution"], q)
            times.append(time.perf_counter() - start)
        out["solutions"][ds] = {"wrong": wrong, **_summary(times)}
    records = [r for run in runs for r in iter_records(run)]
    questions: dict[tuple[str, str], Any] = {}
    grade_times: dict[str, list[float]] = {}
    seen: set[tuple[str, str, str]] = set()
    for rec in records:  # one cold grade per distinct (question, answer)
        key = (rec["dataset"], rec["question_id"])
        if key not in questions:
            questions[key] = data.get_question(*key)
        for rd in rec["rounds_data"]:
            for a in rd["agents"]:
                if a["answer"] and (*key, a["answer"]) not in seen:
                    seen.add((*key, a["answer"]))
                    start = time.perf_counter()
                    tasks.get(key[0]).grade(a["answer"], questions[key])
                    grade_times.setdefault(key[0], []).append(time.perf_counter() - start)
    mathgrade.shutdown()  # debates start cold again: fresh workers, empty caches
    for fn in (getattr(mathgrade, n, None) for n in ("_extract", "_verify", "verify")):
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
    mathgrade.verify("1", "1")
    debate_times: dict[str, list[float]] = {}
    for rec in records:  # the engine's per-round work, debate by debate (caches as in a run)
        key = (rec["dataset"], rec["question_id"])
        start = time.perf_counter()
        for rd in rec["rounds_data"]:
            _round_work(tasks.get(key[0]), [a["answer"] or "" for a in rd["agents"]],
                        questions[key])
        debate_times.setdefault(key[0], []).append(time.perf_counter() - start)
    out["per_grade"] = {ds: _summary(xs) for ds, xs in grade_times.items()}
    out["per_debate"] = {ds: _summary(xs) for ds, xs in debate_times.items()}
    return out


def _print(name: str, result: dict[str, Any]) -> None:
    for ds, sol in result["solutions"].items():
        print(f"\n[{name}] {ds}: {sol['n']} reference solutions graded as answers: "
              f"{sol['wrong']} wrong; median {sol['median_ms']:.2f} ms, max {sol['max_ms']:.1f} ms")
    print(f"\n[{name}] per grade (distinct question x answer, cold) and per debate (engine's "
          f"per-round grading)")
    print(f"{'dataset':<11} {'grades':>7} {'median ms':>10} {'max ms':>9} {'debates':>8} "
          f"{'median ms':>10} {'max ms':>9}")
    for ds in sorted(set(result["per_grade"]) | set(result["per_debate"])):
        g = result["per_grade"].get(ds, _summary([]))
        d = result["per_debate"].get(ds, _summary([]))
        print(f"{ds:<11} {g['n']:>7} {g['median_ms']:>10.2f} {g['max_ms']:>9.1f} {d['n']:>8} "
              f"{d['median_ms']:>10.2f} {d['max_ms']:>9.1f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", nargs="*", default=[], help="run directories with records")
    p.add_argument("--compare-with", help="another checkout of this repository to compare")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    runs = [str(Path(r).resolve()) for r in a.runs]
    if a.json:
        print(json.dumps(measure(runs)))
        return
    other = None
    if a.compare_with:
        root = Path(a.compare_with).resolve()
        env = dict(os.environ, PYTHONPATH=str(root))
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json",
                               "--runs", *runs], cwd=root, env=env, capture_output=True,
                              text=True, check=True)
        other = json.loads(proc.stdout.strip().splitlines()[-1])
        _print(f"other: {root}", other)
    mine = measure(runs)
    _print("this checkout", mine)
    print("\nprobes (hand-written answers): verdicts" + (" other -> this" if other else ""))
    for ds, rows in PROBES.items():
        for k, (gold, answer) in enumerate(rows):
            now = mine["probes"][ds][k]
            before = other["probes"][ds][k] if other else now
            mark = "CHANGED " if before != now else "        "
            verdicts = f"{before!s:>5} -> {now!s:<5}" if other else f"{now!s:<5}"
            print(f"{mark}{ds:<10} {verdicts} gold {gold!r:<30} answer {answer[:70]!r}")
    if other:
        changed = {ds: sum(o != n for o, n in zip(other["probes"][ds], mine["probes"][ds]))
                   for ds in PROBES}
        print("probe verdicts changed: " + ", ".join(f"{ds} {n}/{len(PROBES[ds])}"
                                                      for ds, n in changed.items()))


if __name__ == "__main__":
    main()
