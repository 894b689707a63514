"""A fake ``vllm`` package for contract tests of ``pear.backends.vllm``.

``install(monkeypatch)`` puts module objects ``vllm`` and ``vllm.sampling_params`` into
``sys.modules``. They provide ``LLM``, ``SamplingParams`` and ``StructuredOutputsParams``
with the 0.33 names and record every call on the returned ``FakeVLLM``. ``SamplingParams``
and ``LLM.chat`` accept only the keyword names vLLM 0.33 has, so a removed name such as
``guided_json`` fails loudly (TypeError) instead of being ignored.

The name sets below are vLLM 0.33.0's (``vllm/sampling_params.py``, ``LLM.chat`` in
``vllm/entrypoints/llm.py``, ``vllm/outputs.py``); tests/test_vllm_contract.py checks them
against an installed vLLM, so the fake cannot drift from the real API unnoticed.
"""
from __future__ import annotations

import sys
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

SAMPLING_PARAM_NAMES = frozenset({
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature",
    "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos", "max_tokens",
    "min_tokens", "logprobs", "prompt_logprobs", "detokenize", "skip_special_tokens",
    "spaces_between_special_tokens", "include_stop_str_in_output", "output_kind",
    "structured_outputs", "logit_bias", "allowed_token_ids", "extra_args", "bad_words",
})
"""Keyword names of vLLM 0.33's ``SamplingParams`` that tests may use (a subset)."""

CHAT_PARAM_NAMES = frozenset({
    "sampling_params", "use_tqdm", "lora_request", "chat_template",
    "chat_template_content_format", "add_generation_prompt", "continue_final_message", "tools",
    "chat_template_kwargs", "tokenization_kwargs", "mm_processor_kwargs",
})
"""Keyword parameters of vLLM 0.33's ``LLM.chat`` (after ``messages``)."""

STRUCTURED_OUTPUT_NAMES = frozenset({"json", "regex", "choice", "grammar", "json_object",
                                     "structural_tag"})
"""Constraint fields of vLLM 0.33's ``StructuredOutputsParams``."""

REQUEST_OUTPUT_NAMES = frozenset({"prompt_token_ids", "outputs", "num_cached_tokens"})
COMPLETION_OUTPUT_NAMES = frozenset({"text", "token_ids", "finish_reason", "index"})
"""Fields of vLLM 0.33's ``RequestOutput`` / ``CompletionOutput`` the backend reads."""


@dataclass
class StructuredOutputsParams:
    """vLLM 0.33's structured-output constraint: exactly one kind may be set."""

    json: str | dict | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    structural_tag: str | None = None

    def __post_init__(self) -> None:
        kinds = [self.json, self.regex, self.choice, self.grammar, self.json_object,
                 self.structural_tag]
        if sum(k is not None for k in kinds) != 1:
            raise ValueError("exactly one structured-outputs constraint must be set")


class SamplingParams:
    """Records its keyword arguments; unknown names raise TypeError."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - SAMPLING_PARAM_NAMES
        if unknown:
            raise TypeError(f"SamplingParams got unexpected keyword arguments {sorted(unknown)}")
        self.kwargs = kwargs
        for key, value in kwargs.items():
            setattr(self, key, value)


@dataclass
class CompletionOutput:
    """The subset of vLLM's ``CompletionOutput`` the backend reads."""

    text: str
    token_ids: list[int]
    finish_reason: str | None = "stop"
    index: int = 0


@dataclass
class RequestOutput:
    """The subset of vLLM's ``RequestOutput`` the backend reads."""

    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    num_cached_tokens: int | None = None


def default_responder(conversation: list[dict[str, str]], params: SamplingParams) -> RequestOutput:
    """Echo the last user message as JSON; prompt tokens = words of all messages."""
    prompt_words = sum(len(m["content"].split()) for m in conversation)
    text = '{"echo": "%s", "seed": %d}' % (conversation[-1]["content"], params.seed)
    return RequestOutput(
        prompt_token_ids=list(range(prompt_words)),
        outputs=[CompletionOutput(text=text, token_ids=list(range(len(text.split()))))],
        num_cached_tokens=None,
    )


