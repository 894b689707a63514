"""LLM backends by name (:mod:`pear.backends.registry`, one entry per name).  Importing this
package imports no LLM runtime.

>>> get("nonexistent")
Traceback (most recent call last):
...
ValueError: unknown backend 'nonexistent': choose one of llamacpp, openai, vllm, vllm-cpu, simulated, replay
"""
from __future__ import annotations

import importlib
from typing import Any

from pear.backends.registry import BACKENDS, BackendSpec, names, spec
from pear.core.backend import Backend, BackendError, Completion, Request

__all__ = ["get", "spec", "BACKENDS", "BackendSpec", "Backend", "BackendError", "Completion",
           "Request"]


def get(name: str, **settings: Any) -> Backend:
    """Construct the backend registered as ``name`` with ``settings``."""
    s = spec(name)
    if not s.runs:
        raise ValueError(f"backend {name!r} runs nothing ({s.summary}): choose one of "
                         f"{', '.join(names(runs=True))}")
    return getattr(importlib.import_module(s.module), s.cls)(**settings)
