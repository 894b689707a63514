"""``pear check outputs DIR`` and ``pear check site DIR``: a finished build checked from the
command line (the CI's checks after each build), on real figures folders and sites."""
from __future__ import annotations

from pear.cli import main
from pear.paper import provenance
from pear.paper.checklist import PAGE
from pear.paper.registry import EXPECTED_OUTPUTS


def _built(fig, names, tmp_path):
    """``fig`` as a build of ``names`` on a run leaves it: every output written, each
    notebook recorded in the build manifest."""
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    params = {"runs_dir": str(run), "preset": "smoke", "backend": "simulated"}
    provenance.start(fig, params, "c0")
    for name in names:
        for f in EXPECTED_OUTPUTS[name]:
            (fig / f).write_text("x")
        provenance.record(fig, name, EXPECTED_OUTPUTS[name], params, "c0")


def test_check_outputs_passes_a_whole_build_and_names_each_missing_output(tmp_path, capsys):
    fig = tmp_path / "figures"
    fig.mkdir()
    _built(fig, ["01_main_results", "08_case_study"], tmp_path)
    assert main(["check", "outputs", str(fig), "--only", "01,08"]) == 0
    assert capsys.readouterr().out == (f"all 8 expected outputs present in {fig}, every one "
                                       "from the last build's run\n")
    (fig / "numbers.tex").unlink()
    (fig / "case_study.md").write_text("")  # empty counts as missing
    assert main(["check", "outputs", str(fig), "--only", "01,08"]) == 1
    assert capsys.readouterr().err == (f"2 of 8 expected outputs missing or empty in {fig}:\n"
                                       "  numbers.tex (from 01_main_results)\n"
                                       "  case_study.md (from 08_case_study)\n")
    # the whole build: every notebook not built here is named with its outputs
    assert main(["check", "outputs", str(fig)]) == 1
    err = capsys.readouterr().err
    assert "  claims.json (from 13_claims)" in err and "main_results.md" not in err


def test_check_outputs_names_outputs_of_another_run_and_a_bad_only(tmp_path, capsys):
    fig = tmp_path / "figures"
    fig.mkdir()
    for f in EXPECTED_OUTPUTS["08_case_study"]:
        (fig / f).write_text("x")
    assert main(["check", "outputs", str(fig), "--only", "08"]) == 1  # of no known run
    assert "no build manifest" in capsys.readouterr().err
    assert main(["check", "outputs", str(fig), "--only", "08,42"]) == 2
    assert capsys.readouterr().err.startswith(
        "pear: error: --only '42' matches no notebook; notebooks: 00_run_experiments, ")


def _site(root):
    for page, text in (("index.html", '<img src="figures/pareto.png"><a href="debates/'
                                      'index.html">debates</a>'),
                       ("debates/index.html", '<script src="data.js"></script>'
                                              '<script src="browser.js"></script>'),
                       ("debates/data.js", ""), ("debates/browser.js", ""),
                       (PAGE, '<a href="index.html">back</a>'), ("figures/pareto.png", "png")):
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(text)


def test_check_site_passes_a_whole_site_and_names_each_problem(tmp_path, capsys):
    site = tmp_path / "site"
    _site(site)
    assert main(["check", "site", str(site)]) == 0
    assert capsys.readouterr().out == f"site {site}: every page and link present\n"
    (site / "figures" / "pareto.png").unlink()
    (site / "debates" / "data.js").unlink()
    assert main(["check", "site", str(site)]) == 1
    assert capsys.readouterr().err == f"{site / 'debates/data.js'} is missing\n"
    (site / "debates" / "data.js").write_text("")
    assert main(["check", "site", str(site)]) == 1
    assert capsys.readouterr().err == "index.html links a missing file: figures/pareto.png\n"
    assert main(["check", "site", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err == f"{tmp_path / 'none' / 'index.html'} is missing\n"
