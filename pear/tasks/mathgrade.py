r"""Math-Verify on MATH answers as written, in a guarded worker process.

Two parts, used by :class:`pear.tasks.grading.MathTask`:

* :func:`mathverify_input` turns an answer (gold and prediction alike) into the text given to
  Math-Verify's extraction, adding only what it lacks for answers without math delimiters (as
  the prompts ask for them and MATH-500 writes its gold): a bare expression goes in ``$...$``,
  plain words (``Evelyn``) become ``\text{...}``, math runs in prose are delimited (``The
  answer is 2\sqrt{5}.``).  It also rewrites what Math-Verify misreads: single letters in
  ``\mathrm{}``/``\text{}``, thin-space thousands (``1\,000``), unbraced command arguments
  (``\frac\pi2``), plain ``sqrt``/``pi``, ``√``/``∞``.  Delimited text (``$``, ``\(``,
  ``\[``, ``\boxed``) is otherwise kept as written, and whitespace between tokens is never
  removed (``1, 234`` stays a list, ``28 percent`` keeps its unit).
* :func:`extract` and :func:`verify` run Math-Verify's ``parse`` (boxed answers first, then
  expressions) and ``verify`` (gold first) in a ``python -c`` worker process (a user's
  ``__main__`` is never re-imported), killed and replaced when a call runs over ``timeout_s``:
  Math-Verify's own timeout (``signal.alarm``) works only in the main thread, so it is off.
  Workers start lazily, up to :data:`MAX_WORKERS`, and serve any thread; results, timeouts
  included, are cached in the process, and replies that depend on the texts alone also on disk
  for every later process on the machine (:data:`CACHE_ENV`, :class:`_Store`).
  :func:`extract_all` and :func:`verify_all` send a batch's uncached calls in one pipelined
  round trip (each call keeps its own timeout).

No model text is evaluated as code: LaTeX goes through latex2sympy's parser; Math-Verify's
expression extraction hands sympy's ``parse_expr`` only runs of digits and arithmetic operators
(its regular expression admits nothing else), and the worker refuses any other string there.

>>> mathverify_input(r"\dfrac12"), mathverify_input("The answer is 2\\sqrt{5}.")
('$\\dfrac12$', 'The answer is $2\\sqrt{5}$.')
>>> verify(r"\frac12", "0.5"), extract(r"\boxed{(2,2)} and \boxed{(6,2)}")
(('ok', True), ('ok', '(2,2),(6,2)'))
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Sequence

from pear.parallel import usable_cores

__all__ = ["DEFAULT_TIMEOUT_S", "MAX_LENGTH", "MAX_DEPTH", "MAX_WORKERS", "mathverify_input",
           "extract", "verify", "extract_all", "verify_all", "prestart", "shutdown"]

DEFAULT_TIMEOUT_S = 5.0  # our choice: a real MATH answer takes well under 0.5 s
MAX_LENGTH = 2000  # our choice: longer answers are cut to their last MAX_LENGTH characters
MAX_EXPRESSION = 300  # our choice: a longer bare expression is not a final answer (no answer)
MAX_TEXT_ANSWER = 40  # our choice: a longer run of plain words (characters) is no \text{} answer
MAX_DEPTH = 10  # our choice: deeper nesting is not an answer (the parser is exponential in it)
MAX_WORKERS = min(4, usable_cores())  # our choice
WORKER_MEMORY_BYTES = 4 << 30  # our choice: an address-space cap so 10^{10^{10}} cannot OOM
_STARTUP_TIMEOUT_S = 120.0

Status = Literal["ok", "unparsed", "gold_unparsed", "timeout", "error"]

# --------------------------------------------------------------------------------------------
# The input given to Math-Verify

_DELIMITED = re.compile(r"(?<!\\)\$|\\\(|\\\[|\\(?:boxed|fbox)(?![A-Za-z])")
_LETTER_IN_TEXT = re.compile(  # \mathrm{e} -> e: Math-Verify cuts \frac{1}{\mathrm{e}} short
    r"\\(?:mathrm|textrm|text|mathit|mathnormal|operatorname)\s*\{\s*([A-Za-z])\s*\}")
_THIN_THOUSANDS = re.compile(r"(?<=\d)\\,(?=\d{3}(?!\d))")  # 1\,000: Math-Verify reads 1*0
_PLAIN_SQRT = re.compile(r"(?<![\\A-Za-z])sqrt\s*\(([^()]*)\)")  # sqrt(2) -> \sqrt{2}
_PLAIN_NAMES = re.compile(r"(?<![\\A-Za-z])(sqrt|pi)(?![A-Za-z])")  # pi/2 -> \pi/2
_COMMAND_ARG = [  # \frac\pi2, \sqrt\pi: Math-Verify misreads a command as an unbraced argument
    re.compile(r"(\\(?:[dt]?frac|sqrt))\s*(\\[A-Za-z]+)"),
    re.compile(r"(\\[dt]?frac\s*\{[^{}]*\})\s*(\\[A-Za-z]+)")]
_SYMBOLS = {"\u221a": r"\sqrt ", "\u221e": r"\infty "}  # √, ∞: not read by Math-Verify
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[ \-][A-Za-z]+){0,2}")
_TEXT_GROUP = re.compile(
    r"\\(?:text[a-z]*|mathrm|mbox|operatorname|begin|end|math[a-z]+)\s*\{[^{}]*\}")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_PROSE_WORD = re.compile(r"(?<![A-Za-z])(?!(?:and|or)(?![A-Za-z]))[A-Za-z]{3,}"
                         r"|(?<![A-Za-z])(?:is|so|of|it|we|be|to)(?![A-Za-z])", re.I)
_TRAILING = re.compile(r"[.,;:!?]+$")
_DIGIT = re.compile(r"\d")
_WORD_TOKEN = re.compile(r"[A-Za-z]{2,}[.,;:!?]*")  # in prose: "in", "cm"; not "x" or "x="
_CONNECTOR = re.compile(r"(?:and|or)[.,;:!?]*", re.I)  # inside a run only: "3 and 4"
_PLAIN_NUMBER = re.compile(r"[-+\u2212]?[$\u20ac\u00a3]?\d[\d,]*(?:\.\d+)?%?[.,;:!?]*")


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += (ch in "{([") - (ch in "})]")
        deepest = max(deepest, depth)
    return deepest


def _is_prose(text: str) -> bool:
    """Whether ``text`` holds a word outside LaTeX commands and ``\\text{}``-like groups."""
    return bool(_PROSE_WORD.search(_COMMAND.sub(" ", _TEXT_GROUP.sub(" ", text))))


def _tokens(text: str) -> list[str]:
    """Whitespace-separated tokens at brace depth 0 (``\\text{ cm}`` stays one token)."""
    out, start, depth = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch.isspace() and depth == 0:
            if i > start:
                out.append(text[start:i])
            start = i + 1
    if start < len(text):
        out.append(text[start:])
    return out


def _delimit_math_runs(text: str) -> str:
    r"""Prose: put in ``$...$`` each run of non-word tokens that holds a LaTeX command, or a
    digit and is more than a plain number (``[0, 1]``, ``x = 5``, ``3 and 4``); Math-Verify
    reads plain numbers in prose itself (with ``%``, units and currency)."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        lead = []
        while run and _CONNECTOR.fullmatch(run[0]):
            lead.append(run.pop(0))
        trail = []
        while run and _CONNECTOR.fullmatch(run[-1]):
            trail.insert(0, run.pop())
        out.extend(lead)
        if run:
            body = " ".join(run)
            plain = _PLAIN_NUMBER.fullmatch(body) or not _DIGIT.search(body)
            if _COMMAND.search(body) or not plain:
                tail = _TRAILING.search(body)
                cut = tail.start() if tail else len(body)
                body = f"${body[:cut]}${body[cut:]}"
            out.append(body)
            run.clear()
        out.extend(trail)

    for token in _tokens(text):
        if not _CONNECTOR.fullmatch(token) and (_is_prose(token) or _WORD_TOKEN.fullmatch(token)):
            flush()
            out.append(token)
        else:
            run.append(token)
    flush()
    return " ".join(out)


