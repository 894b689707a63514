"""``pear population shipped`` (the shipped corpus fit, pear.populations.corpus_fit, on the command
line): the fit printed on DyLAN's MATH corpus restored from its shipped graded copy and on a run
given with --also, bootstrap refits, a bad --also path refused, and (slow) the fit on every
default run imported into a fresh build folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from pear import cli
from pear.populations import checks, corpus_fit
from pear.store import import_cache
from test_twin import _du_run, _planted

MATH_CHOICES, MATH_DEBATES = 11580, 3346  # DyLAN's MATH corpus as imported (skip_bad)


@pytest.fixture
def math_only(tmp_path, monkeypatch) -> Path:
    """The default runs narrowed to DyLAN's MATH corpus, restored under ``tmp_path`` from its
    shipped graded copy (seconds; the MMLU teams' import grades 2,809 questions: 20 s)."""
    run = import_cache.corpus_run(tmp_path / "imported")
    monkeypatch.setattr(corpus_fit, "default_runs", lambda fresh=False: [run])
    return run


def test_fit_prints_the_corpus_fit_and_counts_the_also_run(math_only, tmp_path, capsys):
    assert cli.main(["population", "shipped", "corpus-fit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"fit: {MATH_CHOICES} choice sets of {MATH_DEBATES} debates in ")
    assert "own_x_round" in out and "share_x_single" in out and "'converged': True" in out
    assert "_x_options" not in out  # one answer space: no answer-space terms
    du = _du_run(tmp_path, _planted(), 60, "du")  # 60 debates, 3 agents, 2 revision rounds
    assert cli.main(["population", "shipped", "corpus-fit", "--also", str(du)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"fit: {MATH_CHOICES + 60 * 3 * 2} choice sets of "
                          f"{MATH_DEBATES + 60} debates in ")


def test_bootstrap_times_the_refits_and_prints_their_spread(math_only, capsys):
    assert cli.main(["population", "shipped", "bootstrap", "2", "--seed", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("2 bootstrap refits in ")
    spread = dict(item.rsplit(" ", 1) for item in
                  out[-1].split("sd of the coefficients: ")[1].split(", "))
    assert list(spread)[:2] == ["own", "share"]
    assert all(0 < float(sd) < 1 for sd in spread.values())  # 11,580 choice sets: tight


@pytest.mark.parametrize("mode", ["corpus-fit", "write", "in-sample"])
def test_a_bad_also_path_is_one_line_exit_2(mode, tmp_path, capsys):
    (tmp_path / "notarun").mkdir()
    with pytest.raises(SystemExit) as done:
        cli.main(["population", "shipped", mode, "--also", str(tmp_path / "notarun")])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"pear: error: argument --also: '{tmp_path / 'notarun'}' is not a run "
                   "directory (no manifest.json)"]


def test_bootstrap_needs_a_positive_count(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["population", "shipped", "bootstrap", "0"])
    assert done.value.code == 2 and "must be >= 1: '0'" in capsys.readouterr().err


def _imported(build: Path) -> list[str]:
    """The imported runs of a build folder by their middle name (the import cache's lock
    files beside them, ``.<run>.lock``, are not runs)."""
    return sorted(p.name.split("-")[1] for p in (build / "imported").iterdir()
                  if not p.name.startswith("."))


@pytest.mark.slow
def test_fit_on_every_default_run_imported_afresh(tmp_path, monkeypatch, capsys):
    """DyLAN's MATH corpus and its four MMLU teams imported into an empty build folder (the
    MMLU import grades by letter: about 25 s) and fitted with the answer-space terms."""
    monkeypatch.setattr(import_cache, "IMPORTED_DIR", tmp_path / "imported")
    assert cli.main(["population", "shipped", "corpus-fit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fit: 27268 choice sets of 7277 debates in ")
    assert "new_x_right_x_options" in out and "'converged': True" in out
    assert _imported(tmp_path) == \
        ["math", "mmlu2", "mmlu3", "mmlu4", "mmlu7"]


def test_check_names_each_difference_on_stderr_and_exits_1(monkeypatch, capsys):
    """What `pear population shipped check` prints for what checks.check_all found (the check
    itself, minutes, runs in CI and, with the imports restored, in the slow test below)."""
    monkeypatch.setattr(checks, "check_all", lambda log=None: (
        ["graded/dylan-math-gpt35: record 7 differs"], ["grounded: fingerprint aaa shipped"]))
    assert cli.main(["population", "shipped", "check"]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "graded import check FAILED: graded/dylan-math-gpt35: record 7 differs",
        "graded import check: data/real-debates/graded is not what the code produces now; if "
        "the change is intended, rewrite it with `pear population shipped write-graded`",
        "population check FAILED: grounded: fingerprint aaa shipped"]
    assert out == ""


@pytest.mark.slow
def test_check_passes_on_the_shipped_files(tmp_path, monkeypatch, capsys):
    """`pear population shipped check` on DyLAN's debates imported into an empty build folder, the MATH
    corpus restored from its graded copy rather than graded from scratch (CI does that: 2-4
    minutes): the shipped graded copy and every population file as the code writes them (about
    45 s: the MMLU import, the fits, 20 bootstrap refits)."""
    monkeypatch.setattr(import_cache, "IMPORTED_DIR", tmp_path / "imported")
    monkeypatch.setattr(checks, "BUILD_DIR", tmp_path)
    for name in ("corpus_run", "mmlu_runs"):
        monkeypatch.setattr(checks, name, lambda *a, fresh=False, _f=getattr(checks, name),
                            **k: _f(*a, **k))
    assert cli.main(["population", "shipped", "check"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("imported dylan-math-gpt35.tgz from scratch in ")
    assert lines[0].endswith("shipped graded copy: the same records")
    assert lines[1].startswith("imported dylan-math500-gpt35.json.gz from scratch in ")
    assert lines[1].endswith("shipped graded copies: the same records")
    assert _imported(tmp_path) == \
        ["math", "math500", "mmlu2", "mmlu3", "mmlu4", "mmlu7"]
    assert lines[3].startswith("fit: 27268 choice sets of 7277 debates in ")
    assert lines[-1] == ("population check: the shipped study, grounded, grounded-math and 20 "
                         "bootstrap files are what the shipped data and code produce")
