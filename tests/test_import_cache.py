"""The import cache (pear.store.import_cache): an import is written whole or not at all, and two
processes asking for the same import at once leave one whole, valid run (the second waits for
the first and keeps what it wrote), so the build runs any notebooks that read one side by side."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pear.store import manifest
from pear.store.import_cache import imported_run, locked
from pear.store.importing import IMPORT_VERSION
from pear.store.validate import validate
from pear.tasks.benchmarks import load as load_questions
from record_factory import du_chat

GSM = load_questions("gsm8k")[:2]


@pytest.fixture
def du_file(tmp_path) -> Path:
    """Du et al.'s format: 3 agents x 2 rounds on two of our GSM8K questions."""
    answers = [["The answer is 18.", "18"], ["16", "18"], ["20", "The answer is 20."]]
    data = {q.question: [[du_chat(q.question, a) for a in answers], "#### 18"] for q in GSM}
    path = tmp_path / "gsm.json"
    path.write_text(json.dumps(data))
    return path


_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from pear.store import import_cache
    slow, go, file, out = float(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    real = import_cache.import_files
    def slowed(*a, **k):  # a slow import: the two writers surely overlap
        time.sleep(slow)
        print("imported", flush=True)
        return real(*a, **k)
    import_cache.import_files = slowed
    while not go.exists():
        time.sleep(0.01)
    print(import_cache.imported_run("du", file, out, dataset="gsm8k"), flush=True)
""")


def _child(tmp: Path, file: Path, out: Path, slow: float = 1.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(slow), str(tmp / "go"),
                             str(file), str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _leftovers(root: Path, out: Path) -> list[str]:
    """What lies beside ``out`` but its lock file: a temporary or stale folder left behind."""
    return sorted(p.name for p in root.iterdir() if p not in (out, root / f".{out.name}.lock"))


def test_two_processes_importing_at_once_leave_one_whole_valid_run(du_file, tmp_path):
    root = tmp_path / "imported"
    out = root / "du-gsm"
    kids = [_child(tmp_path, du_file, out) for _ in range(2)]
    (tmp_path / "go").touch()
    done = [k.communicate(timeout=120) for k in kids]
    assert [k.returncode for k in kids] == [0, 0], [err for _, err in done]
    said = [stdout.splitlines() for stdout, _ in done]
    assert sorted(said) == sorted([["imported", str(out)], [str(out)]])  # one imported, one kept
    assert any("waiting" in err for _, err in done)
    v = validate(out)
    assert v.findings.ok and v.debates == 2, v.report()
    assert manifest.read(out)["imported"]["version"] == IMPORT_VERSION
    assert _leftovers(root, out) == []


def test_a_writer_waits_while_another_holds_the_lock(du_file, tmp_path):
    out = tmp_path / "imported" / "du-gsm"
    with locked(out):
        kid = _child(tmp_path, du_file, out, slow=0.0)
        (tmp_path / "go").touch()
        time.sleep(3)
        assert kid.poll() is None and not out.exists()  # it waits: nothing written
    stdout, err = kid.communicate(timeout=120)
    assert kid.returncode == 0, err
    assert stdout.splitlines() == ["imported", str(out)] and "waiting" in err
    assert validate(out).findings.ok


def test_a_stale_import_is_replaced_whole(du_file, tmp_path):
    root = tmp_path / "imported"
    run = imported_run("du", du_file, root / "du-gsm", dataset="gsm8k")
    old = json.loads((run / "manifest.json").read_text())
    old["imported"]["version"] = IMPORT_VERSION - 1  # an import by the reader before
    (run / "manifest.json").write_text(json.dumps(old))
    assert imported_run("du", du_file, run, dataset="gsm8k") == run
    assert manifest.read(run)["imported"]["version"] == IMPORT_VERSION
    assert imported_run("du", du_file, run, dataset="gsm8k", fresh=True) == run
    assert validate(run).findings.ok and _leftovers(root, run) == []
