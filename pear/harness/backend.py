"""The core's ``Backend`` on Inspect's model API: every request of one engine call sent together
through an Inspect ``Model``, on the event loop of the sample that runs the debate.

The PEAR engine is synchronous and Inspect's solvers are coroutines, so the solver
(:mod:`pear.harness.solver`) runs the engine in a worker thread (``anyio.to_thread.run_sync``);
:meth:`InspectBackend.generate`, called there, hands its coroutine back to the solver's event
loop (``anyio.from_thread.run``), which runs the requests concurrently (one task each) and
returns the completions in input order.  The coroutine runs in a copy of the solver's context,
so each call is the sample's own: its model events, token usage and limits are Inspect's as for
any solver.  Each engine call is a transcript span named by its round and phase
(``round 2: critiques``) and each request a span of its agent (``agent 3``) holding its model
event; the user message carries ``metadata["pear"]`` (debate, phase, round, agent).

Structured output (``structured``): the engine's JSON schema of each phase goes to the model as
``response_schema`` (Inspect's portable form, each provider maps it; it drops the schema's
``minItems``/``maxItems`` and ``minimum``/``maximum``), or, for an OpenAI-compatible server, as
the same ``response_format`` bodies :class:`pear.backends.openai_compat.OpenAIBackend` sends
(``json_schema``, then llama-cpp-python's ``json_object`` with a schema, then plain
``json_object``, then none), so that a debate run through Inspect sends the server the
requests ``pear run --backend openai`` sends.  ``auto`` starts at the richest form and steps
down when the server refuses it (a 400 or 422, or a 5xx naming the response format),
remembered per model; a form the server has not yet taken is tried without Inspect's retries
(which retry a 5xx for ever), and a failure that is no refusal is tried again with them.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Sequence
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.from_thread
import inspect_ai
from inspect_ai.model import (ChatMessage, ChatMessageAssistant, ChatMessageSystem,
                              ChatMessageUser, GenerateConfig, Model, ModelOutput,
                              ResponseSchema)
from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI
from inspect_ai.util import JSONSchema, span

from pear.core.backend import Completion, Request

__all__ = ["InspectBackend", "STRUCTURED", "completion_from", "call_label", "phase_label"]

STRUCTURED = ("auto", "response_schema", "json_schema", "json_object_schema", "json_object",
              "none")
"""How the phase's JSON schema reaches the model (see the module docstring)."""

_OPENAI_LADDER = ("json_schema", "json_object_schema", "json_object", "none")
"""``auto`` on an OpenAI-compatible server: pear.backends.openai_compat's ladder."""
_OTHER_LADDER = ("response_schema", "none")
"""``auto`` on any other provider."""
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response_schema")
_PHASES = {"initial": "initial answers", "critique": "critiques", "revision": "revisions"}
_ERROR_CHARS = 600  # longest error text kept in a Completion (as the openai backend)

_levels: dict[str, tuple[str, bool]] = {}  # model key -> (structured form, taken) under auto
_levels_lock = threading.Lock()


def _public_url(url: str | None) -> str | None:
    """``url`` without credentials, query or fragment (safe to record)."""
    if not url:
        return None
    parts = urlsplit(url)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def phase_label(requests: Sequence[Request]) -> str:
    """The span name of one engine call: its round and phase.

    >>> phase_label([Request(messages=(), meta={"phase": "critique", "round": 2})])
    'round 2: critiques'
    """
    meta = requests[0].meta if requests else {}
    phase = meta.get("phase", "")
    return f"round {meta.get('round', '?')}: {_PHASES.get(phase, phase or 'calls')}"


def call_label(request: Request) -> str:
    """The span name of one request: the agent it speaks for (numbered from 1, as the
    prompts number them).

    >>> call_label(Request(messages=(), meta={"agent": 0}))
    'agent 1'
    """
    agent = request.meta.get("agent")
    return f"agent {agent + 1}" if isinstance(agent, int) else "call"