@lru_cache(maxsize=1 << 16)
def mathverify_input(text: str) -> str:
    r"""The text given to Math-Verify for an answer written as ``text`` (``""``: no answer;
    see the module docstring).  Answers nested deeper than :data:`MAX_DEPTH`, and bare
    expressions over :data:`MAX_EXPRESSION` characters, give ``""``; longer texts keep their
    last :data:`MAX_LENGTH` characters.

    >>> [mathverify_input(t) for t in ["x = 5", "Evelyn", "1, 234", r"$\frac{1}{2}$", "  "]]
    ['$x = 5$', '$\\text{Evelyn}$', '$1, 234$', '$\\frac{1}{2}$', '']
    >>> mathverify_input(r"1 - \frac{1}{\mathrm{e}}"), mathverify_input("{" * 20 + "1" + "}" * 20)
    ('$1 - \\frac{1}{e}$', '')
    """
    t = (text or "").strip()[-MAX_LENGTH:]
    for symbol, latex in _SYMBOLS.items():
        t = t.replace(symbol, latex)
    t = _LETTER_IN_TEXT.sub(r"\1", t)
    t = _THIN_THOUSANDS.sub("", t)
    for pattern in _COMMAND_ARG:
        t = pattern.sub(r"\1{\2}", t)
    t = _PLAIN_NAMES.sub(r"\\\1", _PLAIN_SQRT.sub(r"\\sqrt{\1}", t))
    if not t or _depth(t) > MAX_DEPTH:
        return ""
    if _DELIMITED.search(t):
        return t
    if len(t) <= MAX_TEXT_ANSWER and _WORDS_ONLY.fullmatch(t.rstrip(".")) and _is_prose(t):
        return "$\\text{" + t.rstrip(".") + "}$"
    if _is_prose(t):
        return _delimit_math_runs(t)
    t = " ".join(t.split())
    while t.endswith(".") and not t.endswith("\\."):
        t = t[:-1].rstrip()
    return "" if not t or len(t) > MAX_EXPRESSION else f"${t}$"


