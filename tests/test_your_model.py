"""Notebook 18's glue (pear.paper.your_model): the twin of a small simulated run, its grid run
and resumed beside a build's run, the power table recomputed by hand, the claims ledger on
the twin's grid, and the notebook's outputs registered in the build."""
from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pear.analysis.stats import mcnemar_sample_size
from pear.claims.evaluate import load_claims
from pear.paper import ensemble, registry, your_model
from pear.paths import twin_dir
from pear.runs.grid import preset
from pear.store import manifest
from pear.store.records import iter_records
from test_twin import _du_run, _planted


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """60 GSM8K debates of a planted population under Du et al.'s protocol, imported."""
    return _du_run(tmp_path_factory.mktemp("small"), _planted(), 60, "small")


@pytest.fixture(scope="module")
def twin(small_run):
    return your_model.fit(str(small_run))


@pytest.fixture(scope="module")
def twin_grid(twin, tmp_path_factory):
    root = twin_dir(tmp_path_factory.mktemp("runs") / "sim-simulated")
    return your_model.run(twin, root, 5, workers=1)


def test_the_twin_of_a_small_run_and_where_it_came_from(small_run, twin):
    p = twin.population
    assert p.name == "twin-small" and p.info["describes"] == "a twin of small"
    diag = p.info["diagnostics"]
    assert diag["debates"] == 60 and diag["converged"]
    # the round-0 accuracy is the run's: the mean over debates of its agents' share right
    recs = list(iter_records(small_run))
    by_hand = np.mean([np.mean([a["correct"] for a in r["rounds_data"][0]["agents"]])
                       for r in recs])
    assert diag["round0_accuracy"]["gsm8k"] == pytest.approx(by_hand, abs=1e-4)
    table = your_model.table_twin(twin, ("gsm8k", "math500"))
    for k, v in diag["effects"].items():
        assert table.loc[f"effect: {k}", "Estimate"] == v["estimate"]
        assert table.loc[f"effect: {k}", "SE"] == v["se"] > 0
    # the twin's agents are as strong on GSM8K as the run's (its ease was set from them)
    assert table.loc["round-0 agent accuracy, expected (GSM8K)", "Estimate"] == \
        pytest.approx(by_hand, abs=0.01)
    text = your_model.describe_twin(twin)
    assert text.startswith(f"twin-small ({p.fingerprint[:12]}): a twin of small; 60 debates")
    assert "pooled toward grounded" in text
    assert your_model.caption(twin, "The twin.") == \
        "The twin: simulated agents, a twin of small; population twin-small."


def test_source_runs_names_a_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run directory .*nope"):
        your_model.source_runs(f"{tmp_path}, {tmp_path / 'nope'}")
    assert your_model.source_runs(f" {tmp_path} ,") == [tmp_path]


def test_the_grid_is_the_sim_presets_reduced_to_the_twins_methods():
    g = your_model.grid(60)
    sim = preset("sim")
    assert g.datasets == sim.datasets and g.seeds == sim.seeds[:1] == (0,)
    assert g.methods == ("cot_sc", "clique", "random", "pear") and g.n_questions == 60
    assert g.full_datasets == ()
    assert your_model.grid(10 ** 6).n_questions == 200  # at most the sim preset's


def test_the_grid_runs_under_the_twin_file_beside_the_build_and_resumes(twin, twin_grid):
    tg = twin_grid
    assert tg.run_dir.parent.name == "sim-simulated-twin"
    assert tg.run_dir.name == f"twin-small-{twin.population.fingerprint[:8]}"
    assert tg.population_file == tg.run_dir.parent / "populations" / "twin-small.json"
    assert tg.written == 4 * 4 * 5 == len(tg.results.debates)
    named = manifest.read(tg.run_dir)["backend_settings"][0]["population"]
    assert named == {"name": "twin-small", "fingerprint": twin.population.fingerprint}
    again = your_model.run(twin, tg.run_dir.parent, 5, workers=1)
    assert again.written == 0 and len(again.results.debates) == 80


def test_the_power_table_recomputed_by_hand(twin_grid):
    table = your_model.power_table(twin_grid)
    deb = twin_grid.results.debates
    assert list(table.index.get_level_values(0).unique()) == ["CoT-SC", "Clique"]
    assert list(table.loc["Clique"].index) == ["MMLU-Pro", "TruthfulQA", "GSM8K", "MATH-500",
                                              "Pooled"]
    for ds, label in (("gsm8k", "GSM8K"), (None, "Pooled")):
        part = deb if ds is None else deb[deb["dataset"] == ds]
        pear = part[part["method"] == "pear"].set_index(["dataset", "question_id"])["correct"]
        sc = part[part["method"] == "cot_sc"].set_index(["dataset", "question_id"])["correct"]
        sc = sc.loc[pear.index]
        b, c = int((pear & ~sc).sum()), int((~pear & sc).sum())
        row = table.loc[("CoT-SC", label)]
        assert (row["b"], row["c"]) == (b, c)
        assert row["PEAR"] == pytest.approx(pear.mean())
        assert row["Baseline"] == pytest.approx(sc.mean())
        k = 4 if ds is None else 1
        assert row["Questions"] == len(pear) // k == 5
        need = mcnemar_sample_size(b, c, len(pear))
        if need is None:
            assert row["Questions needed"] == "no effect" and row["Seeds of 200"] == "–"
        else:
            assert row["Questions needed"] == math.ceil(need / k)
            assert row["Seeds of 200"] == math.ceil(math.ceil(need / k) / 200)


