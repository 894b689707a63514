"""What the backends share beyond the core's interface (:mod:`pear.core.backend`)."""
from __future__ import annotations

import time
from typing import Any, Sequence

from pear.core.backend import Backend, Completion, Request

__all__ = ["Instrumented"]


class Instrumented:
    """Wraps a backend and counts what reaches it: ``generate`` calls, requests, and the
    seconds spent inside ``generate`` (for benchmarks and tests)."""

    def __init__(self, inner: Backend):
        self.inner, self.name = inner, inner.name
        self.calls = self.requests = 0
        self.seconds = 0.0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        t0 = time.perf_counter()
        out = self.inner.generate(requests)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.requests += len(requests)
        return out