# --------------------------------------------------------------------------------------------
# The guarded Math-Verify calls

_ARITHMETIC = re.compile(r"[\d.\s+\-*/^()\u00d7\u00f7]*")


def _arithmetic_only(parse_expr_cached: Any) -> Any:
    """Math-Verify's expression parser, refusing anything but digits and arithmetic operators."""
    def guarded(expr: str) -> Any:
        if not _ARITHMETIC.fullmatch(expr):
            raise ValueError("not an arithmetic expression")
        return parse_expr_cached(expr)
    return guarded


def _serve() -> None:  # pragma: no cover - runs in the worker process
    """Worker loop over stdin/stdout JSON lines.

    ``["extract", text]`` -> ``[status, label]``; ``["verify", gold, pred]`` ->
    ``[status, equal]``.  Texts are Math-Verify inputs (:func:`mathverify_input`).
    """
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the protocol
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    logging.disable(logging.WARNING)
    try:
        import math_verify.parser as mv_parser
        from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse
        from math_verify import verify as mv_verify
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        out.write(json.dumps(["import_error", repr(exc)]) + "\n")
        out.flush()
        return
    mv_parser.parse_expr_cached = _arithmetic_only(mv_parser.parse_expr_cached)
    config = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
    parsed: dict[str, list[Any]] = {}

    def parsed_of(text: str) -> list[Any]:
        if text not in parsed:
            if len(parsed) >= 4096:
                parsed.clear()
            parsed[text] = parse(text, extraction_config=config, parsing_timeout=None)
        return parsed[text]

    warm = parsed_of("$\\frac{1}{2}$")  # first use builds the parsers: not a call's time
    mv_verify(warm, parsed_of("The answer is 0.5"), timeout_seconds=None)
    out.write(json.dumps(["ready", True]) + "\n")
    out.flush()
    for line in sys.stdin:
        op = ""
        try:
            op, *args = json.loads(line)
            if op == "extract":
                found = parsed_of(args[0])
                label = next((x for x in reversed(found) if isinstance(x, str)),
                             str(found[0]) if found else "")
                result: list[Any] = ["ok" if found else "unparsed", label.strip()]
            else:
                gold, pred = parsed_of(args[0]), parsed_of(args[1])
                if not gold:
                    result = ["gold_unparsed", False]
                elif not pred:
                    result = ["unparsed", False]
                else:
                    result = ["ok", bool(mv_verify(gold, pred, timeout_seconds=None))]
        except (Exception, RecursionError, MemoryError):  # noqa: BLE001 - any failure is "wrong"
            result = ["error", False if op == "verify" else ""]
        out.write(json.dumps(result) + "\n")
        out.flush()


_SERVE = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='mathgrade')['_serve']()"
"""The worker's program: this file's :func:`_serve`, run from the file itself (the ``pear``
package and numpy are not imported: a worker starts 0.2 s sooner)."""


