"""The columnar view written beside the records while a run writes them (issue 56, item 3):
the tables, files and findings that indexing the same records makes, with one process or
with workers, across a resumed run; and left to the index wherever it cannot simply be
continued."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pear.runs import runner
from pear.runs.grid import answer_key, preset
from pear.runs.jobs import jobs
from pear.sim.backend import SimulatedBackend
from pear.store import view
from pear.store.checks import Checker
from pear.store.indexing import TABLES, ViewWriter, lay_out, read_manifest
from pear.store.records import RECORDS_FILE, RecordWriter, encode_record
from record_factory import make_record

EXP = dict(datasets=("gsm8k", "math500"), n_questions=3, seeds=(0, 1), full_datasets=(),
           rounds=2, chunk_questions=1)


def _tables(vdir: Path) -> tuple[dict[str, pa.Table], object]:
    man = read_manifest(vdir)
    assert man is not None
    return {t: pa.concat_tables([pq.read_table(vdir / t / f"{p['name']}.parquet")
                                 for p in man.parts]) for t in TABLES}, man


def _same_as_indexed(root: Path, tmp: Path) -> int:
    """The view under ``root`` holds what indexing its records from scratch makes; its
    debates."""
    written, wman = _tables(root / "view")
    view.index(root, view_dir=tmp / "indexed", rebuild=True)
    indexed, iman = _tables(tmp / "indexed")
    for t in TABLES:
        assert written[t].equals(indexed[t]), t
    assert (wman.files, wman.findings, wman.protocol, wman.debates) == \
        (iman.files, iman.findings, iman.protocol, iman.debates)
    return wman.debates


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_writes_the_view_that_indexing_its_records_makes(tmp_path, workers):
    exp = preset("sim", **EXP)
    out = tmp_path / "run"
    be = SimulatedBackend(answer_key(exp), population="grounded")
    s = runner.run(exp, be, out, progress=False, workers=workers)
    assert s.complete
    assert _same_as_indexed(out, tmp_path) == len(jobs(exp)) == s.written
    assert view.index(out).action == "fresh"  # nothing left for the analysis to index
    deb = view.load(out).debates
    assert deb["offset"].is_monotonic_increasing and (deb["file"] == 0).all()
    first = view.load(out).record(deb["debate_id"].iloc[-1])  # offsets point at the lines
    assert first["debate_id"] == deb["debate_id"].iloc[-1]


def test_a_resumed_run_continues_the_view_in_a_new_part(tmp_path):
    exp = preset("sim", **EXP)
    out = tmp_path / "run"
    be = SimulatedBackend(answer_key(exp), population="grounded")
    s = runner.run(exp, be, out, progress=False, workers=2, stop=lambda: True)
    assert s.stopped and 0 < s.written < len(jobs(exp))
    assert read_manifest(out / "view").debates == s.written
    runner.run(exp, be, out, progress=False, workers=2)
    assert len(read_manifest(out / "view").parts) == 2
    assert _same_as_indexed(out, tmp_path) == len(jobs(exp))


def test_lines_the_view_lacks_leave_it_to_the_index(tmp_path):
    exp = preset("sim", **EXP)
    out = tmp_path / "run"
    be = SimulatedBackend(answer_key(exp), population="grounded")
    runner.run(exp, be, out, progress=False, workers=1, stop=lambda: True)
    before = (out / "view" / "manifest.json").read_bytes()
    path = next(out.rglob(RECORDS_FILE))
    with open(path, "ab") as fh:  # a line written behind the view's back (a copy: a warning)
        fh.write(path.read_bytes().splitlines(keepends=True)[0])
    assert ViewWriter.open(out, path) is None
    runner.run(exp, be, out, progress=False, workers=1)
    assert (out / "view" / "manifest.json").read_bytes() == before  # not continued
    s = view.index(out)
    assert s.action == "updated" and s.debates == len(jobs(exp)) + 1
    assert _same_as_indexed(out, tmp_path) == len(jobs(exp)) + 1


def _written(tmp_path: Path, records, chunk: bool) -> tuple[Path, bool]:
    """``records`` appended to a record file of ``tmp_path`` with a :class:`ViewWriter`
    beside it, laid out as a worker lays out a chunk (``chunk``) or one by one."""
    path = tmp_path / "m" / RECORDS_FILE
    vw = ViewWriter.open(tmp_path, path)
    assert vw is not None
    checker = Checker(tmp_path)
    with RecordWriter(path.parent) as w:
        for part in [records] if chunk else [[r] for r in records]:
            laid = lay_out(checker, part)
            for line in laid.lines:
                w.write(line)
            vw.add(laid)
    return path, vw.close()


@pytest.mark.parametrize("chunk", [False, True])
def test_warnings_are_found_where_the_index_finds_them(tmp_path, chunk):
    records = [make_record([["1", "1", "0"], ["1", "1", "1"]], "1", question_id=f"q{k}")
               for k in range(3)]
    records.insert(1, make_record([["<a>1", "1", "0"], ["1", "1", "1"]], "1",
                                  question_id="qm", canonical=lambda a: a[-1]))
    path, wrote = _written(tmp_path, records, chunk)
    assert wrote
    found = read_manifest(tmp_path / "view").findings
    assert found["counts"] == {"markup": 1}
    assert json.dumps(found).count(f"{path}:2") == 1  # the second line, as indexing names it
    assert _same_as_indexed(tmp_path, tmp_path / "x") == 4


@pytest.mark.parametrize("chunk", [False, True])
def test_a_record_with_an_error_writes_no_view_and_the_index_names_it(tmp_path, chunk):
    good = make_record([["1", "1", "0"], ["1", "1", "1"]], "1")
    bad = make_record([["1", "1", "0"], ["1", "1", "1"]], "1", question_id="q9",
                      confidences=[[3, 3, 9], [3, 3, 3]])
    path, wrote = _written(tmp_path, [good, bad], chunk)
    assert not wrote and not list((tmp_path / "view").rglob("*.parquet"))
    with pytest.raises(ValueError, match=rf"{path}:2.*confidence"):
        view.index(tmp_path)


def test_a_record_that_is_not_one_is_the_encoders_error(tmp_path):
    rec = encode_record(make_record([["1"], ["1"]], "1"))
    broken = {**json.loads(rec), "tokens": "many"}
    with pytest.raises(ValueError, match="tokens") as laid:
        lay_out(Checker(tmp_path), [broken])
    with pytest.raises(ValueError) as plain:
        encode_record(broken)
    assert str(laid.value) == str(plain.value)


def test_a_run_asked_for_no_view_leaves_it_to_the_index(tmp_path):
    exp = preset("sim", **EXP)
    out = tmp_path / "run"
    be = SimulatedBackend(answer_key(exp), population="grounded")
    runner.run(exp, be, out, progress=False, workers=1, view=False)
    assert read_manifest(out / "view") is None
    assert view.index(out).action == "built"
    assert _same_as_indexed(out, tmp_path) == len(jobs(exp))
