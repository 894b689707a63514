"""A persistent, content-addressed completion cache that wraps any backend.

``CachedBackend(inner, path)`` answers a request from an SQLite file when the same request
(same backend name, model identity, messages, temperature, max_tokens, seed and schema) was
completed before, and sends only the misses to ``inner`` in one ``generate`` call. A rerun
with a warm cache therefore makes no model call. ``Request.meta`` is not part of the key.

Only successful, non-empty completions are stored (truncated ones, ``finish_reason ==
"length"``, included: they are what the model returned); errors and empty texts are not,
so a later run retries them. Writes happen in one transaction per batch in WAL mode: a
process killed mid-write leaves the previous consistent state.

>>> from pear.core.backend import Completion, Request
>>> class Echo:
...     name, model_id = "echo", "echo-1"
...     def generate(self, requests):
...         return [Completion(text=r.messages[-1]["content"]) for r in requests]
...     def settings(self):
...         return {}
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "cache.sqlite")
>>> cached = CachedBackend(Echo(), path)
>>> req = Request(messages=({"role": "user", "content": "hi"},))
>>> [c.text for c in cached.generate([req])], cached.calls
(['hi'], 1)
>>> [(c.text, c.cache_hit) for c in cached.generate([req])], cached.calls
([('hi', True)], 1)
>>> cached.close()
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from pear.core.backend import Backend, Completion, Request
from pear.core.hashing import content_digest

__all__ = ["CachedBackend", "cache_key"]

KEY_VERSION = 1
"""Bumped when the key's contents change, so old entries are never misread."""

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    finish_reason TEXT NOT NULL,
    backend TEXT NOT NULL,
    model_id TEXT NOT NULL,
    created REAL NOT NULL
)
"""
_CHUNK = 500  # keys per SELECT (below SQLite's bound-variable limit)


def cache_key(backend: str, model_id: str, request: Request) -> str:
    """The sha256 hex digest that identifies ``request`` sent to ``backend``/``model_id``.

    The canonical JSON covers the backend name, model identity, messages, temperature,
    max_tokens, seed and schema; never ``meta``.

    >>> r = Request(messages=({"role": "user", "content": "x"},), seed=1)
    >>> cache_key("b", "m", r) == cache_key("b", "m", Request(r.messages, seed=1, meta={"a": 1}))
    True
    >>> cache_key("b", "m", r) == cache_key("b", "m", Request(r.messages, seed=2))
    False
    """
    payload = {"v": KEY_VERSION, "backend": backend, "model_id": model_id,
               "messages": [dict(m) for m in request.messages],
               "temperature": float(request.temperature), "max_tokens": int(request.max_tokens),
               "seed": int(request.seed), "schema": request.schema}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return content_digest(canonical)


def _cacheable(completion: Completion) -> bool:
    """Whether a completion may be stored: no error and a non-blank text."""
    return (completion.error is None and completion.finish_reason != "error"
            and bool(completion.text.strip()))


class CachedBackend:
    """Wraps ``inner`` with a persistent SQLite cache at ``path`` (created if missing).

    Attributes ``hits`` and ``misses`` count requests served from the cache and sent to the
    inner backend; ``calls`` counts inner ``generate`` calls. Safe to share across threads
    (one SQLite connection per thread) and across processes (WAL mode, busy timeout).
    """

    on_completion = None  # set by the engine while generate runs (pear.core.backend)

    def __init__(self, inner: Backend, path: str | Path) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self.calls = 0
        self._lock = threading.Lock()
        self._pid = os.getpid()  # the process whose connections these are
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connect()  # create the file and table now, so a bad path fails here

    # -- Backend protocol -------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """The inner backend's model identity."""
        return self.inner.model_id

    def settings(self) -> dict[str, Any]:
        """The inner backend's settings plus ``cache_path``."""
        return {**self.inner.settings(), "cache_path": str(self.path)}

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Complete ``requests`` in order: cached ones from the file, the rest via ``inner``."""
        requests = list(requests)
        if not requests:
            return []
        model_id = self.inner.model_id
        keys = [cache_key(self.inner.name, model_id, r) for r in requests]
        found = self._lookup(keys)
        results: list[Completion | None] = [found.get(k) for k in keys]
        miss_idx = [i for i, c in enumerate(results) if c is None]
        with self._lock:
            self.hits += len(requests) - len(miss_idx)
            self.misses += len(miss_idx)
        if self.on_completion is not None:
            for _ in range(len(requests) - len(miss_idx)):
                self.on_completion()  # cache hits: done already
        if miss_idx:
            hooked = hasattr(self.inner, "on_completion")
            if hooked:
                self.inner.on_completion = self.on_completion
            try:
                fresh = list(self.inner.generate([requests[i] for i in miss_idx]))
            finally:
                if hooked:
                    self.inner.on_completion = None
            with self._lock:
                self.calls += 1
            if len(fresh) != len(miss_idx):
                raise RuntimeError(f"backend {self.inner.name!r} returned {len(fresh)} "
                                   f"completions for {len(miss_idx)} requests")
            for i, completion in zip(miss_idx, fresh):
                results[i] = completion
            self._store([(keys[i], c) for i, c in zip(miss_idx, fresh) if _cacheable(c)],
                        model_id)
        return [c for c in results if c is not None]

    # -- bookkeeping ------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters, the hit rate over all requests seen, and the number of stored entries."""
        with self._lock:
            hits, misses, calls = self.hits, self.misses, self.calls
        total = hits + misses
        entries = self._connect().execute("SELECT COUNT(*) FROM completions").fetchone()[0]
        return {"hits": hits, "misses": misses, "calls": calls,
                "hit_rate": hits / total if total else 0.0, "entries": int(entries),
                "path": str(self.path)}

    def close(self) -> None:
        """Close every connection this object opened (it reopens on next use)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except sqlite3.ProgrammingError:  # closed from another thread already
                pass
        self._local = threading.local()

    def __enter__(self) -> "CachedBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CachedBackend({self.inner!r}, path={str(self.path)!r})"

    # -- SQLite -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use, WAL mode, table created)."""
        if self._pid != os.getpid():  # a forked worker: its own connections
            self._pid, self._local, self._connections = os.getpid(), threading.local(), []
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        # Autocommit mode; writes use explicit BEGIN IMMEDIATE ... COMMIT.
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: consistent after a crash
        conn.execute(_SCHEMA_SQL)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def _lookup(self, keys: list[str]) -> dict[str, Completion]:
        """Stored completions for ``keys`` (missing keys absent), marked as cache hits."""
        conn = self._connect()
        unique = list(dict.fromkeys(keys))
        found: dict[str, Completion] = {}
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                "SELECT key, text, prompt_tokens, completion_tokens, cached_tokens, "
                f"finish_reason FROM completions WHERE key IN ({marks})",
                chunk,
            ).fetchall()
            found.update((row[0], row[1:]) for row in rows)
        # A fresh Completion per position, so callers may mutate results independently.
        return {k: _hit(*found[k]) for k in keys if k in found}

    def _store(self, rows: list[tuple[str, Completion]], model_id: str) -> None:
        """Insert ``rows`` in one transaction (first writer wins on a duplicate key)."""
        if not rows:
            return
        conn = self._connect()
        now = time.time()
        values = [(key, c.text, int(c.prompt_tokens), int(c.completion_tokens),
                   int(c.cached_tokens), c.finish_reason, self.inner.name, model_id, now)
                  for key, c in rows]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR IGNORE INTO completions (key, text, prompt_tokens, "
                "completion_tokens, cached_tokens, finish_reason, backend, model_id, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def _hit(text: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int,
         finish_reason: str) -> Completion:
    """A Completion served from the cache: original token counts, zero latency."""
    return Completion(text=text, prompt_tokens=prompt_tokens,
                      completion_tokens=completion_tokens, cached_tokens=cached_tokens,
                      finish_reason=finish_reason, latency_s=0.0, retries=0, cache_hit=True)
