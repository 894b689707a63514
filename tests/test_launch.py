"""`pear launch` without a scheduler: the sbatch scripts (held against a golden script),
the launch plan (resources from the model catalog, shards, time), bad input (one line,
exit code 2, nothing written), a launch against a fake Slurm (`sbatch`, `sinfo`, `scontrol`
on PATH: every script checked with `sbatch --test-only` before any is submitted; a script
the cluster cannot run refuses the whole launch), `pear launch local` (shards as processes,
merged, equal to one `pear run`), and a `pear run` that a SIGTERM stops after its debates
in flight."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pear import cli
from pear.catalog.models import resources
from pear.runs.launch import plan_launch, read_launch, status
from pear.runs.launch.spec import merge_mem_mb
from pear.store.records import TIMING_FIELDS, iter_records, read_records

GOLDEN = Path(__file__).parent / "golden" / "launch"
GRID = ["--preset", "smoke", "--backend", "simulated", "--n-questions", "2"]


def _records(run_dir) -> dict[str, dict]:
    return {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_records(run_dir)}


def _normalise(text: str, out: Path) -> str:
    return (text.replace(sys.executable, "PYTHON").replace(str(out), "OUT")
            .replace(str(Path.cwd().resolve()), "WORKDIR"))


def test_dry_run_writes_the_golden_scripts(tmp_path, capsys):
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--shards", "3", "--out", str(out),
                     "--partition", "gpu", "--account", "lab", "--throttle", "2",
                     "--sbatch-arg=--qos=normal", "--dry-run"]) == 0
    for name in ("default.sbatch", "merge.sbatch"):
        got = _normalise((out / "launch" / name).read_text(), out)
        if os.environ.get("PEAR_UPDATE_GOLDEN"):
            (GOLDEN / name).write_text(got)
        assert got == (GOLDEN / name).read_text(), name
    assert not (out / "launch" / "jobs.jsonl").exists()  # nothing submitted
    assert "3 shards" in capsys.readouterr().out


@pytest.mark.slow  # four `pear plan` dry runs of the paper grid (~20 s)
def test_paper_dry_run_gives_each_model_its_gpus_time_and_shards(tmp_path):
    out = tmp_path / "P"
    assert cli.main(["launch", "slurm", "--preset", "paper", "--backend", "vllm", "--model",
                     "paper", "--target-hours", "12", "--out", str(out), "--dry-run"]) == 0
    spec = read_launch(out)
    by = {a.slug: a for a in spec.arrays}
    assert list(by) == ["gemma-3-12b", "llama-3.1-8b", "qwen2.5-14b", "qwen3-30b-a3b"]
    assert by["qwen3-30b-a3b"].gpus == 2 and by["llama-3.1-8b"].gpus == 1
    for a in spec.arrays:
        assert a.shards > 1 and sum(a.expected) > 10_000
        script = (out / "launch" / f"{a.slug}.sbatch").read_text()
        assert f"#SBATCH --array=0-{a.shards - 1}" in script
        assert f"#SBATCH --gres=gpu:{a.gpus}" in script and "--requeue" in script
        assert f"--model {a.model}" in script
        assert ("--tensor-parallel-size 2" in script) == (a.gpus == 2)
        days, rest = a.time_limit.split("-")
        assert int(days) * 24 + int(rest.split(":")[0]) <= 12  # the target holds


FAKE_SLURM = r'''#!PYTHON
"""A fake Slurm client: one node of FAKE_SLURM_NODE_MB MB, 2 CPUs, 4 GPUs, partition debug;
every call is appended to FAKE_SLURM_LOG (sbatch: the script's name, --test-only or not)."""
import json, os, re, sys
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
node_mb = int(os.environ["FAKE_SLURM_NODE_MB"])
if tool == "sinfo":
    print(f"{node_mb}|2|gpu:4")
    sys.exit(0)
if tool == "scontrol":
    sys.exit(0 if args[-1] == "debug" else 1)
if tool == "squeue":
    sys.exit(0)
files = [a for a in args if not a.startswith("-")]
text = open(files[0]).read() if files else sys.stdin.read()
name = text.splitlines()[1] if files == [] else os.path.basename(files[0])
with open(os.environ["FAKE_SLURM_LOG"], "a") as log:
    log.write(json.dumps({"test_only": "--test-only" in args, "script": text, "args": args})
              + "\n")
m = re.search(r"^#SBATCH --mem=(\d+)([MG])$", text, re.M)
mb = int(m.group(1)) * (1024 if m.group(2) == "G" else 1)
if mb > node_mb:
    print("sbatch: error: Memory specification can not be satisfied", file=sys.stderr)
    print("sbatch: error: Batch job submission failed: Requested node configuration is not "
          "available", file=sys.stderr)
    sys.exit(1)
if "--test-only" in args:
    print("sbatch: Job 1 to start at 2026-11-25T18:00:00 using 1 processors on nodes n1 in "
          "partition debug", file=sys.stderr)
else:
    n = sum(1 for _ in open(os.environ["FAKE_SLURM_LOG"]))
    print(f"{100 + n};pear")
'''


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """A fake sbatch/sinfo/scontrol/squeue first on PATH; returns (log path, node MB setter)."""
    bin_dir = tmp_path / "fake-slurm-bin"
    bin_dir.mkdir()
    for tool in ("sbatch", "sinfo", "scontrol", "squeue"):
        path = bin_dir / tool
        path.write_text(FAKE_SLURM.replace("PYTHON", sys.executable, 1))
        path.chmod(0o755)
    log = tmp_path / "fake-slurm.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_LOG", str(log))
    monkeypatch.setenv("FAKE_SLURM_NODE_MB", "8000")
    return log


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_every_script_is_checked_before_any_is_submitted(tmp_path, fake_slurm, capsys):
    # the cluster: one node of 8,000 MB; a 36-debate simulated grid (3 shards)
    out = tmp_path / "L"
    grid = ["--preset", "smoke", "--backend", "simulated", "--methods", "cot,pear,clique",
            "--n-questions", "3", "--no-full"]
    assert cli.main(["launch", "slurm", *grid, "--shards", "3", "--partition", "debug",
                     "--out", str(out)]) == 0, capsys.readouterr().err
    spec = read_launch(out)
    assert sum(spec.arrays[0].expected) == 36
    calls = _calls(fake_slurm)
    checks, submits = ([c for c in calls if c["test_only"] is t] for t in (True, False))
    assert [c["test_only"] for c in calls] == [True, True, False, False]  # checks first
    assert [c["script"] for c in checks] == [(out / "launch" / n).read_text()
                                             for n in ("default.sbatch", "merge.sbatch")]
    assert submits[0]["args"][-1].endswith("default.sbatch")
    assert submits[1]["args"][-1].endswith("merge.sbatch")
    merge_mem = re.search(r"--mem=(\d+)M", checks[1]["script"])
    assert merge_mem and int(merge_mem.group(1)) == merge_mem_mb(spec) <= 8000


def test_a_script_the_cluster_cannot_run_refuses_the_whole_launch(tmp_path, fake_slurm,
                                                                   monkeypatch, capsys):
    monkeypatch.setenv("FAKE_SLURM_NODE_MB", "3000")  # the arrays ask 4G, the merge fits
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--shards", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "default.sbatch: --mem=4G asks 4096 MB of memory, and the largest node of the " \
           "cluster has 3000" in err
    assert "Requested node configuration is not available" in err
    assert "merge.sbatch" not in err and "nothing was submitted" in err
    assert [c["test_only"] for c in _calls(fake_slurm)] == [True, True]  # no submission
    assert not out.exists()  # and nothing written


def test_the_merge_job_is_sized_from_the_grid(tmp_path):
    from pear.runs.grid import preset
    small = plan_launch(preset("smoke", n_questions=1, full_datasets=()), GRID, tmp_path / "a",
                        backend="simulated", shards=3)
    big = plan_launch(preset("paper"), GRID, tmp_path / "b", backend="simulated", shards=30)
    assert small.record_kb == 21 and big.record_kb == 195  # the grids' protocols
    assert merge_mem_mb(small) == 768  # not the 8G that no 8,000 MB node could run
    debates = sum(big.arrays[0].expected)
    assert debates > 70_000
    assert merge_mem_mb(big) >= 512 + debates * 195 / 1024 > 15_000  # grows with the records
    assert merge_mem_mb(big, then_paper=True) == merge_mem_mb(big) + 2048


def test_then_paper_builds_the_notebooks_after_a_complete_merge(tmp_path):
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--shards", "2", "--then-paper", "--out",
                     str(out), "--dry-run"]) == 0
    last = (out / "launch" / "merge.sbatch").read_text().strip().splitlines()[-2:]
    assert last[0].endswith(f"-m pear launch merge {out} && \\")
    assert last[1].split() == [sys.executable, "-m", "pear", "paper", "--backend", "replay",
                               "--runs", str(out / "default"), "--preset", "smoke",
                               "--n-questions", "2"]


def test_resources_come_from_the_catalog():
    assert resources("qwen3-30b-a3b", "vllm").gpus == 2  # tensor parallel, from the catalog
    assert resources("qwen3-30b-a3b", "vllm", "a100-40gb").gpus == 2
    assert resources("gemma-3-12b", "vllm", "a100-40gb").gpus == 1
    assert resources("my/unknown-model", "vllm").gpus == 1
    assert resources("gpt-5.4-nano", "openai").gpus == 0


def _main(argv) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit_:  # argparse's own errors
        return int(exit_.code)


@pytest.mark.parametrize("argv, message", [
    (["--shards", "0"], "--shards: must be >= 1: '0'"),
    (["--shards", "2", "--backend", "vllm", "--model", "qwen3-30b-a3b",
      "--gpus-per-node", "1"], "needs 2 GPUs per task"),
    (["--shards", "2", "--gpu-kind", "tpu"], "unknown --gpu-kind 'tpu'"),
    (["--shards", "2", "--shard", "1/2"], "--shard is chosen by the launcher"),
    (["--target-hours", "3"], "--target-hours needs a GPU estimate"),
    (["--shards", "2", "--backend", "openai", "--model", "paper", "--then-paper"],
     "--then-paper builds the notebooks from one run directory: launch one model, not 4"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, argv, message):
    out = tmp_path / "L"
    args = GRID + argv if "--backend" not in argv else ["--preset", "smoke"] + argv
    assert _main(["launch", "slurm", *args, "--out", str(out), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_no_sbatch_on_path_is_refused_before_writing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--shards", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "sbatch not found on PATH" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_different_grid_into_the_same_directory_is_refused(tmp_path, capsys):
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--shards", "2", "--out", str(out),
                     "--dry-run"]) == 0
    before = (out / "launch" / "grid.json").read_text()
    assert cli.main(["launch", "slurm", *GRID[:-1], "3", "--shards", "2", "--out", str(out),
                     "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "different launch (grid arguments: --n-questions 2 there, 3 now)" in err
    assert (out / "launch" / "grid.json").read_text() == before
    assert cli.main(["launch", "slurm", *GRID, "--shards", "3", "--out", str(out),
                     "--dry-run"]) == 2
    assert "shards" in capsys.readouterr().err


def test_local_launch_merges_into_the_one_process_run(tmp_path, capsys):
    out = tmp_path / "L"
    assert cli.main(["launch", "local", *GRID, "--shards", "3", "--parallel", "2",
                     "--out", str(out)]) == 0
    assert "debates merged" in capsys.readouterr().out
    one = tmp_path / "one"
    assert cli.main(["run", *GRID, "--out", str(one), "--quiet"]) == 0
    merged = _records(out / "default")
    assert merged == _records(one) and len(merged) > 50
    st = status(read_launch(out), queue=False)
    assert st.done == st.expected == len(merged) and all(s.complete for s in st.shards)
    # a rerun finds every shard complete: no process started, the same merge
    logs = sorted((out / "launch" / "logs").glob("*.log"))
    sizes = [p.stat().st_size for p in logs]
    assert cli.main(["launch", "local", *GRID, "--shards", "3", "--out", str(out)]) == 0
    assert [p.stat().st_size for p in logs] == sizes
    assert _records(out / "default") == merged
    assert cli.main(["launch", "status", str(out)]) == 0
    assert f"total: {len(merged)} / {len(merged)} debates" in capsys.readouterr().out


def test_merge_names_missing_shards_with_the_resubmit_command(tmp_path, capsys):
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--shards", "3", "--out", str(out),
                     "--dry-run"]) == 0
    spec = read_launch(out)
    assert cli.main(["run", *GRID, "--shard", "1/3", "--quiet",
                     "--out", str(out / "shards" / "default" / "1-of-3")]) == 0
    capsys.readouterr()
    assert cli.main(["launch", "merge", str(out)]) == 1
    text = capsys.readouterr().out
    assert "shards not complete: 2/3, 3/3" in text
    assert f"sbatch --array=1,2 {spec.dir / 'default.sbatch'}" in text
    assert len(_records(out / "default")) == spec.arrays[0].expected[0]


def test_sigterm_stops_pear_run_after_the_debates_in_flight(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pear", "run", *GRID[:-1], "6", "--out", str(out), "--quiet"]
    env = {**os.environ, "PEAR_SIM_LATENCY_S": "0.01"}
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.rglob("debates.jsonl")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "stopped by a signal" in err
    first = [r["debate_id"] for p in out.rglob("debates.jsonl") for r in iter_records(p)]
    assert first and len(first) == len(set(first))
    done = subprocess.run(cmd, capture_output=True, text=True)  # resume: the rest only
    assert done.returncode == 0, done.stderr
    ids = [r["debate_id"] for p in out.rglob("debates.jsonl") for r in iter_records(p)]
    assert len(ids) == len(set(ids)) > len(first)
    assert f"{len(first)} already done" in done.stdout


def test_every_shard_runs_the_launch_population(tmp_path, capsys):
    pop = Path(__file__).resolve().parents[1] / "data" / "populations" / "study.json"
    out = tmp_path / "L"
    assert cli.main(["launch", "slurm", *GRID, "--population", "study", "--shards", "2",
                     "--out", str(out), "--dry-run"]) == 0
    assert "--population study" in (out / "launch" / "default.sbatch").read_text()
    local = tmp_path / "F"  # a population file is passed on as an absolute path
    assert cli.main(["launch", "local", *GRID, "--population", str(pop), "--shards", "2",
                     "--out", str(local)]) == 0
    one = tmp_path / "one"
    assert cli.main(["run", *GRID, "--population", "study", "--out", str(one), "--quiet"]) == 0
    assert _records(local / "default") == _records(one)
    grounded = tmp_path / "g"
    assert cli.main(["run", *GRID, "--population", "grounded", "--out", str(grounded),
                     "--quiet"]) == 0
    assert _records(grounded) != _records(one)
    capsys.readouterr()
    assert _main(["launch", "slurm", *GRID, "--population", "nobody", "--shards", "2",
                  "--out", str(tmp_path / "bad"), "--dry-run"]) == 2
    assert "unknown population 'nobody'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
