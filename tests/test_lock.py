"""The locks (requirements/<profile>.txt, scripts/lock.py): they agree with pyproject.toml, and
`make lock-check` names what differs when they don't (a changed pin, a dependency added or
dropped, a pin edited by hand, a missing hash), on a copy of the project."""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("pear_lock_script", ROOT / "scripts" / "lock.py")
lock = sys.modules["pear_lock_script"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lock)


@pytest.fixture
def project(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new))


def test_the_locks_agree_with_pyproject():
    assert lock.check(ROOT) == []


def test_every_profile_pins_every_package_with_hashes():
    for name, profile in lock.PROFILES.items():
        pins = lock.pins(lock.lock_path(ROOT, name).read_text())
        assert pins, name
        assert all(n > 0 for _, n in pins.values()), name
        for left_out in profile.no_emit:
            assert left_out not in pins, (name, left_out)
    cpu = lock.pins(lock.lock_path(ROOT, "cpu").read_text())
    assert cpu["llama-cpp-python"][0] == "0.3.36"
    # base and lab are resolved within cpu's pins: one version of each shared package
    for name in ("base", "lab"):
        other = lock.pins(lock.lock_path(ROOT, name).read_text())
        assert {p: v for p, (v, _) in other.items() if p in cpu} == \
            {p: v for p, (v, _) in cpu.items() if p in other}, name


def test_a_changed_pin_is_named_for_every_profile_that_has_it(project):
    _edit(project / "pyproject.toml", '"scipy>=1.11"', '"scipy>=99"')
    problems = lock.check(project)
    profiles_with_scipy = [n for n, p in lock.PROFILES.items() if "analysis" in p.extras]
    for name in profiles_with_scipy:
        assert (f"requirements/{name}.txt: pyproject.toml asks for scipy>=99; the lock was made "
                "from scipy>=1.11") in problems
        assert any(p.startswith(f"requirements/{name}.txt: pins scipy==") and "scipy>=99" in p
                   for p in problems), name
    assert not any("requirements/model.txt" in p or "requirements/lock.txt" in p
                   for p in problems)


def test_an_added_and_a_dropped_dependency_are_named(project):
    _edit(project / "pyproject.toml", '"tqdm>=4.66",', '"tqdm>=4.66", "rich>=13",')
    _edit(project / "pyproject.toml", '  "adjusttext>=1.3",\n', "")
    problems = lock.check(project)
    assert "requirements/cpu.txt: pyproject.toml asks for rich>=13; the lock was made without " \
           "it" in problems
    assert "requirements/cpu.txt: rich>=13 is not pinned" in problems
    assert "requirements/cpu.txt: the lock was made from adjusttext>=1.3, which pyproject.toml " \
           "no longer asks for" in problems


def test_a_hand_edited_lock_is_caught(project):
    cpu = project / "requirements" / "cpu.txt"
    version = lock.pins(cpu.read_text())["llama-cpp-python"][0]
    _edit(cpu, f"llama-cpp-python=={version} \\", "llama-cpp-python==0.3.35 \\")
    lines = cpu.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("msgspec=="))
    msgspec = lines[i].split(" ")[0]
    j = i + 1
    while lines[j].startswith("    --hash"):
        j += 1
    cpu.write_text("\n".join(lines[:i] + [msgspec] + lines[j:]) + "\n")
    problems = lock.check(project)
    assert "requirements/cpu.txt: pins llama-cpp-python==0.3.35, but pyproject.toml asks for " \
           "llama-cpp-python[server]==0.3.36" in problems
    assert f"requirements/cpu.txt: {msgspec} has no --hash" in problems


def test_make_lock_check_exits_1_and_names_the_difference(project):
    _edit(project / "pyproject.toml", '"math-verify>=0.9"', '"math-verify>=0.9,<0.9.1"')
    (project / "requirements" / "model.txt").unlink()
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "lock.py"), "check",
                          "--root", str(project)], capture_output=True, text=True)
    assert run.returncode == 1
    assert "requirements/model.txt: missing (run `make lock`)" in run.stderr
    assert "pyproject.toml asks for math-verify<0.9.1,>=0.9; the lock was made from " \
           "math-verify>=0.9" in run.stderr
    ok = subprocess.run([sys.executable, str(ROOT / "scripts" / "lock.py"), "check"],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "agrees with pyproject.toml" in ok.stdout


def _awk(*args: str, text: str) -> str:
    return subprocess.run(["awk", *args, "-f", str(ROOT / "scripts" / "llama-pin.awk")],
                          input=text, capture_output=True, text=True, check=True).stdout


def test_llama_pin_awk_splits_the_lock_into_the_llama_entry_and_the_rest():
    """scripts/llama-pin.awk: the entry (pin line and its hash lines) that llama-wheel.sh
    builds, and, with rest=1, the lines the Makefile installs beside it; together the lock."""
    text = ("a==1 \\\n    --hash=sha256:aa\nllama-cpp-python==0.3.36 \\\n    --hash=sha256:b1 \\\n"
            "    --hash=sha256:b2\n    # via pear\nz==2 \\\n    --hash=sha256:zz\n")
    entry = _awk(text=text)
    rest = _awk("-v", "rest=1", text=text)
    assert entry == "llama-cpp-python==0.3.36 \\\n    --hash=sha256:b1 \\\n    --hash=sha256:b2\n"
    assert rest == "a==1 \\\n    --hash=sha256:aa\n    # via pear\nz==2 \\\n    --hash=sha256:zz\n"
    real = (ROOT / "requirements" / "cpu.txt").read_text()
    assert _awk(text=real).startswith("llama-cpp-python==")
    assert sorted((_awk(text=real) + _awk("-v", "rest=1", text=real)).splitlines()) == \
        sorted(real.splitlines())
