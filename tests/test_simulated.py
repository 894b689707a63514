"""The simulated population: its documented structure (exchangeable agents, correlated errors,
shared attractive wrong answers, informative but miscalibrated confidence, persuasion signs,
right answers mostly kept), its determinism and pairing, and its calibration machinery."""
from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from pear.populations import calibration
from pear.backends.base import Wrapper
from pear.sim.backend import SimParams, SimulatedBackend
from pear.core.config import DebateConfig
from pear.core.methods import method
from pear.core.engine import Engine, Job
from pear.store.records import TIMING_FIELDS
from pear.paths import PAPER_DIR
from record_factory import arithmetic_questions, make_record


QS = arithmetic_questions(400)
KEY = {(q.dataset, q.id): q.gold for q in QS}
MIXED = SimParams(ease_gsm8k=0.0)  # a population that solves about half of the questions


def _run(params, methods, questions=QS, seeds=(0,), rounds=5, backend_seed=0):
    be = SimulatedBackend(KEY, params=params, seed=backend_seed)
    jobs = [Job(q, method(m), s) for s in seeds for q in questions for m in methods]
    return list(Engine(be, DebateConfig(rounds=rounds)).run(jobs))


def _initial(records):
    """(question, agent) -> (correct, canonical, confidence) of round 0."""
    return np.array([[a["correct"] for a in r["rounds_data"][0]["agents"]] for r in records])


# -- parameters ------------------------------------------------------------------------------

def test_settings_record_every_parameter_and_the_model_id_follows_them():
    be = SimulatedBackend(KEY, seed=3)
    s = be.settings()
    assert s["params"] == dataclasses.asdict(SimParams()) and s["seed"] == 3
    assert SimulatedBackend(KEY, params=MIXED).model_id != be.model_id.replace("-s3", "-s0")
    assert SimulatedBackend(KEY, params={"latency_s": 0.5}).model_id == \
        SimulatedBackend(KEY).model_id  # latency is not part of the population


@pytest.mark.parametrize("field, value", [("wrong_focus", 1.5), ("accept_right", -0.1),
                                          ("accept_hold", -1.0), ("recheck", 2.0),
                                          ("difficulty_sd", float("nan")), ("n_wrong", 0)])
def test_invalid_parameters_name_the_field(field, value):
    with pytest.raises(ValueError, match=f"SimParams.{field}="):
        SimParams(**{field: value})


def test_unknown_question_is_a_clear_error():
    eng = Engine(SimulatedBackend({}), DebateConfig(rounds=1))
    with pytest.raises(KeyError, match="no answer for question"):
        list(eng.run([Job(QS[0], method("cot"), 0)]))


# -- structure of the population ---------------------------------------------------------------

def test_agents_are_exchangeable_no_index_is_stronger():
    correct = _initial(_run(MIXED, ["cot_sc"], seeds=(0, 1)))
    per_agent = correct.mean(axis=0)
    assert 0.3 < per_agent.mean() < 0.7
    assert per_agent.max() - per_agent.min() < 0.06, per_agent
    # skills are drawn per (question, agent): they differ within a question, not by index
    be = SimulatedBackend(KEY, params=MIXED)
    skills = np.array([[be.skill({"dataset": "gsm8k", "question_id": q.id, "agent": i})
                        for i in range(5)] for q in QS])
    assert np.abs(skills.mean(axis=0)).max() < 0.2  # every index has mean skill ~0
    assert skills.std(axis=1).mean() > 0.5  # but agents of one question differ


def test_errors_are_correlated_across_the_agents_of_a_question():
    correct = _initial(_run(MIXED, ["cot_sc"]))
    icc = np.corrcoef(correct[:, 0], correct[:, 1])[0, 1]
    assert icc > 0.4, icc
    independent = dataclasses.replace(MIXED, difficulty_sd=0.0, skill_sd=0.0)
    correct = _initial(_run(independent, ["cot_sc"]))
    assert abs(np.corrcoef(correct[:, 0], correct[:, 1])[0, 1]) < 0.12


def _top_wrong_share(recs):
    """Mean share of a question's wrong agents that hold its most common wrong answer."""
    shares = []
    for r in recs:
        wrong = [a["canonical"] for a in r["rounds_data"][0]["agents"] if not a["correct"]]
        if len(wrong) >= 2:
            shares.append(max(wrong.count(w) for w in set(wrong)) / len(wrong))
    return np.mean(shares)


