"""The model registry (pear/models.py), `pear models`, and `--model paper`: the study's open
models run one after another through the vLLM backend (a fake vllm), each with its settings
and its part of the grid, each resumable."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from pear import cli
from pear.catalog import models
from pear.backends import vllm as vllm_backend
from pear.core.methods import ABLATIONS
from pear.runs.factory import make_backend
from pear.runs.grid import model_grid, preset
from pear.store.manifest import read as read_manifest
from pear.store.records import read_records

_spec = importlib.util.spec_from_file_location("fake_vllm",
                                               Path(__file__).with_name("fake_vllm.py"))
fake_vllm = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("fake_vllm", fake_vllm)
_spec.loader.exec_module(fake_vllm)


@pytest.fixture(autouse=True)
def _fresh_engine_cache():
    vllm_backend.release_engine()
    yield
    vllm_backend.release_engine()


# -- the registry ----------------------------------------------------------------------------

def test_six_study_models_four_open_two_api():
    assert [m.display_name for m in models.MODELS] == [
        "Gemma-3-12B", "Llama-3.1-8B", "Qwen2.5-14B", "Qwen3-30B-A3B", "GPT-5.4-nano",
        "Claude-Haiku-4.5"]
    assert [m.backend for m in models.MODELS] == ["vllm"] * 4 + ["openai"] * 2
    assert models.expand(["paper"]) == ("google/gemma-3-12b-it",
                                         "meta-llama/Llama-3.1-8B-Instruct",
                                         "Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen3-30B-A3B")
    assert models.expand(["study"])[-2:] == ("gpt-5.4-nano", "claude-haiku-4-5")


def test_ablations_only_on_the_three_smaller_open_models():
    with_ablations = [m.key for m in models.MODELS if set(ABLATIONS) <= set(m.methods)]
    assert with_ablations == ["gemma-3-12b", "llama-3.1-8b", "qwen2.5-14b"]
    for m in models.MODELS:  # every model runs the main table's eight methods
        assert {"cot", "cot_sc", "clique", "star", "chain", "ring", "random", "pear"} \
            <= set(m.methods)


def test_study_scope_of_the_paper_grid():
    paper = preset("paper")
    # Qwen2.5-14B: everything, full sets included (the study's full-dataset table)
    q25 = model_grid(paper, "Qwen/Qwen2.5-14B-Instruct")
    # (+ self-consistency at K = 10, 20, 40, 64 on every model, for equal-compute tables)
    assert (len(q25.methods), q25.n_questions, q25.full_datasets) == (14 + 4, 200,
                                                                      ("truthfulqa", "math500"))
    # Qwen3: no ablations, no full sets; API models: 100 questions per dataset
    q3 = model_grid(paper, "Qwen/Qwen3-30B-A3B")
    assert (len(q3.methods), q3.full_datasets) == (8 + 4, ())
    assert model_grid(paper, "claude-haiku-4-5@api.anthropic.com").n_questions == 100
    # a model outside the registry, and study_scope=False, run the whole grid
    assert model_grid(paper, "org/other") is paper
    assert model_grid(preset("paper", study_scope=False), "Qwen/Qwen3-30B-A3B").methods \
        == paper.methods


def test_every_spelling_resolves_and_unknown_names_are_errors():
    for name in ("qwen2.5-14b", "Qwen/Qwen2.5-14B-Instruct", "Qwen2.5-14B", "Qwen-2.5-14B",
                 "QWEN2.5-14B"):
        assert models.get(name).key == "qwen2.5-14b"
    with pytest.raises(ValueError, match="unknown study model 'qwen2.5-15b'.*pear models"):
        models.get("qwen2.5-15b")
    assert models.expand(["some/model", "paper"])[0] == "some/model"  # passed through


def test_printed_numbers_come_from_the_papers_tables():
    rows = models.printed_numbers("qwen3-30b-a3b")
    assert set(rows) == {"main_results"}  # no full-set, significance or Spearman rows
    got = {(r["dataset"], r["method"]): float(r["accuracy"]) for r in rows["main_results"]}
    assert got[("TruthfulQA", "CoT-SC")] == 0.795  # the table's exception to "CoT-SC trails"
    assert len(models.printed_numbers("gpt-5.4-nano")["significance"]) == 2


@pytest.mark.parametrize("model_id, name", [
    ("Qwen/Qwen3-30B-A3B", "Qwen3-30B-A3B"),
    ("claude-haiku-4-5@api.anthropic.com", "Claude-Haiku-4.5"),
    ("SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "c7f1" * 16, "SmolLM2-135M (Q4_1)"),
    ("/data/gguf/Qwen2.5-0.5B-Instruct-Q8_0.gguf", "Qwen2.5-0.5B (Q8_0)"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-Instruct-v0.3"),
    ("simulated-0123456789-s3", "simulated agents"),
    ("local-model@sha256:" + "f" * 64, "local-model"),
])
def test_display_names(model_id, name):
    assert models.display_name(model_id) == name


def test_backend_settings_per_model():
    assert models.backend_settings("Qwen/Qwen3-30B-A3B", "vllm") == {
        "model": "Qwen/Qwen3-30B-A3B", "chat_template_kwargs": {"enable_thinking": False},
        "max_model_len": 16384}
    assert "chat_template_kwargs" not in models.backend_settings("gemma-3-12b", "vllm")
    assert models.backend_settings("gpt-5.4-nano", "openai")["base_url"] \
        == "https://api.openai.com/v1"
    assert models.backend_settings("org/unknown", "vllm") == {}
    with pytest.raises(ValueError, match="GPT-5.4-nano .* API model: run it with --backend openai"):
        models.backend_settings("gpt-5.4-nano", "vllm")


def test_api_models_through_the_openai_backend_never_store_the_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-123")
    be = make_backend("openai", model="claude-haiku-4-5")
    assert be.model_id == "claude-haiku-4-5"  # the model; the endpoint is in the settings
    assert be.settings()["hosts"] == ["api.anthropic.com"]
    assert be.settings()["api_key_env"] == "ANTHROPIC_API_KEY"
    assert "sk-secret-123" not in json.dumps(be.settings()) + repr(be)
    # an explicit --base-url wins (e.g. a proxy)
    be = make_backend("openai", model="claude-haiku-4-5",
                          base_urls=["http://127.0.0.1:9000/v1"])
    assert be.model_id == "claude-haiku-4-5"
    assert be.settings()["hosts"] == ["127.0.0.1:9000"]


# -- the CLI -------------------------------------------------------------------------------

def test_pear_models_lists_the_registry(capsys):
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    for m in models.MODELS:
        assert m.model_id in out and m.display_name in out
    assert "{'enable_thinking': False}" in out
    assert "paper = gemma-3-12b, llama-3.1-8b, qwen2.5-14b, qwen3-30b-a3b" in out


def _small(args):
    return ["run", "--preset", "smoke", "--datasets", "gsm8k", "--seeds", "0",
            "--n-questions", "1", "--no-full", "--quiet", *args]


def test_model_paper_runs_the_open_models_one_after_another(monkeypatch, tmp_path, capsys):
    fake = fake_vllm.install(monkeypatch)
    out = tmp_path / "paper"
    assert cli.main(_small(["--backend", "vllm", "--model", "paper", "--out", str(out)])) == 0
    assert [i["model"] for i in fake.llm_inits] == list(models.expand(["paper"]))
    assert fake.live_at_init == [0, 0, 0, 0]  # each engine built after the last was freed
    by_model = {i["model"]: i for i in fake.llm_inits}
    assert by_model["Qwen/Qwen3-30B-A3B"]["max_model_len"] == 16384
    qwen3_calls = [c for c in fake.chat_calls
                   if c["chat_template_kwargs"] == {"enable_thinking": False}]
    assert qwen3_calls and len(qwen3_calls) < len(fake.chat_calls)
    recs = read_records(out)
    methods = {}
    for r in recs:
        methods.setdefault(r["model"], set()).add(r["method"])
    assert len(methods["Qwen/Qwen2.5-14B-Instruct"]) == 14
    assert len(methods["Qwen/Qwen3-30B-A3B"]) == 8  # the study ran no ablations on it
    assert len(recs) == 3 * 14 + 8
    manifest = read_manifest(out)
    assert manifest["models"] == list(models.expand(["paper"]))
    assert manifest["backend_settings"][3]["chat_template_kwargs"] == {"enable_thinking": False}
    # rerunning resumes: nothing new is written, no engine is needed for finished models
    capsys.readouterr()
    assert cli.main(_small(["--backend", "vllm", "--model", "paper", "--out", str(out)])) == 0
    assert capsys.readouterr().out.startswith("0 debates written, 50 already done")
    assert len(fake.llm_inits) == 4  # finished models are not loaded again
    assert len(read_records(out)) == len(recs)


def test_api_model_on_vllm_and_registry_names_on_llamacpp_are_errors(monkeypatch, tmp_path,
                                                                      capsys):
    fake_vllm.install(monkeypatch)
    assert cli.main(_small(["--backend", "vllm", "--model", "gpt-5.4-nano",
                            "--out", str(tmp_path / "a")])) == 2
    assert "API model: run it with --backend openai" in capsys.readouterr().err
    with pytest.raises(ValueError, match="names the study's models"):
        make_backend("llamacpp", model_path="paper")


def test_unknown_bare_name_for_vllm_is_one_line(monkeypatch, tmp_path, capsys):
    fake_vllm.install(monkeypatch)
    code = cli.main(_small(["--backend", "vllm", "--model", "qwen2.5-15b",
                            "--out", str(tmp_path / "b")]))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'qwen2.5-15b'" in err and "pear models" in err
    assert not (tmp_path / "b").exists()  # nothing half-written
