"""DyLAN's corpus shipped graded (pear.store.shipped, pear.store.import_cache.corpus_run): a shipped
copy of exactly this import is used without grading and gives a fresh import's records; one of
another source or importer version is ignored; the check names the first changed record.  On a
slice of DyLAN's MATH-500 file, so that no test grades the whole corpus."""
from __future__ import annotations

import gzip
import json
import lzma
import shutil
from pathlib import Path

import pytest

from pear.core.hashing import file_sha256
from pear.populations import graded_copies
from pear.store import import_cache
from pear.paths import REAL_DEBATES_DIR, RECORDS_FILE, write_json
from pear.store import manifest, shipped
from pear.store.importing import IMPORT_VERSION


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(the slice, its shipped graded copy, the import from scratch it was written from)."""
    tmp = tmp_path_factory.mktemp("graded")
    with gzip.open(REAL_DEBATES_DIR / "dylan-math500-gpt35.json.gz", "rt") as f:
        data = json.load(f)
    corpus = tmp / "slice.json"
    corpus.write_text(json.dumps(dict(list(data.items())[::40][:12])))  # across subjects
    dest = graded_copies.write_graded(tmp / "shipped", corpus=corpus, where=tmp / "written")
    return corpus, dest, tmp / "written" / f"dylan-math-{file_sha256(corpus)[:8]}"


class _Graded(Exception):
    pass


def _no_grading(*args, **kwargs):
    raise _Graded("imported (graded) again")


def test_the_shipped_copy_is_the_runs_records_compressed(graded):
    corpus, dest, fresh = graded
    assert sorted(p.name for p in dest.iterdir()) == ["debates.jsonl.xz", "manifest.json"]
    with lzma.open(dest / "debates.jsonl.xz") as fh:
        assert fh.read() == (fresh / RECORDS_FILE).read_bytes()
    ship = shipped.read_manifest(dest)
    assert ship["shipped"]["debates"] == ship["imported"]["debates"] >= 10
    assert ship["imported"]["version"] == IMPORT_VERSION
    assert "from_shipped" not in ship["imported"]
    assert graded_copies.check_graded(fresh, dest) == []


def test_a_shipped_copy_of_this_import_is_used_without_grading(graded, tmp_path, monkeypatch):
    corpus, dest, fresh = graded
    monkeypatch.setattr(import_cache, "import_files", _no_grading)
    run = import_cache.corpus_run(tmp_path, corpus=corpus, graded=dest)
    assert (run / RECORDS_FILE).read_bytes() == (fresh / RECORDS_FILE).read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.suffix != ".lock"] == [run.name]  # no
    # temporary folder left (the import cache's lock beside the run stays: pear.store.import_cache)
    man = manifest.read(run)
    assert man["imported"]["from_shipped"]["path"] == str(dest)
    assert man["imported"]["files"][0]["path"] == str(corpus) and "shipped" not in man
    assert shipped.differences(dest, run) == []
    theirs, ours = manifest.read(fresh), dict(man)
    ours["imported"] = {k: v for k, v in man["imported"].items() if k != "from_shipped"}
    for m in (ours, theirs):
        m.pop("command")  # shipped with the repository's folder left out
    assert ours == theirs  # the fresh import's manifest, where the file lay included
    # now a cached import: kept as it is
    assert import_cache.corpus_run(tmp_path, corpus=corpus, graded=dest) == run
    assert manifest.read(run) == man
    # fresh: imported whatever is shipped
    with pytest.raises(_Graded):
        import_cache.corpus_run(tmp_path, corpus=corpus, graded=dest, fresh=True)


@pytest.mark.parametrize("change", ["source", "version", "dataset", "benchmarks", "model"])
def test_a_shipped_copy_of_another_import_is_ignored(graded, tmp_path, monkeypatch, change):
    corpus, dest, _ = graded
    other = tmp_path / "shipped"
    shutil.copytree(dest, other)
    man = manifest.read(other)
    imp = man["imported"]
    if change == "source":
        imp["files"][0]["sha256"] = "0" * 64
    elif change == "version":
        imp["version"] = IMPORT_VERSION - 1
    elif change == "dataset":
        imp["datasets"] = ["math500"]
    elif change == "benchmarks":
        man["data_sha256"] = {**man["data_sha256"], "math500.jsonl": "0" * 64}
    else:
        imp["model"] = "another-model"
    write_json(other / "manifest.json", man)
    monkeypatch.setattr(import_cache, "import_files", _no_grading)
    with pytest.raises(_Graded):  # imported as if nothing were shipped
        import_cache.corpus_run(tmp_path / "build", corpus=corpus, graded=other)


def test_shipped_records_that_are_not_the_manifests_are_an_error(graded, tmp_path):
    corpus, dest, fresh = graded
    other = tmp_path / "shipped"
    shutil.copytree(dest, other)
    lines = (fresh / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    with lzma.open(other / "debates.jsonl.xz", "wb") as fh:
        fh.write(b"".join(lines[:-1]))
    with pytest.raises(ValueError, match="not the ones its manifest names"):
        import_cache.corpus_run(tmp_path / "build", corpus=corpus, graded=other)
    assert [p for p in (tmp_path / "build").iterdir() if p.suffix != ".lock"] == []  # nothing
    # half-written (the cache's lock file aside)


def _rewrite(run: Path, i: int, edit) -> dict:
    lines = (run / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    rec = json.loads(lines[i])
    edit(rec)
    lines[i] = (json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    (run / RECORDS_FILE).write_bytes(b"".join(lines))
    return rec


def test_the_check_names_the_first_changed_record(graded, tmp_path):
    corpus, dest, fresh = graded
    run = tmp_path / "run"
    shutil.copytree(fresh, run)
    # timing fields, the wall clock and the machine are not compared
    _rewrite(run, 0, lambda r: r.update(latency_s=1.5, finished_at="2000-01-01T00:00:00"))
    man = manifest.read(run)
    man["imported"].update(imported_at="2000-01-01T00:00:00+00:00", seconds=1e6)
    man["imported"]["files"][0]["path"] = "/elsewhere/slice.json"
    man.update(command="elsewhere", versions={"math-verify": "0"})
    manifest.write(run, man)
    assert graded_copies.check_graded(run, dest) == []
    # an answer read differently
    rec = _rewrite(run, 5, lambda r: r["rounds_data"][0]["agents"][1].update(answer="42"))
    problems = graded_copies.check_graded(run, dest)
    assert len(problems) == 1, problems
    assert f"record 6 (debate {rec['debate_id']}): rounds_data[0].agents[1].answer: shipped " \
        in problems[0] and problems[0].endswith(", now '42'")
    assert problems[0].startswith(f"{dest}: ")
    # a count in the manifest and a record fewer
    man["imported"]["unmatched"] -= 1
    manifest.write(run, man)
    lines = (run / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    (run / RECORDS_FILE).write_bytes(b"".join(lines[:5]))
    problems = graded_copies.check_graded(run, dest)
    n = man["imported"]["debates"]
    assert [p.split(": ", 1)[1] for p in problems] == [
        f"manifest imported.unmatched: shipped {n}, now {n - 1}", f"records: {n} shipped, 5 now"]
    # nothing shipped
    assert "no graded copy" in graded_copies.check_graded(run, tmp_path / "none")[0]


def test_notebook_17s_shipped_file_comes_from_its_graded_copy(tmp_path, monkeypatch):
    """DyLAN's MATH-500 file (notebook 17) is written from its shipped graded copy, with the
    copy's records and no Math-Verify reading; ``fresh`` imports it again (CI's `pear
    populations check` holds that import equal to the copy); the check names a changed record
    by the copy's folder."""
    monkeypatch.setattr(import_cache, "import_files", _no_grading)
    run = graded_copies.shipped_runs(where=tmp_path)["dylan-math500"]
    dest = shipped.GRADED_DIR / "dylan-math500"
    with lzma.open(dest / "debates.jsonl.xz") as fh:
        assert (run / RECORDS_FILE).read_bytes() == fh.read()
    man = manifest.read(run)
    assert man["imported"]["from_shipped"]["path"] == "data/real-debates/graded/dylan-math500"
    assert man["imported"]["debates"] == 477 and man["imported"]["grading"] == "math"
    assert graded_copies.check_shipped_graded({"dylan-math500": run}) == []
    rec = _rewrite(run, 3, lambda r: r.update(final_answer="-1"))
    (problem,) = graded_copies.check_shipped_graded({"dylan-math500": run})
    assert problem.startswith("data/real-debates/graded/dylan-math500: record 4 (debate "
                              f"{rec['debate_id']}): final_answer: ")
    assert graded_copies.shipped_runs(where=tmp_path)["dylan-math500"] == run  # kept as it is
    with pytest.raises(_Graded):
        graded_copies.shipped_runs(where=tmp_path, fresh=True)
