"""LLM backends by name.  Importing this package imports no LLM runtime.

>>> get("nonexistent")
Traceback (most recent call last):
...
ValueError: unknown backend 'nonexistent': choose one of llamacpp, openai, vllm, simulated
"""
from __future__ import annotations

import importlib
from typing import Any

from pear.core.backend import Backend, BackendError, Completion, Request

__all__ = ["get", "BACKENDS", "Backend", "BackendError", "Completion", "Request"]

BACKENDS = {
    "llamacpp": ("pear.backends.llamacpp", "LlamaCppBackend"),
    "openai": ("pear.backends.openai_compat", "OpenAIBackend"),
    "vllm": ("pear.backends.vllm", "VLLMBackend"),
    "simulated": ("pear.sim.backend", "SimulatedBackend"),
}


def get(name: str, **settings: Any) -> Backend:
    """Construct the backend registered as ``name`` with ``settings``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    module, cls = BACKENDS[name]
    return getattr(importlib.import_module(module), cls)(**settings)