def completion_from(output: ModelOutput, latency_s: float = 0.0) -> Completion:
    """A :class:`~pear.core.backend.Completion` from Inspect's ``ModelOutput``: its text, its
    usage (prompt tokens count the cached ones, as everywhere in pear) and whether it stopped
    at the token budget."""
    usage = output.usage
    cached = int(usage.input_tokens_cache_read or 0) if usage else 0
    written = int(usage.input_tokens_cache_write or 0) if usage else 0
    stop = output.stop_reason if output.choices else "unknown"
    return Completion(
        text=output.completion or "",
        prompt_tokens=int(usage.input_tokens) + cached + written if usage else 0,
        completion_tokens=int(usage.output_tokens) if usage else 0,
        cached_tokens=cached,
        finish_reason="length" if stop in ("max_tokens", "model_length") else "stop",
        latency_s=latency_s)


def _message(m: dict[str, str], meta: dict[str, Any] | None) -> ChatMessage:
    role, content = m["role"], m["content"]
    if role == "system":
        return ChatMessageSystem(content=content, metadata=meta)
    if role == "assistant":
        return ChatMessageAssistant(content=content, metadata=meta)
    return ChatMessageUser(content=content, metadata=meta)


def _messages(request: Request) -> list[ChatMessage]:
    """The request's messages; the last one labelled with the debate's bookkeeping."""
    keys = ("debate_id", "phase", "round", "agent", "role", "question_id")
    label = {"pear": {k: request.meta[k] for k in keys if k in request.meta}}
    last = len(request.messages) - 1
    return [_message(m, label if i == last else None) for i, m in enumerate(request.messages)]