def test_wrong_agents_share_the_attractive_wrong_answer():
    focused = _top_wrong_share(_run(dataclasses.replace(MIXED, wrong_focus=0.8), ["cot_sc"]))
    scattered = _top_wrong_share(_run(dataclasses.replace(MIXED, wrong_focus=0.0), ["cot_sc"]))
    assert focused > 0.75 and scattered < 0.5


def test_confidence_is_informative_but_miscalibrated():
    recs = _run(MIXED, ["cot_sc"])
    agents = [a for r in recs for a in r["rounds_data"][0]["agents"]]
    right = np.mean([a["confidence"] for a in agents if a["correct"]])
    wrong = np.mean([a["confidence"] for a in agents if not a["correct"]])
    assert right > wrong + 0.4
    assert wrong > 2.5  # wrong answers still come with middling-to-high confidence


def _accept_rate(be, own_conf=3, src_conf=3, src_right=False, tgt_right=False, agree=False):
    gold = "10"
    own = {"canonical": gold if tgt_right else "11", "answer": "", "confidence": own_conf}
    src = own["canonical"] if agree else (gold if src_right else "12")
    crit = {"source_answer": src, "source_confidence": src_conf}
    return np.mean([be.accept(own, crit, gold, u) for u in np.linspace(0, 1, 2001)[1:-1]])


def test_persuasion_grows_with_source_confidence_and_correctness_and_falls_with_target_confidence():
    be = SimulatedBackend(KEY)
    assert _accept_rate(be, src_conf=5) > _accept_rate(be, src_conf=3) > _accept_rate(be, src_conf=1)
    assert _accept_rate(be, own_conf=1) > _accept_rate(be, own_conf=3) > _accept_rate(be, own_conf=5)
    assert _accept_rate(be, src_right=True) > _accept_rate(be)
    # a right target resists a wrong critique more than a wrong one does ...
    assert _accept_rate(be, tgt_right=True) < _accept_rate(be)
    # ... yet a confident wrong critique can still flip a right agent
    confident_wrong = _accept_rate(be, tgt_right=True, src_conf=5, own_conf=1)
    assert confident_wrong > 0.005
    assert confident_wrong > 5 * _accept_rate(be, tgt_right=True, src_conf=1, own_conf=5)


def test_agents_mostly_keep_a_right_answer():
    recs = _run(MIXED, ["random"], questions=QS[:150])
    w2r = calibration.summarize(recs).iloc[0]
    assert w2r["r2w"] < w2r["w2r"]
    assert w2r["r2w"] < 0.2


# -- determinism and pairing -------------------------------------------------------------------

def _strip(rec):
    return {k: v for k, v in rec.items() if k not in TIMING_FIELDS}


def test_runs_are_deterministic_and_the_backend_seed_changes_the_population():
    a = [_strip(r) for r in _run(MIXED, ["random", "pear"], questions=QS[:20], rounds=2)]
    b = [_strip(r) for r in _run(MIXED, ["random", "pear"], questions=QS[:20], rounds=2)]
    c = [_strip(r) for r in _run(MIXED, ["random", "pear"], questions=QS[:20], rounds=2,
                                 backend_seed=1)]
    assert a == b and a != c



