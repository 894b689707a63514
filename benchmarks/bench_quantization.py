"""The default model in other quantizations: how much faster llama.cpp would run the smoke grid.

The default build's grid (notebook 00, ``pear run --preset smoke`` with llama.cpp) is the
model's compute: the shipped SmolLM2-135M-Instruct is quantized Q4_1, which the vendored
llama.cpp multiplies one row at a time on x86 (no repacked or tiled kernel).  This benchmark
requantizes the shipped file (``llama_model_quantize``, ``allow_requantize``: the Q4_1 weights
dequantized and quantized again, so no better than Q4_1) into Q8_0, Q4_0 and F16 in a
temporary folder and prints, for each and for Q4_1, with 1 and with every core's thread:

- decoding a prompt of ``--prompt-tokens`` tokens in one call, milliseconds a token;
- greedy generation of 64 tokens after a short prompt, milliseconds a token;

the best of ``--repeats``, and the ratios to Q4_1.  With ``--grid`` it also runs the smoke
grid (``pear run --backend llamacpp --preset smoke --model-path ...``, every debate) with
Q4_1 and with each of ``--grid-quantizations`` one after the other and prints the wall times:
what notebook 00 would take.  Other weights give other sampled texts, so none of these can
replace Q4_1 in a build that must give the same outputs; the figures say how much they would
buy.

    python benchmarks/bench_quantization.py [--prompt-tokens 400] [--repeats 3]
                                            [--grid] [--grid-quantizations q8_0]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEXT = ("Question: A farmer has 17 sheep and buys 5 more each week for 9 weeks. How many "
        "sheep does the farmer have at the end? Think step by step and give a number. ")


def requantize(src: Path, out: Path, name: str) -> Path:
    """``src`` quantized again as ``name`` (q8_0, q4_0, f16) into ``out``."""
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{name.upper()}")
    params.allow_requantize = True
    params.nthread = len(os.sched_getaffinity(0))
    dst = out / f"{src.stem}.{name}.gguf"
    saved = os.dup(2)  # llama.cpp logs every tensor it converts on the C stderr
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(),
                                                ctypes.byref(params))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize to {name} failed ({rc})")
    return dst


def speeds(path: Path, threads: int, prompt_tokens: int, repeats: int) -> tuple[float, float]:
    """(prompt, generation) milliseconds a token, the best of ``repeats``."""
    from llama_cpp import Llama
    llm = Llama(model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads,
                verbose=False, seed=1)
    tokens = llm.tokenize((TEXT * 40).encode())[:prompt_tokens]
    best_p = best_g = float("inf")
    for _ in range(repeats):
        llm.reset()
        t = time.perf_counter()
        llm.eval(tokens)
        best_p = min(best_p, (time.perf_counter() - t) / len(tokens))
        llm.reset()
        llm.eval(tokens[:32])
        t = time.perf_counter()
        for _ in range(64):
            token = llm.sample(temp=0.0)
            llm.eval([token])
        best_g = min(best_g, (time.perf_counter() - t) / 64)
    del llm
    return best_p * 1e3, best_g * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompt-tokens", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quantizations", default="q8_0,q4_0,f16")
    ap.add_argument("--grid", action="store_true", help="also time the smoke grid")
    ap.add_argument("--grid-quantizations", default="q8_0")
    a = ap.parse_args()
    from pear.backends.llamacpp import default_model_path
    src = Path(default_model_path())
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="bench-quant-") as tmp:
        models = {"q4_1 (shipped)": src}
        for name in a.quantizations.split(","):
            models[name] = requantize(src, Path(tmp), name)
        print(f"{src.name}: prompt of {a.prompt_tokens} tokens in one call, and 64 generated "
              f"greedily; milliseconds a token, best of {a.repeats}")
        base: dict[int, tuple[float, float]] = {}
        for name, path in models.items():
            for threads in sorted({1, cores}):
                p, g = speeds(path, threads, a.prompt_tokens, a.repeats)
                base.setdefault(threads, (p, g))
                bp, bg = base[threads]
                print(f"  {name:<15} {threads} thread(s): prompt {p:6.2f} (x{bp / p:.2f})   "
                      f"generation {g:6.2f} (x{bg / g:.2f})", flush=True)
        if a.grid:
            for name in ["q4_1 (shipped)", *a.grid_quantizations.split(",")]:
                path = models[name] if name in models else requantize(src, Path(tmp), name)
                out = Path(tmp) / f"grid-{name.split()[0]}"
                t = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "pear", "run", "--backend",
                                       "llamacpp", "--preset", "smoke", "--model-path",
                                       str(path), "--out", str(out), "--quiet"],
                                      check=True, capture_output=True, text=True)
                wall = time.perf_counter() - t
                print(f"  smoke grid with {name}: {wall:.1f} s "
                      f"({done.stdout.strip().splitlines()[-1]})", flush=True)


if __name__ == "__main__":
    main()