def test_the_power_table_of_known_pairs_and_no_effect():
    """Two datasets of 10 questions: on A PEAR wins 6 pairs and loses 1 (b=6, c=1); on B
    b == c (no effect)."""
    rows = []
    for ds, pear, other in (("gsm8k", [1] * 7 + [0] * 3, [0] * 6 + [1] * 2 + [0] * 2),
                            ("math500", [1, 0] * 5, [0, 1] * 5)):
        for q in range(10):
            for m, ok in (("pear", pear[q]), ("cot_sc", other[q]), ("clique", other[q])):
                rows.append({"model": "m", "dataset": ds, "seed": 0, "question_id": f"q{q}",
                             "method": m, "correct": bool(ok)})
    res = SimpleNamespace(debates=pd.DataFrame(rows),
                          exp=SimpleNamespace(datasets=("gsm8k", "math500")))
    tg = your_model.TwinGrid(None, res, None, None, 0, 0.0)
    row = your_model.power_table(tg).loc[("CoT-SC", "GSM8K")]
    assert (row["b"], row["c"], row["PEAR"], row["Baseline"]) == (6, 1, 0.7, 0.2)
    # Cohen's h = 2 asin sqrt(6/7) - pi/2 = 0.796: ((1.960 + 0.842) / 0.796)^2 = 12.4 pairs,
    # 7 pairs in 10 questions: 17.7 -> 18 questions
    assert row["Questions needed"] == mcnemar_sample_size(6, 1, 10) == 18
    assert (row["Seeds of 200"], row["Within 5 seeds"]) == (1, "yes")
    none = your_model.power_table(tg).loc[("Clique", "MATH-500")]
    assert (none["b"], none["c"], none["Questions needed"]) == (5, 5, "no effect")
    pooled = your_model.power_table(tg).loc[("CoT-SC", "Pooled")]
    assert (pooled["b"], pooled["c"], pooled["Questions"]) == (11, 6, 10)
    assert pooled["Questions needed"] == math.ceil(mcnemar_sample_size(11, 6, 20) / 2)


def test_the_claims_on_the_twins_grid(twin_grid):
    ledger = your_model.claims(twin_grid, seed=0)
    table = your_model.table_claims(ledger, twin_grid)
    assert list(table.index) == list(load_claims()["id"])
    missing = ensemble.claims_not_run(twin_grid.results.exp)
    # a claim about the fixed topologies is not judged on Clique alone
    assert missing["intro-beats-fixed-all-settings"] == ("star", "chain", "ring")
    at = table["At the study's size (200 questions x 5 seeds)"]
    for (_, r), where, found in zip(ledger.iterrows(), at, table["Finding"]):
        if r["id"] in missing:
            assert found == "not evaluated" and where.startswith(
                "not covered: the twin's grid does not run ")
            continue
        assert found == r["finding"]
        if r["finding"] in ("supported", "contradicted"):
            assert where == "decided at 5 questions"
        elif r["finding"] == "not covered":
            assert where == "not covered by the twin's grid"
        elif r["n_needed"] and not pd.isna(r["n_needed"]):
            k = math.ceil(r["n_needed"] / 200)
            assert where.startswith(("yes: " if r["n_needed"] <= 1000 else "no: ") + f"{k} seed")
    assert not table["Why"].str.startswith("simulated agents:").any()
    text = your_model.describe_claims(table)
    counts = [int(n) for n in re.findall(r"(\d+) (?:decided|more|not)", text)]
    assert len(counts) == 4
    assert sum(counts) == len(table) and text.startswith(f"{len(table)} claims")
    assert your_model.caption(twin_grid, "Claims.") == (
        "Claims: simulated agents, a twin of small; population twin-small; grid: 4 methods x "
        "4 datasets x 5 questions x 1 seed.")


def test_the_notebook_is_registered_with_its_outputs():
    assert "18_your_model" in registry.NOTEBOOKS
    assert registry.EXPECTED_OUTPUTS["18_your_model"] == tuple(
        f"{n}.{ext}" for n in ("your_model_twin", "your_model_power", "your_model_claims")
        for ext in ("tex", "md"))
    assert "18_your_model" not in registry.NOT_FOR_IMPORTED  # its grid is its own: it runs
    assert not registry.entry("18_your_model").runs_the_model  # ... on simulated agents
