"""Throughput of the llamacpp backend: sequential vs batched, constrained vs unconstrained.

Runs a phase-like workload (initial-answer requests, several agents per question, per-agent
seeds, temperature 0.2) with the default model (SmolLM2-135M-Instruct) and prints generated
tokens per second of wall time (prompt decoding included), best of ``--repeats`` runs from a
cold KV cache, and the ratios.  With ``--high-level`` it also times llama-cpp-python's
``Llama.create_chat_completion`` with and without the same grammar, the reference for the
constrained-decoding choice documented in ``pear/backends/llamacpp.py``.

    python benchmarks/bench_llamacpp.py [--requests 8] [--max-tokens 96] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from pear.core.backend import Request
from pear.backends.llamacpp import LlamaCppBackend, default_model_path, schema_grammar
from types import SimpleNamespace

from pear.core.prompts import initial_messages, schema_for

QUESTIONS = [
    "Tom has 3 apples and buys 5 more. How many apples does he have?",
    "A train travels at 60 km/h for 2.5 hours. How many kilometres does it travel?",
    "A shirt costs $20 and is discounted by 15%. What is the new price in dollars?",
    "Sara reads 12 pages a day. How many days does she need for a 180-page book?",
]


def workload(n: int, max_tokens: int, constrained: bool) -> list[Request]:
    """``n`` initial-phase requests: agents of 4 questions in turn, one seed per agent."""
    schema = schema_for("initial", "compact", max_tokens) if constrained else None
    return [Request(initial_messages(SimpleNamespace(dataset="gsm8k", choices=None,
                                                     question=QUESTIONS[i % len(QUESTIONS)]),
                                     i % 5, "compact"),
                    temperature=0.2, max_tokens=max_tokens, seed=1000 + i, schema=schema)
            for i in range(n)]


def best_rate(run, repeats: int) -> tuple[float, float, int]:
    """(best, median) generated tokens/s over ``repeats`` calls of ``run() -> n_tokens``."""
    rates, tokens = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        tokens = run()
        rates.append(tokens / (time.perf_counter() - start))
    return max(rates), statistics.median(rates), tokens


def bench_backend(args: argparse.Namespace) -> dict[tuple[str, bool], float]:
    """tok/s of the backend per (mode, constrained)."""
    modes = {"sequential": dict(batch=False)}
    modes.update({f"batched x{p}": dict(batch=True, n_parallel=p) for p in args.parallel})
    results = {}
    for mode, kwargs in modes.items():
        backend = LlamaCppBackend(n_threads=args.threads, **kwargs)
        backend.generate(workload(1, 8, False))  # warm-up: page in the weights
        for constrained in (False, True):
            requests = workload(args.requests, args.max_tokens, constrained)

            def run() -> int:
                backend.reset()
                out = backend.generate(requests)
                assert all(c.ok for c in out), [c.error for c in out]
                return sum(c.completion_tokens for c in out)

            best, median, tokens = best_rate(run, args.repeats)
            results[mode, constrained] = best
            print(f"{mode:<13} {'constrained' if constrained else 'free':<12} "
                  f"{best:7.1f} tok/s best  {median:7.1f} median  ({tokens} tokens)", flush=True)
        backend.close()
    return results


def bench_high_level(args: argparse.Namespace, threads: int) -> dict[bool, float]:
    """tok/s of ``Llama.create_chat_completion`` (one request after another)."""
    from llama_cpp import Llama, LlamaGrammar

    llm = Llama(default_model_path(), n_ctx=4096, n_threads=threads, flash_attn=False,
                verbose=False)
    grammar = LlamaGrammar.from_string(schema_grammar(schema_for("initial", "compact", args.max_tokens)), verbose=False)
    results = {}
    for constrained in (False, True):
        requests = workload(args.requests, args.max_tokens, False)

        def run() -> int:
            llm.reset()
            tokens = 0
            for r in requests:
                out = llm.create_chat_completion(
                    list(r.messages), temperature=r.temperature, max_tokens=r.max_tokens,
                    seed=r.seed, grammar=grammar if constrained else None)
                tokens += out["usage"]["completion_tokens"]
            return tokens

        best, median, tokens = best_rate(run, args.repeats)
        results[constrained] = best
        print(f"{'high-level':<13} {'constrained' if constrained else 'free':<12} "
              f"{best:7.1f} tok/s best  {median:7.1f} median  ({tokens} tokens)", flush=True)
    return results


def main() -> None:
    """Parse the options, run the benchmarks, print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--parallel", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--high-level", action="store_true")
    args = parser.parse_args()
    threads = args.threads or max(1, (os.cpu_count() or 2) // 2)
    print(f"model {os.path.basename(default_model_path())}, {args.requests} requests x "
          f"{args.max_tokens} max tokens, {threads} thread(s), load {os.getloadavg()[0]:.1f}")
    res = bench_backend(args)
    print("\nratios")
    for mode in sorted({m for m, _ in res}):
        print(f"  constrained / free, {mode}: {res[mode, True] / res[mode, False]:.2f}")
    for mode in sorted({m for m, _ in res} - {"sequential"}):
        for c in (False, True):
            print(f"  {mode} / sequential, {'constrained' if c else 'free'}: "
                  f"{res[mode, c] / res['sequential', c]:.2f}")
    if args.high_level:
        hl = bench_high_level(args, threads)
        print(f"  high-level constrained / free: {hl[True] / hl[False]:.2f}")
        print(f"  sequential / high-level, constrained: {res['sequential', True] / hl[True]:.2f}")


if __name__ == "__main__":
    main()
