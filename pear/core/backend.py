"""The one interface between the engine and an LLM runtime, owned by the engine that calls it;
every runtime in ``pear.backends`` implements it.

``Backend.generate(list[Request]) -> list[Completion]`` returns completions in input order.
A request's ``meta`` carries the debate's structured state (debate id, phase, agent, round,
and for the simulated backend the agent's own answer and the critiques it received); real
backends ignore it, and cache keys never include it.

A backend that finishes the requests of one ``generate`` one after another may offer an
attribute ``on_completion`` (None by default): while ``generate`` runs, the engine sets it to
a function the backend calls after each completion, so that progress moves within a phase
(llama.cpp's batched sequences as each finishes, an HTTP server, vLLM's finished requests,
simulated agents given a latency); a backend without it is counted a whole batch at a time, when
``generate`` returns.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

__all__ = ["Request", "Completion", "Backend", "BackendError"]


class BackendError(RuntimeError):
    """A backend cannot serve requests at all (missing runtime, unreachable server, bad model)."""


@dataclass(frozen=True)
class Request:
    """One chat completion to make."""

    messages: tuple[dict[str, str], ...]
    """Chat messages, each ``{"role": ..., "content": ...}``."""
    temperature: float = 0.2
    max_tokens: int = 512
    seed: int = 0
    """Per-request sampling seed (derived by the engine from run seed, method, question,
    agent, round and phase)."""
    schema: dict[str, Any] | None = None
    """JSON schema the completion should follow (constrained decoding where supported)."""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    """Structured state for bookkeeping and the simulated backend; never sent to a model."""


@dataclass
class Completion:
    """The result of one request."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    finish_reason: str = "stop"
    """``stop``, ``length`` (hit max_tokens) or ``error``."""
    latency_s: float = 0.0
    retries: int = 0
    error: str | None = None
    """Set when the request failed for good; the engine then drops the debate so that a
    later run (resume) retries it."""
    cache_hit: bool = False

    @property
    def ok(self) -> bool:
        """Whether the request produced a completion."""
        return self.error is None


@runtime_checkable
class Backend(Protocol):
    """What the engine needs from an LLM runtime."""

    name: str
    """Registry name (``llamacpp``, ``openai``, ``vllm``, ``simulated``)."""

    @property
    def model_id(self) -> str:
        """Model identity (path + file hash, or name + revision) for records and cache keys."""
        ...

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete every request; results in input order."""
        ...

    def settings(self) -> dict[str, Any]:
        """Settings for the run manifest (never an API key)."""
        ...

