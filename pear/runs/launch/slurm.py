"""Slurm: one readable sbatch script per model (a job array of its shards) and one for the
merge, submitted with ``sbatch``; the queue read with ``squeue`` (no accounting database
needed).

A shard task survives preemption, requeue and time limits: ``--requeue``, logs opened in
append mode, and ``--signal=B:USR1@S`` before the time limit, on which the script asks
``pear run`` to finish the debates in flight (SIGTERM; every finished debate is already
recorded) and requeues its own array task.  A task whose ``pear run`` is killed (e.g.
``kill -9``, the OOM killer) requeues itself up to ``MAX_RESTARTS`` times.  A requeued task
resumes from its records; ``SLURM_RESTART_COUNT`` goes to the shard's manifest.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from pear.runs.launch.spec import (Launch, ModelArray, merge_mem_mb, paper_command, shard_command,
                                  shard_done)

__all__ = ["array_script", "merge_script", "scripts", "check_slurm", "check_scripts", "submit",
           "queue_states", "write_scripts", "SIGNAL_S", "MAX_RESTARTS", "JOBS_FILE"]

SIGNAL_S = 300  # our choice: seconds before the time limit (a chunk of debates finishes)
MAX_RESTARTS = 3  # our choice: a task killed more often than this is left failed
JOBS_FILE = "jobs.jsonl"


def _q(text: str | Path) -> str:
    return shlex.quote(str(text))


def _header(launch: Launch, name: str, log: str, time_limit: str, *, partition: str | None,
            account: str | None, extra: Sequence[str]) -> list[str]:
    lines = [f"#SBATCH --job-name={name}", f"#SBATCH --chdir={launch.workdir}",
             f"#SBATCH --output={log}", "#SBATCH --open-mode=append",
             f"#SBATCH --time={time_limit}"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if account:
        lines.append(f"#SBATCH --account={account}")
    return lines + [f"#SBATCH {arg}" for arg in extra]


def array_script(launch: Launch, array: ModelArray, *, partition: str | None = None,
                 account: str | None = None, throttle: int | None = None,
                 sbatch_args: Sequence[str] = ()) -> str:
    """The sbatch script of one model's job array."""
    n = array.shards
    what = array.model or "the backend's own model"
    lines = ["#!/bin/bash",
             f"# pear launch: {what}, {n} shards of the grid",
             "#   " + " ".join(shard_command(launch, array, f"i/{n}", "DIR")[2:-1]),
             f"# {sum(array.expected)} debates ({min(array.expected)}-{max(array.expected)} "
             "per shard)"
             + (f"; pear plan: {array.gpu_hours} GPU-hours" if array.gpu_hours else ""),
             "# Each task runs one shard into its own run directory and resumes from its "
             "records,",
             "# so resubmitting finishes only what is missing: sbatch --array=IDS this-file "
             "(IDS = shard - 1).",
             f"#SBATCH --array=0-{n - 1}" + (f"%{throttle}" if throttle else "")]
    lines += _header(launch, f"pear-{array.slug}", str(launch.dir / "logs" / f"{array.slug}-%a.log"),
                     array.time_limit, partition=partition, account=account, extra=())
    if array.gpus:
        lines.append(f"#SBATCH --gres=gpu:{array.gpus}")
    lines += [f"#SBATCH --cpus-per-task={array.cpus}", f"#SBATCH --mem={array.mem_gb}G",
              "#SBATCH --requeue", f"#SBATCH --signal=B:USR1@{SIGNAL_S}"]
    lines += [f"#SBATCH {arg}" for arg in sbatch_args]
    shard_out = f"{launch.out}/shards/{array.slug}/${{SHARD}}-of-{n}"
    cmd = " ".join(_q(c) for c in shard_command(launch, array, "S", "O")[:-5])  # + shard, out
    lines += [
        "",
        "set -u",
        "SHARD=$((SLURM_ARRAY_TASK_ID + 1))",
        f'TASK="${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"',
        'echo "[pear launch] $(date -u +%FT%TZ) shard $SHARD/' + str(n)
        + ' task $TASK restart ${SLURM_RESTART_COUNT:-0} on $(hostname)"',
        "",
        "# before the time limit (--signal): finish the debates in flight, then requeue",
        "on_signal() {",
        '  echo "[pear launch] $(date -u +%FT%TZ) time limit near: stopping shard $SHARD"',
        '  kill -TERM "$PID" 2>/dev/null; wait "$PID"',
        '  scontrol requeue "$TASK"; exit 0',
        "}",
        "trap on_signal USR1",
        "# preempted, requeued or cancelled (SIGTERM): pear run finishes the debates in flight;",
        "# the script waits for it, so that no second run of this shard can start meanwhile",
        "on_term() {",
        '  echo "[pear launch] $(date -u +%FT%TZ) SIGTERM: stopping shard $SHARD"',
        '  kill -TERM "$PID" 2>/dev/null; wait "$PID"; exit 143',
        "}",
        "trap on_term TERM",
        f'{cmd} --shard "$SHARD/{n}" --out "{shard_out}" --quiet &',
        "PID=$!",
        'wait "$PID"; RC=$?',
        "# killed (kill -9, out of memory): requeue, the records resume the shard",
        f'if [ "$RC" -gt 128 ] && [ "${{SLURM_RESTART_COUNT:-0}}" -lt {MAX_RESTARTS} ]; then',
        '  echo "[pear launch] $(date -u +%FT%TZ) pear run died (exit $RC): requeueing"',
        '  scontrol requeue "$TASK"',
        "fi",
        'exit "$RC"',
        ""]
    return "\n".join(lines)


