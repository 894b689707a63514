"""Any OpenAI-compatible chat server (vLLM serve, llama.cpp server, OpenAI, ...) over HTTP.

A batch is sent with bounded async concurrency (per server), our own retries with
exponential backoff and jitter on 429 / 5xx / timeouts / connection errors, and a
per-request timeout. Requests are spread round robin over one or more ``base_url``s; a
retry goes to the next one. A request that fails for good comes back as an error
Completion naming the server and the last error; nothing is raised for it.

Structured output: ``response_format={"type": "json_schema", ...}``. With
``structured="auto"`` a server that rejects it gets ``{"type": "json_object", "schema":
...}`` (llama-cpp-python's schema-constrained JSON mode), then ``{"type": "json_object"}``,
then no ``response_format``; a downgrade that worked is remembered per server.

The API key is read from the environment variable ``api_key_env`` at each ``generate``
(``"EMPTY"`` when unset, for local servers); it is never stored on the object, logged, or
put into ``model_id``, ``settings()`` or ``repr``.
"""
from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Sequence, TypeVar
from urllib.parse import urlsplit, urlunsplit

import openai
from openai import AsyncOpenAI

from pear.core.backend import Completion, Request

__all__ = ["OpenAIBackend", "STRUCTURED_MODES"]

log = logging.getLogger(__name__)

STRUCTURED_MODES = ("auto", "json_schema", "json_object", "none")
"""Values of ``structured``: ``auto`` starts at ``json_schema`` and downgrades on rejection;
the others are fixed."""

_LEVELS = ("json_schema", "json_object_schema", "json_object", "none")
"""The downgrade ladder of ``structured="auto"``, most constrained first."""
_RETRY_STATUS = frozenset({408, 409, 429})
_FORMAT_WORDS = ("response_format", "json_schema", "json_object")
_ERROR_CHARS = 600  # longest error text kept in a Completion

T = TypeVar("T")


class _BadResponse(Exception):
    """The server answered 200 but without a usable chat completion."""


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine made by ``factory`` to completion from synchronous code.

    Uses ``asyncio.run`` in this thread, or a private thread when this thread already runs
    an event loop (e.g. inside Jupyter).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pear-openai") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _public_url(url: str) -> str:
    """``url`` without credentials, query or fragment (safe to record)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, _host(url), parts.path, "", ""))


def _host(url: str) -> str:
    """``host`` or ``host:port`` of ``url``."""
    parts = urlsplit(url)
    return (parts.hostname or "") + (f":{parts.port}" if parts.port is not None else "")


def _status(exc: BaseException) -> int | None:
    """The HTTP status of an API error, else None."""
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


def _retryable(exc: BaseException) -> bool:
    """Rate limits, server errors, timeouts, connection errors and malformed replies."""
    if isinstance(exc, (openai.APIConnectionError, _BadResponse)):  # includes timeouts
        return True
    status = _status(exc)
    return status is not None and (status in _RETRY_STATUS or status >= 500)


def _format_rejected(exc: BaseException) -> bool:
    """Whether an error may be the server refusing our ``response_format``.

    A 400/422, or a 5xx that names the response format (llama-cpp-python answers an
    unsupported ``json_schema`` with a 500).
    """
    status = _status(exc)
    if status in (400, 422):
        return True
    return status is not None and status >= 500 and any(
        word in str(exc).lower() for word in _FORMAT_WORDS)


def _schema_name(schema: dict[str, Any]) -> str:
    """A ``json_schema.name`` (``[a-zA-Z0-9_-]{1,64}``) from the schema's title."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "response"))
    return name[:64] or "response"


