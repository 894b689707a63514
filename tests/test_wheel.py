"""A built wheel runs a debate from outside the repository: the prompt templates ship as
package data and nothing in the core reads the checkout."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DEBATE = r"""
import sys
import pear
assert pear.__file__.startswith(sys.argv[1]), pear.__file__
from pear import DebateConfig, Engine, Job, method
from pear.sim.backend import SimulatedBackend
from pear.tasks import grading
from pear.tasks.benchmarks import Question
q = Question(id="w1", dataset="gsm8k", question="What is 2 + 3?", choices=None, gold="5",
             gold_raw="5", permutation=None)
backend = SimulatedBackend(answer_key={("gsm8k", "w1"): "5"})
(rec,) = list(Engine(backend, DebateConfig(rounds=1, prompt_style="paper"),
                     task_for=grading.get).run([Job(q, method("pear"), 0)]))
assert rec["prompt_style"] == "paper" and len(rec["rounds_data"]) == 2
from pear.core import prompts
assert "Confidence" in prompts.TEMPLATES_FILE.read_text()
print("ok", rec["final_answer"])
"""


@pytest.mark.slow
def test_wheel_runs_a_debate_outside_the_checkout(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                          str(tmp_path / "dist"), str(ROOT)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("pear-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "pear/core/templates/prompts.md" in names
    assert not any(n.startswith(("tests/", "data/", "notebooks/")) for n in names)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    run = subprocess.run([sys.executable, "-c", DEBATE, str(site)], cwd=work,
                         capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("ok ")
