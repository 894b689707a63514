"""A run's progress (:class:`Progress`), shared by :func:`pear.runs.runner.run`,
:func:`pear.runs.branch.branch` and :func:`pear.runs.together.run_together`: model calls and
debates done / expected, the rate and the ETA from completed calls; a tqdm bar on a terminal,
timestamped lines elsewhere (a notebook kernel relayed by papermill, a log)."""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from pear.core.engine import Engine

__all__ = ["Progress"]


class Progress:
    """A run's progress in model calls (the unit that moves: every backend reports each
    completed call, see :mod:`pear.core.backend`) and debates, done / expected in this run,
    with the rate and the ETA from completed calls.  The expected calls are the engines'
    :meth:`~pear.core.engine.Engine.call_budget`, less what they turn out not to need, so
    the count ends at its total.

    On a terminal it is a tqdm bar; elsewhere (a notebook kernel whose output papermill
    relays, a pipe, a log file) it is a plain timestamped line every ``interval`` seconds,
    written by a thread of its own, so that a call completed during a long one, or a pause
    between phases, shows within ``interval`` (a ``\\r`` bar does not survive the relay:
    tqdm redraws only when its count advances by its adaptive ``miniters``, which a count
    in rounds left frozen for minutes, and a log keeps every frame on one line).  The rate
    and the ETA count from the first completed call (not the model's loading)."""

    def __init__(self, calls: int, debates: int, enabled: bool = True, *,
                 stream: TextIO | None = None, interval: float = 1.5) -> None:
        self.calls_expected, self.debates_expected = calls, debates
        self.calls = self.unneeded = self.debates = self.tokens = self.failed = 0
        self.phase = ""
        self.enabled, self.interval = enabled, interval
        self.stream = stream if stream is not None else sys.stderr
        self._start = time.monotonic()
        self._first: tuple[float, int] | None = None  # (time, calls) at the first completion
        self._stop = threading.Event()
        self.bar: Any = None
        self._thread: threading.Thread | None = None
        if not enabled:
            return
        if _is_terminal(self.stream):
            from tqdm import tqdm
            self.bar = tqdm(total=calls, unit="call", file=self.stream, dynamic_ncols=True,
                            mininterval=0.5, miniters=1)
        else:
            self._thread = threading.Thread(target=self._lines, name="pear-progress",
                                            daemon=True)
            self._thread.start()

    @property
    def left(self) -> int:
        """Calls still expected in this run."""
        return max(0, self.calls_expected - self.unneeded - self.calls)

    def rate(self) -> float | None:
        """Calls a second since the first completed call (None before the second)."""
        if self._first is None:
            return None
        t0, c0 = self._first
        now = time.monotonic()
        return (self.calls - c0) / (now - t0) if self.calls > c0 and now > t0 else None

    def eta_s(self) -> float | None:
        """Seconds left at :meth:`rate` (None before it is known)."""
        rate = self.rate()
        return self.left / rate if rate else None

    def skip(self, calls: int, debates: int) -> None:
        """Work recorded earlier: not expected of this run."""
        self.calls_expected -= calls
        self.debates_expected -= debates
        self._moved()

    def follow(self, engine: Engine) -> None:
        """Move with ``engine`` from now on (its phase, calls, tokens and failures)."""
        base = (self.calls, self.unneeded, self.tokens, self.failed)

        def moved() -> None:
            self.phase = engine.phase
            self.calls, self.unneeded = base[0] + engine.calls_done, \
                base[1] + engine.calls_unneeded
            self.tokens, self.failed = base[2] + engine.tokens, base[3] + len(engine.failed)
            self._moved()
        engine.on_progress = moved

    def counts(self, debates: int) -> None:
        """Debates written so far in this run."""
        self.debates = debates
        self._moved()

    def line(self) -> str:
        """The progress as one line of text."""
        elapsed = time.monotonic() - self._start
        expected = self.calls + self.left
        eta, rate = self.eta_s(), self.rate()
        pct = 100.0 * self.calls / expected if expected else 100.0
        return (f"[{time.strftime('%H:%M:%S')}] {self.phase or 'starting'}: "
                f"calls {self.calls}/{expected} ({pct:.0f}%), debates {self.debates}/"
                f"{self.debates_expected}, {rate or 0:.2f} calls/s, elapsed {_clock(elapsed)}, "
                f"ETA {'?' if eta is None else _clock(eta)}, tokens {self.tokens}"
                + (f", failed {self.failed}" if self.failed else ""))

    def _moved(self) -> None:
        if self._first is None and self.calls:
            self._first = (time.monotonic(), self.calls)
        if self.bar is not None:
            self.bar.total = self.calls + self.left
            self.bar.set_description_str(self.phase, refresh=False)
            self.bar.set_postfix_str(f"debates {self.debates}/{self.debates_expected}, "
                                     f"tokens {self.tokens}"
                                     + (f", failed {self.failed}" if self.failed else ""),
                                     refresh=False)
            self.bar.update(self.calls - self.bar.n)

    def _lines(self) -> None:
        """The line writer (a thread): a line every ``interval`` seconds until closed."""
        while not self._stop.wait(self.interval):
            self._write()

    def _write(self) -> None:
        try:
            print(self.line(), file=self.stream, flush=True)
        except (OSError, ValueError):  # the stream was closed under us
            pass

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """The last state (a final line), then stop (again: nothing)."""
        if self.bar is not None:
            self.bar.close()
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._write()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    """``H:MM:SS``.

    >>> _clock(3725.4)
    '1:02:05'
    """
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
