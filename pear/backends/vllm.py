"""Offline batched generation with vLLM (GPU), one ``LLM.chat`` call per batch.

Pinned to ``vllm==0.33.0`` (``pip install 'pear[vllm]'``). vLLM is imported only when a
``VLLMBackend`` is constructed; importing this module never imports it.

Structured output uses ``SamplingParams(structured_outputs=StructuredOutputsParams(json=
schema))`` from ``vllm.sampling_params``; the older ``guided_*`` / ``GuidedDecodingParams``
names were removed in vLLM 0.12 and would be ignored, so they are never used.

One engine per process: the engine is cached at module level, keyed by its engine
arguments; a backend with the same arguments reuses it, and a backend with different
arguments releases the cached engine before starting its own (GPU memory is not shared).

``LLM(seed=...)`` reseeds the global ``random``/``numpy``/``torch`` generators; nothing in
PEAR draws from global RNG state, so this does not change any PEAR result.
"""
from __future__ import annotations

import gc
import json
import sys
import time
from typing import Any, Sequence

from pear.backends.base import BackendError, Completion, Request

__all__ = ["VLLMBackend", "VLLM_VERSION", "release_engine"]

VLLM_VERSION = "0.33.0"
"""The vLLM version this backend is written and tested against (the ``vllm`` extra)."""

THINK_MARKERS = ("<think>", "</think>")
"""Reasoning markers; an output containing one means thinking was left on."""

_ENGINE: dict[str, Any] = {}
"""At most one ``{engine-args key: LLM}`` entry per process."""


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


class VLLMBackend:
    """A vLLM ``LLM`` serving every batch with one ``LLM.chat`` call.

    Each request gets its own ``SamplingParams`` (seed, temperature, max_tokens and, with a
    schema, ``structured_outputs``). Prefix caching is on by default: the debate prompts of
    one question share long prefixes. ``chat_template_kwargs`` go to the chat template
    (e.g. ``{"enable_thinking": False}`` for Qwen3).

    Outputs containing ``<think>`` or ``</think>`` raise ``BackendError`` after the batch:
    the protocol expects a bare JSON answer, and a thinking model left on would spend its
    token budget on reasoning in every call; the message says how to turn thinking off.

    A batch whose inputs vLLM rejects (``ValueError``/``TypeError``, e.g. a prompt longer
    than ``max_model_len``) is retried one request at a time, so only the offending
    requests come back as error Completions. Any other engine failure raises BackendError.

    ``latency_s`` of each completion is the wall time of its whole batch.

    Parallelism: ``tensor_parallel_size``, ``pipeline_parallel_size``, ``data_parallel_size``
    and ``distributed_executor_backend`` (e.g. ``"ray"``) are passed to ``LLM`` as given;
    vLLM itself refuses ``data_parallel_size > 1`` inside one ``LLM`` unless
    ``distributed_executor_backend="external_launcher"`` (see vLLM's data-parallel example).
    Extra ``engine_kwargs`` are passed to ``LLM`` unchanged.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        data_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        distributed_executor_backend: str | None = None,
        gpu_memory_utilization: float = 0.9,  # vLLM's default
        max_model_len: int | None = None,  # None: the model's own context length
        dtype: str = "auto",
        seed: int = 0,
        chat_template_kwargs: dict[str, Any] | None = None,
        enable_prefix_caching: bool = True,  # our choice: debate prompts share prefixes
        revision: str | None = None,
        trust_remote_code: bool = False,
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
            "dtype": dtype,
            "seed": int(seed),
            "enable_prefix_caching": bool(enable_prefix_caching),
            "trust_remote_code": bool(trust_remote_code),
        }
        if distributed_executor_backend is not None:
            self.engine_args["distributed_executor_backend"] = distributed_executor_backend
        if max_model_len is not None:
            self.engine_args["max_model_len"] = int(max_model_len)
        self.engine_args.update(engine_kwargs)

        try:
            import vllm
            from vllm.sampling_params import SamplingParams, StructuredOutputsParams
        except ImportError as exc:
            raise BackendError(
                f"the vllm backend needs vLLM {VLLM_VERSION} with a CUDA GPU: "
                f"pip install 'pear[vllm]' ({exc})"
            ) from exc
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
        }

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete ``requests`` in one ``LLM.chat`` call; results in input order."""
        requests = list(requests)
        if not requests:
            return []
        t0 = time.perf_counter()
        try:
            outputs = self._chat(requests)
        except (ValueError, TypeError):
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
            use_tqdm=False,
            chat_template_kwargs=self.chat_template_kwargs,
        )
        if len(outputs) != len(requests):
            raise RuntimeError(f"LLM.chat returned {len(outputs)} outputs for "
                               f"{len(requests)} conversations")
        return list(outputs)

    def _one_by_one(self, requests: list[Request]) -> list[Completion]:
        """Fallback after vLLM rejected a batch: isolate the requests it rejects."""
        completions: list[Completion] = []
        for request in requests:
            t0 = time.perf_counter()
            try:
                (out,) = self._chat([request])
            except (ValueError, TypeError) as exc:
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


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its repr (for settings and the engine key)."""
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)
