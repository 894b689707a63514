"""The one interface between the engine and an LLM runtime, owned by the engine that calls it;
every runtime in ``pear.backends`` implements it.

``Backend.generate(list[Request]) -> list[Completion]`` returns completions in input order.
A request's ``meta`` carries the debate's state (debate id, phase, agent, round; for the
simulated backend the agent's answer and the critiques it received); real backends and cache
keys ignore it.  A backend that finishes requests one after another may offer
``on_completion`` (None): while ``generate`` runs the engine sets it to a function called
after each completion, so progress moves within a phase.
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
    seed: int = 0  # the sampling seed (pear.core.hashing.request_seed)
    schema: dict[str, Any] | None = None  # constrained decoding where supported
    meta: dict[str, Any] = field(default_factory=dict, compare=False)  # never sent to a model


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
    error: str | None = None  # failed for good: the engine drops the debate (a rerun retries)
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

