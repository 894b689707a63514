"""Contract tests of the vLLM backend against a fake ``vllm`` (tests/fake_vllm.py), and one
real-GPU test (marked ``gpu``; skipped without CUDA and vLLM)."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from pear.backends import BackendError, Completion, Request, get
from pear.backends import vllm as vllm_backend

_spec = importlib.util.spec_from_file_location("fake_vllm",
                                               Path(__file__).with_name("fake_vllm.py"))
fake_vllm = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("fake_vllm", fake_vllm)
_spec.loader.exec_module(fake_vllm)

REPO = Path(__file__).resolve().parents[1]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}},
          "required": ["answer"], "additionalProperties": False}


def _request(text: str, seed: int = 0, **kw) -> Request:
    return Request(messages=({"role": "system", "content": "be brief"},
                             {"role": "user", "content": text}), seed=seed, **kw)


@pytest.fixture(autouse=True)
def _fresh_engine_cache():
    vllm_backend.release_engine()
    yield
    vllm_backend.release_engine()


@pytest.fixture
def fake(monkeypatch):
    return fake_vllm.install(monkeypatch)


# -- import and construction ------------------------------------------------------------

def test_module_imports_without_vllm_and_construction_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes "import vllm" fail
    assert "vllm" not in sys.modules or sys.modules["vllm"] is None
    with pytest.raises(BackendError, match=r"pip install 'pear\[vllm\]'"):
        vllm_backend.VLLMBackend("some/model")


def test_registry_builds_the_backend(fake):
    backend = get("vllm", model="org/model", revision="abc123")
    assert backend.name == "vllm"
    assert backend.model_id == "org/model@abc123"
    assert vllm_backend.VLLMBackend("org/model").model_id == "org/model"


def test_engine_arguments_reach_llm(fake):
    vllm_backend.VLLMBackend(
        "org/model", tensor_parallel_size=4, data_parallel_size=2, pipeline_parallel_size=2,
        distributed_executor_backend="ray", gpu_memory_utilization=0.5, max_model_len=4096,
        dtype="bfloat16", seed=7, revision="r1", trust_remote_code=True, enforce_eager=True,
        profile="gpu",
    )
    (init,) = fake.llm_inits
    assert init == {
        "model": "org/model", "revision": "r1", "tensor_parallel_size": 4,
        "pipeline_parallel_size": 2, "data_parallel_size": 2,
        "distributed_executor_backend": "ray", "gpu_memory_utilization": 0.5,
        "max_model_len": 4096, "dtype": "bfloat16", "seed": 7,
        "enable_prefix_caching": True, "trust_remote_code": True, "enforce_eager": True,
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        "generation_config": "vllm",
    }


def test_defaults_enable_prefix_caching_and_omit_unset_options(fake):
    vllm_backend.VLLMBackend("org/model", profile="gpu")  # the CPU profile sets max_model_len
    (init,) = fake.llm_inits
    assert init["enable_prefix_caching"] is True
    assert "distributed_executor_backend" not in init and "max_model_len" not in init


def test_profiles_fill_unset_engine_args_and_environment(fake, monkeypatch, tmp_path):
    for key in vllm_backend.BUILDS["cpu"].env:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")  # the user's setting wins
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    be = vllm_backend.VLLMBackend(str(tmp_path), profile="cpu", max_model_len=1024)
    (init,) = fake.llm_inits
    assert init["dtype"] == "float32" and init["enforce_eager"] is True
    assert init["max_model_len"] == 1024  # the caller's, not the profile's 2048
    assert init["structured_outputs_config"]["disable_any_whitespace"] is True
    settings = be.settings()
    assert settings["vllm_build"] == "cpu"
    assert settings["env"] == {"VLLM_CPU_KVCACHE_SPACE": "3", "VLLM_CPU_OMP_THREADS_BIND": "all",
                               "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
                               "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "HF_HUB_OFFLINE": "1"}
    vllm_backend.release_engine()
    vllm_backend.VLLMBackend("org/model", profile="gpu")
    assert fake.llm_inits[1]["dtype"] == "auto" and "enforce_eager" not in fake.llm_inits[1]


def test_unknown_profile_is_one_clear_error(fake):
    with pytest.raises(ValueError, match="unknown vLLM profile 'tpu'"):
        vllm_backend.VLLMBackend("org/model", profile="tpu")


# -- the version each build is written for: the one declared, locked and installed -------

def _pins(requirements: list[str], distribution: str) -> set[str]:
    """The ``==`` versions of ``distribution`` among requirement strings (PEP 503 names)."""
    norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
    out = set()
    for req in requirements:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;,\\]+)",
                     req)
        if m and norm(m.group(1)) == norm(distribution):
            out.add(m.group(2))
    return out


def _declared(distribution: str) -> set[str]:
    """The versions of ``distribution`` pinned by pyproject.toml's extras."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    return _pins([r for reqs in extras.values() for r in reqs], distribution)


