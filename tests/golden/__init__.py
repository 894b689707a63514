"""Golden records of the default protocol: a small seeded simulated run, stored as JSON Lines.

``tests/test_golden.py`` reruns :func:`generate` and asserts the records equal the stored ones
except for timing fields, so a refactor of the engine or router that changes the default
protocol (a graph, a vote, a token count, a seed) fails loudly.

Regenerate the file (only when a change of the protocol or of the simulated population is
intended, e.g. after recalibrating ``pear/sim/backend.py``) from the repository root::

    PYTHONPATH=$PWD python -m tests.golden

The simulated population's parameters are pinned here (:data:`SIM_PARAMS`), so the file does
not move when the backend's default parameters are recalibrated; it still moves when the
population *model* (the code) changes, and then it must be regenerated.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

GOLDEN_FILE = Path(__file__).resolve().parent / "default_protocol.jsonl.gz"
"""JSON Lines, gzipped (deterministically: no timestamp) to keep the repository small."""
DATASETS = ("gsm8k", "truthfulqa")  # one open-answer and one multiple-choice benchmark
N_QUESTIONS = 3
SEEDS = (0,)
ROUNDS = 2
SIM_SEED = 0

SIM_PARAMS: dict[str, Any] = dict(  # pinned: the defaults when recorded, plus junk replies
    ease_gsm8k=3.16, ease_math500=-2.187, ease_truthfulqa=2.35, ease_mmlu_pro=-0.696,
    ease_other=0.0, skill_mean=0.0, difficulty_sd=3.661, skill_sd=0.712, wrong_focus=0.72,
    revise_focus=0.0, n_wrong=8, conf_base=3.005, conf_gap=0.8, conf_sd=1.0,
    accept_agree=2.807, accept_bias=-3.72, accept_src=0.3, accept_tgt=0.3, accept_right=1.866,
    accept_hold=1.657, recheck=0.358,
    malformed_rate=0.1,  # some truncated/junk completions, so parse-failure paths are covered
)


def generate() -> list[dict[str, Any]]:
    """Every record of the golden grid (2 datasets x 3 questions x all 14 methods x 1 seed,
    n=5, R=2, the default protocol otherwise), timing fields removed, in engine order."""
    from pear.tasks import grading as tasks
    from pear.sim.backend import SimParams, SimulatedBackend
    from pear.core.engine import Engine
    from pear.core.methods import METHODS
    from pear.runs.grid import answer_key, preset
    from pear.runs.jobs import jobs
    from pear.store.records import TIMING_FIELDS

    exp = preset("sim", datasets=DATASETS, methods=METHODS, n_questions=N_QUESTIONS,
                 seeds=SEEDS, rounds=ROUNDS, full_datasets=())
    backend = SimulatedBackend(answer_key(exp), params=SimParams(**SIM_PARAMS), seed=SIM_SEED,
                               n_agents=exp.debate.n_agents)
    engine = Engine(backend, exp.debate, task_for=tasks.get)
    return [{k: v for k, v in rec.items() if k not in TIMING_FIELDS}
            for rec in engine.run(jobs(exp))]


def dumps(records: list[dict[str, Any]]) -> bytes:
    """The file's bytes: one sorted-key JSON object a line, gzipped without a timestamp."""
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
                   + "\n" for r in records)
    return gzip.compress(text.encode("utf-8"), mtime=0)


def load() -> list[dict[str, Any]]:
    """The stored golden records."""
    text = gzip.decompress(GOLDEN_FILE.read_bytes()).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main() -> None:
    """Rewrite :data:`GOLDEN_FILE` from :func:`generate`."""
    records = generate()
    GOLDEN_FILE.write_bytes(dumps(records))
    print(f"wrote {len(records)} records to {GOLDEN_FILE}")
