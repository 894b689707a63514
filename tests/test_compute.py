"""Hardware, runtime and compute in every manifest: a run records its machine, package
versions, lock and one attempt per start (wall time, GPUs, GPU-hours, calls, tokens,
debates); a resume adds an attempt and the sums still add up; GPUs come from the recorded
nvidia-smi output (tests/nvidia_smi/); ``pear merge`` sums its shards; ``pear show``
prints it all."""
from __future__ import annotations

import platform
import re

import numpy as np
import pytest

from pear import cli
from pear.sim.backend import SimulatedBackend
from pear.runs import compute
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
from pear.store.manifest import read as read_manifest
from pear.runs.merge import merge
from pear.store import environment
from test_environment import _fake_smi


def _grid(**over):
    base = dict(datasets=("gsm8k",), methods=("cot", "ring", "pear"), seeds=(0,),
                n_questions=4, full_datasets=(), rounds=2, chunk_questions=1)
    return preset("smoke", **{**base, **over})


def _backend(exp):
    return SimulatedBackend(answer_key(exp), seed=0)


@pytest.fixture
def no_gpu(monkeypatch, tmp_path):
    for var in ("SLURM_JOB_ID", "SLURM_GPUS_ON_NODE", "PEAR_LAUNCHER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # this process holds no GPU
    return monkeypatch


def test_a_run_records_its_machine_runtime_and_compute(tmp_path, no_gpu):
    exp = _grid()
    s = run(exp, _backend(exp), tmp_path / "r", progress=False)
    m = read_manifest(tmp_path / "r")
    (hw,) = m["hardware"]
    assert hw["node"] == platform.node() and hw["gpus"] == []
    assert hw["cpu"]["logical"] >= 1 and hw["memory_gb"] > 0
    assert m["versions"]["numpy"] == np.__version__ and "statsmodels" in m["versions"]
    assert m["lock"] == environment.lock()
    (a,) = m["attempts"]
    assert a["launcher"] == "direct" and a["gpus"] == 0 and a["gpu_hours"] == 0.0
    assert a["debates"] == s.written == s.total == 12
    assert (a["calls"], a["tokens"], a["cache_hits"]) == (s.requests, s.tokens, s.cache_hits)
    assert a["wall_s"] > 0 and a["ended_at"] is not None
    assert m["compute"] == compute.total([a])
    assert m["backend_settings"][0]["reproducibility"] == {"simulated": "deterministic",
                                                           "seed": 0}


def test_a_resume_adds_an_attempt_and_the_sums_add_up(tmp_path, no_gpu):
    exp, out = _grid(), tmp_path / "r"
    first = run(exp, _backend(exp), out, progress=False, stop=lambda: True)  # one chunk
    assert first.stopped and 0 < first.written < first.total
    second = run(exp, _backend(exp), out, progress=False)
    m = read_manifest(out)
    assert [a["debates"] for a in m["attempts"]] == [first.written, second.written]
    assert m["compute"]["attempts"] == 2 and m["compute"]["debates"] == first.total
    assert m["compute"]["calls"] == first.requests + second.requests
    assert m["compute"]["wall_s"] == pytest.approx(sum(a["wall_s"] for a in m["attempts"]))
    assert len(m["hardware"]) == 1  # the same machine, once
    third = run(exp, _backend(exp), out, progress=False)  # nothing left: no call, no debate
    again = read_manifest(out)
    assert third.written == 0 and (again["attempts"][2]["calls"], again["attempts"][2]["debates"]) \
        == (0, 0)
    assert {k: v for k, v in again["compute"].items() if k not in ("attempts", "wall_s")} == \
        {k: v for k, v in m["compute"].items() if k not in ("attempts", "wall_s")}
    assert again["compute"]["attempts"] == 3


def test_gpu_hours_from_the_gpus_the_process_holds(tmp_path, no_gpu):
    _fake_smi(tmp_path / "bin")
    no_gpu.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    no_gpu.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    no_gpu.setenv("PEAR_LAUNCHER", "local")
    exp = _grid()
    run(exp, _backend(exp), tmp_path / "r", progress=False)
    m = read_manifest(tmp_path / "r")
    assert [g["name"] for g in m["hardware"][0]["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    assert m["hardware"][0]["gpus"][0]["cuda"] == "12.4"
    (a,) = m["attempts"]
    assert a["launcher"] == "local" and a["gpus"] == 2
    assert a["gpu_hours"] == round(a["wall_s"] * 2 / 3600, 6) > 0


def test_merge_sums_the_shards_compute(tmp_path, no_gpu):
    parts = []
    for i in (1, 2):
        if i == 2:  # the second shard on a GPU machine: two machines in the merged run
            _fake_smi(tmp_path / "bin")
            no_gpu.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
            no_gpu.setenv("CUDA_VISIBLE_DEVICES", "1")
        exp = _grid(shard=(i, 2))
        run(exp, _backend(exp), tmp_path / f"s{i}", progress=False)
        parts.append(read_manifest(tmp_path / f"s{i}"))
    merge(tmp_path / "m", [tmp_path / "s1", tmp_path / "s2"])
    m = read_manifest(tmp_path / "m")
    for key in ("attempts", "wall_s", "gpu_hours", "calls", "tokens", "debates"):
        assert m["compute"][key] == pytest.approx(sum(p["compute"][key] for p in parts)), key
    assert m["compute"]["debates"] == 12 and m["compute"]["gpu_hours"] > 0
    assert [a["shard"] for a in m["attempts"]] == ["1/2", "2/2"]
    assert [f["compute"] for f in m["merged_from"]] == [p["compute"] for p in parts]
    assert [len(h["gpus"]) for h in m["hardware"]] == [0, 1]


def test_pear_show_prints_hardware_runtime_and_compute(tmp_path, no_gpu, capsys):
    for i in (1, 2):
        exp = _grid(shard=(i, 2))
        run(exp, _backend(exp), tmp_path / f"s{i}", progress=False)
    merge(tmp_path / "m", [tmp_path / "s1", tmp_path / "s2"])
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    m = read_manifest(tmp_path / "m")
    c = m["compute"]
    assert f"hardware:\n  {platform.node()}: " in out and "no GPU" in out
    assert f"numpy {np.__version__}" in out
    assert "backend simulated: seed=0, simulated=deterministic" in out
    assert out.count("  shard 1/2: wall ") == 1 and out.count("  shard 2/2: wall ") == 1
    assert re.search(rf"\n  total: wall \d+\.\d s, 0 GPU-hours, {c['calls']} model "
                     rf"calls \({c['cache_hits']} from the cache\), {c['tokens']} tokens, 12 "
                     r"debates written\n", out)


def test_an_attempt_refuses_unknown_counts():
    with pytest.raises(ValueError, match=r"unknown attempt counts \['requests'\]"):
        compute.Attempt().finish(requests=3)