def merge_script(launch: Launch, *, partition: str | None = None, account: str | None = None,
                 sbatch_args: Sequence[str] = (), then_paper: bool = False) -> str:
    """The sbatch script of the merge job (submitted with ``--dependency=afterany:...`` on
    every array, so it runs when all their tasks have ended, however they ended); its memory
    is sized from the grid (:func:`pear.runs.launch.spec.merge_mem_mb`)."""
    mem = merge_mem_mb(launch, then_paper=then_paper)
    lines = ["#!/bin/bash",
             "# pear launch: merge every model's shards into DIR/<model>/ and check that "
             "nothing is missing;",
             "# submitted with --dependency=afterany:<the arrays' job ids>; names the shards "
             "to resubmit.",
             f"# memory from the grid: {max(sum(a.expected) for a in launch.arrays)} debates "
             f"of the largest model, at most {launch.record_kb} KB each"
             + (", and the notebooks (--then-paper)" if then_paper else "")]
    lines += _header(launch, "pear-merge", str(launch.dir / "logs" / "merge.log"), "0-01:00:00",
                     partition=partition, account=account, extra=sbatch_args)
    lines += ["#SBATCH --cpus-per-task=1", f"#SBATCH --mem={mem}M", "",
              f"{_q(launch.python)} -m pear launch merge {_q(launch.out)}"
              + (" && \\\n  " + " ".join(_q(c) for c in paper_command(launch))
                 if then_paper else ""), ""]
    return "\n".join(lines)


def scripts(launch: Launch, *, then_paper: bool = False, partition: str | None = None,
            account: str | None = None, throttle: int | None = None,
            sbatch_args: Sequence[str] = ()) -> dict[str, str]:
    """Every script of the launch by file name: one job array per model, then the merge."""
    out = {f"{a.slug}.sbatch": array_script(launch, a, partition=partition, account=account,
                                            throttle=throttle, sbatch_args=sbatch_args)
           for a in launch.arrays}
    out["merge.sbatch"] = merge_script(launch, partition=partition, account=account,
                                       then_paper=then_paper)
    return out


def write_scripts(launch: Launch, *, then_paper: bool = False, **kw) -> list[Path]:
    """Write every array script and the merge script under ``DIR/launch/``."""
    launch.dir.mkdir(parents=True, exist_ok=True)
    (launch.dir / "logs").mkdir(exist_ok=True)
    paths = []
    for name, text in scripts(launch, then_paper=then_paper, **kw).items():
        p = launch.dir / name
        p.write_text(text)
        paths.append(p)
    return paths


