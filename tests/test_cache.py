"""The persistent completion cache: hits, misses, what is never cached, crash safety."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import pytest

from pear.core.backend import Completion, Request
from pear.backends.cache import CachedBackend, cache_key

REPO = Path(__file__).resolve().parents[1]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


class CountingBackend:
    """Answers ``<model_id>:<last message>:<seed>``; counts calls and requests."""

    name = "counting"

    def __init__(self, model_id: str = "fake-1", fail: Sequence[str] = (),
                 empty: Sequence[str] = ()) -> None:
        self._model_id = model_id
        self.fail, self.empty = set(fail), set(empty)
        self.calls: list[list[Request]] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    def settings(self) -> dict:
        return {"model_id": self._model_id}

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        self.calls.append(list(requests))
        out = []
        for r in requests:
            content = r.messages[-1]["content"]
            if content in self.fail:
                out.append(Completion(text="", finish_reason="error", error="boom"))
            elif content in self.empty:
                out.append(Completion(text="  ", prompt_tokens=3))
            else:
                out.append(Completion(text=f"{self._model_id}:{content}:{r.seed}",
                                      prompt_tokens=10 + len(content), completion_tokens=4,
                                      cached_tokens=2, finish_reason="stop", latency_s=0.5))
        return out


def _request(text: str, **kw) -> Request:
    return Request(messages=({"role": "system", "content": "sys"},
                             {"role": "user", "content": text}), **kw)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "completions.sqlite"


def test_second_identical_run_makes_no_inner_call(path):
    inner = CountingBackend()
    requests = [_request(f"q{i}", seed=i) for i in range(5)]
    with CachedBackend(inner, path) as cached:
        first = cached.generate(requests)
    with CachedBackend(inner, path) as cached:  # a new process would do the same
        second = cached.generate(requests)
        assert len(inner.calls) == 1
        assert [c.text for c in second] == [c.text for c in first]
        assert all(c.cache_hit and c.latency_s == 0.0 for c in second)
        assert [(c.prompt_tokens, c.completion_tokens, c.cached_tokens) for c in second] == [
            (c.prompt_tokens, c.completion_tokens, c.cached_tokens) for c in first]
        assert cached.stats()["hits"] == 5 and cached.stats()["calls"] == 0
    assert not any(c.cache_hit for c in first)


def test_only_misses_go_to_inner_in_one_call_keeping_order(path):
    inner = CountingBackend()
    cached = CachedBackend(inner, path)
    cached.generate([_request("b"), _request("d")])
    out = cached.generate([_request(x) for x in "abcde"])
    assert [c.text.split(":")[1] for c in out] == list("abcde")
    assert [c.cache_hit for c in out] == [False, True, False, True, False]
    assert len(inner.calls) == 2
    assert [r.messages[-1]["content"] for r in inner.calls[1]] == ["a", "c", "e"]
    assert (cached.hits, cached.misses, cached.calls) == (2, 5, 2)
    assert cached.stats()["entries"] == 5
    cached.close()


@pytest.mark.parametrize("change", [
    {"seed": 1}, {"temperature": 0.7}, {"max_tokens": 100}, {"schema": SCHEMA},
    {"messages": ({"role": "user", "content": "q"},)},
])
def test_different_sampling_settings_miss(path, change):
    inner = CountingBackend()
    cached = CachedBackend(inner, path)
    base = _request("q")
    cached.generate([base])
    fields = {"messages": base.messages, **change}
    cached.generate([Request(**fields)])
    assert len(inner.calls) == 2 and cached.hits == 0


def test_different_model_or_backend_misses(path):
    CachedBackend(CountingBackend("model-a"), path).generate([_request("q")])
    other = CountingBackend("model-b")
    out = CachedBackend(other, path).generate([_request("q")])
    assert len(other.calls) == 1 and out[0].text.startswith("model-b")

    class Renamed(CountingBackend):
        name = "renamed"

    renamed = Renamed("model-a")
    CachedBackend(renamed, path).generate([_request("q")])
    assert len(renamed.calls) == 1


def test_meta_is_not_part_of_the_key(path):
    inner = CountingBackend()
    cached = CachedBackend(inner, path)
    cached.generate([Request(_request("q").messages, meta={"debate": 1, "phase": "critique"})])
    out = cached.generate([Request(_request("q").messages, meta={"debate": 2})])
    assert len(inner.calls) == 1 and out[0].cache_hit


def test_errors_and_empty_texts_are_not_cached(path):
    inner = CountingBackend(fail=["bad"], empty=["blank"])
    cached = CachedBackend(inner, path)
    first = cached.generate([_request("bad"), _request("blank"), _request("good")])
    assert not first[0].ok and first[1].text.strip() == ""
    second = cached.generate([_request("bad"), _request("blank"), _request("good")])
    assert [r.messages[-1]["content"] for r in inner.calls[1]] == ["bad", "blank"]
    assert [c.cache_hit for c in second] == [False, False, True]
    assert cached.stats()["entries"] == 1


def test_key_is_canonical():
    a = Request(messages=({"role": "user", "content": "x"},), temperature=0,
                schema={"b": 1, "a": 2})
    b = Request(messages=({"content": "x", "role": "user"},), temperature=0.0,
                schema={"a": 2, "b": 1})
    assert cache_key("n", "m", a) == cache_key("n", "m", b)
    assert len(cache_key("n", "m", a)) == 64
    # every sampling setting, the model and the backend are in it; meta is not
    variants = [replace(a, temperature=0.7), replace(a, max_tokens=100), replace(a, seed=1),
                replace(a, schema=None), replace(a, messages=({"role": "user", "content": "y"},))]
    keys = {cache_key("n", "m", r) for r in variants}
    keys |= {cache_key("other", "m", a), cache_key("n", "other", a)}
    assert len(keys) == 7 and cache_key("n", "m", a) not in keys
    assert cache_key("n", "m", replace(a, meta={"debate": 9})) == cache_key("n", "m", a)


def test_passes_backend_identity_and_completions_through(path):
    inner = CountingBackend("model-x")
    cached = CachedBackend(inner, path)
    assert cached.name == "counting" and cached.model_id == "model-x"
    assert cached.settings() == {"model_id": "model-x", "cache_path": str(path)}
    assert cached.generate([]) == [] and inner.calls == []
    first = cached.generate([_request("ab", seed=1), _request("c", seed=2)])
    assert [(c.text, c.prompt_tokens, c.completion_tokens, c.cached_tokens, c.finish_reason)
            for c in first] == [("model-x:ab:1", 12, 4, 2, "stop"),
                                ("model-x:c:2", 11, 4, 2, "stop")]
    again = cached.generate([_request("c", seed=2), _request("ab", seed=1)])  # order kept
    assert [(c.text, c.prompt_tokens, c.cache_hit) for c in again] == [
        ("model-x:c:2", 11, True), ("model-x:ab:1", 12, True)]
    assert len(inner.calls) == 1


def test_wal_mode(path):
    CachedBackend(CountingBackend(), path).generate([_request("q")])
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_threads_share_one_cache(path):
    inner = CountingBackend()
    cached = CachedBackend(inner, path)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(20):
                out = cached.generate([_request(f"t{k}-{i}"), _request("shared")])
                assert out[0].text.endswith(f"t{k}-{i}:0")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cached.stats()["entries"] == 81
    assert cached.hits + cached.misses == 160
    cached.close()


WRITER = """
import sys, time
from pear.core.backend import Completion, Request
from pear.backends.cache import CachedBackend

class Inner:
    name, model_id = "writer", "writer-1"
    def settings(self):
        return {}
    def generate(self, requests):
        return [Completion(text="x" * 2000 + r.messages[-1]["content"], prompt_tokens=1)
                for r in requests]

cached = CachedBackend(Inner(), sys.argv[1])
i = 0
while True:
    batch = [Request(messages=({"role": "user", "content": f"{i}-{j}"},)) for j in range(50)]
    cached.generate(batch)
    i += 1
    if i == 3:
        print("writing", flush=True)
"""


def test_killed_writer_leaves_a_consistent_cache(path):
    path.parent.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=REPO,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout.readline().strip() == b"writing"
        time.sleep(0.3)  # mid-way through later batches
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
    assert rows >= 150 and rows % 50 == 0  # whole batches only: one transaction each

    class Inner(CountingBackend):
        name = "writer"

    inner = Inner("writer-1")
    out = CachedBackend(inner, path).generate(
        [Request(messages=({"role": "user", "content": f"{i}-0"},)) for i in range(3)])
    assert all(c.cache_hit and c.text.endswith(f"{i}-0") for i, c in enumerate(out))
    assert inner.calls == []
