"""The hardware probe (pear.store.environment): GPUs from nvidia-smi's recorded output
(tests/nvidia_smi/) through a stand-in ``nvidia-smi`` on PATH, none without it or when it
fails, CUDA_VISIBLE_DEVICES narrowing, the GPUs a process holds; package versions; the
lock's hash."""
from __future__ import annotations

import stat
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from pear.store import environment

SAMPLES = Path(__file__).parent / "nvidia_smi"


def _fake_smi(bin_dir: Path, *, fail: bool = False) -> Path:
    """An ``nvidia-smi`` that prints the recorded output: the query CSV for ``--query-gpu``,
    the banner without arguments (exit 9 and the driver message with ``fail``); it logs
    its arguments."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = bin_dir / "calls.log"
    script = bin_dir / "nvidia-smi"
    body = (f'echo "$*" >> "{log}"\n'
            + (f'/bin/cat "{SAMPLES / "failed.txt"}"; exit 9\n' if fail else
               f'case "$1" in --query-gpu=*) /bin/cat "{SAMPLES / "query.csv"}";; '
               f'*) /bin/cat "{SAMPLES / "banner.txt"}";; esac\n'))
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("CUDA_VISIBLE_DEVICES", "SLURM_GPUS_ON_NODE", "SLURM_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_two_recorded_gpus_with_name_memory_driver_and_cuda(tmp_path, clean_env):
    log = _fake_smi(tmp_path / "bin")
    clean_env.setenv("PATH", str(tmp_path / "bin"))
    hw = environment.hardware()
    assert [g["index"] for g in hw["gpus"]] == [0, 1]
    assert {(g["name"], g["memory_mib"], g["driver"], g["cuda"]) for g in hw["gpus"]} == {
        ("NVIDIA H100 80GB HBM3", 81559, "550.54.15", "12.4")}
    assert hw["gpus"][1]["uuid"] == "GPU-8e2d7f1a-3b4c-5d6e-7f80-91a2b3c4d5e6"
    assert "--query-gpu=index,uuid,name,memory.total,driver_version" in log.read_text()
    assert environment.allocated_gpus() == 2
    assert environment.describe(hw).endswith(
        "2 x NVIDIA H100 80GB HBM3 (81559 MiB, driver 550.54.15, CUDA 12.4)")


def test_cuda_visible_devices_narrows_the_gpus_by_index_or_uuid(tmp_path, clean_env):
    _fake_smi(tmp_path / "bin")
    clean_env.setenv("PATH", str(tmp_path / "bin"))
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [g["index"] for g in environment.gpus()] == [1]
    assert environment.allocated_gpus() == 1
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "GPU-4b5c3a9e")
    assert [g["index"] for g in environment.gpus()] == [0]
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU for this process
    assert environment.allocated_gpus() == 0


def test_slurm_gpus_count_when_cuda_visible_devices_is_unset(tmp_path, clean_env):
    clean_env.setenv("PATH", str(tmp_path))  # no nvidia-smi
    clean_env.setenv("SLURM_GPUS_ON_NODE", "4")
    assert environment.allocated_gpus() == 4


def test_no_gpu_without_nvidia_smi_or_when_it_fails(tmp_path, clean_env):
    clean_env.setenv("PATH", str(tmp_path))  # an empty folder: no nvidia-smi
    hw = environment.hardware()
    assert hw["gpus"] == [] and environment.allocated_gpus() == 0
    assert hw["cpu"]["logical"] >= 1 and hw["cpu"]["cores"] >= 1 and hw["memory_gb"] > 0
    assert environment.describe(hw).endswith("no GPU")
    log = _fake_smi(tmp_path / "bin", fail=True)
    clean_env.setenv("PATH", str(tmp_path / "bin"))
    assert environment.gpus() == [] and environment.allocated_gpus() == 0
    assert log.read_text()  # it was asked


def test_the_parser_skips_what_is_not_a_gpu_line():
    banner = (SAMPLES / "banner.txt").read_text()
    assert environment.parse_nvidia_smi((SAMPLES / "failed.txt").read_text(), banner) == []
    one = environment.parse_nvidia_smi("0, GPU-x, Tesla T4, [N/A], 535.1\n", "")
    assert one == [{"index": 0, "uuid": "GPU-x", "name": "Tesla T4", "memory_mib": None,
                    "driver": "535.1", "cuda": None}]


def test_versions_are_the_installed_ones():
    v = environment.versions(("numpy", "no-such-package-pear-test"))
    assert v["numpy"] == np.__version__ == metadata.version("numpy")
    assert v["no-such-package-pear-test"] is None and v["python"].count(".") == 2
    assert set(environment.PACKAGES) <= set(environment.versions())


def test_the_lock_hash_follows_the_lock_files(tmp_path):
    assert environment.lock(tmp_path) is None  # no lock: tolerated
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text("numpy==2.1.0 --hash=sha256:aa\n")
    first = environment.lock(tmp_path)
    assert list(first["files"]) == ["requirements/base.txt"] and len(first["sha256"]) == 64
    (tmp_path / "uv.lock").write_text("version = 1\n")
    both = environment.lock(tmp_path)
    assert list(both["files"]) == ["requirements/base.txt", "uv.lock"]
    assert both["sha256"] != first["sha256"]
    (tmp_path / "requirements" / "base.txt").write_text("numpy==2.1.1 --hash=sha256:bb\n")
    assert environment.lock(tmp_path)["sha256"] != both["sha256"]