def _format(form: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """GenerateConfig fields that ask for ``schema`` in ``form`` (none without a schema)."""
    if schema is None or form == "none":
        return {}
    if form == "response_schema":
        return {"response_schema": ResponseSchema(name="response",
                                                  json_schema=JSONSchema.model_validate(schema),
                                                  strict=True)}
    if form == "json_schema":  # as pear.backends.openai_compat sends it
        body = {"type": "json_schema",
                "json_schema": {"name": "response", "schema": schema, "strict": True}}
    elif form == "json_object_schema":
        body = {"type": "json_object", "schema": schema}
    else:
        body = {"type": "json_object"}
    return {"extra_body": {"response_format": body}}


def _cause(err: BaseException) -> BaseException:
    """The provider's error inside Inspect's retry wrapper (tenacity's ``RetryError`` when
    a call ran out of retries)."""
    last = getattr(err, "last_attempt", None)
    inner = last.exception() if last is not None and last.failed else None
    return inner if inner is not None else err


def _refused(err: BaseException) -> bool:
    """Whether a failed call may be the server refusing the response format: a 400 or 422,
    or a 5xx that names the response format (llama-cpp-python answers ``json_schema`` so)."""
    err = _cause(err)
    status = getattr(err, "status_code", None)
    if status in (400, 422):
        return True
    text = str(getattr(err, "provider_message", None) or err).lower()
    return isinstance(status, int) and status >= 500 and any(w in text for w in _FORMAT_WORDS)


class InspectBackend:
    """Completions from an Inspect ``Model`` (``get_model(...)``, a role's model, the task's
    model).  ``structured``: one of :data:`STRUCTURED`; ``panel``: the model is one of a
    mixed panel's (the engine calls each model's backend in turn each phase).  Its
    :meth:`generate` runs in a worker thread started by ``anyio.to_thread.run_sync`` on the
    event loop that owns ``model``."""

    name = "inspect"

    def __init__(self, model: Model, *, structured: str = "auto", panel: bool = False) -> None:
        if structured not in STRUCTURED:
            raise ValueError(f"invalid structured={structured!r}: choose one of "
                             f"{', '.join(STRUCTURED)}")
        self.model = model
        self.structured = structured
        self.panel = panel
        """One of several agents' models: its spans name the model too."""
        openai_like = isinstance(model.api, OpenAICompatibleAPI) and not model.api.responses_api
        self._ladder = (_OPENAI_LADDER if openai_like else _OTHER_LADDER) \
            if structured == "auto" else (structured,)
        self._key = f"{model}@{model.api.base_url}"

    @property
    def model_id(self) -> str:
        """The model as Inspect names it (``provider/model``), never the server's address."""
        return str(self.model)

    def settings(self) -> dict[str, Any]:
        """What shapes the calls, for the run manifest (never an API key)."""
        return {"backend": self.name, "model": str(self.model), "role": self.model.role,
                "base_url": _public_url(self.model.api.base_url),
                "structured": self.structured, "structured_in_use": self._form()[0],
                "inspect_ai": inspect_ai.__version__}

    def _form(self) -> tuple[str, bool]:
        """The structured form to send and whether the server has taken it (``auto``: a
        form not yet taken is tried without Inspect's retries, which would retry a server's
        refusal, a 5xx, for ever)."""
        if len(self._ladder) == 1:
            return self._ladder[0], True
        with _levels_lock:
            return _levels.get(self._key, (self._ladder[0], False))

    def _taken(self, form: str) -> None:
        with _levels_lock:
            _levels.setdefault(self._key, (form, True))
            if _levels[self._key] == (form, False):
                _levels[self._key] = (form, True)

    def _step_down(self, form: str) -> bool:
        """Use the next form of the ladder after ``form``; False when there is none."""
        i = self._ladder.index(form)
        if i + 1 >= len(self._ladder):
            return False
        with _levels_lock:
            now, _ = _levels.get(self._key, (self._ladder[0], False))
            if self._ladder.index(now) <= i:
                _levels[self._key] = (self._ladder[i + 1], False)
        return True

    # -- Backend protocol ---------------------------------------------------------------

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete ``requests`` together on the solver's event loop; input order."""
        requests = list(requests)
        if not requests:
            return []
        try:
            return anyio.from_thread.run(self.agenerate, requests)
        except RuntimeError as err:
            if "worker thread" not in str(err) and "AnyIO" not in str(err):
                raise
            raise RuntimeError("InspectBackend.generate runs in a worker thread of the event "
                               "loop that owns the Inspect model (anyio.to_thread.run_sync, "
                               "as pear_debate's solver runs the engine)") from err

    async def agenerate(self, requests: Sequence[Request]) -> list[Completion]:
        """The requests of one engine call, concurrently, under one span; input order."""
        out: list[Completion | None] = [None] * len(requests)
        name = phase_label(requests)
        async with span(f"{name} ({self.model})" if self.panel else name, type="pear"):
            async with anyio.create_task_group() as tg:
                for i, r in enumerate(requests):
                    tg.start_soon(self._store, out, i, r)
        return out  # type: ignore[return-value]

    async def _store(self, out: list[Completion | None], i: int, request: Request) -> None:
        out[i] = await self._one(request)

    async def _one(self, request: Request) -> Completion:
        """One request (its agent's span); a failure becomes an error Completion, so the
        engine drops the debate."""
        t0 = time.perf_counter()
        messages = _messages(request)
        async with span(call_label(request), type="pear-call"):
            retried = False
            while True:
                form, taken = self._form()
                probe = request.schema is not None and not taken and not retried
                config = GenerateConfig(temperature=float(request.temperature),
                                        max_tokens=int(request.max_tokens),
                                        seed=int(request.seed),
                                        max_retries=0 if probe else None,
                                        **_format(form, request.schema))
                try:
                    output = await self.model.generate(messages, config=config)
                except Exception as err:  # noqa: BLE001 - every failure ends in a Completion
                    if request.schema is not None and self.structured == "auto" \
                            and _refused(err) and self._step_down(form):
                        continue
                    if probe:  # not a refusal: the call again, with Inspect's retries
                        retried = True
                        continue
                    return self._error(_cause(err), t0)
                if request.schema is not None:
                    self._taken(form)
                return completion_from(output, time.perf_counter() - t0)

    def _error(self, err: BaseException, t0: float) -> Completion:
        text = f"{self.model}: {type(err).__name__}: {err}"
        return Completion(text="", finish_reason="error", latency_s=time.perf_counter() - t0,
                          error=text[:_ERROR_CHARS])

    def __repr__(self) -> str:
        return f"InspectBackend(model={str(self.model)!r}, structured={self.structured!r})"