def _locked(distribution: str) -> dict[str, set[str]]:
    """Per lock file of requirements/ that holds ``distribution``, the versions it pins
    (its hash-locked line and its ``# input:`` line)."""
    out = {}
    for path in sorted((REPO / "requirements").glob("*.txt")):
        lines = [re.sub(r"^# input: ", "", line) for line in path.read_text().splitlines()]
        if pins := _pins(lines, distribution):
            out[path.name] = pins
    return out


def test_the_gpu_build_is_the_backend_version():
    assert vllm_backend.BUILDS["gpu"].version == vllm_backend.VLLM_VERSION
    assert vllm_backend.BUILDS["gpu"].distribution == "vllm"
    assert vllm_backend.BUILDS["cpu"].distribution == "vllm-cpu"


@pytest.mark.parametrize("build", sorted(vllm_backend.BUILDS))
def test_each_build_is_the_version_its_extra_declares_and_its_lock_pins(build):
    # a pin changed in pyproject.toml, a lock or the backend without the others fails here
    b = vllm_backend.BUILDS[build]
    assert _declared(b.distribution) == {b.version}, (
        f"pyproject.toml pins {b.distribution} {_declared(b.distribution)}, the backend's "
        f"{build} build is written for {b.version}")
    locked = _locked(b.distribution)
    assert f"{b.distribution}.txt" in locked, (
        f"requirements/{b.distribution}.txt locks no {b.distribution}")
    assert locked == {name: {b.version} for name in locked}, (
        f"requirements/ locks {b.distribution} at {locked}, the backend's {build} build "
        f"is written for {b.version}")


@pytest.mark.parametrize("build", sorted(vllm_backend.BUILDS))
def test_the_installed_build_is_its_version(build):
    b = vllm_backend.BUILDS[build]
    try:
        installed = importlib.metadata.version(b.distribution)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{b.distribution} is not installed")
    assert installed.split("+")[0] == b.version, (
        f"{b.distribution} {installed} is installed; the backend is written for {b.version}")


def test_one_engine_per_process(fake):
    a = vllm_backend.VLLMBackend("org/model")
    b = vllm_backend.VLLMBackend("org/model")
    assert len(fake.llm_inits) == 1 and a._llm is b._llm
    vllm_backend.VLLMBackend("org/other")
    assert len(fake.llm_inits) == 2
    assert len(vllm_backend._ENGINE) == 1  # the first engine was released