@pytest.mark.parametrize("seed", [0, 7, -3, 2**70 + 5])
def test_a_phase_draws_what_each_request_generator_draws(seed):
    """request_uniforms against numpy's PCG64 generator started per request from the state
    (backend seed, request seed) scramble to, written out here: the stream every simulated
    record was drawn from."""
    from pear.sim.backend import request_uniforms
    mask = (1 << 64) - 1

    def mix(x: int) -> int:  # splitmix64's finaliser, on Python integers
        x = (x + 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    request_seeds = [0, 1, 351798682, 2**31 - 1, mask, 12345]
    got = request_uniforms(seed, request_seeds, 11)
    assert got.shape == (6, 11)
    for row, rs in zip(got, request_seeds):
        hi = mix((seed * 0x100000001B3 ^ rs) & mask)
        bits = np.random.PCG64(0)
        state = bits.state
        state["state"] = {"state": (hi << 64) | mix(hi ^ 0xD1B54A32D192ED03),
                          "inc": 0xDA3E39CB94B95BDB}
        bits.state = state
        assert row.tolist() == np.random.Generator(bits).random(11).tolist()
    assert len({tuple(r) for r in got.tolist()}) == 6 and 0 <= got.min() and got.max() < 1

def test_round0_is_shared_by_every_method_and_differs_across_run_seeds():
    recs = _run(MIXED, ["cot", "cot_sc", "random", "clique", "pear"], questions=QS[:30],
                seeds=(0, 1), rounds=1)
    by = {(r["seed"], r["question_id"], r["method"]): r["rounds_data"][0]["agents"] for r in recs}
    for seed in (0, 1):
        for q in QS[:30]:
            r0 = by[(seed, q.id, "cot_sc")]
            assert all(by[(seed, q.id, m)] == r0 for m in ("random", "clique", "pear"))
            assert by[(seed, q.id, "cot")] == r0[:1]
    assert any(by[(0, q.id, "cot_sc")] != by[(1, q.id, "cot_sc")] for q in QS[:30])


class _Recording(Wrapper):
    """The simulated backend, keeping each request's meta and its completion's text."""

    def __init__(self, inner: SimulatedBackend) -> None:
        super().__init__(inner)
        self.seen: list = []

    def observe(self, requests, out, seconds):
        self.seen += [(r.meta, c.text) for r, c in zip(requests, out)]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_malformed_completions_come_at_their_rate_and_are_each_flagged_not_fatal():
    rate, questions = 0.3, QS[:40]
    be = _Recording(SimulatedBackend(KEY, params=dataclasses.replace(MIXED, malformed_rate=rate)))
    recs = list(Engine(be, DebateConfig(rounds=2)).run(
        [Job(q, method("random"), 0) for q in questions]))
    assert len(recs) == len(questions)  # no debate is lost to a malformed completion
    # a well-formed reply is a JSON object; a malformed one is cut short or not JSON at all
    malformed = [(meta, text) for meta, text in be.seen if not _is_json(text)]
    n = len(be.seen)
    assert n > 800
    assert abs(len(malformed) / n - rate) < 4 * math.sqrt(rate * (1 - rate) / n), \
        (len(malformed), n)
    # what each malformed completion leaves flagged in its record: a critique call's reviews
    # of each of its targets (none delivered); an answer, unless the text kept its answer and
    # confidence (pear.core.parsing's documented recovery; "answer" comes first and a
    # confidence is one digit); a revision's decisions on the critiques it received (and so
    # the agent, whatever its answer)
    unreviewed, undecided, answers = set(), set(), set()
    for meta, text in malformed:
        q, r, i = meta["question_id"], meta["round"], meta["agent"]
        if meta["phase"] == "critique":
            unreviewed |= {(q, r, i, v["agent"]) for v in meta["targets"]}
            continue
        sources = [c["source"] for c in meta.get("critiques", ())]
        if sources or not re.search(r'"confidence": \d', text):
            answers.add((q, r, i))
        undecided |= {(q, r, s, i) for s in sources}
    agents, critiques = set(), {}
    for rec in recs:
        q = rec["question_id"]
        for rd in rec["rounds_data"]:
            r = rd["round"]
            agents |= {(q, r, a["agent"]) for a in rd["agents"] if a["parse_error"]}
            critiques.update({(q, r, c["source"], c["target"]): c for c in rd["critiques"]
                              if c["parse_error"]})
    assert answers and answers <= agents
    assert unreviewed and undecided and unreviewed | undecided <= set(critiques)
    assert not any(critiques[k]["delivered"] for k in unreviewed)
    assert all(critiques[k]["decision"] is None for k in undecided)
    assert sum(r["parse_failures"] for r in recs) == len(agents) + len(critiques)
    # (more is flagged than that: an agent left without an answer by a malformed completion
    # may go on answering none) and without malformed completions nothing is
    clean = _run(MIXED, ["random"], questions=questions[:10], rounds=2)
    assert sum(r["parse_failures"] for r in clean) == 0


# -- calibration machinery ---------------------------------------------------------------------

def _record(method, correct_by_round, critiques=(), confidences=None, qid="q0"):
    """A record whose agents are right (answer "1", the gold) or wrong ("0") per round;
    ``critiques``: (source, target, decision) edges of round 1."""
    answers = [["1" if c else "0" for c in row] for row in correct_by_round]
    return make_record(answers, "1", method=method, question_id=qid,
                       confidences=confidences, critiques={1: list(critiques)})


def test_w2r_is_computed_per_query_then_averaged_not_pooled():
    # query A: one wrong agent-round, corrected (W2R 1); query B: four wrong agent-rounds,
    # none corrected (W2R 0).  Per query then averaged: 0.5; pooled it would be 1/5.
    a = _record("random", [[False, True], [True, True]], qid="a")
    b = _record("random", [[False, False], [False, False], [False, False]], qid="b")
    # query C has no wrong agent-round: it has no W2R and is skipped (not counted as 0)
    c = _record("random", [[True, True], [True, False]], qid="c")
    s = calibration.summarize([a, b, c]).iloc[0]
    assert s["w2r"] == pytest.approx(0.5)
    # R2W: A 0/3 right agent-rounds flipped, C 1/2 -> (0 + 0.5) / 2; B has none, skipped
    assert s["r2w"] == pytest.approx(0.25)


def test_critique_diagnostics_follow_the_study_definitions():
    # three agents: 0 and 2 right ("1"), 1 wrong ("0") after round 0
    crit = [(0, 1, "ACCEPT"),   # answers differ; decided, accepted
            (2, 0, None),       # answers agree; not delivered
            (1, 2, "REJECT")]   # answers differ; decided, rejected
    conf = [[5, 3, 1], [3, 3, 3]]
    s = calibration.summarize([_record("random", [[True, False, True], [True, True, True]],
                                       crit, conf)]).iloc[0]
    assert s["acceptance"] == 0.5  # 1 ACCEPT of 2 decided critiques
    assert s["cross_answer"] == pytest.approx(2 / 3)  # 2 of 3 routed edges cross answers
    assert s["source_confidence"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)  # every routed one


def test_cross_answer_has_one_definition():
    """The calibration's cross-answer rate is the analysis's, on the same records."""
    from pear.analysis import metrics
    from pear.store.columns import Rows, to_pandas
    recs = _run(MIXED, ["random", "pear"], questions=QS[:12], rounds=2)
    rows = Rows()
    for i, rec in enumerate(recs):
        rows.add(rec, i, 0, 0)
    t = {k: to_pandas(v, k) for k, v in rows.tables().items()}
    want = metrics.diagnostics(t["debates"], t["agent_rounds"], t["edges"],
                               by=["method"]).set_index("method")["cross_answer"]
    got = calibration.summarize(recs).set_index("method")["cross_answer"]
    assert got.to_dict() == pytest.approx(want.to_dict())
    # and it counts routed edges whose endpoints answered differently in the round before
    crossed = routed = 0
    for rec in (r for r in recs if r["method"] == "pear"):
        for prev, rd in zip(rec["rounds_data"], rec["rounds_data"][1:]):
            canon = {a["agent"]: a["canonical"] for a in prev["agents"]}
            for s, t_ in rd["edges"]:
                routed += 1
                crossed += canon[s] != canon[t_]
    assert got["pear"] == pytest.approx(crossed / routed)


def test_study_targets_fit_baselines_hold_out_topologies_and_leave_pear_out():
    t = calibration.study_targets()
    roles = t.groupby("method")["role"].unique().apply(list).to_dict()
    assert {m for m, r in roles.items() if r == ["fitted"]} == {"cot", "cot_sc", "random"}
    assert {m for m, r in roles.items() if r == ["held-out"]} == {"clique", "star", "chain",
                                                                  "ring"}
    assert not t["method"].str.startswith("pear").any()
    main = pd.read_csv(PAPER_DIR / "main_results.csv")
    want = main[(main["method"] == "Random") & (main["dataset"] == "MATH-500")]["accuracy"].mean()
    got = t[(t["method"] == "random") & (t["dataset"] == "math500")]["study"].item()
    assert got == pytest.approx(want)
    assert set(t[t["method"] == "random"]["quantity"]) == {"accuracy", *calibration.DIAGNOSTICS}


def _fake_simulate(params, methods, **kw):
    """A stand-in population whose numbers are smooth functions of a few parameters."""
    def sig(x):
        return 1 / (1 + np.exp(-x))
    rows = []
    for ds, field in (("gsm8k", "ease_gsm8k"), ("math500", "ease_math500")):
        cot = sig(getattr(params, field))
        for m in methods:
            acc = {"cot": cot, "cot_sc": cot + 0.02 * params.difficulty_sd,
                   "random": cot + params.accept_right / 10}[m]
            row = {"dataset": ds, "method": m, "debates": 10, "accuracy": acc, "round_0": acc}
            if m == "random":
                row.update(w2r=params.recheck, r2w=0.1, acceptance=sig(params.accept_agree),
                           cross_answer=0.5, source_confidence=(params.conf_base - 1) / 4,
                           round_1=acc)
            rows.append(row)
    return pd.DataFrame(rows)


def test_fit_uses_only_the_baselines_and_moves_toward_the_study(monkeypatch):
    asked = []

    def spy(params, methods, **kw):
        asked.append(tuple(methods))
        return _fake_simulate(params, methods, **kw)
    monkeypatch.setattr(calibration, "simulate", spy)
    stages = [("all", ("ease_gsm8k", "ease_math500", "difficulty_sd", "accept_right",
                       "recheck", "accept_agree", "conf_base"), ("cot", "cot_sc", "random"))]
    start = SimParams(ease_gsm8k=0.0, ease_math500=0.0, difficulty_sd=1.0, accept_right=0.1,
                      recheck=0.05, accept_agree=0.0, conf_base=2.0)
    res = calibration.fit(start, stages=stages, budget=120, log=None)
    assert {m for a in asked for m in a} <= set(calibration.FITTED_METHODS)
    p = res.params
    t = calibration.study_targets().set_index(["dataset", "method", "quantity"])["study"]
    assert 1 / (1 + np.exp(-p.ease_gsm8k)) == pytest.approx(t[("gsm8k", "cot", "accuracy")],
                                                            abs=0.02)
    assert p.recheck == pytest.approx(t[("all", "random", "w2r")], abs=0.03)
    assert (p.conf_base - 1) / 4 == pytest.approx(t[("all", "random", "source_confidence")],
                                                  abs=0.03)
    assert res.stages[0]["cost"] < 2.0  # r2w and cross_answer are fixed in the stand-in
    # deterministic: the same start gives the same parameters
    assert calibration.fit(start, stages=stages, budget=120, log=None).params == p


def test_residual_table_and_goals():
    summary = _fake_simulate(SimParams(), ("cot", "cot_sc", "random"))
    table = calibration.residual_table(summary)
    assert set(table["role"]) == {"fitted"}  # no held-out method was simulated
    row = table[(table["dataset"] == "all") & (table["method"] == "cot")].iloc[0]
    assert row["simulated"] == pytest.approx(summary[summary["method"] == "cot"]["accuracy"].mean())
    assert row["diff"] == pytest.approx(row["simulated"] - row["study"])
    g = calibration.goals(table)
    assert g["random_minus_cot_sc"] == pytest.approx(
        summary.groupby("method")["accuracy"].mean().pipe(lambda a: a["random"] - a["cot_sc"]))
    assert set(g) >= {"fitted_accuracy_mae", "w2r_error", "cross_answer_error"}


def test_notebook_14_plot_calibration_marks_fitted_and_held_out():
    """Notebook 14's figure (its own cells): one row of panels per population."""
    from notebook_cells import notebook_functions
    plot_calibration = notebook_functions("14_calibration")["plot_calibration"]
    table = calibration.study_targets().assign(simulated=lambda d: d["study"] + 0.01)
    table = table.assign(diff=0.01, target=table["method"])
    fig = plot_calibration(table)
    texts = [t.get_text() for a in fig.axes for t in a.texts]
    assert texts.count("simulated agents") == 2
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Random (fitted)" in labels and "Chain (held out)" in labels
    two = plot_calibration({"study": table, "grounded": table})
    assert len(two.axes) == 4 and two.axes[2].get_ylabel() == "simulation (grounded)"
    with pytest.raises(ValueError, match="one ax holds one population"):
        plot_calibration({"study": table, "grounded": table}, ax=two.axes[0])


# -- the calibrated regime ---------------------------------------------------------------------

def test_calibrated_defaults_show_the_study_regime():
    """Voting gains little over one agent, debate gains a lot over voting and accuracy rises
    over rounds (small grid: loose bounds; the benchmark measures the residuals)."""
    s = calibration.simulate(SimParams(), ("cot", "cot_sc", "random"), n_questions=40,
                             seeds=(0,), datasets=("gsm8k", "mmlu_pro"))
    acc = s.groupby("method")["accuracy"].mean()
    assert acc["cot_sc"] - acc["cot"] < 0.08
    assert acc["random"] - acc["cot_sc"] > 0.03
    curve = s[s["method"] == "random"][[f"round_{r}" for r in range(6)]].mean().to_numpy()
    assert curve[-1] > curve[0]


def test_the_calibration_grid_sums_up_the_same_on_several_processes():
    """simulate's chunks in worker processes (14 chunks of 3 (seed, question) groups, 2 workers)
    give the summary of one process, value for value."""
    kw = dict(n_questions=10, seeds=(0, 1), datasets=("gsm8k", "mmlu_pro"), chunk_questions=3)
    one = calibration.simulate(SimParams(), ("cot", "random"), workers=1, **kw)
    assert one["debates"].tolist() == [20] * 4
    pd.testing.assert_frame_equal(
        calibration.simulate(SimParams(), ("cot", "random"), workers=2, **kw), one)


@pytest.fixture(scope="module")
def evaluation_goals():
    """The calibration goals of the defaults on 100 questions x 2 seeds per dataset."""
    s = calibration.simulate(SimParams(), (*calibration.FITTED_METHODS,
                                           *calibration.HELD_OUT_METHODS),
                             n_questions=100, seeds=(0, 1))
    return calibration.goals(calibration.residual_table(s))


@pytest.mark.slow
def test_calibrated_defaults_meet_the_goals_on_the_evaluation_grid(evaluation_goals):
    g = evaluation_goals
    assert g["fitted_accuracy_mae"] <= 0.02
    assert g["held_out_accuracy_mae"] <= 0.04
    assert g["random_minus_cot_sc"] >= 0.05
    for d in ("w2r", "r2w", "acceptance", "source_confidence"):
        assert g[f"{d}_error"] <= 0.05, d


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="known limitation: the population sustains less "
                   "disagreement (cross-answer ~0.41) than the study reports (0.498) while "
                   "matching its small voting gain; see docs/design.md 'Calibration on baselines only'")
