"""After (or during) a launch: the merge of every model's shards with its completeness
check (``pear launch merge DIR``, the merge job), and the status read from the records
(``pear launch status DIR``)."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pear.store.manifest import read as read_manifest
from pear.runs.launch.spec import Launch, ModelArray, shard_dir, shard_done
from pear.runs.merge import merge
from pear.runs.launch.slurm import merge_state, queue_states

__all__ = ["ShardStatus", "LaunchStatus", "status", "format_status", "merge_launch",
           "resubmit_command"]


@dataclass(frozen=True)
class ShardStatus:
    """One shard: debates recorded / expected (from its records), its Slurm state where
    ``squeue`` knows the task, the restarts its manifest recorded."""

    model: str
    shard: int
    done: int
    expected: int
    complete: bool
    state: str | None
    restarts: int
    started: bool

    @property
    def failed(self) -> bool:
        """Started, not complete, and not queued or running any more."""
        return self.started and not self.complete and self.state is None


@dataclass
class LaunchStatus:
    """Every shard of a launch, with totals and an estimate of the time left."""

    shards: list[ShardStatus] = field(default_factory=list)
    elapsed_s: float | None = None
    merge_state: str | None = None

    @property
    def done(self) -> int:
        return sum(s.done for s in self.shards)

    @property
    def expected(self) -> int:
        return sum(s.expected for s in self.shards)

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far (None before the first debate)."""
        if not self.done or not self.elapsed_s:
            return None
        return (self.expected - self.done) * self.elapsed_s / self.done


def _restarts(d: Path) -> tuple[int, str | None, str | None]:
    """Restarts, start and end time recorded in a shard's manifest."""
    man = read_manifest(d) if d.is_dir() else None
    if not man:
        return 0, None, None
    attempts = man.get("attempts") or []
    return (max([int(a.get("restart_count") or 0) for a in attempts] or [0]),
            man.get("started_at"), man.get("finished_at"))


def status(launch: Launch, *, queue: bool = True) -> LaunchStatus:
    """The launch's progress from its run directories (and ``squeue``, when there is one)."""
    states = queue_states(launch) if queue else {}
    out = LaunchStatus(merge_state=merge_state(launch) if queue else None)
    starts, ends = [], []
    for array in launch.arrays:
        for i in range(1, array.shards + 1):
            done, complete = shard_done(launch, array, i)
            restarts, started, finished = _restarts(shard_dir(launch, array, i))
            if started:
                starts.append(datetime.fromisoformat(started))
            if complete and finished:
                ends.append(datetime.fromisoformat(finished))
            out.shards.append(ShardStatus(array.slug, i, done, array.expected[i - 1], complete,
                                          states.get((array.slug, i)), restarts,
                                          started is not None))
    if starts:
        end = max(ends) if len(ends) == len(out.shards) else datetime.now(timezone.utc)
        out.elapsed_s = (end - min(starts)).total_seconds()
    return out


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s // 60 % 60:02d}m{s % 60:02d}s"


def format_status(launch: Launch, st: LaunchStatus) -> str:
    """``pear launch status``: a line per model and shard, and the totals with an ETA."""
    lines = [f"launch {launch.out}", f"{'model':<18}{'shard':>7}{'debates':>17}  "
             f"{'state':<12}{'restarts':>9}"]
    for s in st.shards:
        state = s.state or ("complete" if s.complete else "FAILED" if s.failed
                            else "not started")
        lines.append(f"{s.model:<18}{s.shard:>3}/{_shards(launch, s.model):<3}"
                     f"{s.done:>8} / {s.expected:<6}  {state:<12}{s.restarts:>9}")
    eta = st.eta_s
    pct = 100.0 * st.done / st.expected if st.expected else 100.0
    lines.append(f"total: {st.done} / {st.expected} debates ({pct:.1f}%)"
                 + (f"; elapsed {_clock(st.elapsed_s)}" if st.elapsed_s else "")
                 + (f"; ETA {_clock(eta)}" if eta is not None and st.done < st.expected else ""))
    failed = [s for s in st.shards if s.failed]
    if failed:
        lines.append("failed shards: " + ", ".join(f"{s.model} {s.shard}" for s in failed)
                     + "; resubmit: " + "; ".join(resubmit_command(launch, m, [s.shard for s in
                                                                            failed if s.model == m])
                                                  for m in dict.fromkeys(s.model for s in failed)))
    if st.merge_state:
        lines.append(f"merge job: {st.merge_state}")
    return "\n".join(lines)


def _shards(launch: Launch, slug: str) -> int:
    return next(a.shards for a in launch.arrays if a.slug == slug)


def resubmit_command(launch: Launch, slug: str, shards: list[int]) -> str:
    """The command that resubmits exactly ``shards`` of model ``slug``."""
    ids = ",".join(str(i - 1) for i in shards)
    return f"sbatch --array={ids} {launch.dir / (slug + '.sbatch')}"


def merge_launch(launch: Launch) -> tuple[list[str], bool]:
    """Merge every model's shards (those that started) into ``DIR/<model>/`` with
    :func:`pear.runs.merge.merge`, replacing an earlier merge; returns the report lines
    and whether every shard was complete.  Missing or incomplete shards are named with the
    command that resubmits exactly them."""
    lines, all_complete = [], True
    for array in launch.arrays:
        parts = [shard_dir(launch, array, i) for i in range(1, array.shards + 1)]
        started = [d for d in parts if read_manifest(d) if d.is_dir()]
        missing = [i for i in range(1, array.shards + 1)
                   if not shard_done(launch, array, i)[1]]
        target = launch.out / array.slug
        if started:
            tmp = launch.out / f".{array.slug}.merging-{os.getpid()}-{time.time_ns()}"
            s = merge(tmp, started)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
            lines.append(f"{array.slug}: {s.records} of {sum(array.expected)} debates merged "
                         f"into {target} from {len(started)} of {array.shards} shards")
        else:
            lines.append(f"{array.slug}: no shard has started; nothing merged")
        if missing:
            all_complete = False
            lines.append(f"{array.slug}: shards not complete: "
                         + ", ".join(f"{i}/{array.shards}" for i in missing)
                         + f"; resubmit them with: {resubmit_command(launch, array.slug, missing)}"
                         + " (or rerun the same `pear launch`)")
    return lines, all_complete


def describe(array: ModelArray) -> str:
    """One line per model for the launch's printout."""
    per = f"{min(array.expected)}-{max(array.expected)}" if array.expected else "0"
    return (f"{array.slug}: {array.shards} shards x {per} debates, {array.gpus} GPU(s), "
            f"{array.cpus} CPUs, {array.mem_gb} GB, time {array.time_limit} per task"
            + (f" (pear plan: {array.gpu_hours} GPU-hours)" if array.gpu_hours else ""))