@dataclass
class FakeVLLM:
    """What the fake modules recorded, and how ``LLM.chat`` answers."""

    responder: Callable[[list[dict[str, str]], SamplingParams], RequestOutput] = default_responder
    reject: Callable[[list[dict[str, str]]], bool] = lambda conversation: False
    """Conversations for which ``chat`` raises ValueError (like a too-long prompt)."""
    llm_inits: list[dict[str, Any]] = field(default_factory=list)
    chat_calls: list[dict[str, Any]] = field(default_factory=list)
    reported: list[int] = field(default_factory=list)
    """Outputs finished, each time ``chat`` counted one on a ``use_tqdm`` bar factory."""
    version: str = "0.33.0"
    live: Any = field(default_factory=weakref.WeakSet)
    """``LLM`` objects not yet garbage-collected (each holds a GPU in real vLLM)."""
    live_at_init: list[int] = field(default_factory=list)
    """How many other ``LLM`` objects were alive when each one was created."""

    def modules(self) -> dict[str, types.ModuleType]:
        """Fresh ``vllm`` and ``vllm.sampling_params`` module objects bound to this fake."""
        fake = self

        class LLM:
            def __init__(self, model: str, **kwargs: Any) -> None:
                fake.live_at_init.append(len(fake.live))
                fake.live.add(self)
                fake.llm_inits.append({"model": model, **kwargs})

            def chat(self, messages: Any, sampling_params: Any = None, use_tqdm: Any = True,
                     **kwargs: Any) -> list[RequestOutput]:
                unknown = set(kwargs) - CHAT_PARAM_NAMES
                if unknown:
                    raise TypeError(f"LLM.chat got unexpected keyword arguments {sorted(unknown)}")
                # a progress-bar factory is recorded by name: vLLM keeps no reference to it
                # (it holds the engine's callback, and through it the engine and its LLM)
                fake.chat_calls.append({"messages": messages, "sampling_params": sampling_params,
                                        "use_tqdm": use_tqdm if isinstance(use_tqdm, bool)
                                        else "factory", **kwargs})
                if any(fake.reject(conv) for conv in messages):
                    raise ValueError("prompt is longer than the maximum model length")
                params = (sampling_params if isinstance(sampling_params, list)
                          else [sampling_params] * len(messages))
                if not callable(use_tqdm):
                    return [fake.responder(conv, p) for conv, p in zip(messages, params)]
                # as vLLM 0.33's LLM._validate_and_add_requests and LLM._run_engine use a
                # progress-bar factory: over the requests while adding them, then one bar
                # counting each finished request
                added = list(use_tqdm(list(zip(messages, params)), desc="Adding requests"))
                bar = use_tqdm(total=len(added), desc="Processed prompts", dynamic_ncols=True,
                               postfix="est. speed input: 0.00 toks/s, output: 0.00 toks/s")
                outputs = []
                for conv, p in added:
                    outputs.append(fake.responder(conv, p))
                    fake.reported.append(len(outputs))
                    bar.postfix = f"est. speed: {len(outputs) / bar.format_dict['elapsed']:.2f}"
                    bar.update(1)
                    if bar.n == len(added):
                        bar.refresh()
                bar.close()
                return outputs

        sampling = types.ModuleType("vllm.sampling_params")
        sampling.SamplingParams = SamplingParams
        sampling.StructuredOutputsParams = StructuredOutputsParams
        root = types.ModuleType("vllm")
        root.__path__ = []  # a package, so "vllm.sampling_params" imports
        root.__version__ = self.version
        root.LLM = LLM
        root.SamplingParams = SamplingParams
        root.sampling_params = sampling
        return {"vllm": root, "vllm.sampling_params": sampling}


def install(monkeypatch: Any, **kwargs: Any) -> FakeVLLM:
    """Put a fake ``vllm`` into ``sys.modules`` for one test; returns its recorder."""
    fake = FakeVLLM(**kwargs)
    for name, module in fake.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    return fake
