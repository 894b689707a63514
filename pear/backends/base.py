"""What the backends share beyond the core's interface (:mod:`pear.core.backend`)."""
from __future__ import annotations

import time
from typing import Any, Sequence

from pear.core.backend import Backend, Completion, Request

__all__ = ["Wrapper", "Instrumented"]


class Wrapper:
    """A backend that is ``inner`` to the engine (its name, model id and settings) and sees
    every ``generate`` call: :meth:`observe` gets the requests, their completions and the
    seconds ``inner`` took (for benchmarks and tests that count or keep what passes)."""

    def __init__(self, inner: Backend):
        self.inner, self.name = inner, inner.name

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        t0 = time.perf_counter()
        out = self.inner.generate(requests)
        self.observe(requests, out, time.perf_counter() - t0)
        return out

    def observe(self, requests: Sequence[Request], out: list[Completion],
                seconds: float) -> None:
        """Called after every ``generate`` call; does nothing here."""


class Instrumented(Wrapper):
    """Wraps a backend and counts what reaches it: ``generate`` calls, requests, and the
    seconds spent inside ``generate`` (for benchmarks and tests)."""

    def __init__(self, inner: Backend):
        super().__init__(inner)
        self.calls = self.requests = 0
        self.seconds = 0.0

    def observe(self, requests: Sequence[Request], out: list[Completion],
                seconds: float) -> None:
        self.seconds += seconds
        self.calls += 1
        self.requests += len(requests)