class _Worker:
    """One worker process (``python -c``, so no user ``__main__`` is re-imported), restarted on
    demand after a timeout or a crash."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()

    def _start(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE, __file__],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8", bufsize=1)
        lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        try:
            status, detail = json.loads(lines.get(timeout=_STARTUP_TIMEOUT_S)[1])
        except (queue.Empty, ValueError):
            status, detail = "no_reply", "no reply"
        if status != "ready":
            proc.kill()
            proc.wait()
            raise RuntimeError(f"the Math-Verify worker process did not start: {detail}")
        self.proc, self.lines = proc, lines

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()  # type: ignore[union-attr]
                except OSError:
                    pass
        self.proc = None

    def call_many(self, requests: list[list[str]], timeout_s: float
                  ) -> list[tuple[Status, Any]]:
        """Replies to ``requests``, sent in one write and read in order, each call timed from
        the reply before it; one that runs over (or a dead worker) gives ``timeout``, and the
        calls after it go to a fresh worker."""
        results: list[tuple[Status, Any]] = []
        while len(results) < len(requests):
            todo = requests[len(results):]
            if self.proc is None or self.proc.poll() is not None:
                self.stop()
                self._start()
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write("".join(json.dumps(r) + "\n" for r in todo))
                self.proc.stdin.flush()
            except OSError:
                self.stop()
                results.append(("timeout", None))
                continue
            since = time.monotonic()
            for _ in todo:
                try:
                    at, line = self.lines.get(
                        timeout=max(0.0, since + timeout_s - time.monotonic()))
                    if at > since + timeout_s:
                        raise queue.Empty
                    status, value = json.loads(line)
                except (queue.Empty, ValueError):
                    self.stop()  # ran over, or died: kill it; the rest go to a fresh one
                    results.append(("timeout", None))
                    break
                results.append((status, value))
                since = at
        return results


def _pump(stream: Any, lines: queue.Queue[tuple[float, str]]) -> None:
    """Copy a worker's stdout lines, with their arrival times, into a queue until EOF (so
    reads can time out, and a pipelined reply be timed from the one before it)."""
    for line in stream:
        lines.put((time.monotonic(), line))
    lines.put((time.monotonic(), ""))  # EOF: a waiting reader fails fast, not at its timeout


class _Pool:
    """Up to ``size`` workers shared by all threads of one process."""

    def __init__(self, size: int) -> None:
        self.pid = os.getpid()
        self.workers = [_Worker() for _ in range(size)]
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        for w in self.workers:
            self.idle.put(w)
        self.started = threading.Event()  # no worker is being started by prestart
        self.started.set()

    def call_many(self, requests: list[list[str]], timeout_s: float
                  ) -> list[tuple[Status, Any]]:
        self.started.wait(_STARTUP_TIMEOUT_S)  # the worker prestart starts, not a second one
        worker = self.idle.get()
        try:
            return worker.call_many(requests, timeout_s)
        finally:
            self.idle.put(worker)

    def stop(self) -> None:
        for w in self.workers:
            w.stop()


_POOL: _Pool | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> _Pool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():  # new, or inherited through fork
            _POOL = _Pool(MAX_WORKERS)
        return _POOL


def prestart() -> None:
    """Start this process's first worker in the background, so that its start overlaps other
    work.  Does nothing when it is started, or when the store on disk keeps replies
    (:class:`_Store`): then most calls need no worker (about 0.7 s of a core saved)."""
    store = _store()
    if store is not None and not store.empty():
        return
    pool = _pool()  # here, not in the thread: a fork never inherits _POOL_LOCK held
    if not pool.started.is_set():
        return  # being started
    worker = pool.idle.get()
    if worker.proc is not None:
        pool.idle.put(worker)
        return
    pool.started.clear()  # a call waits for this worker instead of starting another

    def start() -> None:
        try:
            worker._start()
        except RuntimeError:
            pass  # the first call starts it again and reports why it cannot
        finally:
            pool.idle.put(worker)
            pool.started.set()
    threading.Thread(target=start, daemon=True).start()


def shutdown() -> None:
    """Stop the worker processes (they restart on the next call)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and _POOL.pid == os.getpid():
            _POOL.stop()
        _POOL = None


atexit.register(shutdown)


_CACHE_SIZE = 1 << 16  # our choice: results kept per process (cleared when full)
_EXTRACTED: dict[tuple[str, float], tuple[Status, str]] = {}
_VERIFIED: dict[tuple[str, str, float], tuple[Status, bool]] = {}
_CACHE_LOCK = threading.Lock()


