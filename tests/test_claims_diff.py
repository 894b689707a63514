"""`pear claims-diff`: claims compared across builds (simulated runs of this grid)."""
from __future__ import annotations

import json

import pytest

from pear.claims.diff import diff, read_ledger
from pear.cli import main

# the `study` population, whose seeds at this size move no claim (the diff's mechanics are
# under test here, not a population; simulated runs default to `grounded`)
GRID = ["--preset", "sim", "--backend", "simulated", "--datasets", "gsm8k,mmlu_pro",
        "--n-questions", "40", "--no-full", "--quiet", "--population", "study"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("builds")
    for name, extra in (("a", ["--seeds", "0,1"]), ("b", ["--seeds", "2,3"]),
                        ("c", ["--seeds", "0,1", "--rounds", "1"])):
        assert main(["run", *GRID, *extra, "--out", str(root / name)]) == 0
    return root


def _diff(capsys, a, b) -> str:
    capsys.readouterr()
    assert main(["claims-diff", str(a), str(b)]) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_identical_builds_and_other_seeds_move_no_claim(runs, capsys):
    assert _diff(capsys, runs / "a", runs / "a").startswith("no claim moved")
    # two seeds of one grid: findings may flip at a threshold, but no interval separates
    out = _diff(capsys, runs / "a", runs / "b")
    assert out.startswith("no claim moved between"), out


@pytest.mark.slow
def test_a_changed_parameter_names_the_claims_that_moved(runs, capsys):
    out = _diff(capsys, runs / "a", runs / "c")  # one round instead of five
    assert "claims moved between" in out
    # a fifth of the rounds: PEAR's tokens per example fall far outside the 5-round interval
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("cost-pear-tokens-32.3k"))
    assert "value moved" in line and "[" in line
    # the round-wise claims need a second round: this build cannot decide them any more
    assert "rounds-pear-non-decreasing: coverage changed" in out


def test_saved_ledgers_compare_and_bad_input_is_one_error(tmp_path, capsys):
    ledger = [{"id": "c1", "finding": "supported", "verdict": "supported", "parts": [
        {"label": "gain", "setting": "m / d", "value": 0.05, "low": 0.01, "high": 0.09,
         "verdict": "supported"}]}]
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "claims.json").write_text(json.dumps(ledger))
    assert read_ledger(tmp_path / "x") == ledger
    assert diff(ledger, ledger).empty and diff(ledger, ledger).attrs["flips"] == 0
    assert _diff(capsys, tmp_path / "x", tmp_path / "x" / "claims.json").startswith("no claim")
    # an exact part (no interval) moves when its verdict changes
    other = json.loads(json.dumps(ledger))
    other[0]["parts"][0].update(low=None, high=None, verdict="contradicted")
    ledger[0]["parts"][0].update(low=None, high=None)
    assert diff(ledger, other)["change"].tolist() == ["value moved"]
    (tmp_path / "empty").mkdir()
    assert main(["claims-diff", str(tmp_path / "x"), str(tmp_path / "empty")]) == 2
    assert "neither a figures directory" in capsys.readouterr().err


def test_pear_paper_reaches_the_build(capsys):
    """The CLI calls the build function (not its module): a bad backend is one clear error."""
    assert main(["paper", "--backend", "nope"]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err


def test_the_site_shows_the_claims_that_moved_since_a_previous_build(tmp_path):
    from pear.claims.diff import diff_html
    from pear.paper.publish import previous_diff
    ledger = [{"id": "c1", "finding": "supported", "verdict": "supported", "parts": [
        {"label": "gain <b>", "setting": "m / d", "value": 0.05, "low": 0.01, "high": 0.09,
         "verdict": "supported"}]}]
    moved = json.loads(json.dumps(ledger))
    moved[0]["finding"] = "contradicted"
    moved[0]["parts"][0].update(value=-0.2, low=-0.3, high=-0.1)
    for name, led in (("before", ledger), ("now", moved)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "claims.json").write_text(json.dumps(led))
    fragment = previous_diff(tmp_path / "before", tmp_path / "now")
    assert "1 claims moved" in fragment and "<td>c1</td>" in fragment
    assert "gain &lt;b&gt;" in fragment and "<b>" not in fragment  # model/claim text escaped
    assert "-0.2 [-0.3, -0.1]" in fragment and "0.05 [0.01, 0.09]" in fragment
    assert diff_html(diff(ledger, ledger)).startswith("<p>no claim moved")
    # the build refuses a --previous without a ledger before any notebook runs
    assert main(["paper", "--backend", "simulated", "--preset", "sim",
                 "--previous", str(tmp_path)]) == 2
