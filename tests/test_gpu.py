"""The real vLLM backend on a GPU: a 2-question, 2-round debate grid on a small open model
from the local Hugging Face cache.  Marked ``gpu`` (and ``slow``); skipped, with the reason,
where there is no CUDA GPU, no vLLM, or no small model in the cache.  `make test-gpu` runs it.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

SMALL_MODELS = ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct",
                "HuggingFaceTB/SmolLM2-360M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct",
                "meta-llama/Llama-3.2-1B-Instruct")
"""Small instruct models, in order of preference (any one found in the cache is used)."""


def _cached_model() -> str | None:
    hub = Path(os.environ.get("HF_HUB_CACHE")
               or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub")
    for repo in SMALL_MODELS:
        snapshots = hub / f"models--{repo.replace('/', '--')}" / "snapshots"
        if snapshots.is_dir() and any(snapshots.glob("*/config.json")):
            return repo
    return None


@pytest.fixture(scope="module")
def small_model() -> str:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("no torch: install the GPU set with `make setup BACKEND=vllm`")
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed (pip install 'pear[vllm]')")
    model = _cached_model()
    if model is None:
        pytest.skip(f"none of {', '.join(SMALL_MODELS)} is in the local Hugging Face cache")
    return model


def test_two_question_two_round_debate_on_vllm(small_model, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the cached model only, no download
    from pear.backends.vllm import VLLMBackend, release_engine
    from pear.runs.grid import preset
    from pear.runs.runner import run
    from pear.store.records import read_records
    exp = preset("paper", datasets=("gsm8k",), n_questions=2, seeds=(0,), rounds=2,
                 n_agents=3, methods=("cot", "clique", "pear"), full_datasets=())
    backend = VLLMBackend(small_model, gpu_memory_utilization=0.5)
    try:
        summary = run(exp, backend, tmp_path, progress=False)
    finally:
        release_engine()
    assert summary.complete and summary.written == 2 * 3
    records = read_records(tmp_path)
    assert len(records) == 6 and {r["method"] for r in records} == {"cot", "clique", "pear"}
    debates = [r for r in records if r["method"] != "cot"]
    assert all(len(r["rounds_data"]) == 3 for r in debates)  # round 0 + 2 rounds
    # structured outputs: every initial answer parses, and nearly every later reply
    initial = [a for r in records for a in r["rounds_data"][0]["agents"]]
    assert all(a["parse_error"] is None for a in initial)
    later = [a for r in debates for rd in r["rounds_data"][1:] for a in rd["agents"]]
    assert sum(a["parse_error"] is None for a in later) >= 0.9 * len(later)
    # token counts come back, and the shared prompt prefixes hit vLLM's prefix cache
    assert all(r["tokens"]["prompt"] > 0 and r["tokens"]["completion"] > 0 for r in records)
    assert sum(r["tokens"]["cached"] for r in debates) > 0