def check_slurm(partition: str | None) -> None:
    """Refuse (one line) when ``sbatch`` is not on PATH or the partition is unknown."""
    if shutil.which("sbatch") is None:
        raise ValueError("sbatch not found on PATH: run this on a Slurm login node, or use "
                         "--dry-run (scripts only) or `pear launch local`")
    if partition:
        res = subprocess.run(["scontrol", "show", "partition", partition],
                             capture_output=True, text=True)
        if res.returncode != 0:
            known = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True,
                                   text=True).stdout.split()
            raise ValueError(f"unknown partition {partition!r}: this cluster has "
                             f"{', '.join(known) or 'none'}")


_REQUESTS = {"mem": re.compile(r"^#SBATCH --mem=(\d+)([KMGT]?)[ \t]*$", re.M),
             "cpus": re.compile(r"^#SBATCH --cpus-per-task=(\d+)[ \t]*$", re.M),
             "gpus": re.compile(r"^#SBATCH --gres=gpu(?::[^:\s]+)?:(\d+)[ \t]*$", re.M)}
_UNIT_MB = {"K": 1 / 1024, "M": 1, "": 1, "G": 1024, "T": 1024 ** 2}


def _requested(text: str) -> dict[str, tuple[str, float]]:
    """What a script asks for: ``{"mem"|"cpus"|"gpus": (its #SBATCH text, amount)}`` (memory
    in MB); the last line of a kind wins, as in sbatch."""
    out = {}
    for kind, pattern in _REQUESTS.items():
        found = list(pattern.finditer(text))
        if found:
            m = found[-1]
            amount = int(m.group(1)) * (_UNIT_MB[m.group(2)] if kind == "mem" else 1)
            out[kind] = (m.group(0).split(None, 1)[1].strip(), amount)
    return out


def _largest_node(partition: str | None) -> dict[str, float] | None:
    """The most memory (MB), CPUs and GPUs one node of ``partition`` (default: every
    partition) has, from ``sinfo``; None when sinfo cannot say."""
    if shutil.which("sinfo") is None:
        return None
    cmd = ["sinfo", "-h", "-N", "-o", "%m|%c|%G"] + (["-p", partition] if partition else [])
    res = subprocess.run(cmd, capture_output=True, text=True)
    rows = [line.split("|") for line in res.stdout.split() if line.count("|") == 2]
    if res.returncode != 0 or not rows:
        return None
    def gpus(gres: str) -> int:
        m = re.search(r"gpu(?::[^:,(]+)?:(\d+)", gres)
        return int(m.group(1)) if m else 0
    return {"mem": max(float(m.rstrip("+")) for m, _, _ in rows),
            "cpus": max(int(c.rstrip("+")) for _, c, _ in rows),
            "gpus": max(gpus(g) for _, _, g in rows)}


def _refusal(text: str, message: str, partition: str | None) -> str:
    """Why the cluster refuses a script: the resource no node has, when ``sinfo`` shows one,
    and sbatch's own words."""
    said = (message.strip().splitlines() or ["no message"])[-1].removeprefix("sbatch: error: ")
    asked = _requested(text)
    node = _largest_node(partition)
    where = f"partition {partition}" if partition else "the cluster"
    units = {"mem": "MB of memory", "cpus": "CPUs", "gpus": "GPUs"}
    for kind, (line, amount) in asked.items():
        if node is not None and amount > node[kind]:
            return (f"{line} asks {amount:.0f} {units[kind]}, and the largest node of {where} "
                    f"has {node[kind]:.0f} (sbatch --test-only: {said})")
    return (f"it asks {', '.join(line for line, _ in asked.values()) or 'the defaults'} "
            f"on {where} (sbatch --test-only: {said})")


