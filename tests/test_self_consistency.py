"""Self-consistency at equal compute: ``sc@K`` shares the engine's round-0 samples."""
import pytest

from pear.sim.backend import SimulatedBackend
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job
from pear.catalog.labels import method_order as ordered
from pear.core.methods import is_self_consistency, method
from record_factory import arithmetic_questions

QS = arithmetic_questions(8)
KEY = {(q.dataset, q.id): q.gold for q in QS}


def _records(names, n=5):
    eng = Engine(SimulatedBackend(KEY, seed=3, n_agents=n), DebateConfig(n_agents=n, rounds=1,
                                                                          k=2))
    jobs = [Job(q, method(m), 0) for q in QS for m in names]
    return {(r["method"], r["question_id"]): r for r in eng.run(jobs)}


def _answers(rec):
    return [a["answer"] for a in rec["rounds_data"][0]["agents"]]


def test_sc5_holds_the_answers_of_cot_sc_and_larger_k_extends_them():
    recs = _records(["cot_sc", "sc@5", "sc@12", "sc@3"])
    for q in QS:
        sc5, base = recs[("sc@5", q.id)], recs[("cot_sc", q.id)]
        assert _answers(sc5) == _answers(base)
        assert sc5["calls"] == base["calls"] == 5
        assert sc5["tokens"] == base["tokens"]
        sc12 = recs[("sc@12", q.id)]
        assert sc12["n_agents"] == 12 and sc12["calls"] == 12 and sc12["rounds"] == 0
        assert _answers(sc12)[:5] == _answers(base)  # the first K samples are shared
        assert _answers(recs[("sc@3", q.id)]) == _answers(base)[:3]
    # twelve samples are not twelve copies: the extra agents answer on their own
    assert any(len(set(_answers(recs[("sc@12", q.id)]))) > 1 for q in QS)


def test_sc_names_order_and_bounds():
    assert is_self_consistency("sc@40") and not is_self_consistency("cot_sc")
    assert ordered(["pear", "sc@40", "clique", "sc@10", "cot_sc", "cot"]) == \
        ["cot", "cot_sc", "sc@10", "sc@40", "clique", "pear"]
    assert method("sc@64").kind == "sample"
    for bad in ("sc@0", "sc@65", "sc@x"):
        with pytest.raises(ValueError, match="unknown method"):
            method(bad)


def test_sc_runs_in_a_grid_and_validates(tmp_path):
    from pear.runs.grid import answer_key, preset
    from pear.runs.runner import run
    from pear.store.validate import validate
    exp = preset("sim", datasets=("gsm8k",), methods=("cot_sc", "sc@10", "pear"), seeds=(0,),
                 n_questions=3, full_datasets=(), rounds=1)
    run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=False)
    result = validate(tmp_path)
    assert result.findings.ok, result.report()
    assert result.debates == 9


# ------------------------------------------------------------------ SC at equal compute
# (notebook 07's own functions, run through tests/notebook_cells.py)

def _nb():
    from notebook_cells import notebook_functions
    return notebook_functions("07_cost_pareto")


def _frontier():
    """A hand-built setting: SC at K = 5, 10, 20 costing 1000, 2000, 4000 tokens with
    accuracies 0.5, 0.6, 0.8 over 10 questions, and a debate costing 3000 tokens."""
    import pandas as pd
    rows = []
    correct = {5: [1] * 5 + [0] * 5, 10: [1] * 6 + [0] * 4, 20: [1] * 8 + [0] * 2}
    for k, tokens in ((5, 1000), (10, 2000), (20, 4000)):
        for q in range(10):
            rows.append({"model": "m", "dataset": "gsm8k", "seed": 0, "question_id": f"q{q}",
                         "method": "cot_sc" if k == 5 else f"sc@{k}", "n_agents": k,
                         "tokens": tokens, "correct": bool(correct[k][q])})
    for q in range(10):
        rows.append({"model": "m", "dataset": "gsm8k", "seed": 0, "question_id": f"q{q}",
                     "method": "pear", "n_agents": 5, "tokens": 3000, "correct": q < 9})
    return pd.DataFrame(rows)


def test_sc_sizes_and_methods():
    import pandas as pd
    nb = _nb()
    assert (nb["sc_size"]("sc@20", 5), nb["sc_size"]("cot_sc", 5), nb["sc_size"]("pear", 5)) \
        == (20, 5, None)
    assert nb["sc_methods"](pd.DataFrame({"method": ["pear", "sc@40", "sc@10", "cot_sc"]})) \
        == ("sc@10", "sc@40")


def test_interpolation_on_a_hand_built_frontier():
    nb = _nb()
    interpolation_weights, sc_curve, sc_matched = (
        nb["interpolation_weights"], nb["sc_curve"], nb["sc_matched"])
    assert interpolation_weights([3000.0, 6000.0, 12000.0], 4500.0) == (0, 1, 0.5)
    assert interpolation_weights([3000.0, 6000.0], 9000.0) == (1, 1, 1.0)
    assert interpolation_weights([3000.0, 6000.0], 1000.0) == (0, 0, 0.0)
    curve = sc_curve(_frontier())
    assert curve["K"].tolist() == [5, 10, 20]
    assert curve["accuracy"].tolist() == [0.5, 0.6, 0.8]
    assert interpolation_weights(curve["tokens_per_example"], 3000.0) == (1, 2, 0.5)
    row = sc_matched(_frontier(), n_resamples=2000).iloc[0]
    assert row["method"] == "pear" and row["match"] == "K=10..20"
    assert row["sc_accuracy"] == pytest.approx(0.7)  # halfway between 0.6 and 0.8
    assert row["diff"] == pytest.approx(0.9 - 0.7)
    assert row["low"] <= row["diff"] <= row["high"] and row["n_pairs"] == 10
    assert row["K"] in (10, 20)


def test_a_cot_sc_beside_an_sc_of_the_same_k_counts_once():
    nb = _nb()
    df = _frontier()
    same = df[df["method"] == "cot_sc"].assign(method="sc@5")
    import pandas as pd
    curve = nb["sc_curve"](pd.concat([df, same], ignore_index=True))
    assert curve["K"].tolist() == [5, 10, 20] and curve["method"].iloc[0] == "sc@5"


def test_matching_beyond_the_largest_k_says_so():
    nb = _nb()
    df = _frontier()
    df.loc[df["method"] == "pear", "tokens"] = 9000
    row = nb["sc_matched"](df, n_resamples=500).iloc[0]
    assert row["match"].startswith("above K=20") and row["sc_accuracy"] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="increasing"):
        nb["interpolation_weights"]([2.0, 1.0], 1.5)


def test_the_table_shows_display_names_and_is_empty_without_sc():
    nb = _nb()
    table = nb["table_sc_matched"](_frontier(), n_resamples=200)
    assert table.index.names == ["Model", "Dataset", "Method"] and len(table) == 1
    assert {"Tokens / example", "SC accuracy at these tokens", "Pairs"} <= set(table.columns)
    df = _frontier()
    empty = nb["table_sc_matched"](df[~df["method"].str.startswith(("sc@", "cot_sc"))])
    assert empty.empty and "SC interpolated between" in empty.columns
    with pytest.raises(ValueError, match="no self-consistency"):
        nb["sc_matched"](df[df["method"] == "pear"])
