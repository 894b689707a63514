"""`pear launch slurm` on a real Slurm: the single-node cluster of scripts/slurm-cluster.sh
(`make test-slurm` starts it, runs these, stops it).  Simulated grids, slowed down per
request (PEAR_SIM_LATENCY_S) so that tasks can be requeued, killed and watched mid-shard.
Without a cluster they skip, unless PEAR_REQUIRE_SLURM=1 (CI), where they fail."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pear import cli
from pear.runs.launch import read_launch
from pear.runs.launch.slurm import submitted
from pear.runs.launch.spec import shard_dir
from pear.store.records import TIMING_FIELDS, iter_records, read_records

pytestmark = pytest.mark.slurm

GRID = ["--preset", "smoke", "--backend", "simulated", "--n-questions", "4"]
CONF = Path(os.environ.get("PEAR_SLURM_DIR", "/tmp/pear-slurm")) / "slurm.conf"


@pytest.fixture(scope="module", autouse=True)
def slurm():
    """A reachable Slurm controller, or skip (fail under PEAR_REQUIRE_SLURM=1)."""
    if "SLURM_CONF" not in os.environ and CONF.is_file():
        os.environ["SLURM_CONF"] = str(CONF)
    ok = shutil.which("sinfo") is not None and subprocess.run(
        ["sinfo", "-h"], capture_output=True, timeout=30).returncode == 0
    if not ok:
        why = "no Slurm cluster (scripts/slurm-cluster.sh start; make test-slurm)"
        if os.environ.get("PEAR_REQUIRE_SLURM"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture
def slow(monkeypatch):
    monkeypatch.setenv("PEAR_SIM_LATENCY_S", "0.02")  # sbatch exports it to the tasks


def _ids(out: Path) -> list[str]:
    spec = read_launch(out)
    return [str(e["job_id"]) for e in submitted(spec)]


def _queue(out: Path) -> list[tuple[str, str]]:
    """(task, state) of the launch's jobs that squeue still lists."""
    ids = _ids(out)
    if not ids:
        return []
    res = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(ids)],
                         capture_output=True, text=True)
    return [tuple(line.split("|")) for line in res.stdout.split()]


_PENDING_SINCE: dict[str, float] = {}


def _release(out: Path, grace: float = 3.0) -> None:
    """Requeued tasks wait (about 2 minutes) before they may start again: start them now, once
    they have been pending ``grace`` seconds.  A task that requeued itself is pending before
    its batch script has ended; started at once, Slurm can take that script's end for the new
    run's (seen: "Allocate JobId=189_2", then "_job_complete: JobId=189_2 WEXITSTATUS 1" the
    same millisecond, and the shard never ran again)."""
    now = time.time()
    for task, state in _queue(out):
        if state != "PENDING":
            _PENDING_SINCE.pop(task, None)
            continue
        if now - _PENDING_SINCE.setdefault(task, now) >= grace:
            subprocess.run(["scontrol", "update", f"jobid={task}", "StartTime=now"],
                           capture_output=True)


def _wait(predicate, out: Path, timeout: float = 180.0, what: str = "") -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        _release(out)
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; queue: {_queue(out)}")


def _drain(out: Path, timeout: float = 240.0) -> None:
    """Until no task or merge job of the launch is queued any more."""
    _wait(lambda: not _queue(out), out, timeout, "the launch to end")


def _lines(d: Path) -> list[str]:
    return [r["debate_id"] for p in sorted(d.rglob("debates.jsonl")) for r in iter_records(p)]


def _records(d: Path) -> dict[str, dict]:
    return {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_records(d)}


def _launch(out: Path, *extra: str) -> int:
    return cli.main(["launch", "slurm", *GRID, "--out", str(out), *extra])


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The same grid in one `pear run`: what every launch must merge into."""
    one = tmp_path_factory.mktemp("one") / "run"
    assert cli.main(["run", *GRID, "--out", str(one), "--quiet"]) == 0
    return _records(one)


def _pid_of(shard: Path) -> int | None:
    """The process of the `pear run` writing into ``shard``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"run" in argv and str(shard).encode() in argv:
            return int(proc.name)
    return None


def test_three_shards_merge_into_the_one_process_run(tmp_path, capsys, one_process):
    out = tmp_path / "L"
    assert _launch(out, "--shards", "3") == 0
    printed = capsys.readouterr().out
    assert "submitted default" in printed and "submitted merge" in printed
    _drain(out)
    merged = _records(out / "default")
    assert merged == one_process  # identical apart from timing fields
    log = (out / "launch" / "logs" / "merge.log").read_text()
    assert f"{len(merged)} of {len(merged)} debates merged" in log
    assert "not complete" not in log
    assert cli.main(["launch", "status", str(out)]) == 0
    assert f"total: {len(merged)} / {len(merged)}" in capsys.readouterr().out


