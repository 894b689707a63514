"""A run's progress bar (:class:`Progress`), shared by :func:`pear.runs.runner.run` and
:func:`pear.runs.branch.branch`."""
from __future__ import annotations

from pear.core.engine import Engine

__all__ = ["Progress"]


class Progress:
    """A run's progress bar in debate-rounds (round 0's initial answers and every debate
    round of every debate): debates advance in lockstep and finish together, so rounds are
    the unit that moves between phases, and model calls (counted as each completes, where
    the backend reports it) move within one.  The engine's phase (``round 2: critiques``)
    is its description; debates written, calls, tokens and failures its postfix."""

    def __init__(self, total_rounds: int, enabled: bool = True) -> None:
        from tqdm.auto import tqdm
        self.bar = tqdm(total=total_rounds, desc="debate rounds", unit="round",
                        disable=not enabled, dynamic_ncols=True, mininterval=0.5)
        self.debates = 0

    def skip(self, rounds: int) -> None:
        """Rounds of debates recorded earlier (nothing to run)."""
        self.bar.update(rounds)

    def follow(self, engine: Engine) -> None:
        """Move with ``engine`` from now on (its phase, calls and rounds done)."""
        base = self.bar.n - engine.rounds_done

        def moved() -> None:
            self.bar.set_description_str(engine.phase, refresh=False)
            self.bar.set_postfix(debates=self.debates, calls=engine.calls_done,
                                 tokens=engine.tokens, failed=len(engine.failed),
                                 refresh=False)
            self.bar.update(base + engine.rounds_done - self.bar.n)  # redrawn at most 2/s
        engine.on_progress = moved

    def counts(self, debates: int) -> None:
        """Debates written so far."""
        self.debates = debates

    def close(self) -> None:
        self.bar.set_description_str("debate rounds", refresh=False)
