"""A real debate grid through the embedded llama.cpp model, the response cache and resume."""
import pytest

pytest.importorskip("llama_cpp")

from pear.backends.base import Instrumented  # noqa: E402
from pear.backends.cache import CachedBackend  # noqa: E402
from pear.backends.llamacpp import LlamaCppBackend  # noqa: E402
from pear.runs.grid import preset  # noqa: E402
from pear.runs.jobs import jobs  # noqa: E402
from pear.runs.runner import run  # noqa: E402
from pear.store.view import load  # noqa: E402


@pytest.mark.slow
def test_real_llamacpp_grid_runs_resumes_and_caches(tmp_path):
    exp = preset("smoke", datasets=("gsm8k", "truthfulqa"), methods=("cot", "cot_sc", "ring",
                 "pear"), seeds=(0,), n_questions=1, full_datasets=(), rounds=1,
                 max_tokens=96)
    counted = Instrumented(LlamaCppBackend())
    backend = CachedBackend(counted, tmp_path / "cache.sqlite")
    first = run(exp, backend, tmp_path / "a", progress=False)
    assert first.complete and first.written == len(jobs(exp)) == 8
    assert counted.requests > 0
    run_a = load(tmp_path / "a")
    debates, edges = run_a.debates, run_a.edges
    assert (debates.tokens > 0).all() and (debates.calls > 0).all()
    assert set(debates.method) == {"cot", "cot_sc", "ring", "pear"}
    ring = debates.debate[debates.method == "ring"]
    assert edges.debate.isin(ring).sum() == 2 * 3  # 3 ring edges x 2 questions
    # with seeds and the cache, a second run of the same grid costs no model call and
    # reproduces the records (except timing)
    calls_before = counted.requests
    second = run(exp, backend, tmp_path / "b", progress=False)
    assert second.written == 8 and counted.requests == calls_before
    d2 = load(tmp_path / "b").debates
    cols = ["debate_id", "final_answer", "correct", "tokens", "parse_failures"]
    assert d2.sort_values("debate_id")[cols].reset_index(drop=True).equals(
        debates.sort_values("debate_id")[cols].reset_index(drop=True))
    # resume: nothing left to do
    third = run(exp, backend, tmp_path / "a", progress=False)
    assert third.written == 0 and third.already_done == 8