def test_calibrated_cross_answer_rate_within_tolerance(evaluation_goals):
    assert evaluation_goals["cross_answer_error"] <= 0.05


def test_the_calibration_grid_is_read_from_a_build_that_recorded_it(tmp_path, monkeypatch):
    """A run directory holding the grid's debates under the same population (a simulated
    build's) is summarized instead of running them: the same summary value for value, no
    engine started; a run of another population is not used."""
    from pear.runs import runner
    from pear.runs.grid import answer_key, preset
    kw = dict(n_questions=6, datasets=("gsm8k", "math500"))
    main = preset("sim", methods=("cot", "random", "pear"), seeds=(0, 1), full_datasets=(),
                  **kw)
    be = SimulatedBackend(answer_key(main), population="grounded", n_agents=main.debate.n_agents)
    assert runner.run(main, be, tmp_path / "main", progress=False).complete
    ran = calibration.simulate(None, ("cot", "random"), seeds=(0,), population="grounded", **kw)

    def no_engine(*a, **k):
        raise AssertionError("the grid was run, not read")
    monkeypatch.setattr(calibration, "chunk_runner", no_engine)  # where the grid would run
    read = calibration.simulate(None, ("cot", "random"), seeds=(0,), population="grounded",
                                recorded=tmp_path / "main", **kw)
    pd.testing.assert_frame_equal(read, ran)
    assert read["debates"].tolist() == [6] * 4
    with pytest.raises(AssertionError, match="was run, not read"):  # another population
        calibration.simulate(None, ("cot",), seeds=(0,), population="study",
                             recorded=tmp_path / "main", **kw)
