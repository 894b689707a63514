"""The notebook registry (pear.paper.registry): one entry per notebook, the one place the build,
its scheduling and the checks learn a notebook's facts from; the build's modules name none."""
from __future__ import annotations

import subprocess

import pytest

from pear.paper import registry
from pear.paper.times import BuildTimes
from pear.paths import NOTEBOOKS_DIR, REPO_ROOT


def test_one_entry_per_notebook_file_in_build_order():
    assert [e.name for e in registry.ENTRIES] == sorted(p.stem for p in NOTEBOOKS_DIR.glob(
        "[0-9][0-9]_*.py"))
    assert registry.GRID is registry.ENTRIES[0]  # the grid first: every other reads it
    assert registry.GRID.runs_the_model and not registry.GRID.outputs


def test_what_a_notebook_reads_is_there():
    for e in registry.ENTRIES:
        for name in e.reads_notebooks:  # another notebook's records: it must run first
            assert name in registry.BY_NAME and name != e.name, (e.name, name)
            assert registry.entry(name).runs_the_model, (e.name, name)
        for f in e.reads_files:
            assert f.is_file(), (e.name, f)


def test_a_notebook_that_cannot_speak_to_imported_debates_says_why():
    assert set(registry.NOT_FOR_IMPORTED) == {e.name for e in registry.ENTRIES
                                              if e.not_for_imported}
    assert all(why.strip() and not why.endswith(".") for why in
               registry.NOT_FOR_IMPORTED.values())


def test_the_build_names_no_notebook():
    found = subprocess.run(["git", "grep", "-n", r"1[0-9]_\|0[0-9]_", "--",
                            "pear/paper/build.py", "pear/paper/kernels.py",
                            "pear/paper/publish.py"],
                           cwd=REPO_ROOT, capture_output=True, text=True)
    assert found.stdout == ""


def test_the_site_s_case_study_is_one_notebook_s_markdown_output():
    shows = [e for e in registry.ENTRIES if e.case_study]
    assert [(e.name, e.case_study) for e in shows] == [("08_case_study", "case_study.md")]
    assert shows[0].case_study in shows[0].outputs
    with pytest.raises(ValueError, match="not one of its Markdown outputs"):
        registry.Notebook("08_x", ("a.md",), case_study="b.md")
    with pytest.raises(ValueError, match="not one of its Markdown outputs"):
        registry.Notebook("08_x", ("a.tex", "a.md"), case_study="a.tex")


def test_typical_time_is_the_last_measured_else_the_fallback(tmp_path):
    fallback = registry.typical_seconds("simulated", tmp_path / "none.json")
    assert fallback == {e.name: e.fallback_s for e in registry.ENTRIES}
    times = BuildTimes(tmp_path / "t.json", {"backend": "simulated"})
    times.add("14_calibration", 3.5, "ok")
    times.add("15_your_method", 0.0, "skipped")  # says nothing of its time
    times.add("17_real_debates", 2.0, "failed")
    got = registry.typical_seconds("simulated", tmp_path / "t.json")
    assert got == {**fallback, "14_calibration": 3.5}


def test_bad_entries_and_names_are_one_clear_error():
    with pytest.raises(KeyError, match="no notebook '99_x'"):
        registry.entry("99_x")
    with pytest.raises(ValueError, match="grid's notebook"):
        registry.Notebook("00_x", ("a.md",), runs_the_model=True, writes_grid=True)
    with pytest.raises(ValueError, match="fallback_s -1"):
        registry.Notebook("01_x", fallback_s=-1)
    with pytest.raises(ValueError, match="matches no notebook"):
        registry.select("99")
    with pytest.raises(KeyError, match="no notebook writes"):
        registry.producer("nothing.md")


def test_a_missing_input_is_named_before_the_build_starts():
    assert registry.missing_inputs(registry.NOTEBOOKS) == []  # everything shipped is there
    entries = {"17_x": registry.Notebook("17_x", ("x.md",), reads=("data/no-such-file.tgz",))}
    assert registry.missing_inputs(["17_x"], entries) == [
        "notebook 17_x reads data/no-such-file.tgz, which is missing"]
