"""What a run cost, in its manifest: one *attempt* per start of ``pear run`` on a run
directory (a first run, a resume, a requeued Slurm task, a shard of ``pear launch local``),
with its machine, wall time, GPUs, GPU-hours, model calls and tokens; the run's ``compute``
is their sum (:func:`total`), and a merged run's is the sum over its shards' attempts.

GPU-hours = wall hours x the GPUs the process held (:func:`pear.store.environment.allocated_gpus`:
what a cluster charges, whether or not the backend used them).

>>> a = {"wall_s": 1800.0, "gpus": 2, "calls": 10, "tokens": 500, "cache_hits": 1,
...      "debates": 4, "ended_at": "x"}
>>> total([a, {**a, "gpus": 0}])
{'attempts': 2, 'unfinished': 0, 'wall_s': 3600.0, 'gpu_hours': 1.0, 'calls': 20, \
'tokens': 1000, 'cache_hits': 2, 'debates': 8}
"""
from __future__ import annotations

import os
import platform
import time
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from pear.store import environment

__all__ = ["LAUNCHER_ENV", "COUNTS", "Attempt", "total", "split", "gpu_hours",
           "hardware_list", "report", "reproducibility", "clock"]

LAUNCHER_ENV = "PEAR_LAUNCHER"
"""Set by ``pear launch local`` for the shard processes it starts (``local``)."""

COUNTS = ("calls", "tokens", "cache_hits", "debates")
"""What an attempt counts (model calls, tokens, calls answered from the cache, debates
written), added up by :func:`total`."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Attempt:
    """This start of a run: when, where (node; Slurm's job, array task and restart count
    under Slurm), who launched it (``slurm``, ``local`` or ``direct``) and the GPUs it
    holds (``record``, as the manifest stores it); :meth:`finish` adds its wall time,
    GPU-hours and counts."""

    def __init__(self) -> None:
        env = os.environ
        self._t0 = time.monotonic()
        self.record: dict[str, Any] = {
            "at": _now(), "ended_at": None, "wall_s": None,
            "node": env.get("SLURMD_NODENAME") or platform.node(),
            "launcher": "slurm" if "SLURM_JOB_ID" in env else env.get(LAUNCHER_ENV) or "direct",
            "gpus": environment.allocated_gpus(), "gpu_hours": None, **{k: 0 for k in COUNTS}}
        if "SLURM_JOB_ID" in env:
            self.record.update({"slurm_job_id": env.get("SLURM_JOB_ID"),
                                "array_job_id": env.get("SLURM_ARRAY_JOB_ID"),
                                "array_task_id": env.get("SLURM_ARRAY_TASK_ID"),
                                "restart_count": int(env.get("SLURM_RESTART_COUNT") or 0)})

    def finish(self, share: float = 1.0, **counts: int) -> dict[str, Any]:
        """Close the attempt now with its counts (:data:`COUNTS`); returns ``record``.
        ``share``: the part of the process's time that is this run's, when one pass
        served several runs (:func:`pear.runs.together.run_together`; recorded)."""
        unknown = set(counts) - set(COUNTS)
        if unknown:
            raise ValueError(f"unknown attempt counts {sorted(unknown)}: use "
                             f"{', '.join(COUNTS)}")
        wall = round((time.monotonic() - self._t0) * share, 3)
        self.record.update({"ended_at": _now(), "wall_s": wall,
                            "gpu_hours": gpu_hours(wall, self.record["gpus"] or 0),
                            **{k: int(v) for k, v in counts.items()}})
        if share != 1.0:
            self.record["share"] = round(share, 6)
        return self.record


def split(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` split in proportion to ``weights`` into integers that add up to it
    (largest remainders first; equal parts when every weight is 0).

    >>> split(10, [1, 1, 1]), split(7, [2, 0]), split(5, [0, 0])
    ([4, 3, 3], [7, 0], [3, 2])
    """
    w = [float(x) for x in weights] if any(weights) else [1.0] * len(weights)
    exact = [total * x / sum(w) for x in w]
    out = [int(e) for e in exact]
    for i in sorted(range(len(w)), key=lambda i: out[i] - exact[i])[:total - sum(out)]:
        out[i] += 1
    return out


def gpu_hours(wall_s: float, gpus: int) -> float:
    """``wall_s`` seconds on ``gpus`` GPUs, in GPU-hours (6 decimals: a few seconds count).

    >>> gpu_hours(5400, 4), gpu_hours(1.8, 1)
    (6.0, 0.0005)
    """
    return round(wall_s * gpus / 3600.0, 6)


