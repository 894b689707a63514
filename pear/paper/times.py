"""What each notebook of a build cost: :class:`BuildTimes`, written to :data:`TIMES_FILE`
beside the executed notebooks as each one ends, read back by the next build on the same
backend (:func:`earlier_times`; the registry's typical times,
:func:`pear.paper.registry.typical_seconds`) to start the longest notebooks first, with the
grid's attempt from the run manifest (:func:`grid_attempt`)."""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from pear.parallel import usable_cores
from pear.paths import shown, write_json
from pear.store import manifest as manifest_io
from pear.backends.registry import REPLAY

__all__ = ["TIMES_FILE", "BuildTimes", "earlier_times", "grid_attempt"]

TIMES_FILE = "build-times.json"
"""What each notebook of the last build cost: ``build/notebooks/build-times.json`` (beside
the executed notebooks), rewritten as each notebook ends (:class:`BuildTimes`)."""


class BuildTimes:
    """The wall time of each notebook of a build, in build order, with its status (``ok``,
    ``failed``, ``skipped``) and, for notebook 00, the grid's own attempt (its wall time and
    the debates it wrote, from the run manifest); written to ``path`` after every notebook,
    so a build that is stopped still says what its finished notebooks cost.

    >>> t = BuildTimes(None, {"backend": "simulated", "preset": "sim", "runs_dir": "r"})
    >>> t.add("00_run_experiments", 61.04, "ok", grid={"wall_s": 58.2, "debates": 720})
    >>> t.add("01_main_results", 4.61, "ok")
    >>> print(t.table())
    time per notebook (simulated, preset sim, runs r):
      00_run_experiments        61.0 s  ok  (grid: 58.2 s, 720 debates)
      01_main_results            4.6 s  ok
      all                       65.7 s
    """

    def __init__(self, path: Path | None, params: Mapping[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {
            "backend": params.get("backend"), "preset": params.get("preset"),
            "runs_dir": shown(str(params.get("runs_dir"))),
            "n_questions": params.get("n_questions"),
            "seeds": params.get("seeds"), "commit": params.get("commit"),
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cpus": usable_cores(), "notebooks": {}, "total_s": 0.0, "wall_s": 0.0}
        self._t0 = time.perf_counter()

    def add(self, name: str, seconds: float, status: str,
            grid: Mapping[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {"seconds": round(seconds, 2), "status": status}
        if grid is not None:
            entry["grid"] = dict(grid)
        self.data["notebooks"][name] = entry
        self.data["total_s"] = round(self.total(), 2)
        self.data["wall_s"] = round(self.wall(), 2)
        if self.path is not None:
            write_json(self.path, self.data)

    def total(self) -> float:
        """The notebooks' times added (more than :meth:`wall` when some ran at once)."""
        return sum(e["seconds"] for e in self.data["notebooks"].values())

    def wall(self) -> float:
        """Seconds since the build started."""
        return time.perf_counter() - self._t0

    def table(self) -> str:
        d = self.data
        lines = [f"time per notebook ({d['backend']}, preset {d['preset']}, runs "
                 f"{d['runs_dir']}):"]
        for name, e in d["notebooks"].items():
            grid = e.get("grid")
            extra = f"  (grid: {grid['wall_s']:.1f} s, {grid['debates']} debates)" if grid else ""
            lines.append(f"  {name:<22} {e['seconds']:>7.1f} s  {e['status']}{extra}")
        lines.append(f"  {'all':<22} {self.total():>7.1f} s")
        if self.path is not None:
            lines[0] = lines[0][:-1] + f" -> {self.path}:"
        return "\n".join(lines)


def earlier_times(path: Path, backend: str) -> dict[str, float]:
    """Each notebook's seconds in the last build (:data:`TIMES_FILE`) if it ran on
    ``backend`` and finished there (status ``ok``: a skipped or failed one's seconds say
    nothing of its time), else {}."""
    try:
        data = json.loads(path.read_text())
        if data.get("backend") != backend:
            return {}
        return {n: float(e["seconds"]) for n, e in data["notebooks"].items()
                if e.get("status", "ok") == "ok"}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def grid_attempt(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's last attempt (notebook 00's grid: its wall time and debates written), or
    None for a replay or a directory without a run manifest."""
    runs = Path(params["runs_dir"])
    man = manifest_io.read(runs) if params["backend"] != REPLAY and runs.is_dir() else None
    attempts = (man or {}).get("attempts") or []
    if not attempts or attempts[-1].get("wall_s") is None:
        return None
    return {"wall_s": attempts[-1]["wall_s"], "debates": attempts[-1].get("debates", 0)}
