"""The open studies (notebooks 09-12): variants differ in one setting only; tables from runs."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

from pear.paper import beyond
from pear.paths import DATA_DIR
from pear.paper.study import load_results


@pytest.fixture(scope="module")
def tiny():
    return beyond.preset_experiment("beyond", seeds="0", n_questions=2)


def test_variants_change_one_setting_and_keep_the_grid(tiny):
    temps = beyond.temperature_variants(tiny)
    assert [v.router.tau for k, v in temps.items() if k != "Random"] == list(beyond.TAUS)
    assert temps["Random"].methods == ("random",)
    stops = beyond.stop_variants(tiny)
    assert [v.debate.stop for v in stops.values()] == list(beyond.STOP_RULES)
    pops = beyond.population_variants(tiny)
    assert pops["honest"].debate.roles == ()
    assert pops["adversarial"].debate.roles[1] == "adversarial"
    for group in (temps, stops, pops):
        for v in group.values():
            assert (v.datasets, v.seeds, v.n_questions, v.full_datasets) == \
                (tiny.datasets, tiny.seeds, tiny.n_questions, ())
            assert dataclasses.replace(v.debate, stop="none", roles=()) == \
                dataclasses.replace(tiny.debate, stop="none", roles=())


def test_variants_are_recorded_beside_the_run_never_inside_it(tmp_path, tiny):
    from pear.store.records import read_records
    main = tmp_path / "sim-simulated"
    exp = dataclasses.replace(tiny, datasets=("gsm8k",))
    variant = {"consensus": beyond.stop_variants(exp)["consensus"]}
    res = beyond.run_variants("simulated", variant, main)["consensus"]
    where = tmp_path / "sim-simulated-studies" / "consensus"
    assert beyond.variant_dir(main, "consensus") == where
    assert not main.exists() and sorted(p.name for p in tmp_path.iterdir()) == \
        ["sim-simulated-studies"]
    recs = read_records(where)
    assert len(recs) == len(res.debates) == 2 * len(beyond.STOP_METHODS)


def test_smoke_studies_grid_is_one_dataset_and_seed():
    exp = beyond.preset_experiment("smoke")
    assert exp.datasets == ("gsm8k",) and exp.seeds == (0,) and exp.debate.n_agents == 3


def test_the_studies_grid_with_methods_of_ones_own():
    """Notebook 15's grid: the studies' grid with the methods given, in table order; an
    unknown name is one error naming it."""
    exp = beyond.preset_experiment("smoke", methods=["clique", "pear", "random"])
    assert exp.methods == ("clique", "random", "pear") and exp.datasets == ("gsm8k",)
    assert beyond.preset_experiment("beyond").methods == beyond.ROBUST_METHODS
    with pytest.raises(Exception, match="no_such_router"):
        beyond.preset_experiment("smoke", methods=["pear", "no_such_router"])


def test_study_numbers_come_from_the_printed_tables():
    lifts = beyond.study_lifts()
    assert lifts["source_confidence"] == pytest.approx(0.172)
    assert lifts["cross_answer"] == pytest.approx(0.178)
    t = pd.read_csv(DATA_DIR / "paper/main_results.csv") \
        .pivot_table(index=["dataset", "model"], columns="method", values="accuracy")
    gap = beyond.study_gap_pear_random()
    assert gap == pytest.approx(0.057417, abs=1e-6)
    assert gap == pytest.approx((t["PEAR"] - t["Random"]).mean())


def test_tables_from_simulated_runs(tmp_path, tiny):
    exp = dataclasses.replace(tiny, datasets=("gsm8k", "truthfulqa"))
    stops = beyond.run_variants("simulated", beyond.stop_variants(exp), tmp_path)
    table = beyond.early_stop_table(stops)
    assert len(table) == 16 and table["pareto"].any()
    full = table[table["stop"] == "none"]
    assert (full["rounds"] == exp.debate.rounds).all() and full["mcnemar_p_vs_full"].isna().all()
    early = table[table["stop"] != "none"]
    assert (early["tokens_per_example"].to_numpy() <=
            np.tile(full["tokens_per_example"].to_numpy(), 3) + 1e-9).all()
    pops = beyond.run_variants("simulated", beyond.population_variants(exp), tmp_path)
    rob = beyond.robustness_table(pops)
    adv = rob[rob["population"] == "adversarial"]
    assert len(adv) == len(beyond.ROBUST_METHODS) and adv["drop"].notna().all()
    assert (adv["low"] <= adv["drop"]).all() and (adv["drop"] <= adv["high"]).all()
    checks = beyond.theory_checks(pops["honest"], exp.router, n_states=20)
    assert len(checks) == 20
    assert checks["equivariance_score"].max() < 1e-12
    assert checks["I_spread_circulant"].max() < 1e-12
    # rerunning is a resume: nothing new is written, the same tables come back
    again = beyond.early_stop_table(beyond.run_variants("replay", beyond.stop_variants(exp),
                                                          tmp_path))
    assert again.equals(table)


def test_round_curves_carry_a_stopped_debates_last_vote(tmp_path, tiny):
    from pear.analysis import metrics
    exp = dataclasses.replace(tiny, datasets=("gsm8k",), n_questions=6)
    runs = beyond.run_variants("simulated", {"consensus": beyond.stop_variants(exp)[
        "consensus"]}, tmp_path)
    res = runs["consensus"]
    assert (res.debates["rounds"] < exp.debate.rounds).any()  # some debates stopped
    curves = metrics.round_accuracy(res.debates, res.rounds)
    final = metrics.accuracy(res.debates).set_index("method")["accuracy"]
    last = curves[curves["round"] == exp.debate.rounds].set_index("method")["accuracy"]
    assert set(last.index) == set(beyond.STOP_METHODS)
    assert np.allclose(last.reindex(final.index), final)
