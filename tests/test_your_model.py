"""Notebook 18 (simulate your model) and what it takes from the package: the twin of a small
simulated run, its grid run and resumed under the twin's file beside a build's run
(pear.paper.ensemble.population_file, run_under), the discordant pairs McNemar's test reads
(pear.analysis.stats.mcnemar_table on metrics.paired), the ledger on the twin's grid, and the
notebook's outputs registered in the build.  The notebook's tables themselves are checked by
the simulated build (tests/test_notebooks.py)."""
from __future__ import annotations

import numpy as np
import pytest

from pear.analysis import metrics
from pear.analysis.stats import mcnemar_table
from pear.claims.evaluate import ledger, load_claims
from pear.paper import ensemble, registry, study
from pear.paths import beside
from pear.populations.twin import fit_twin
from pear.runs.grid import preset
from pear.sim.population import expected_accuracy
from pear.store import manifest
from pear.store.records import iter_records
from test_twin import _du_run, _planted

METHODS = ("cot_sc", "clique", "random", "pear")  # the notebook's grid


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """60 GSM8K debates of a planted population under Du et al.'s protocol, imported."""
    return _du_run(tmp_path_factory.mktemp("small"), _planted(), 60, "small")


@pytest.fixture(scope="module")
def twin(small_run):
    return fit_twin([small_run])


@pytest.fixture(scope="module")
def twin_grid(twin, tmp_path_factory):
    """The notebook's grid at 5 questions, under the twin, beside a build's run."""
    root = beside(tmp_path_factory.mktemp("runs") / "sim-simulated", "twin")
    p = twin.population
    exp = ensemble.grid("sim", 5, methods=METHODS)
    out = root / f"{p.name}-{p.fingerprint[:8]}"
    s = ensemble.run_under(exp, ensemble.population_file(p, root), out, workers=1)
    return exp, out, s, study.load_results(out, exp, "subset")


def test_the_twin_of_a_small_run_is_as_strong_as_its_agents(small_run, twin):
    p = twin.population
    assert p.name == "twin-small" and p.info["describes"] == "a twin of small"
    diag = p.info["diagnostics"]
    assert diag["debates"] == 60 and diag["converged"]
    assert all(v["se"] > 0 for v in diag["effects"].values())
    # the round-0 accuracy is the run's: the mean over debates of its agents' share right
    recs = list(iter_records(small_run))
    by_hand = np.mean([np.mean([a["correct"] for a in r["rounds_data"][0]["agents"]])
                       for r in recs])
    assert diag["round0_accuracy"]["gsm8k"] == pytest.approx(by_hand, abs=1e-4)
    # the twin's agents are as strong on GSM8K as the run's (its ease was set from them)
    assert expected_accuracy(p.params, "gsm8k") == pytest.approx(by_hand, abs=0.01)


def test_a_missing_run_directory_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not a run directory: .*nope"):
        fit_twin([tmp_path / "nope"])


def test_the_grid_is_the_sim_presets_reduced_to_the_twins_methods():
    g = ensemble.grid("sim", 60, methods=METHODS)
    sim = preset("sim")
    assert g.datasets == sim.datasets and g.seeds == sim.seeds[:1] == (0,)
    assert g.methods == METHODS and g.n_questions == 60 and g.full_datasets == ()
    assert ensemble.grid("sim", 10 ** 6, methods=METHODS).n_questions == 200  # the preset's


def test_the_grid_runs_under_the_twin_file_beside_the_build_and_resumes(twin, twin_grid):
    exp, out, s, res = twin_grid
    p = twin.population
    assert out.parent.name == "sim-simulated-twin"
    assert s.written == 4 * 4 * 5 == len(res.debates)
    named = manifest.read(out)["backend_settings"][0]["population"]
    assert named == {"name": "twin-small", "fingerprint": p.fingerprint}
    file = ensemble.population_file(p, out.parent)
    assert file == out.parent / "populations" / "twin-small.json"
    again = ensemble.run_under(exp, file, out, workers=1)
    assert again.written == 0 and again.complete


def test_the_discordant_pairs_counted_by_hand(twin_grid):
    """What the notebook's power table reads: b (PEAR right, CoT-SC wrong) and c per
    dataset, from mcnemar_table on metrics.paired."""
    _, _, _, res = twin_grid
    deb = res.debates
    pairs = metrics.paired(deb, "pear", "cot_sc")
    for ds in ("gsm8k", None):
        part = deb if ds is None else deb[deb["dataset"] == ds]
        pear = part[part["method"] == "pear"].set_index(["dataset", "question_id"])["correct"]
        sc = part[part["method"] == "cot_sc"].set_index(["dataset", "question_id"])["correct"]
        sc = sc.loc[pear.index]
        got = pairs if ds is None else pairs[pairs["dataset"] == ds]
        _, test = mcnemar_table(got["correct_a"], got["correct_b"])
        assert (test.b, test.c) == (int((pear & ~sc).sum()), int((~pear & sc).sum()))
        assert len(got) == len(pear) == (20 if ds is None else 5)


def test_the_ledger_on_the_twins_grid(twin_grid):
    exp, _, _, res = twin_grid
    table = ledger(res, None, rng=0)
    assert list(table["id"]) == list(load_claims()["id"])
    missing = ensemble.claims_not_run(exp)
    # a claim about the fixed topologies is not judged on Clique alone
    assert missing["intro-beats-fixed-all-settings"] == ("star", "chain", "ring")
    # simulated agents: why not evidence is a field, the reason the finding's own
    judged = table[table["verdict"] == "not evidence"]
    assert len(judged) and (judged["not_evidence"] == "simulated").all()
    assert not table["reason"].str.startswith("simulated agents:").any()


def test_the_notebook_is_registered_with_its_outputs():
    e = registry.entry("18_your_model")
    assert e.outputs == tuple(
        f"{n}.{ext}" for n in ("your_model_twin", "your_model_power", "your_model_claims")
        for ext in ("tex", "md"))
    assert not e.not_for_imported  # its grid is its own: it runs
    assert not e.runs_the_model  # ... on simulated agents