@pytest.mark.parametrize("bad", [{"tensor_parallel_size": 0}, {"gpu_memory_utilization": 1.5}])
def test_bad_settings_name_the_value(fake, bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        vllm_backend.VLLMBackend("org/model", **bad)


# -- generate ---------------------------------------------------------------------------

def test_one_chat_call_per_batch_in_input_order(fake):
    backend = vllm_backend.VLLMBackend("org/model")
    requests = [_request(f"q{i}", seed=100 + i) for i in range(5)]
    out = backend.generate(requests)
    assert len(fake.chat_calls) == 1
    call = fake.chat_calls[0]
    assert call["messages"] == [[dict(m) for m in r.messages] for r in requests]
    assert call["use_tqdm"] is False
    assert [json.loads(c.text)["echo"] for c in out] == [f"q{i}" for i in range(5)]
    backend.generate(requests[:2])
    assert len(fake.chat_calls) == 2
    assert backend.generate([]) == [] and len(fake.chat_calls) == 2


def test_each_finished_request_is_reported_while_the_batch_runs(fake):
    # progress (pear.core.backend's on_completion): vLLM counts finished requests on the
    # use_tqdm factory it is given, so each one reaches the engine before chat returns
    backend = vllm_backend.VLLMBackend("org/model")
    seen = []
    backend.on_completion = lambda: seen.append(len(fake.reported))
    out = backend.generate([_request(f"q{i}") for i in range(4)])
    assert fake.chat_calls[0]["use_tqdm"] == "factory" and len(out) == 4
    assert seen == [1, 2, 3, 4]  # one report per output, as each finished
    backend.on_completion = None
    backend.generate([_request("q")])
    assert fake.chat_calls[-1]["use_tqdm"] is False and len(seen) == 4


def test_sampling_params_per_request(fake):
    backend = vllm_backend.VLLMBackend("org/model")
    requests = [_request("a", seed=1, temperature=0.0, max_tokens=32, schema=SCHEMA),
                _request("b", seed=2, temperature=0.7, max_tokens=64)]
    backend.generate(requests)
    params = fake.chat_calls[0]["sampling_params"]
    assert isinstance(params, list) and len(params) == 2
    for p, r in zip(params, requests):
        assert (p.seed, p.temperature, p.max_tokens, p.n) == (r.seed, r.temperature,
                                                                r.max_tokens, 1)
        assert not any(k.startswith("guided") for k in p.kwargs)
    assert isinstance(params[0].structured_outputs, fake_vllm.StructuredOutputsParams)
    assert params[0].structured_outputs.json == SCHEMA
    assert params[1].structured_outputs is None


def test_chat_template_kwargs_forwarded(fake):
    backend = vllm_backend.VLLMBackend("org/model",
                                       chat_template_kwargs={"enable_thinking": False})
    backend.generate([_request("a")])
    assert fake.chat_calls[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert backend.settings()["chat_template_kwargs"] == {"enable_thinking": False}


def test_token_counts_and_finish_reasons(monkeypatch):
    outputs = {
        "short": fake_vllm.RequestOutput([1] * 12, [fake_vllm.CompletionOutput(
            '{"answer": "1"}', [5] * 7, "stop")], num_cached_tokens=8),
        "long": fake_vllm.RequestOutput([1] * 20, [fake_vllm.CompletionOutput(
            '{"answer": "12', [5] * 64, "length")], num_cached_tokens=None),
    }
    fake = fake_vllm.install(monkeypatch, responder=lambda conv, p: outputs[conv[-1]["content"]])
    backend = vllm_backend.VLLMBackend("org/model")
    short, long = backend.generate([_request("short"), _request("long")])
    assert (short.prompt_tokens, short.completion_tokens, short.cached_tokens) == (12, 7, 8)
    assert short.finish_reason == "stop" and short.ok
    assert (long.prompt_tokens, long.completion_tokens, long.cached_tokens) == (20, 64, 0)
    assert long.finish_reason == "length"
    assert short.latency_s >= 0 and len(fake.chat_calls) == 1


def test_think_markers_fail_loudly(monkeypatch):
    def thinking(conv, params):
        text = "<think>hmm</think>{}" if conv[-1]["content"] == "b" else "{}"
        return fake_vllm.RequestOutput([1], [fake_vllm.CompletionOutput(text, [1])])

    fake_vllm.install(monkeypatch, responder=thinking)
    backend = vllm_backend.VLLMBackend("Qwen/Qwen3-8B")
    with pytest.raises(BackendError, match="enable_thinking"):
        backend.generate([_request("a"), _request("b")])


def test_rejected_request_is_isolated(monkeypatch):
    fake = fake_vllm.install(monkeypatch, reject=lambda conv: conv[-1]["content"] == "huge")
    backend = vllm_backend.VLLMBackend("org/model")
    out = backend.generate([_request("a"), _request("huge"), _request("c")])
    assert [c.ok for c in out] == [True, False, True]
    assert out[1].finish_reason == "error" and "maximum model length" in out[1].error
    assert json.loads(out[2].text)["echo"] == "c"
    # the whole batch was tried once, then each request alone
    assert [len(call["messages"]) for call in fake.chat_calls] == [3, 1, 1, 1]


def test_settings_record_engine_args_and_version(fake):
    settings = vllm_backend.VLLMBackend("org/model", max_model_len=2048).settings()
    assert settings["vllm_version"] == fake.version == vllm_backend.VLLM_VERSION
    assert settings["max_model_len"] == 2048 and settings["enable_prefix_caching"] is True
    json.dumps(settings)


def test_generate_keeps_the_backend_contract(fake):
    # pear.core.backend: one completion per request, in input order, with its own text and
    # token counts (the fake answers the last message and seed; prompt tokens = its words)
    backend = vllm_backend.VLLMBackend("org/model")
    texts = ["one two three", "four", "five six"]
    out = backend.generate([_request(t, seed=10 + k) for k, t in enumerate(texts)])
    assert [json.loads(c.text) for c in out] == [{"echo": t, "seed": 10 + k}
                                                 for k, t in enumerate(texts)]
    assert [c.prompt_tokens for c in out] == [5, 3, 4]  # "be brief" + the question's words
    assert [c.completion_tokens for c in out] == [len(c.text.split()) for c in out]
    assert all(c.ok and c.finish_reason == "stop" and not c.cache_hit for c in out)


# -- real GPU ---------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.slow
def test_real_vllm_structured_output():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("vllm")
    backend = vllm_backend.VLLMBackend("HuggingFaceTB/SmolLM2-135M-Instruct",
                                       gpu_memory_utilization=0.3, max_model_len=2048)
    requests = [_request(f"What is {i} + {i}? Reply in JSON.", seed=i, max_tokens=64,
                         schema=SCHEMA) for i in range(4)]
    out = backend.generate(requests)
    assert all(isinstance(c, Completion) and c.ok for c in out)
    for c in out:
        assert "answer" in json.loads(c.text)
        assert c.prompt_tokens > 0 and c.completion_tokens > 0
    again = backend.generate(requests)
    assert [c.text for c in again] == [c.text for c in out]  # per-request seeds
