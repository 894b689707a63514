"""Metrics on hand-made records with known answers (through the columnar view), on a
simulated run against a direct computation from the records, and on the study's printed
tables."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from pear.analysis import compare, metrics, stats
from pear.store import view
from pear.store.records import RecordWriter
from record_factory import make_record, make_simple


def tables(records):
    return view.from_records(records)


def debates_of(records):
    return tables(records).debates


# The paper's appendix case: one of five agents right at round 0, all five right after round 1.
APPENDIX = make_record([["42", "41", "41", "40", "41"], ["42"] * 5], "42",
                       critiques={1: [(0, 1, "ACCEPT"), (0, 2, "ACCEPT"), (0, 3, "ACCEPT"),
                                      (0, 4, "ACCEPT")]},
                       influence=[[0.0] * 5, [0.5, 0, 0, 0, 0]])
# Its case study over three rounds (appendix: "W2R = 4, R2W = 0"): the four wrong agents all
# switch to the right answer in round 1 and nobody moves after.
APPENDIX_3 = make_record([["42", "41", "41", "40", "41"]] + [["42"] * 5] * 3, "42",
                         question_id="case")


# -- accuracy ---------------------------------------------------------------------------

def test_accuracy_is_mean_and_std_across_seeds_not_flags():
    # seed accuracies 2/4, 3/4, 4/4 -> mean 0.75, sample std exactly 0.25
    recs = [make_simple(q < k, method="pear", seed=s, question_id=f"q{q}")
            for s, k in enumerate((2, 3, 4)) for q in range(4)]
    acc = metrics.accuracy(debates_of(recs))
    assert acc[["model", "dataset", "method"]].values.tolist() == [["m", "gsm8k", "pear"]]
    row = acc.iloc[0]
    assert row["accuracy"] == pytest.approx(0.75)
    assert row["std"] == pytest.approx(0.25)
    assert row["std"] != pytest.approx(np.std([q < k for k in (2, 3, 4) for q in range(4)], ddof=1))
    assert (row["n_seeds"], row["n_questions"]) == (3, 4)
    per_seed = metrics.seed_accuracy(debates_of(recs))
    assert per_seed["accuracy"].tolist() == [0.5, 0.75, 1.0]


def test_accuracy_with_one_seed_has_zero_std_and_methods_in_table_order():
    recs = [make_simple(True, method=m, question_id=f"q{q}") for m in ("pear", "cot", "clique")
            for q in range(3)] + [make_simple(False, method="cot", question_id="q3")]
    acc = metrics.accuracy(debates_of(recs))
    assert acc["method"].tolist() == ["cot", "clique", "pear"]
    assert acc["std"].tolist() == [0.0, 0.0, 0.0]
    assert acc.set_index("method").loc["cot", "accuracy"] == pytest.approx(0.75)


def test_round_accuracy_follows_the_vote_and_carries_cot_flat():
    recs = [APPENDIX, make_simple(True, method="cot"),
            make_simple(False, method="cot_sc", n_agents=5)]
    t = tables(recs)
    ra = metrics.round_accuracy(t.debates, t.rounds)
    got = {(m, r): a for m, r, a in ra[["method", "round", "accuracy"]].values.tolist()}
    assert got == {("cot", 0): 1.0, ("cot", 1): 1.0, ("cot_sc", 0): 0.0, ("cot_sc", 1): 0.0,
                   ("pear", 0): 0.0, ("pear", 1): 1.0}
    assert ra["round"].dtype.kind == "i"


# -- trajectory diagnostics ---------------------------------------------------------------

def _rates(records):
    t = tables(records)
    return metrics.update_rates(t.debates, t.agent_rounds)


def test_appendix_case_update_counts_and_rates():
    upd = _rates([APPENDIX]).iloc[0]
    assert (upd["updates"], upd["from_wrong"], upd["from_right"]) == (5, 4, 1)
    assert (upd["w2r_count"], upd["r2w_count"]) == (4, 0)
    for kind in ("", "_pooled", "_endpoints"):   # one query: every definition agrees
        assert (upd[f"w2r{kind}"], upd[f"r2w{kind}"], upd[f"net{kind}"]) == (1.0, 0.0, 1.0)


def test_appendix_case_study_over_three_rounds():
    # 4 wrong -> right transitions and none right -> wrong (the appendix's W2R = 4, R2W = 0);
    # the only wrong agent-rounds are the four of round 0, so W2R per query = 4 / 4
    upd = _rates([APPENDIX_3]).iloc[0]
    assert (upd["w2r_count"], upd["r2w_count"], upd["from_wrong"]) == (4, 0, 4)
    assert upd["from_right"] == 1 + 5 + 5   # right at r-1 in rounds 1, 2, 3
    assert (upd["w2r"], upd["r2w"], upd["net"]) == (1.0, 0.0, 1.0)
    assert (upd["w2r_endpoints"], upd["r2w_endpoints"]) == (1.0, 0.0)


# Three questions where the definitions differ (5 agents; "1" right, "0" wrong):
#   qa: one round; agent 0 wrong -> right, the rest stay right.
#       W2R 1/1, R2W 0/4.
#   qb: two rounds; round 0: agents 0-3 wrong, 4 right; round 1: agent 0 right, agent 4
#       wrong; round 2: agent 0 wrong again, agent 4 right again.
#       r=1: from wrong 4 (1 -> right), from right 1 (1 -> wrong); r=2: from wrong 4
#       (agent 4 -> right), from right 1 (agent 0 -> wrong).  W2R 2/8, R2W 2/2.
#       Endpoints: initially wrong 0-3 all end wrong (0/4); initially right 4 ends right (0/1).
#   qc: one round, everyone right throughout: no wrong agent-round, W2R undefined (skipped);
#       R2W 0/5.
QA = make_record([["0", "1", "1", "1", "1"], ["1"] * 5], "1", question_id="qa")
QB = make_record([["0", "0", "0", "0", "1"], ["1", "0", "0", "0", "0"],
                  ["0", "0", "0", "0", "1"]], "1", question_id="qb")
QC = make_record([["1"] * 5, ["1"] * 5], "1", question_id="qc")


def test_per_query_pooled_and_endpoint_rates_differ_as_defined():
    upd = _rates([QA, QB, QC]).iloc[0]
    assert upd["queries"] == 3
    # per query: W2R mean(1, 2/8) over qa, qb (qc skipped); R2W mean(0, 1, 0)
    assert upd["w2r"] == pytest.approx((1 + 2 / 8) / 2)
    assert upd["r2w"] == pytest.approx(1 / 3)
    assert upd["net"] == pytest.approx((1 + 2 / 8) / 2 - 1 / 3)
    # pooled: (1 + 2) / (1 + 8) and (0 + 2 + 0) / (4 + 2 + 5)
    assert upd["w2r_pooled"] == pytest.approx(3 / 9)
    assert upd["r2w_pooled"] == pytest.approx(2 / 11)
    # endpoints: W2R mean(1/1, 0/4) (qc skipped); R2W mean(0/4, 0/1, 0/5)
    assert upd["w2r_endpoints"] == pytest.approx(0.5)
    assert upd["r2w_endpoints"] == 0.0
    assert upd["net_endpoints"] == pytest.approx(0.5)


def test_a_group_with_no_defined_query_is_nan_and_one_without_updates_zero():
    upd = _rates([QC, make_simple(True, method="cot")]).set_index("method")
    assert np.isnan(upd.loc["pear", "w2r"]) and upd.loc["pear", "r2w"] == 0.0
    assert upd.loc["cot", ["w2r", "r2w", "net", "w2r_pooled", "w2r_endpoints"]].tolist() \
        == [0.0] * 5


def test_update_rates_are_conditional_on_the_starting_state():
    # rounds 0 -> 1: agents 0,1 wrong -> right, agent 2 wrong stays, agent 3 right -> wrong,
    # agent 4 right stays; rounds 1 -> 2: nobody changes.
    rec = make_record([["0", "0", "0", "1", "1"], ["1", "1", "0", "0", "1"],
                       ["1", "1", "0", "0", "1"]], "1")
    upd = _rates([rec]).iloc[0]
    assert upd["updates"] == 10
    assert (upd["from_wrong"], upd["w2r_count"]) == (5, 2)   # 3 wrong at r0, 2 wrong at r1
    assert (upd["from_right"], upd["r2w_count"]) == (5, 1)
    assert upd["w2r"] == pytest.approx(2 / 5) and upd["r2w"] == pytest.approx(1 / 5)
    assert upd["net"] == pytest.approx(1 / 5)
    # endpoints: agents 0, 1 of the 3 initially wrong end right; agent 3 of 2 ends wrong
    assert upd["w2r_endpoints"] == pytest.approx(2 / 3)
    assert upd["r2w_endpoints"] == pytest.approx(1 / 2)


def test_critique_rates_on_a_handmade_set():
    # round-0 answers A B B C C; confidences 5 3 1 4 2.  Edges of round 1:
    #   0->1 ACCEPT (A vs B, cross), 1->2 REJECT (B vs B), 2->3 undelivered (B vs C, cross),
    #   3->4 ACCEPT (C vs C)
    rec = make_record([["A", "B", "B", "C", "C"], ["A", "A", "B", "C", "C"]], "A",
                      confidences=[[5, 3, 1, 4, 2], [5, 3, 1, 4, 2]],
                      critiques={1: [(0, 1, "ACCEPT"), (1, 2, "REJECT"), (2, 3, None),
                                     (3, 4, "ACCEPT")]})
    t = tables([rec])
    out = metrics.critique_rates(t.debates, t.edges).iloc[0]
    assert (out["edges"], out["decisions"]) == (4, 3)
    assert out["acceptance"] == pytest.approx(2 / 3)
    assert out["cross_answer"] == pytest.approx(2 / 4)
    assert out["source_confidence"] == pytest.approx((1.0 + 0.5 + 0.0 + 0.75) / 4)


def test_cross_answer_compares_canonical_answers():
    # raw answers differ only in case and spaces; the canonical forms agree
    rec = make_record([["Paris", " paris"], ["Paris", " paris"]], "paris",
                      canonical=lambda a: a.strip().lower(), critiques={1: [(0, 1, "REJECT")]})
    t = tables([rec])
    assert t.edges["cross_answer"].tolist() == [False]
    assert metrics.critique_rates(t.debates, t.edges).iloc[0]["cross_answer"] == 0.0


@pytest.mark.parametrize("vector, expected", [
    ([0.2] * 5, 1.0), ([0.0] * 5, 0.0), ([0.0, 0.7, 0.0, 0.0, 0.0], 0.0),
    ([0.3, 0.3, 0.0, 0.0], math.log(2) / math.log(4)), ([0.5], 0.0),
])
def test_influence_entropy(vector, expected):
    assert metrics.influence_entropy(vector) == pytest.approx(expected)


@given(st.lists(st.floats(0, 1), min_size=2, max_size=8), st.randoms(use_true_random=False))
def test_influence_entropy_is_bounded_and_permutation_invariant(vector, rnd):
    h = metrics.influence_entropy(vector)
    shuffled = list(vector)
    rnd.shuffle(shuffled)
    assert 0.0 <= h <= 1.0
    assert metrics.influence_entropy(shuffled) == pytest.approx(h, abs=1e-12)
    assert metrics.influence_entropy([2 * v for v in vector]) == pytest.approx(h, abs=1e-9)


def test_influence_entropy_rejects_negative_influence():
    with pytest.raises(ValueError, match="non-negative"):
        metrics.influence_entropy([0.1, -0.1])


def test_diagnostics_match_the_study_conventions_for_methods_without_rounds():
    recs = [APPENDIX, make_simple(True, method="cot"), make_simple(True, method="cot_sc",
                                                                   n_agents=5)]
    t = tables(recs)
    diag = metrics.diagnostics(t.debates, t.agent_rounds, t.edges).set_index("method")
    assert list(diag.columns[2:9]) == list(compare.load_paper("diagnostics").columns[1:])
    for m in ("cot", "cot_sc"):
        assert diag.loc[m, ["w2r", "r2w", "net"]].tolist() == [0.0, 0.0, 0.0]
        assert diag.loc[m, ["acceptance", "cross_answer", "source_confidence"]].isna().all()
    assert diag.loc["cot", "influence_entropy"] == 0.0
    assert diag.loc["cot_sc", "influence_entropy"] == 1.0
    pear = diag.loc["pear"]
    assert (pear["w2r"], pear["r2w"], pear["net"], pear["acceptance"]) == (1.0, 0.0, 1.0, 1.0)
    assert pear["cross_answer"] == 1.0 and pear["source_confidence"] == 0.5
    assert pear["influence_entropy"] == 0.0   # one-hot final influence


def test_macro_average_is_unweighted_over_settings():
    df = pd.DataFrame({"model": ["a", "b", "a"], "dataset": ["d", "d", "e"],
                       "method": ["pear"] * 3, "w2r": [0.3, 0.6, np.nan]})
    assert metrics.macro_average(df)["w2r"].tolist() == [pytest.approx(0.45)]


# -- cost ---------------------------------------------------------------------------------

def test_costs_per_example():
    recs = [make_record([["1"]], "1", question_id="a", tokens=(100, 50, 20), calls=10,
                        parse_failures=1),
            make_record([["1"]], "1", question_id="b", tokens=(200, 50, 0), calls=10)]
    c = metrics.costs(debates_of(recs)).iloc[0]
    assert c["tokens_per_example"] == 200 and c["prompt_tokens"] == 150
    assert c["completion_tokens"] == 50 and c["cached_tokens"] == 10
    assert c["calls_per_example"] == 10 and c["parse_failure_rate"] == pytest.approx(1 / 20)
    assert c["n_debates"] == 2
    assert c["truncation_rate"] == 0.0


def test_truncation_rate_counts_only_records_that_say():
    recs = [make_record([["1"]], "1", question_id="a", calls=10, truncated_calls=3),
            make_record([["1"]], "1", question_id="b", calls=10, truncated_calls=1),
            make_record([["1"]], "1", question_id="c", calls=10)]
    del recs[2]["truncated_calls"]  # as an imported record: truncation not recorded
    assert metrics.costs(debates_of(recs)).iloc[0]["truncation_rate"] == pytest.approx(4 / 20)
    unknown = metrics.costs(debates_of(recs[2:])).iloc[0]
    assert np.isnan(unknown["truncation_rate"])


# -- gains over baselines, on the study's main table --------------------------------------

@pytest.fixture(scope="module")
def paper_acc():
    return compare.to_internal(compare.load_paper("main_results"))


def test_gain_over_best_fixed_recomputes_the_tables_numbers(paper_acc):
    g = metrics.gains(paper_acc)
    assert len(g) == 24
    summary = metrics.gain_summary(g).set_index(["level", "key"])["gain"]
    assert summary["overall", "all"] == pytest.approx(4.229, abs=1e-3)   # README: table 4.2
    by_ds = summary["dataset"]
    assert by_ds.index.tolist() == ["mmlu_pro", "truthfulqa", "gsm8k", "math500"]
    assert by_ds.round(1).tolist() == [3.9, 4.6, 3.1, 5.3]
    llama = g[g["model"] == "Llama-3.1-8B"].set_index("dataset")["gain"]
    assert llama[["mmlu_pro", "gsm8k", "math500"]].round(1).tolist() == [3.0, 2.0, 3.0]
    row = g.set_index(["model", "dataset"]).loc[("Qwen-2.5-14B", "math500")]
    assert row["reference"] == "chain" and row["gain"] == pytest.approx(6.5)


def test_gains_versus_random_and_each_topology(paper_acc):
    vs = metrics.gains_versus(paper_acc).set_index("reference")["gain"]
    assert vs.index.tolist() == ["best_fixed", "random", "clique", "star", "chain", "ring"]
    assert vs["random"] == pytest.approx(5.742, abs=1e-3)   # README: 5.7
    assert vs["chain"] == pytest.approx(6.646, abs=1e-3)    # README: 6.6
    assert vs["best_fixed"] < min(vs.drop("best_fixed"))


def test_gains_reject_a_missing_reference(paper_acc):
    with pytest.raises(ValueError, match="pear_T"):
        metrics.gains(paper_acc, against="pear_T")


# -- Pareto frontier, paired vectors -----------------------------------------

def test_pareto_front():
    tokens = [800, 3100, 24800, 32300, 36700, 36700]
    acc = [0.555, 0.586, 0.681, 0.748, 0.690, 0.748]
    assert metrics.pareto_front(tokens, acc).tolist() == [True, True, True, True, False, False]
    assert metrics.pareto_front([1, 1], [0.5, 0.5]).tolist() == [True, True]


@given(st.lists(st.tuples(st.integers(1, 50), st.integers(0, 20)), min_size=1, max_size=12))
def test_pareto_front_properties(points):
    tokens, acc = map(np.array, zip(*points))
    front = metrics.pareto_front(tokens, acc)

    def dominates(j, i):
        return (tokens[j] <= tokens[i] and acc[j] >= acc[i]
                and (tokens[j] < tokens[i] or acc[j] > acc[i]))
    for i in range(len(points)):
        dominated = any(dominates(j, i) for j in range(len(points)))
        assert front[i] == (not dominated)
    assert front[np.argmax(acc - 1e-6 * tokens)]   # best accuracy, fewest tokens among ties


def test_paired_aligns_on_seed_and_question():
    recs = [make_simple(c, method="pear", seed=s, question_id=q)
            for s, q, c in [(0, "a", True), (0, "b", True), (1, "a", False)]]
    recs += [make_simple(c, method="clique", seed=s, question_id=q)
             for s, q, c in [(1, "a", True), (0, "b", False), (0, "a", True), (0, "z", True)]]
    p = metrics.paired(debates_of(recs), "pear", "clique")
    assert p[["seed", "question_id", "correct_a", "correct_b"]].values.tolist() == [
        [0, "a", 1, 1], [0, "b", 1, 0], [1, "a", 0, 1]]
    with pytest.raises(ValueError, match="'ring'"):
        metrics.paired(debates_of(recs), "pear", "ring")


# -- the study's printed numbers ------------------------------------------------------------

def test_load_paper_names_a_missing_table():
    with pytest.raises(FileNotFoundError, match="'nope'"):
        compare.load_paper("nope")


def test_to_internal_maps_display_names_and_model_spelling():
    df = compare.to_internal(compare.load_paper("full_dataset"))
    assert set(df["dataset"]) == {"truthfulqa", "math500"}
    assert set(df["method"]) == {"cot", "cot_sc", "clique", "star", "chain", "ring", "pear"}
    assert set(df["model"]) == {"Qwen-2.5-14B", "Llama-3.1-8B"}


def test_compare_with_paper_puts_numbers_side_by_side(paper_acc):
    reproduced = paper_acc.assign(model=paper_acc["model"].str.lower(),
                                  accuracy=paper_acc["accuracy"] + 0.01)
    cmp = compare.compare_with_paper(
        reproduced, compare.load_paper("main_results"),
        model_map={m.lower(): m for m in paper_acc["model"].unique()})
    assert len(cmp) == 192
    assert list(cmp.columns) == ["model", "dataset", "method", "reproduced", "paper", "diff"]
    assert cmp["diff"].to_numpy() == pytest.approx(np.full(192, 0.01))
    means = compare.compare_with_paper(paper_acc, compare.load_paper("main_results"),
                                       keys=["method"]).set_index("method")
    assert means.loc["pear", "paper"] == pytest.approx(0.7475)   # README: table 0.748
    assert means.loc["clique", "paper"] == pytest.approx(0.690417, abs=1e-6)
    assert (means["diff"] == 0).all()


def test_rank_agreement_reproduces_the_studys_spearman_table(paper_acc):
    full = compare.to_internal(compare.load_paper("full_dataset"))
    out = stats.rank_agreement(paper_acc, full)
    assert out["dataset"].tolist() == ["truthfulqa"] * 2 + ["math500"] * 2   # table order
    assert (out["n_methods"] == 7).all()   # the full sets ran every method but Random
    printed = compare.to_internal(compare.load_paper("spearman"))   # 0.893 0.893 0.786 0.964
    both = out.merge(printed, on=["dataset", "model"], suffixes=("", "_printed"))
    assert len(both) == 4
    assert both["rho"].to_numpy() == pytest.approx(both["rho_printed"].to_numpy(), abs=5e-4)


def test_rank_agreement_needs_three_shared_methods():
    sub = pd.DataFrame({"model": "m", "dataset": "math500", "method": ["a", "b", "c", "d"],
                        "accuracy": [0.1, 0.2, 0.3, 0.4]})
    full = sub.assign(accuracy=[0.2, 0.1, 0.3, 0.5]).iloc[:3]
    assert stats.rank_agreement(sub, full)[["n_methods", "rho"]].values.tolist() == [[3, 0.5]]
    two = stats.rank_agreement(sub, full.iloc[:2])
    assert two["n_methods"].tolist() == [2] and two["rho"].isna().all()
    flat = stats.rank_agreement(sub, full.assign(accuracy=0.5))   # constant: undefined
    assert flat["rho"].isna().all()


# -- through the store ----------------------------------------------------------------------

def test_metrics_read_a_written_run(tmp_path):
    with RecordWriter(tmp_path / "run") as w:
        for rec in (APPENDIX, make_simple(False, method="cot")):
            w.write(rec)
    v = view.load(tmp_path / "run")
    acc = metrics.accuracy(v.debates).set_index("method")["accuracy"]
    assert acc.to_dict() == {"cot": 0.0, "pear": 1.0}
    diag = metrics.diagnostics(v.debates, v.agent_rounds, v.edges).set_index("method")
    assert diag.loc["pear", "w2r"] == 1.0


# -- against a direct computation from the records ------------------------------------------

def _by_hand(records):
    """W2R / R2W per query and pooled, straight from the records' dicts."""
    out = {}
    for method in {r["method"] for r in records}:
        per_w, per_r, pooled = [], [], np.zeros(4)
        for r in records:
            if r["method"] != method:
                continue
            c = np.zeros(4)  # from wrong, wrong -> right, from right, right -> wrong
            rounds = r["rounds_data"]
            for before, after in zip(rounds, rounds[1:]):
                now = {a["agent"]: a["correct"] for a in after["agents"]}
                for a in before["agents"]:
                    if a["agent"] in now:
                        right, then = a["correct"], now[a["agent"]]
                        c += [not right, not right and then, right, right and not then]
            if c[0]:
                per_w.append(c[1] / c[0])
            if c[2]:
                per_r.append(c[3] / c[2])
            pooled += c
        out[method] = (np.mean(per_w) if per_w else 0.0, np.mean(per_r) if per_r else 0.0,
                       pooled[1] / pooled[0] if pooled[0] else 0.0,
                       pooled[3] / pooled[2] if pooled[2] else 0.0)
    return out


def test_update_rates_on_a_simulated_run_match_a_direct_computation(tmp_path):
    from pear.runs.grid import preset
    from pear.runs.runner import run
    from pear.runs.factory import make_backend
    from pear.store.records import read_records
    exp = preset("sim", datasets=("gsm8k",), methods=("cot", "ring", "pear"), seeds=(0,),
                 n_questions=12, full_datasets=(), rounds=3)
    run(exp, make_backend("simulated", exp=exp), tmp_path, progress=False)
    v = view.load(tmp_path)
    got = metrics.update_rates(v.debates, v.agent_rounds).set_index("method")
    for method, (w2r, r2w, w2r_pooled, r2w_pooled) in _by_hand(read_records(tmp_path)).items():
        row = got.loc[method]
        assert row[["w2r", "r2w", "w2r_pooled", "r2w_pooled"]].to_numpy(float) == \
            pytest.approx([w2r, r2w, w2r_pooled, r2w_pooled], rel=1e-12), method
    assert got.loc["pear", "w2r"] != pytest.approx(got.loc["pear", "w2r_pooled"])
