r"""LaTeX answer cleaning and a guarded Math-Verify call, for the MATH-500 task.

Math-Verify's own timeout uses ``signal.alarm`` and so works only in the main thread; here its
timeouts are disabled and every parse + verify runs in a worker process (a fresh
``python -c``, so a user's ``__main__`` is never re-imported) that is killed and replaced when a
call runs over ``timeout_s``.  Workers start lazily, one per concurrent caller up to
:data:`MAX_WORKERS`, and serve any thread.  Results, timeouts included, are cached per
``(gold, prediction)``.

>>> canonical_latex(r"The answer is $\boxed{\dfrac 12}$.")
'\\frac{1}{2}'
>>> verify(r"\frac12", "0.5")
('ok', True)
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

__all__ = ["DEFAULT_TIMEOUT_S", "MAX_LENGTH", "MAX_DEPTH", "MAX_WORKERS", "canonical_latex",
           "verify", "shutdown"]

DEFAULT_TIMEOUT_S = 5.0  # our choice: no real MATH answer takes more than ~0.2 s
MAX_LENGTH = 300  # our choice: longer "answers" are not final expressions (parse failure)
MAX_DEPTH = 12  # our choice: deeper brace nesting is not an answer (the parser is slow on it)
MAX_WORKERS = min(4, os.cpu_count() or 1)  # our choice
WORKER_MEMORY_BYTES = 4 << 30  # our choice: an address-space cap so 10^{10^{10}} cannot OOM
_STARTUP_TIMEOUT_S = 120.0

Status = Literal["ok", "unparsed", "gold_unparsed", "timeout", "error"]

# --------------------------------------------------------------------------------------------
# Cleaning

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_DOLLAR = re.compile(r"(?<!\\)\$")
_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:final\s+)?answer\s*(?:is\s*)?[:=]?\s*", re.I)
_REPLACEMENTS = [
    (re.compile(r"\\[dt]frac(?![a-zA-Z])"), r"\\frac"),
    (re.compile(r"\\(?:left|right)\s*\.|\\(?:left|right|bigl|bigr|Bigl|Bigr)(?![a-zA-Z])"), ""),
    (re.compile(r"\\displaystyle(?![a-zA-Z])|(?<!\\)\\!|(?<!\\)\\\$"), ""),
    (re.compile(r"\\mbox\s*\{"), r"\\text{"),
    (re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![a-zA-Z])|\u00b0|\\degree(?![a-zA-Z])"),
     r"^\\circ"),
    (re.compile(r"(?<!\\)\\[,;: ]|~|\\q?quad(?![a-zA-Z])"), " "),
]
_SPACES = re.compile(r"\s+")


def _matching_brace(text: str, open_at: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``open_at`` (-1 if unbalanced)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _last_boxed(text: str) -> str | None:
    r"""The content of the last (rightmost-starting) closed ``\boxed{...}``; one linear pass."""
    opens = {m.end() - 1 for m in _BOXED.finditer(text)}
    stack: list[int] = []
    best: tuple[int, int] | None = None
    for i, ch in enumerate(text):
        if ch == "{" and (i == 0 or text[i - 1] != "\\"):
            stack.append(i)
        elif ch == "}" and i > 0 and text[i - 1] != "\\" and stack:
            start = stack.pop()
            if start in opens and (best is None or start > best[0]):
                best = (start, i)
    return None if best is None else text[best[0] + 1:best[1]]


def _last_math_segment(text: str) -> str | None:
    r"""The last closed ``$...$``, ``$$...$$``, ``\(...\)`` or ``\[...\]`` segment (linear)."""
    text = text.replace("$$", "$")
    found: list[tuple[int, str]] = []
    dollars = [m.start() for m in _DOLLAR.finditer(text)]
    if len(dollars) >= 2:
        last = len(dollars) - 1 if len(dollars) % 2 == 0 else len(dollars) - 2  # closing $
        found.append((dollars[last], text[dollars[last - 1] + 1:dollars[last]]))
    for left, right in (("\\(", "\\)"), ("\\[", "\\]")):
        end = text.rfind(right)
        start = text.rfind(left, 0, end) if end >= 0 else -1
        if start >= 0:
            found.append((end, text[start + 2:end]))
    return max(found)[1] if found else None


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += (ch in "{([") - (ch in "})]")
        deepest = max(deepest, depth)
    return deepest


def _collapse_spaces(text: str) -> str:
    """Drop whitespace, except one space between two letters (``\\cot x``, ``\\text{a b}``)."""
    parts = _SPACES.split(text.strip())
    out = parts[0]
    for part in parts[1:]:
        if out and part and out[-1].isalpha() and part[0].isalpha():
            out += " "
        out += part
    return out


def _arg(text: str, i: int) -> tuple[str, int] | None:
    """The macro argument starting at ``i``: a braced group, a command, or one character."""
    if i >= len(text):
        return None
    if text[i] == "{":
        end = _matching_brace(text, i)
        return (text[i + 1:end], end + 1) if end > 0 else None
    if text[i] == "\\":
        m = re.match(r"\\[a-zA-Z]+", text[i:])
        return (m.group(0), i + len(m.group(0))) if m else None
    return (text[i], i + 1) if text[i].isalnum() else None


def _brace_args(text: str) -> str:
    r"""``\frac12`` -> ``\frac{1}{2}``, ``\sqrt2`` -> ``\sqrt{2}``."""
    out, i = [], 0
    for m in re.finditer(r"\\(frac|sqrt)(?![a-zA-Z])", text):
        if m.start() < i:
            continue
        out.append(text[i:m.end()])
        j, args = m.end(), []
        if m.group(1) == "sqrt" and j < len(text) and text[j] == "[":
            close = text.find("]", j)
            if close < 0:
                i = j
                continue
            out.append(text[j:close + 1])
            j = close + 1
        for _ in range(2 if m.group(1) == "frac" else 1):
            a = _arg(text, j)
            if a is None:
                break
            args.append("{" + _brace_args(a[0]) + "}")
            j = a[1]
        out.append("".join(args))
        i = j
    out.append(text[i:])
    return "".join(out)


def canonical_latex(text: str) -> str:
    r"""The final expression of a LaTeX answer, cleaned for comparison; ``""`` if there is none.

    Takes the last ``\boxed{}`` (else the last ``$...$`` / ``\(...\)`` / ``\[...\]``, else the
    text after an "answer is" prefix), then: ``\dfrac``/``\tfrac`` -> ``\frac``; drops
    ``\left``/``\right``, ``\!``, ``\$``, ``\displaystyle``; degrees -> ``^\circ``; spacing macros
    and whitespace removed (one space kept between letters); ``\frac12`` -> ``\frac{1}{2}``;
    trailing periods dropped.  Expressions over :data:`MAX_LENGTH` characters or nested deeper
    than :data:`MAX_DEPTH` give ``""``.

    >>> canonical_latex(r"\left[ \tfrac{\pi^2}{8}, 30^{\circ} \right]")
    '[\\frac{\\pi^2}{8},30^\\circ]'
    >>> canonical_latex("  "), canonical_latex("{" * 50 + "1" + "}" * 50)
    ('', '')
    """
    text = (text or "").strip()
    boxed = _last_boxed(text)
    if boxed is not None:
        text = boxed
    elif _BOXED.search(text):  # an unclosed \boxed{ (e.g. cut by max_tokens): what follows it
        text = text[[m.end() for m in _BOXED.finditer(text)][-1]:]
    else:
        segment = _last_math_segment(text)
        text = segment if segment is not None else _PREFIX.sub("", text)
    for pattern, repl in _REPLACEMENTS:
        text = pattern.sub(repl, text)
    text = _collapse_spaces(text).strip("$")
    while text.endswith(".") and not text.endswith("\\."):
        text = text[:-1]
    if not text or len(text) > MAX_LENGTH or _depth(text) > MAX_DEPTH:
        return ""
    return _brace_args(text)


# --------------------------------------------------------------------------------------------
# The guarded Math-Verify call


def _serve() -> None:  # pragma: no cover - runs in the worker process
    """Worker loop over stdin/stdout JSON lines: ``[gold, pred]`` -> ``[status, equal]``."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the protocol
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    logging.disable(logging.WARNING)
    try:
        from math_verify import parse, verify as mv_verify
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        out.write(json.dumps(["import_error", repr(exc)]) + "\n")
        out.flush()
        return
    out.write(json.dumps(["ready", True]) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            gold, pred = json.loads(line)
            g = parse("\\boxed{" + gold + "}", parsing_timeout=None)
            p = parse("\\boxed{" + pred + "}", parsing_timeout=None)
            if not g:
                result: list[Any] = ["gold_unparsed", False]
            elif not p:
                result = ["unparsed", False]
            else:
                result = ["ok", bool(mv_verify(g, p, timeout_seconds=None))]
        except (Exception, RecursionError, MemoryError):  # noqa: BLE001 - any failure is "wrong"
            result = ["error", False]
        out.write(json.dumps(result) + "\n")
        out.flush()


class _Worker:
    """One worker process (``python -c``, so no user ``__main__`` is re-imported), restarted on
    demand after a timeout or a crash."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str] = queue.Queue()

    def _start(self) -> None:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            [sys.executable, "-c", "from pear.mathgrade import _serve; _serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8", env=env, bufsize=1)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        try:
            status, detail = json.loads(lines.get(timeout=_STARTUP_TIMEOUT_S))
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

    def call(self, gold: str, pred: str, timeout_s: float) -> tuple[Status, bool]:
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps([gold, pred]) + "\n")
            self.proc.stdin.flush()
            status, equal = json.loads(self.lines.get(timeout=timeout_s))
            return status, bool(equal)
        except (queue.Empty, OSError, ValueError):
            self.stop()  # ran over, or died: kill it; the next call starts a fresh one
            return "timeout", False


def _pump(stream: Any, lines: queue.Queue[str]) -> None:
    """Copy a worker's stdout lines into a queue until EOF (so reads can time out)."""
    for line in stream:
        lines.put(line)
    lines.put("")  # EOF: makes a waiting reader fail fast instead of waiting out its timeout


class _Pool:
    """Up to ``size`` workers shared by all threads of one process."""

    def __init__(self, size: int) -> None:
        self.pid = os.getpid()
        self.workers = [_Worker() for _ in range(size)]
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        for w in self.workers:
            self.idle.put(w)

    def call(self, gold: str, pred: str, timeout_s: float) -> tuple[Status, bool]:
        worker = self.idle.get()
        try:
            return worker.call(gold, pred, timeout_s)
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


def shutdown() -> None:
    """Stop the worker processes (they restart on the next :func:`verify`)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and _POOL.pid == os.getpid():
            _POOL.stop()
        _POOL = None


atexit.register(shutdown)


@lru_cache(maxsize=1 << 16)
def verify(gold: str, pred: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[Status, bool]:
    r"""Math-Verify's ``verify(parse(gold), parse(pred))`` on two LaTeX expressions.

    Returns ``(status, equal)``: status ``ok``, ``unparsed`` (no expression in ``pred``),
    ``gold_unparsed``, ``timeout`` (ran over ``timeout_s`` or the worker died) or ``error``;
    ``equal`` is True only with ``ok``.  Cached, timeouts included.

    >>> verify(r"\frac{1}{3}", "0.33")
    ('ok', False)
    """
    return _pool().call(gold, pred, timeout_s)