def test_requeued_and_killed_tasks_lose_and_repeat_nothing(tmp_path, slow, one_process):
    out = tmp_path / "L"
    assert _launch(out, "--shards", "3") == 0
    spec = read_launch(out)
    array = spec.arrays[0]
    job = next(str(e["job_id"]) for e in submitted(spec) if e["model"] == "default")
    one, two = shard_dir(spec, array, 1), shard_dir(spec, array, 2)
    # shard 1: requeued by the scheduler while running (as a preemption does)
    _wait(lambda: len(_lines(one)) > 0, out, 60, "shard 1's first records")
    assert len(_lines(one)) < array.expected[0]
    subprocess.run(["scontrol", "requeue", f"{job}_0"], check=True)
    # shard 2: its pear run killed with SIGKILL mid-shard
    _wait(lambda: len(_lines(two)) > 0 and _pid_of(two) is not None, out, 60,
          "shard 2 running")
    os.kill(_pid_of(two), signal.SIGKILL)
    assert len(_lines(two)) < array.expected[1]
    # shard 3: the warning before the time limit (--signal=B:USR1@...) sent now
    three = shard_dir(spec, array, 3)
    _wait(lambda: len(_lines(three)) > 0, out, 60, "shard 3's first records")
    subprocess.run(["scancel", "--batch", "--signal=USR1", f"{job}_2"], check=True)
    _drain(out)
    for i, d in ((1, one), (2, two), (3, three)):
        ids = _lines(d)
        assert len(ids) == len(set(ids)) == array.expected[i - 1], (i, len(ids))
    log = (out / "launch" / "logs" / "default-2.log").read_text()
    assert "time limit near: stopping shard 3" in log and "restart 1" in log
    for d in (one, two, three):  # SLURM_RESTART_COUNT recorded in the shard's manifest
        attempts = __import__("json").loads((d / "manifest.json").read_text())["attempts"]
        assert [a["restart_count"] for a in attempts][-1] >= 1
    assert _records(out / "default") == one_process


def test_throttle_cancelled_shard_status_and_rerun(tmp_path, slow, capsys, one_process):
    out = tmp_path / "L"
    assert _launch(out, "--shards", "3", "--throttle", "1") == 0
    spec = read_launch(out)
    array = spec.arrays[0]
    assert "#SBATCH --array=0-2%1" in (out / "launch" / "default.sbatch").read_text()
    job = next(str(e["job_id"]) for e in submitted(spec) if e["model"] == "default")
    capsys.readouterr()
    # status in progress: the running shard from its records, the others pending
    _wait(lambda: 0 < len(_lines(shard_dir(spec, array, 1))) < array.expected[0], out, 60,
          "shard 1 in progress")
    assert cli.main(["launch", "status", str(out)]) == 0
    text = capsys.readouterr().out
    assert "RUNNING" in text and "PENDING" in text
    total = next(line for line in text.splitlines() if line.startswith("total:"))
    done, expected = (int(x) for x in total.split()[1:4:2])
    assert 0 < done < expected == sum(array.expected)
    subprocess.run(["scancel", f"{job}_2"], check=True)  # shard 3 cancelled before it ran
    running_max = 0
    deadline = time.time() + 240
    while _queue(out) and time.time() < deadline:
        states = [s for t, s in _queue(out) if t.startswith(job + "_")]
        running_max = max(running_max, states.count("RUNNING"))
        time.sleep(0.3)
    assert running_max == 1  # --throttle 1: one task at a time
    log = (out / "launch" / "logs" / "merge.log").read_text()
    assert "shards not complete: 3/3" in log
    assert f"sbatch --array=2 {spec.dir / 'default.sbatch'}" in log
    # the same launch again submits only shard 3, and the merge is then complete
    assert _launch(out, "--shards", "3", "--throttle", "1") == 0
    assert "submitted default: job" in (printed := capsys.readouterr().out)
    assert "(shards 3)" in printed
    _drain(out)
    assert _records(out / "default") == one_process


def test_unknown_partition_is_refused_before_writing(tmp_path, capsys):
    out = tmp_path / "L"
    assert _launch(out, "--shards", "2", "--partition", "nosuch") == 2
    err = capsys.readouterr().err
    assert "unknown partition 'nosuch'" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_launch_is_checked_whole_before_anything_is_submitted(tmp_path, capsys):
    # a script no node can run (here: memory) refuses the whole launch, named with the
    # resource; nothing is submitted and nothing written
    out = tmp_path / "L"
    assert _launch(out, "--shards", "2", "--sbatch-arg=--mem=100000000M") == 2
    err = capsys.readouterr().err
    assert "default.sbatch: --mem=100000000M asks 100000000 MB of memory, and the largest " \
           "node of the cluster has" in err and len(err.strip().splitlines()) == 1, err
    assert "merge.sbatch" not in err and not out.exists()
    # the launch on a node of 8,000 MB (make test-slurm): a 36-debate grid whose
    # merge job is sized from the grid runs to the end
    small = tmp_path / "S"
    grid = ["--preset", "smoke", "--backend", "simulated", "--methods", "cot,pear,clique",
            "--n-questions", "3", "--no-full"]
    assert cli.main(["launch", "slurm", *grid, "--shards", "3", "--out", str(small)]) == 0
    _drain(small)
    log = (small / "launch" / "logs" / "merge.log").read_text()
    assert "36 of 36 debates merged" in log and "not complete" not in log