CACHE_ENV = "PEAR_GRADING_CACHE"
"""Where Math-Verify's replies are kept across processes and runs: a sqlite file's path, or
``off``; unset: ``build/cache/mathverify-<host>.sqlite`` in the checkout (one file per machine:
sqlite's write-ahead log is not for a file several machines share, as a cluster's nodes do)."""
_KEPT = ("ok", "unparsed", "gold_unparsed")  # replies that depend on the texts alone (not a
# timeout, nor an error, which can be this machine's: a memory cap that failed to apply)


class _Store:
    """Math-Verify's replies on disk (sqlite, shared by processes), keyed by the request and a
    fingerprint of this file and the versions of Math-Verify and its parsers (a simulated grid
    asks the same few answers again in every run)."""

    def __init__(self, path: Path) -> None:
        from importlib import metadata

        from pear.core.hashing import file_sha256, hex_id
        parts = [file_sha256(__file__)]
        for dist in ("math-verify", "latex2sympy2_extended", "sympy", "antlr4-python3-runtime"):
            try:
                parts.append(f"{dist}=={metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                parts.append(f"{dist}: none")
        self.fingerprint = hex_id(*parts, n=16, sep="\n")
        self.lock = threading.Lock()  # one connection, the process's threads in turn
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=60, isolation_level=None,
                                  check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS replies (fingerprint TEXT, request TEXT, "
                        "reply TEXT, PRIMARY KEY (fingerprint, request)) WITHOUT ROWID")

    def get(self, requests: list[str]) -> dict[str, tuple[Status, Any]]:
        """The stored replies of those of ``requests`` (JSON texts) that have one."""
        found: dict[str, tuple[Status, Any]] = {}
        try:
            with self.lock:
                for i in range(0, len(requests), 500):
                    part = requests[i:i + 500]
                    rows = self.db.execute(
                        "SELECT request, reply FROM replies WHERE fingerprint = ? AND request "
                        f"IN ({','.join('?' * len(part))})", (self.fingerprint, *part))
                    found.update((req, tuple(json.loads(reply))) for req, reply in rows)
        except (sqlite3.Error, ValueError) as err:  # unreadable: asked of a worker instead
            _LOG.warning("grading cache not read: %s", err)
            return {}
        return found

    def empty(self) -> bool:
        """Whether no reply of this fingerprint is kept (a machine's first run)."""
        try:
            with self.lock:
                return self.db.execute("SELECT 1 FROM replies WHERE fingerprint = ? LIMIT 1",
                                       (self.fingerprint,)).fetchone() is None
        except sqlite3.Error:
            return True

    def put(self, replies: list[tuple[str, tuple[Status, Any]]]) -> None:
        """Keep the replies that depend on the texts alone (:data:`_KEPT`), in one transaction."""
        kept = [(self.fingerprint, req, json.dumps(list(rep))) for req, rep in replies
                if rep[0] in _KEPT]
        if not kept:
            return
        with self.lock:
            try:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.executemany("INSERT OR IGNORE INTO replies VALUES (?, ?, ?)", kept)
                self.db.execute("COMMIT")
            except sqlite3.Error as err:  # not kept: the next run asks a worker again
                if self.db.in_transaction:
                    self.db.rollback()
                _LOG.warning("grading cache not written: %s", err)


_STORE: tuple[int, str, _Store | None] | None = None  # (pid, path, store) of this process
_INHERITED: list[Any] = []
_LOG = logging.getLogger(__name__)


def _store() -> _Store | None:
    """This process's :class:`_Store` (:data:`CACHE_ENV`), or None when it is off or cannot
    be opened (then every uncached call goes to a worker, as without it)."""
    global _STORE
    where = os.environ.get(CACHE_ENV)
    if where is None:
        from pear.paths import BUILD_DIR
        where = str(BUILD_DIR / "cache" / f"mathverify-{socket.gethostname()}.sqlite")
    if _STORE is None or _STORE[0] != os.getpid() or _STORE[1] != where:
        if _STORE is not None and _STORE[0] != os.getpid():
            _INHERITED.append(_STORE)  # a fork's copy of the parent's: never used nor closed
        store = None
        if where.strip().lower() not in ("", "off", "0", "no"):
            try:
                store = _Store(Path(where))
            except Exception as err:  # noqa: BLE001 - the store only saves time
                _LOG.warning("grading cache %s not used: %s", where, err)
        _STORE = (os.getpid(), where, store)
    return _STORE[2]


def _ask(cache: dict[Any, Any], keys: list[Any], requests: list[list[str]], timeout_s: float,
         result: Any) -> None:
    """Fill ``cache`` for the ``keys`` it lacks from the disk (:class:`_Store`), the rest in
    one round trip to a worker; ``result`` turns a reply into a cache entry."""
    with _CACHE_LOCK:
        todo = {k: r for k, r in zip(keys, requests) if k not in cache}
    if not todo:
        return
    got: dict[Any, Any] = {}
    store = _store()
    if store is not None:
        texts = {k: json.dumps(r) for k, r in todo.items()}
        stored = store.get(list(texts.values()))
        got = {k: result(*stored[t]) for k, t in texts.items() if t in stored}
        todo = {k: r for k, r in todo.items() if k not in got}
    if todo:
        replies = _pool().call_many(list(todo.values()), timeout_s)
        if store is not None:
            store.put([(texts[k], tuple(rep)) for k, rep in zip(todo, replies)])
        got.update((k, result(status, value)) for k, (status, value) in zip(todo, replies))
    with _CACHE_LOCK:
        if len(cache) + len(got) > _CACHE_SIZE:  # full: cleared, keeping what was asked
            keep = {k: cache[k] for k in keys if k in cache}
            cache.clear()
            cache.update(keep)
        cache.update(got)


def _extract_all(inputs: list[str], timeout_s: float) -> list[tuple[Status, str]]:
    keys = [(t, timeout_s) for t in inputs]
    _ask(_EXTRACTED, [k for k in keys if k[0]], [["extract", t] for t in inputs if t],
         timeout_s, lambda status, label: (status, label or ""))
    return [_EXTRACTED.get(k, ("unparsed", "")) if k[0] else ("unparsed", "") for k in keys]


def _verify_all(pairs: list[tuple[str, str]], timeout_s: float) -> list[tuple[Status, bool]]:
    keys = [(g, p, timeout_s) for g, p in pairs]
    asked = [k for k in keys if k[0] and k[1]]
    _ask(_VERIFIED, asked, [["verify", g, p] for g, p, _ in asked], timeout_s,
         lambda status, equal: (status, status == "ok" and bool(equal)))
    return [("gold_unparsed", False) if not g else ("unparsed", False) if not p
            else _VERIFIED[(g, p, t)] for g, p, t in keys]


def extract_all(texts: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S
                ) -> list[tuple[Status, str]]:
    """:func:`extract` of each of ``texts``, the ones not cached in one round trip to a
    worker (pipelined: each call keeps its own ``timeout_s``)."""
    return _extract_all([mathverify_input(t) for t in texts], float(timeout_s))


def verify_all(pairs: Sequence[tuple[str, str]], timeout_s: float = DEFAULT_TIMEOUT_S
               ) -> list[tuple[Status, bool]]:
    """:func:`verify` of each ``(gold, pred)`` of ``pairs``, the ones not cached in one round
    trip to a worker (pipelined: each call keeps its own ``timeout_s``)."""
    return _verify_all([(mathverify_input(g), mathverify_input(p)) for g, p in pairs],
                       float(timeout_s))


def extract(text: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[Status, str]:
    r"""The answer Math-Verify reads in ``text``, as its normalised LaTeX string.

    Returns ``(status, label)``: status ``ok``, ``unparsed`` (no answer, label ``""``),
    ``timeout`` or ``error``.  Cached, timeouts included.

    >>> extract("Final Answer: The largest $n$ is 34.")
    ('ok', '34')
    """
    return _extract_all([mathverify_input(text)], float(timeout_s))[0]


def verify(gold: str, pred: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[Status, bool]:
    r"""Math-Verify's ``verify(parse(gold), parse(pred))`` on two answers as written.

    Both go through :func:`mathverify_input`.  Returns ``(status, equal)``: status ``ok``,
    ``unparsed`` (nothing read in ``pred``), ``gold_unparsed``, ``timeout`` (ran over
    ``timeout_s`` or the worker died) or ``error``; ``equal`` is True only with ``ok``.  Cached,
    timeouts included.

    >>> verify(r"\frac{1}{3}", "0.33"), verify("1234", "1, 234")
    (('ok', False), ('ok', False))
    """
    return _verify_all([(mathverify_input(gold), mathverify_input(pred))], float(timeout_s))[0]
