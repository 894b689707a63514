"""The llama.cpp build runs on any x86-64 machine with AVX2, whatever machine built it.

`make setup` builds llama-cpp-python through scripts/llama-wheel.sh for a fixed baseline
(x86-64 + AVX, AVX2, FMA, F16C, BMI2).  A wheel built with -march=native on a CPU that reports
AMX carries ggml's AMX kernels (`tileloadd ... %tmm0`) and dies with SIGILL on a machine or VM
that does not run them; one built with AVX-512 dies on every AVX2-only CPU.  These tests read
the installed libraries' machine code with objdump and fail on any instruction above the
baseline, so a regression is caught on any machine, AMX or not.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "llama-wheel.sh"

# above the AVX2 baseline: AMX tiles and their instructions; AVX-512's zmm registers, its
# opmask registers and the upper 16 xmm/ymm registers only EVEX can encode; AVX-VNNI's dot
# products (Alder Lake and newer)
ABOVE_BASELINE = re.compile(
    r"%tmm\d|\b(?:ldtilecfg|sttilecfg|tileloadd|tileloaddt1|tilestored|tilezero|tilerelease"
    r"|tdpb[su][su]d|tdpbf16ps|tdpfp16ps)\b"
    r"|%zmm\d+|%k[1-7]\b|%[xy]mm(?:1[6-9]|2\d|3[01])\b"
    r"|\bvpdpbusds?\b|\bvpdpwssds?\b"
)


def _llama_libs() -> list[Path]:
    """The installed llama.cpp libraries, each once (the wheel ships copies, not links)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        pytest.skip("llama-cpp-python is not installed (make setup)")
    libs = sorted((Path(spec.origin).parent / "lib").glob("lib*.so*"))
    assert libs, f"no shared libraries under {Path(spec.origin).parent / 'lib'}"
    by_content = {hashlib.sha256(lib.read_bytes()).digest(): lib for lib in reversed(libs)}
    return sorted(by_content.values())


def offending_instructions(lib: Path, limit: int = 5) -> list[str]:
    """The first `limit` disassembled lines of `lib` that use an instruction above AVX2."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib)], check=True,
                          capture_output=True, text=True, errors="replace").stdout
    found = []
    for m in ABOVE_BASELINE.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        found.append(text[start:end].strip())
        if len(found) >= limit:
            break
    return found


def test_the_pattern_catches_what_crashed_and_passes_the_baseline():
    crashed = "  4a1f0:\ttileloadd (%rax,%rsi,1),%tmm0"  # the faulting instruction, from gdb
    for line in (crashed, "vfmadd231ps %zmm1,%zmm2,%zmm3", "kmovw %k1,%eax",
                 "vmovups %ymm17,(%rdi)", "{vex} vpdpbusd %ymm1,%ymm2,%ymm3"):
        assert ABOVE_BASELINE.search(line), line
    for line in ("vfmadd231ps %ymm1,%ymm2,%ymm3", "vpmaddubsw %ymm15,%ymm0,%ymm1",
                 "vcvtph2ps %xmm0,%ymm1", "shlx %rax,%rbx,%rcx", "mov %rsp,%rbp"):
        assert not ABOVE_BASELINE.search(line), line


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_installed_llama_cpp_has_no_instruction_above_avx2():
    bad = {lib.name: offending_instructions(lib) for lib in _llama_libs()}
    bad = {name: lines for name, lines in bad.items() if lines}
    assert not bad, (
        "llama.cpp was built above the portable baseline (x86-64 with AVX2); rebuild it with "
        f"scripts/llama-wheel.sh (make setup). First offending instructions: {bad}")


def test_installed_llama_cpp_reports_no_amx_or_avx512():
    _llama_libs()
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX2 = 1" in info, info
    for feature in ("AMX_INT8 = 1", "AVX512 = 1", "AVX512_VNNI = 1"):
        assert feature not in info, info


def _house(**env: str) -> str:
    out = subprocess.run(["bash", str(SCRIPT), "python3", str(ROOT / "requirements/cpu.txt")],
                         env={**os.environ, "LLAMA_WHEEL_DRY": "1", "CMAKE_ARGS": "", **env},
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_wheelhouse_is_named_by_version_and_flags():
    portable = _house()
    pin = re.search(r"^llama-cpp-python==(\S+)", (ROOT / "requirements/cpu.txt").read_text(),
                    re.M)
    assert pin is not None
    assert Path(portable).name.startswith(f"llama-cpp-python-{pin.group(1)}-portable-")
    assert Path(portable).parent == ROOT / "build" / "wheels"
    native = _house(LLAMA_CPU="native")
    cuda = _house(CMAKE_ARGS="-DGGML_CUDA=on")
    # a native wheel, or one with other flags, is never the portable one
    assert len({portable, native, cuda}) == 3
    assert _house() == portable


def test_an_unknown_cpu_choice_is_one_clear_error():
    out = subprocess.run(["bash", str(SCRIPT), "python3", str(ROOT / "requirements/cpu.txt")],
                         env={**os.environ, "LLAMA_WHEEL_DRY": "1", "LLAMA_CPU": "avx9"},
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "'avx9'" in out.stderr and out.stdout == ""
