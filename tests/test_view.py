"""The columnar view: built by streaming, updated incrementally from appended lines, rebuilt
when the records or the view changed under it, and the ``pear index`` command."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pear.store import view
from pear.store.records import RECORDS_FILE, RecordWriter, read_records
from record_factory import make_record, make_simple


def _records(n: int, start: int = 0, method: str = "pear") -> list[dict]:
    """n debates of 3 agents over 2 rounds; question k is right iff k is even."""
    out = []
    for k in range(start, start + n):
        right = "1" if k % 2 == 0 else "0"
        out.append(make_record([["0", right, "1"], [right, right, "1"], [right] * 3], "1",
                               method=method, question_id=f"q{k}",
                               critiques={1: [(2, 0, "ACCEPT"), (0, 1, "REJECT")],
                                          2: [(1, 2, None)]}))
    return out


def _write(run_dir: Path, records, sub: str = "model-a") -> Path:
    with RecordWriter(run_dir / sub) as w:
        for r in records:
            w.write(r)
    return run_dir / sub / RECORDS_FILE


def _frames(run_dir: Path) -> dict[str, pd.DataFrame]:
    v = view.load(run_dir, update=False)
    return {t: v.table(t).drop(columns=[c for c in ("file", "offset") if t == "debates"])
            for t in view.TABLES}


def test_tables_hold_one_row_per_unit_with_the_records_values(tmp_path):
    recs = _records(4)
    _write(tmp_path, recs)
    s = view.index(tmp_path)
    assert (s.action, s.debates, s.new_debates, s.files) == ("built", 4, 4, 1)
    v = view.load(tmp_path)
    assert v.debates["question_id"].tolist() == ["q0", "q1", "q2", "q3"]
    assert v.debates["correct"].tolist() == [True, False, True, False]
    assert len(v.agent_rounds) == 4 * 3 * 3 and len(v.rounds) == 4 * 3
    assert len(v.edges) == 4 * 3
    e = v.edges[v.edges["debate"] == 0].sort_values(["round", "source"])
    assert e["decision"].astype(object).fillna("none").tolist() == ["REJECT", "ACCEPT", "none"]
    assert e["delivered"].tolist() == [True, True, False]
    # round-1 edge 2 -> 0: answers "1" vs "0" in round 0 (cross); 0 -> 1: "0" vs "1" (cross)
    assert e["cross_answer"].tolist() == [True, True, False]
    assert v.debates["truncated_calls"].tolist() == [0] * 4
    assert (v.debates["prompt_style"] == "paper").all()


def test_a_fresh_view_is_not_rewritten_and_appended_lines_are_read_alone(tmp_path):
    path = _write(tmp_path, _records(3))
    view.index(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "view").rglob("*.parquet")}
    assert view.index(tmp_path).action == "fresh"
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "view").rglob("*.parquet")} == before
    _write(tmp_path, _records(2, start=3))
    s = view.index(tmp_path)
    assert (s.action, s.new_debates, s.debates) == ("updated", 2, 5)
    incremental = _frames(tmp_path)
    assert len(list((tmp_path / "view" / "debates").glob("*.parquet"))) == 2
    # the same records indexed from scratch give the same tables
    (tmp_path / "view" / "manifest.json").unlink()
    assert view.index(tmp_path).action == "built"
    scratch = _frames(tmp_path)
    for t in view.TABLES:
        pd.testing.assert_frame_equal(incremental[t], scratch[t], check_categorical=False)
    assert path.stat().st_size > 0


def test_a_new_record_file_is_added_and_duplicates_keep_the_first_in_path_order(tmp_path):
    _write(tmp_path, _records(2), sub="b")
    view.index(tmp_path)
    first = make_simple(True, method="cot", question_id="q0")
    dup = make_simple(False, method="cot", question_id="q0")   # same debate_id
    _write(tmp_path, [first], sub="a")   # a/ sorts before b/
    _write(tmp_path, [dup], sub="b")
    assert view.index(tmp_path).new_debates == 2
    # one id with two contents is damage: the analysis stops unless told to keep the first
    with pytest.raises(ValueError, match="recorded 2 times with different contents"):
        view.load(tmp_path)
    with pytest.warns(RuntimeWarning, match="left out 1 damaged records.*1 conflicting_id"):
        v = view.load(tmp_path, drop_invalid=True)
    cot = v.debates[v.debates["method"] == "cot"]
    assert len(cot) == 1 and cot["correct"].item()   # a/'s record, as read_records keeps
    kept = [r for r in read_records(tmp_path) if r["method"] == "cot"]
    assert kept[0]["correct"] is True
    assert set(v.rounds["debate"]) == set(v.debates["debate"])


@pytest.mark.parametrize("change, reason", [
    ("rewrite", "changed in what was indexed"),
    ("truncate", "shrank"),
    ("remove", "is gone"),
])
def test_records_changed_under_the_view_rebuild_it(tmp_path, change, reason):
    path = _write(tmp_path, _records(4))
    view.index(tmp_path)
    text = path.read_text()
    if change == "rewrite":   # same length, the second record's latency edited (still valid)
        lines = text.splitlines(keepends=True)
        lines[1] = lines[1].replace('"latency_s":0.0', '"latency_s":0.9')
        path.write_text("".join(lines))
    elif change == "truncate":
        path.write_text("".join(text.splitlines(keepends=True)[:2]))
    else:
        _write(tmp_path, _records(1, start=7), sub="other")
        path.unlink()
    s = view.index(tmp_path)
    assert s.action == "built" and reason in s.reason
    deb = view.load(tmp_path).debates
    assert deb["question_id"].tolist() == {"rewrite": ["q0", "q1", "q2", "q3"],
                                           "truncate": ["q0", "q1"], "remove": ["q7"]}[change]
    if change == "rewrite":
        assert deb["latency_s"].tolist() == [0.0, 0.9, 0.0, 0.0]


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "manifest"])
def test_a_damaged_view_is_detected_and_rebuilt(tmp_path, damage):
    _write(tmp_path, _records(3))
    view.index(tmp_path)
    part = next((tmp_path / "view" / "edges").glob("*.parquet"))
    if damage == "flip":
        data = bytearray(part.read_bytes())
        data[len(data) // 2] ^= 0xFF
        part.write_bytes(bytes(data))
    elif damage == "truncate":
        part.write_bytes(part.read_bytes()[:-10])
    elif damage == "delete":
        part.unlink()
    else:
        (tmp_path / "view" / "manifest.json").write_text("{not json")
    s = view.index(tmp_path)
    assert s.action == "built"
    assert len(view.load(tmp_path).edges) == 3 * 3


def test_a_torn_last_line_waits_until_it_is_complete(tmp_path):
    path = _write(tmp_path, _records(2))
    line = json.dumps(_records(1, start=2)[0], separators=(",", ":"))
    with open(path, "a") as fh:
        fh.write(line[:40])
    assert view.index(tmp_path).debates == 2
    with open(path, "a") as fh:
        fh.write(line[40:] + "\n")
    s = view.index(tmp_path)
    assert (s.action, s.new_debates) == ("updated", 1)


def test_a_bad_record_is_an_error_naming_file_line_and_field(tmp_path):
    bad = _records(2)
    del bad[1]["tokens"]
    path = _write(tmp_path, bad[:1])
    with open(path, "a") as fh:   # as a writer without the schema check would
        fh.write(json.dumps(bad[1]) + "\n")
    with pytest.raises(ValueError, match=rf"{path}:2: not a debate record.*tokens"):
        view.index(tmp_path)
    assert not (tmp_path / "view" / "manifest.json").exists()   # nothing half-written
    assert not list((tmp_path / "view").rglob("*.parquet"))


def test_records_without_the_fields_imports_lack_load_with_defaults(tmp_path):
    # An imported debate (pear import) records no prompt style, no truncation and no critiques.
    imported = make_record([["0", "1"], ["1", "1"]], "1", question_id="imported")
    del imported["prompt_style"], imported["truncated_calls"]
    for rd in imported["rounds_data"]:
        for a in rd["agents"]:
            del a["truncated"]
    _write(tmp_path, [imported, _records(1)[0]])
    v = view.load(tmp_path)
    assert v.debates["truncated_calls"].isna().tolist() == [True, False]
    assert v.debates["prompt_style"].isna().tolist() == [True, False]
    assert v.agent_rounds.loc[v.agent_rounds["debate"] == 0, "truncated"].isna().all()
    assert not v.agent_rounds.loc[v.agent_rounds["debate"] == 1, "truncated"].isna().any()
    rec = v.record(imported["debate_id"])
    assert rec["truncated_calls"] is None and rec["prompt_style"] is None
    assert all(a["truncated"] is False for rd in rec["rounds_data"] for a in rd["agents"])


def test_one_record_is_read_with_its_texts_by_offset(tmp_path):
    recs = _records(3)
    recs[1]["rounds_data"][0]["agents"][0]["reasoning"] = "a long chain of thought " * 200
    _write(tmp_path, recs)
    v = view.load(tmp_path)
    rec = v.record(recs[1]["debate_id"])
    assert rec["rounds_data"][0]["agents"][0]["reasoning"].startswith("a long chain")
    assert rec["debate_id"] == recs[1]["debate_id"]
    with pytest.raises(ValueError, match="no debate 'nope'"):
        v.record("nope")


def test_columns_and_select_restrict_what_is_read(tmp_path):
    _write(tmp_path, _records(4))
    v = view.load(tmp_path, columns={"debates": ["method", "correct"]})
    assert set(v.debates.columns) == {"debate", "debate_id", "file", "offset", "digest",
                                      "method", "correct"}
    picked = view.load(tmp_path).select(np.array([True, False, True, False]))
    assert picked.debates["question_id"].tolist() == ["q0", "q2"]
    assert set(picked.agent_rounds["debate"]) == set(picked.debates["debate"])
    with pytest.raises(ValueError, match="unknown view column 'nope'"):
        view.load(tmp_path, columns={"debates": ["nope"]})


def test_an_unwritable_run_directory_is_indexed_elsewhere(tmp_path, monkeypatch):
    _write(tmp_path, _records(2))
    real = view.index

    def refuse(run_dir, **kw):
        if kw.get("view_dir") is None:
            raise PermissionError("read-only")
        return real(run_dir, **kw)
    monkeypatch.setattr(view, "index", refuse)
    with pytest.warns(RuntimeWarning, match="not writable"):
        v = view.load(tmp_path)
    assert len(v.debates) == 2 and len(v.edges) == 6
    assert not (tmp_path / "view").exists()


def test_pear_index_command(tmp_path):
    _write(tmp_path, _records(2))
    cmd = [sys.executable, "-m", "pear", "index", str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("built: 2 new debates"), out.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.stdout.startswith("fresh: 0 new debates")
    missing = subprocess.run([sys.executable, "-m", "pear", "index", str(tmp_path / "no")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_in_memory_tables_match_the_indexed_ones(tmp_path):
    recs = _records(3) + [make_simple(True, method="cot", question_id="x")]
    _write(tmp_path, recs)
    disk = _frames(tmp_path) if view.index(tmp_path) else None
    mem = view.from_records(recs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in view.TABLES:
            a = disk[t].reset_index(drop=True)
            b = mem.table(t).drop(columns=[c for c in ("file", "offset") if t == "debates"])
            pd.testing.assert_frame_equal(a, b, check_categorical=False)


@pytest.mark.parametrize("drop", [False, True])
def test_worker_processes_index_what_one_process_indexes(tmp_path, monkeypatch, drop):
    """Blocks of 3 lines checked and laid out in forked worker processes: the same tables
    (debates numbered across blocks, an appended part after them), the same findings, a
    bad line dropped or named as one process would."""
    from pear.store import indexing
    monkeypatch.setattr(indexing, "BATCH", 3)
    monkeypatch.setattr(indexing, "PARALLEL_LINES", 6)
    recs = _records(17)
    bad = dict(recs[7], seed=-1)  # an error: out of range (and no longer its own id)
    frames, findings = {}, {}
    for workers in (1, 2):
        d = tmp_path / str(workers)
        path = _write(d, recs[:7])
        with open(path, "a") as fh:
            fh.write(json.dumps(bad) + "\n\n")  # and a blank line (skipped)
        _write(d, recs[8:14])
        if not drop:
            with pytest.raises(ValueError, match=rf"{path}:8: debate"):
                view.index(d, workers=workers)
            assert not (d / "view" / "manifest.json").exists()
            continue
        s = view.index(d, workers=workers, drop_invalid=True)
        assert (s.debates, s.new_debates) == (13, 13)
        _write(d, recs[14:])  # 3 more lines: fewer than PARALLEL_LINES, indexed here
        assert view.index(d, workers=workers, drop_invalid=True).new_debates == 3
        with pytest.warns(RuntimeWarning, match="left out 1 damaged records"):
            v = view.load(d, update=False, drop_invalid=True)
        frames[workers] = {t: v.table(t) for t in view.TABLES}
        findings[workers] = json.loads((d / "view" / "manifest.json").read_text())["findings"]
    if drop:
        one, two = frames[1], frames[2]
        assert one["debates"]["question_id"].tolist() == [f"q{k}" for k in range(17) if k != 7]
        assert one["debates"]["debate"].tolist() == list(range(16))
        for t in one:
            pd.testing.assert_frame_equal(two[t], one[t])
        assert findings[1]["dropped"] == 1 and findings[1]["counts"] == {
            "identity": 1, "out_of_range": 1}
        assert json.dumps(findings[2]).replace(str(tmp_path / "2"), str(tmp_path / "1")) \
            == json.dumps(findings[1])



def test_worker_processes_hold_only_the_blocks_in_flight(tmp_path, monkeypatch):
    """Checking blocks in worker processes keeps a block while it is in flight, not until the
    file ends: a record file larger than memory indexes in memory bounded by the blocks in
    flight (a real-size run of 6.9 GB held 5.3 GB in this process when each block was kept)."""
    import gc
    from pear.store import indexing
    from pear.store.checks import Checker
    from pear.store.findings import scan_lines
    monkeypatch.setattr(indexing, "BATCH", 3)
    monkeypatch.setattr(indexing, "PARALLEL_LINES", 6)
    path = tmp_path / RECORDS_FILE
    path.write_bytes(b"not a record\n" * 3 * 40)  # 40 blocks, each line an error

    def held() -> int:  # blocks alive: lists of 3 (offset, line number, line, size)
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, list) and len(o) == 3
                   and all(isinstance(x, tuple) and len(x) == 4 and x[2] == b"not a record\n"
                           for x in o))

    alive, lines = [], 0
    for block, checked, rows in indexing._blocks(Checker(tmp_path), path, 0, scan_lines(path), 2):
        lines += len(checked)
        assert rows is None and all(bad for _, bad in checked)
        del block
        alive.append(held())
    assert lines == 120 and len(alive) == 40
    assert max(alive) <= 2 * 2 + 2, alive  # two calls per worker in flight, one being read


def _die_in_worker(*args):
    import os
    os._exit(3)


def test_a_worker_that_dies_is_an_error_not_a_wait(tmp_path, monkeypatch):
    """A worker process that ends without a result (killed, crashed) stops the indexing with
    an error at once; nothing of the view is written."""
    from concurrent.futures.process import BrokenProcessPool
    from pear.store import indexing
    monkeypatch.setattr(indexing, "BATCH", 3)
    monkeypatch.setattr(indexing, "PARALLEL_LINES", 6)
    monkeypatch.setattr(indexing, "_check_forked", _die_in_worker)
    _write(tmp_path, _records(9))
    with pytest.raises(BrokenProcessPool):
        view.index(tmp_path, workers=2)
    assert not (tmp_path / "view" / "manifest.json").exists()
    monkeypatch.undo()
    assert view.index(tmp_path, workers=2).debates == 9


def test_fewer_lines_than_parallel_lines_are_indexed_here(tmp_path, monkeypatch):
    """Two blocks of 4 new lines (fewer than PARALLEL_LINES) are checked in this process: no
    worker is started (one that would die never runs)."""
    from pear.store import indexing
    monkeypatch.setattr(indexing, "BATCH", 3)
    monkeypatch.setattr(indexing, "PARALLEL_LINES", 6)
    monkeypatch.setattr(indexing, "_check_forked", _die_in_worker)
    _write(tmp_path, _records(4))
    assert view.index(tmp_path, workers=2).debates == 4