def total(attempts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of ``attempts``: how many (and how many never finished: a killed process,
    whose time is unknown and left out), wall seconds, GPU-hours and :data:`COUNTS`."""
    attempts = list(attempts)
    out: dict[str, Any] = {"attempts": len(attempts),
                           "unfinished": sum(a.get("ended_at") is None for a in attempts),
                           "wall_s": round(sum(float(a.get("wall_s") or 0) for a in attempts), 3),
                           "gpu_hours": round(sum(float(a.get("gpu_hours") or
                                                        gpu_hours(float(a.get("wall_s") or 0),
                                                                  int(a.get("gpus") or 0)))
                                                  for a in attempts), 6)}
    out.update({k: sum(int(a.get(k) or 0) for a in attempts) for k in COUNTS})
    return out


def hardware_list(known: Iterable[Mapping[str, Any]], new: Mapping[str, Any] | None
                  ) -> list[dict[str, Any]]:
    """The distinct machines a run ran on: ``known`` plus ``new`` when it is not among them."""
    out = [dict(h) for h in known]
    if new is not None and dict(new) not in out:
        out.append(dict(new))
    return out


def clock(seconds: float) -> str:
    """Seconds as ``XhYYmZZs``, or with a decimal under a minute.

    >>> clock(3725.4), clock(4.26)
    ('1h02m05s', '4.3 s')
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    return f"{s // 3600}h{s // 60 % 60:02d}m{s % 60:02d}s"


def report(manifest: Mapping[str, Any]) -> list[str]:
    """``pear show``'s lines on where and at what cost a run ran: each machine, the
    runtime (Python, packages, lock), each backend's reproducibility settings, and the
    compute per attempt (per shard of a merged run) and in total."""
    lines = ["hardware:"]
    machines = manifest.get("hardware")
    if not machines:
        lines.append("  not recorded" + (" (imported debates: run by another framework)"
                                         if manifest.get("imported") else ""))
    for hw in machines or []:
        lines.append(f"  {environment.describe(hw)}")
    versions = manifest.get("versions") or {}
    lock = manifest.get("lock")
    lines.append("runtime:")
    lines.append("  " + (", ".join(f"{k} {v}" for k, v in versions.items() if v) or "unknown"))
    lines.append(f"  lock: {lock['sha256'][:16]} ({', '.join(lock['files'])})" if lock
                 else "  lock: none recorded")
    for settings in manifest.get("backend_settings") or []:
        for label, repro in reproducibility(settings, manifest.get("backend") or "?"):
            lines.append(f"  backend {label}: "
                         + ", ".join(f"{k}={v}" for k, v in repro.items()))
    comp = manifest.get("compute")
    lines.append("compute:")
    if not comp:
        lines.append("  not recorded")
        return lines
    parts = manifest.get("merged_from") or []
    for p in parts:
        c = p.get("compute") or {}
        lines.append(f"  shard {p.get('shard') or p.get('dir')}: " + _compute_line(c))
    if not parts:
        for a in manifest.get("attempts") or []:
            lines.append(f"  attempt {a.get('at')} on {a.get('node')} ({a.get('launcher')}"
                         f", {a.get('gpus')} GPUs): " + _compute_line(
                             {**a, "attempts": 1, "unfinished": a.get("ended_at") is None}))
    lines.append("  total: " + _compute_line(comp))
    return lines


def reproducibility(settings: Mapping[str, Any], label: str = "?"
                    ) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, the settings that decide reproducibility) of one backend's settings (a
    mixed-model panel's are one level down, labelled by model); ``label`` when the settings
    do not name their backend."""
    if "reproducibility" in settings:
        return [(str(settings.get("backend") or label), settings["reproducibility"])]
    return [x for k, v in settings.items() if isinstance(v, Mapping)
            for x in reproducibility(v, str(k))]


def _compute_line(c: Mapping[str, Any]) -> str:
    """One line of compute; a value not recorded (an imported run's time) reads ``?``."""
    if not c:
        return "not recorded"

    def v(key: str) -> Any:
        return "?" if c.get(key) is None else c[key]
    wall, gpu = c.get("wall_s"), c.get("gpu_hours")
    hours = "?" if gpu is None else f"{gpu:.6f}".rstrip("0").rstrip(".")
    return (f"wall {clock(wall) if wall is not None else '?'}, {hours} GPU-hours, "
            f"{v('calls')} model calls ({v('cache_hits')} from the cache), {v('tokens')} "
            f"tokens, {v('debates')} debates written"
            + (f", {c['unfinished']} attempts unfinished" if c.get("unfinished") else ""))
