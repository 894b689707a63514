"""Every grid filter (``--datasets``, ``--methods``, ``--seeds``, ``--n-questions``) applies to
every part of a grid, the full-set part included: the ``sim`` preset also runs seven methods
on all of MATH-500 and TruthfulQA, and a filter used to leave that part whole (a run asked
for 36 debates wrote 9,255)."""
from __future__ import annotations

import json
from collections import Counter

from pear.cli import main
from pear.runs.grid import preset
from pear.runs.jobs import jobs


def _debates(exp):
    return Counter((j.question.dataset, j.method.name, j.seed) for j in jobs(exp))


def test_the_unfiltered_preset_runs_the_full_sets():
    exp = preset("sim")
    assert exp.full_datasets == ("truthfulqa", "math500") and exp.full_n_questions is None


def test_datasets_filter_the_full_set_part():
    got = _debates(preset("sim", datasets=("gsm8k", "truthfulqa"), methods=("pear",),
                          seeds=(0,), n_questions=5))
    assert {d for d, _, _ in got} == {"gsm8k", "truthfulqa"}  # no MATH-500 full set
    assert got == {("gsm8k", "pear", 0): 5, ("truthfulqa", "pear", 0): 5}


def test_methods_filter_the_full_set_part():
    exp = preset("sim", methods=("pear", "random"), seeds=(0,), n_questions=3)
    assert exp.full_methods == ("pear",)
    assert {m for _, m, _ in _debates(exp)} == {"pear", "random"}  # no CoT, no topology


def test_seeds_filter_the_full_set_part():
    exp = preset("sim", seeds=(1, 2), n_questions=2)
    assert exp.full_datasets == ()  # the full sets run seed 0 only: nothing left of them
    assert {s for _, _, s in _debates(exp)} == {1, 2}
    kept = preset("sim", seeds=(0, 3), n_questions=2)
    assert kept.full_seeds == (0,) and kept.full_datasets == ("truthfulqa", "math500")


def test_n_questions_filters_the_full_set_part():
    exp = preset("sim", methods=("pear",), seeds=(0,), n_questions=4)
    assert exp.full_n_questions == 4
    assert _debates(exp) == {(d, "pear", 0): 4 for d in exp.datasets}


def test_explicit_full_set_settings_are_kept():
    exp = preset("sim", datasets=("gsm8k",), full_datasets=("math500",), n_questions=3,
                 full_n_questions=7, methods=("pear",), seeds=(0,))
    assert exp.full_datasets == ("math500",) and exp.full_n_questions == 7
    assert _debates(exp) == {("gsm8k", "pear", 0): 3, ("math500", "pear", 0): 7}


def test_the_new_users_run_writes_what_it_asked_for(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--preset", "sim", "--backend", "simulated", "--datasets", "gsm8k",
                 "--methods", "pear,clique,cot_sc", "--n-questions", "12", "--seeds", "0",
                 "--quiet", "--out", str(out)]) == 0
    records = [json.loads(line) for p in out.rglob("debates.jsonl")
               for line in p.read_text().splitlines()]
    assert len(records) == 36
    assert Counter(r["method"] for r in records) == {"pear": 12, "clique": 12, "cot_sc": 12}
    assert "36 debates written" in capsys.readouterr().out