def check_scripts(texts: dict[str, str], partition: str | None = None) -> None:
    """Ask the cluster about every script (``sbatch --test-only``, the script on standard
    input: nothing is submitted, nothing need be written yet) and refuse, in one line naming
    each refused script and the resource, unless every one of them could run.  A launch is
    submitted whole or not at all: :func:`submit` follows this check."""
    refused = []
    for name, text in texts.items():
        res = subprocess.run(["sbatch", "--test-only"], input=text, capture_output=True,
                             text=True)
        if res.returncode != 0:
            refused.append(f"{name}: {_refusal(text, res.stderr or res.stdout, partition)}")
    if refused:
        raise ValueError("the cluster cannot run " + "; ".join(refused)
                         + "; nothing was submitted")


def _sbatch(args: list[str]) -> str:
    res = subprocess.run(["sbatch", "--parsable", *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise ValueError(f"sbatch {' '.join(args)} failed: "
                         f"{(res.stderr or res.stdout).strip().splitlines()[-1:]}")
    return res.stdout.strip().split(";")[0]


def _record(launch: Launch, entry: dict) -> None:
    entry = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **entry}
    with open(launch.dir / JOBS_FILE, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def submitted(launch: Launch) -> list[dict]:
    """Every submission of the launch (``DIR/launch/jobs.jsonl``)."""
    path = launch.dir / JOBS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def queue_states(launch: Launch) -> dict[tuple[str, int], str]:
    """``(model slug, shard) -> Slurm state`` of the launch's tasks ``squeue`` still knows
    (pending, running, requeued ...); finished tasks leave the queue."""
    jobs = {str(e["job_id"]): e["model"] for e in submitted(launch) if e["model"] != "merge"}
    if not jobs or shutil.which("squeue") is None:
        return {}
    res = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(jobs)],
                         capture_output=True, text=True)
    lines = res.stdout.splitlines()
    if res.returncode != 0:  # a job id squeue has forgotten fails the whole query: one by one
        lines = [line for job in jobs for line in subprocess.run(
            ["squeue", "-h", "-r", "-o", "%i|%T", "-j", job], capture_output=True,
            text=True).stdout.splitlines()]
    out: dict[tuple[str, int], str] = {}
    for line in lines:
        task, _, state = line.partition("|")
        job, _, idx = task.partition("_")
        if job in jobs and idx.isdigit():
            out[(jobs[job], int(idx) + 1)] = state
    return out


def merge_state(launch: Launch) -> str | None:
    """The Slurm state of the latest merge job, when ``squeue`` knows it."""
    merges = [e for e in submitted(launch) if e["model"] == "merge"]
    if not merges or shutil.which("squeue") is None:
        return None
    res = subprocess.run(["squeue", "-h", "-o", "%T", "-j", str(merges[-1]["job_id"])],
                         capture_output=True, text=True)
    return res.stdout.strip() or None


def submit(launch: Launch, *, throttle: int | None = None) -> list[tuple[str, str, list[int]]]:
    """Submit the shards that are neither complete nor still queued, and a merge job after
    them; returns ``(model slug, job id, shards)`` per submission (empty: nothing to do)."""
    queued = queue_states(launch)
    out = []
    for array in launch.arrays:
        todo = [i for i in range(1, array.shards + 1)
                if (array.slug, i) not in queued and not shard_done(launch, array, i)[1]]
        if not todo:
            continue
        spec = ",".join(str(i - 1) for i in todo) + (f"%{throttle}" if throttle else "")
        job = _sbatch([f"--array={spec}", str(launch.dir / f"{array.slug}.sbatch")])
        _record(launch, {"model": array.slug, "job_id": job, "shards": todo})
        out.append((array.slug, job, todo))
    waiting = sorted({e["job_id"] for e in submitted(launch) if e["model"] != "merge"
                      and any((e["model"], i) in queued for i in e["shards"])}
                     | {j for _, j, _ in out})
    if out:
        job = _sbatch([f"--dependency=afterany:{':'.join(waiting)}",
                       str(launch.dir / "merge.sbatch")])
        _record(launch, {"model": "merge", "job_id": job, "shards": []})
        out.append(("merge", job, []))
    return out