class OpenAIBackend:
    """Chat completions from OpenAI-compatible server(s) at ``base_url``.

    ``concurrency`` bounds in-flight requests per server. ``max_retries`` retries (not
    counting the first try) per request on retryable errors, with delays
    ``min(backoff_max_s, backoff_base_s * 2**k)`` times a jitter factor in [0.5, 1]
    (at least a 429's ``Retry-After``, up to ``backoff_max_s``). ``timeout_s`` bounds each
    HTTP attempt. ``Completion.retries`` is the number of retries a request used;
    ``latency_s`` its wall time including retries. Format downgrades (see the module
    docstring) are not retries.
    """

    name = "openai"
    on_completion = None  # set by the engine while generate runs (pear.core.backend)

    def __init__(
        self,
        model: str,
        base_url: str | list[str] = "http://127.0.0.1:8000/v1",  # vLLM serve's default
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,  # our choice
        max_retries: int = 6,  # our choice: ~30 s of backoff before giving up
        timeout_s: float = 120.0,  # our choice: 512 tokens on a slow server
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        structured: str = "auto",
    ) -> None:
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not model:
            raise ValueError("model must name the served model, got ''")
        if not urls:
            raise ValueError("base_url must be a URL or a non-empty list of URLs, got []")
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"base_url {_public_url(url)!r} is not an http(s) URL "
                                 "like 'http://127.0.0.1:8000/v1'")
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"structured={structured!r}: choose one of "
                             f"{', '.join(STRUCTURED_MODES)}")
        for bad, what in ((concurrency < 1, f"concurrency must be >= 1, got {concurrency}"),
                          (max_retries < 0, f"max_retries must be >= 0, got {max_retries}"),
                          (timeout_s <= 0, f"timeout_s must be > 0, got {timeout_s}")):
            if bad:
                raise ValueError(what)
        if backoff_base_s < 0 or backoff_max_s < 0:
            raise ValueError(f"backoffs must be >= 0, got {backoff_base_s}, {backoff_max_s}")
        if not api_key_env or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
            raise ValueError(f"api_key_env must be an environment variable name, "
                             f"got {api_key_env!r}")
        self.model, self.api_key_env, self.structured = model, api_key_env, structured
        self.base_urls = [u.rstrip("/") for u in urls]
        self.concurrency, self.max_retries = int(concurrency), int(max_retries)
        self.timeout_s = float(timeout_s)
        self.backoff_base_s, self.backoff_max_s = float(backoff_base_s), float(backoff_max_s)
        start = "json_schema" if structured == "auto" else structured
        self._level = {url: _LEVELS.index(start) for url in self.base_urls}
        self._lock = threading.Lock()
        self._next = 0  # round-robin position, kept across batches
        self._jitter = random.Random()  # backoff jitter only; never touches results

    # -- Backend protocol -------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """The served model's name: the model, never the address serving it, so the same
        grid resumed against another server, node or port keeps its debate ids and cache
        (the addresses are in :meth:`settings`, hence the manifest)."""
        return self.model

    def settings(self) -> dict[str, Any]:
        """Everything that shapes a run, for the manifest (never the API key)."""
        with self._lock:
            in_use = {_public_url(u): _LEVELS[lv] for u, lv in self._level.items()}
        return {
            "backend": self.name, "model": self.model, "model_id": self.model_id,
            "base_urls": [_public_url(u) for u in self.base_urls],
            "hosts": list(dict.fromkeys(_host(u) for u in self.base_urls)),
            "api_key_env": self.api_key_env, "concurrency": self.concurrency,
            "max_retries": self.max_retries, "timeout_s": self.timeout_s,
            "backoff_base_s": self.backoff_base_s, "backoff_max_s": self.backoff_max_s,
            "structured": self.structured, "structured_in_use": in_use,
            "openai_version": openai.__version__,
            "reproducibility": {"openai": openai.__version__, "seed": "per request",
                                "server": "not controlled: the server's version and "
                                          "settings decide"},
        }

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete ``requests`` concurrently; results in input order, errors as Completions."""
        requests = list(requests)
        if not requests:
            return []
        with self._lock:
            first, self._next = self._next, (self._next + len(requests)) % len(self.base_urls)
        return run_sync(lambda: self._generate(requests, first))

    def __repr__(self) -> str:
        urls = [_public_url(u) for u in self.base_urls]
        return f"OpenAIBackend(model={self.model!r}, base_url={urls!r})"

    # -- internals --------------------------------------------------------------------

    async def _generate(self, requests: list[Request], first: int) -> list[Completion]:
        """Send all requests on this event loop with per-server semaphores."""
        api_key = os.environ.get(self.api_key_env) or "EMPTY"
        clients = {url: AsyncOpenAI(api_key=api_key, base_url=url, max_retries=0,
                                    timeout=self.timeout_s) for url in self.base_urls}
        limits = {url: asyncio.Semaphore(self.concurrency) for url in self.base_urls}
        async def one(r: Request, slot: int) -> Completion:
            c = await self._request(r, slot, clients, limits, api_key)
            if self.on_completion is not None:  # progress, as each request completes
                self.on_completion()
            return c
        try:
            return list(await asyncio.gather(*(one(r, first + i)
                                               for i, r in enumerate(requests))))
        finally:
            for client in clients.values():
                await client.close()

    async def _request(self, request: Request, slot: int, clients: dict[str, AsyncOpenAI],
                       limits: dict[str, asyncio.Semaphore], api_key: str) -> Completion:
        """One request with retries; a final failure becomes an error Completion."""
        t0 = time.perf_counter()
        retries = 0
        while True:
            url = self.base_urls[(slot + retries) % len(self.base_urls)]
            try:
                completion = await self._attempt(request, url, clients[url], limits[url])
            except Exception as exc:  # noqa: BLE001 - every failure ends in a Completion
                if retries < self.max_retries and _retryable(exc):
                    delay = self._backoff(retries, exc)
                    log.info("retrying after %s from %s in %.2fs", type(exc).__name__,
                             _public_url(url), delay)
                    retries += 1
                    await asyncio.sleep(delay)
                    continue
                return Completion(
                    text="", finish_reason="error", latency_s=time.perf_counter() - t0,
                    retries=retries, error=self._error_text(url, retries, exc, api_key))
            completion.retries = retries
            completion.latency_s = time.perf_counter() - t0
            return completion

    async def _attempt(self, request: Request, url: str, client: AsyncOpenAI,
                       limit: asyncio.Semaphore) -> Completion:
        """One HTTP attempt, stepping down the format ladder if the server refuses it."""
        with self._lock:
            level = self._level[url]
        while True:
            kwargs: dict[str, Any] = {
                "model": self.model, "messages": [dict(m) for m in request.messages],
                "temperature": float(request.temperature),
                "max_tokens": int(request.max_tokens), "seed": int(request.seed),
                "timeout": self.timeout_s}
            response_format = self._response_format(level, request.schema)
            if response_format is not None:
                kwargs["response_format"] = response_format
            try:
                async with limit:
                    response = await client.chat.completions.create(**kwargs)
            except openai.APIStatusError as exc:
                if (response_format is not None and self.structured == "auto"
                        and level + 1 < len(_LEVELS) and _format_rejected(exc)):
                    level += 1
                    continue
                raise
            if request.schema is not None:
                self._remember(url, level)
            return self._completion(response)

    def _response_format(self, level: int, schema: dict[str, Any] | None) -> dict | None:
        """The ``response_format`` for ``schema`` at ladder ``level`` (None: send none)."""
        if schema is None or _LEVELS[level] == "none":
            return None
        if _LEVELS[level] == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": _schema_name(schema), "schema": schema,
                                    "strict": True}}
        if _LEVELS[level] == "json_object_schema":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def _remember(self, url: str, level: int) -> None:
        """Keep a downgrade that worked for ``url``."""
        with self._lock:
            if level > self._level[url]:
                log.warning("%s refused richer response formats; using %s from now on",
                            _public_url(url), _LEVELS[level])
                self._level[url] = level

    @staticmethod
    def _completion(response: Any) -> Completion:
        """Map a ``ChatCompletion`` to a Completion (latency and retries set by the caller)."""
        choices = getattr(response, "choices", None)
        if not choices:
            raise _BadResponse("the response has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        usage = getattr(response, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        return Completion(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached_tokens=int(getattr(details, "cached_tokens", 0) or 0),
            finish_reason=str(choice.finish_reason or "stop"),
        )

    def _backoff(self, attempt: int, exc: BaseException) -> float:
        """Seconds to wait before retry ``attempt + 1``: exponential, jittered, capped."""
        delay = min(self.backoff_max_s, self.backoff_base_s * 2.0 ** attempt)
        with self._lock:
            delay *= 0.5 + 0.5 * self._jitter.random()
        headers = getattr(getattr(exc, "response", None), "headers", None)
        retry_after = headers.get("retry-after") if headers is not None else None
        try:
            if retry_after is not None:
                delay = max(delay, min(float(retry_after), self.backoff_max_s))
        except ValueError:  # an HTTP date; keep our own delay
            pass
        return delay

    def _error_text(self, url: str, retries: int, exc: BaseException, api_key: str) -> str:
        """``endpoint + retries + last error``, with the API key scrubbed and length capped."""
        detail = f"{type(exc).__name__}: {exc}"
        if api_key and api_key != "EMPTY":
            detail = detail.replace(api_key, "***")
        if len(detail) > _ERROR_CHARS:
            detail = detail[:_ERROR_CHARS] + "..."
        return (f"request to {_public_url(url)} (model {self.model!r}) failed after "
                f"{retries} retries: {detail}")
