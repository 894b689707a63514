"""One build, one site: every notebook's outputs carry the run they came from (the figures
folder's build manifest), a partial rebuild shows only the current run's outputs, and the
build's check names every output of another run."""
from __future__ import annotations

import json
import re

import pytest

from pear.cli import main
from pear.paper import build as paper
from pear.paper import provenance
from pear.paper.registry import EXPECTED_OUTPUTS
from pear.paths import shown
from pear.store.manifest import fingerprint

GRID = ["--preset", "sim", "--backend", "simulated", "--datasets", "gsm8k", "--methods",
        "pear,cot", "--n-questions", "3", "--quiet"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    assert main(["run", *GRID, "--seeds", "0", "--out", str(root / "a")]) == 0
    assert main(["run", *GRID, "--seeds", "1", "--out", str(root / "b")]) == 0
    return root


def _params(run):
    return {"runs_dir": str(run), "preset": "sim", "backend": "replay"}


def test_the_fingerprint_names_the_records_not_the_times(runs, tmp_path):
    a = fingerprint(runs / "a")
    assert a == fingerprint(runs / "a") != fingerprint(runs / "b")
    man = json.loads((runs / "a" / "manifest.json").read_text())
    man["resumed_at"] = "2030-01-01T00:00:00+00:00"  # resumed, nothing new: the same run
    (runs / "a" / "manifest.json").write_text(json.dumps(man))
    assert fingerprint(runs / "a") == a
    # one more debate appended: another run as far as any output is concerned
    assert main(["run", *GRID, "--seeds", "0", "--n-questions", "4", "--out",
                 str(runs / "a")]) == 0
    assert fingerprint(runs / "a") != a


def test_outputs_of_another_run_are_not_current_and_the_check_names_them(runs, tmp_path):
    fig = tmp_path / "figures"
    assert provenance.check(fig, ["01_main_results"]) == \
        [f"{fig / 'build.json'}: no build manifest (outputs of unknown runs)"]
    provenance.start(fig, _params(runs / "a"), "c1")
    provenance.record(fig, "01_main_results", ["main_results.md"], _params(runs / "a"), "c1")
    provenance.record(fig, "08_case_study", ["case_study.md"], _params(runs / "a"), "c1")
    assert provenance.current(fig, ["01_main_results", "08_case_study"])[0] == \
        ["01_main_results", "08_case_study"]
    assert provenance.check(fig, ["01_main_results", "08_case_study"]) == []
    # a partial rebuild on run b: notebook 01 again, 08 left from run a
    provenance.start(fig, _params(runs / "b"), "c2")
    provenance.record(fig, "01_main_results", ["main_results.md"], _params(runs / "b"), "c2")
    kept, other = provenance.current(fig, ["01_main_results", "08_case_study",
                                           "02_full_dataset"])
    assert kept == ["01_main_results"]
    assert other["08_case_study"]["run_dir"] == shown(runs / "a") == "…/a"  # no builder's path
    assert other["02_full_dataset"] is None
    (line,) = provenance.check(fig, ["01_main_results", "08_case_study"])
    assert line.startswith("08_case_study: built ") and "from run …/a " in line
    # the build's check: exit 1 naming the stale notebook (its outputs are present)
    (fig / "main_results.md").write_text("x")
    for f in EXPECTED_OUTPUTS["08_case_study"] + EXPECTED_OUTPUTS["01_main_results"]:
        (fig / f).write_text("x")
    assert main(["check", "outputs", str(fig), "--only", "01,08"]) == 1
    provenance.record(fig, "08_case_study", ["case_study.md"], _params(runs / "b"), "c2")
    assert main(["check", "outputs", str(fig), "--only", "01,08"]) == 0


def test_a_manifest_that_named_the_run_by_its_absolute_path_still_matches(runs, tmp_path):
    # written before build.json named the run as pear.paths.shown does
    fig = tmp_path / "figures"
    provenance.record(fig, "01_main_results", ["main_results.md"], _params(runs / "b"), "c1")
    data = json.loads((fig / "build.json").read_text())
    for entry in (data["run"], data["notebooks"]["01_main_results"]):
        entry["run_dir"] = str((runs / "b").resolve())
    (fig / "build.json").write_text(json.dumps(data))
    provenance.start(fig, _params(runs / "b"), "c2")
    assert provenance.read(fig)["run"]["run_dir"] == "…/b"
    assert provenance.current(fig, ["01_main_results"])[0] == ["01_main_results"]


def test_a_damaged_build_manifest_proves_nothing(tmp_path):
    (tmp_path / "build.json").write_text("{not json")
    assert provenance.read(tmp_path) == {"run": None, "notebooks": {}}
    assert provenance.current(tmp_path, ["01_main_results"])[0] == []


@pytest.mark.slow
def test_partial_rebuilds_on_another_run_never_mix_builds(tmp_path, capsys):
    # the repro: a build on run a, then ONLY=00 on run b, then ONLY=01 on run b
    fig, site = tmp_path / "figures", tmp_path / "site"
    kw = dict(backend="simulated", preset="sim", seeds="0", n_questions=2, figures=fig,
              build_dir=tmp_path / "nb", site_dir=site)
    assert paper.build(runs=str(tmp_path / "a"), only="00,01,08", **kw) == 0
    first = (fig / "case_study.md").read_text()
    assert paper.build(runs=str(tmp_path / "b"), seeds="1", only="00",
                       **{k: v for k, v in kw.items() if k != "seeds"}) == 0
    out = capsys.readouterr().out
    assert "left off the site: 01_main_results: built" in out
    assert "left off the site: 08_case_study: built" in out
    pages = {p.stem for p in (site / "notebooks").glob("*.html")}
    assert pages == {"00_run_experiments"}
    assert paper.build(runs=str(tmp_path / "b"), seeds="1", only="01",
                       **{k: v for k, v in kw.items() if k != "seeds"}) == 0
    pages = {p.stem for p in (site / "notebooks").glob("*.html")}
    assert pages == {"00_run_experiments", "01_main_results"}
    index = (site / "index.html").read_text()
    stale = re.search(r"Debate `([^`]+)`", first).group(1)  # run a's case study
    assert stale not in index and not list(site.rglob(f"*{stale}*"))
    assert main(["check", "outputs", str(fig), "--only", "00,01"]) == 0
    assert main(["check", "outputs", str(fig), "--only", "00,01,08"]) == 1
    assert "08_case_study: built" in capsys.readouterr().err
