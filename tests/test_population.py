"""Simulated populations as named, versioned data (pear.sim.population), the revision
model fitted to real transitions (pear.sim.revision) and the shipped files
(pear.populations.corpus_fit)."""
from __future__ import annotations

import dataclasses
import io
import json
import tarfile

import numpy as np
import pytest

from pear.sim import revision
from pear.sim import population as pop
from pear.sim.population import Population, RevisionModel, SimParams
from pear.sim.backend import SimulatedBackend

FEATURES = RevisionModel.FEATURES


# ----------------------------------------------------------------- population files

def test_study_is_the_calibrated_defaults_and_keeps_the_model_id():
    study = pop.load("study")
    assert study.revision is None and study.params == SimParams()
    key = {("gsm8k", "q"): "18"}
    # the study population is today's population: same model id, so the golden records hold
    assert SimulatedBackend(key, population="study").model_id == SimulatedBackend(key).model_id
    be = SimulatedBackend(key, population="study", seed=3)
    assert be.settings()["population"] == {"name": "study", "fingerprint": study.fingerprint}


def test_grounded_file_has_a_fitted_revision_model_with_its_provenance():
    g = pop.load("grounded")
    assert g.revision is not None and g.revision.features == RevisionModel.COLUMNS
    assert set(g.info["revision_se"]) == set(RevisionModel.COLUMNS)
    assert all(s > 0 for s in g.info["revision_se"].values())
    assert g.info["sources"]["revision"].startswith("fitted by maximum likelihood")
    assert g.info["fitted_on"][0]["file"] == "dylan-math-gpt35.tgz"
    # DyLAN's MMLU teams, one source protocol each, enter the fit with the answer-space terms
    assert [(f["file"], f["protocol"]) for f in g.info["fitted_on"][1:]] == \
        [("dylan-mmlu-gpt35.tgz", f"dylan-mmlu-{n}") for n in (2, 3, 4, 7)]
    # erring agents facing a few letters agree more than facing a free answer: measured apart
    assert g.params.wrong_focus_options > 0.8 > 0.3 > g.params.wrong_focus
    # the MATH-only fit it replaced is shipped beside it, without the answer-space terms
    m = pop.load("grounded-math")
    assert m.revision.features == FEATURES and m.params.wrong_focus_options is None
    assert [f["file"] for f in m.info["fitted_on"]] == ["dylan-math-gpt35.tgz"]
    assert len(g.info["fitted_on"][0]["sha256"]) == 64
    share = g.info["diagnostics"]["same_wrong_answer_share"]
    focus, n_wrong = pop.wrong_answers_for(share, SimParams().n_wrong)
    assert (g.params.wrong_focus, g.params.n_wrong) == (pytest.approx(focus, abs=1e-3), n_wrong)
    assert pop.same_wrong_share(g.params.wrong_focus, n_wrong) == pytest.approx(share, abs=2e-3)
    # everything but the wrong answers' agreement and the revision model is the study's
    assert dataclasses.replace(g.params, wrong_focus=SimParams().wrong_focus,
                               n_wrong=SimParams().n_wrong, wrong_focus_options=None,
                               wrong_focus_many=None) == SimParams()
    # on ten options, pinned by DebateLedger's figures, not carried from DyLAN's four
    from pear.populations.corpus_fit import WRONG_FOCUS_MANY
    assert g.params.wrong_focus_many == WRONG_FOCUS_MANY == 0.75
    assert g.info["sources"]["wrong_focus_many"].startswith("pinned by published figures")
    assert m.params.wrong_focus_many is None
    share = g.info["diagnostics"]["same_wrong_answer_share_options"]  # 3 wrong letters of 4
    assert g.info["diagnostics"]["options"] == 4
    assert pop.same_wrong_share(g.params.wrong_focus_options, 3) == pytest.approx(share, abs=2e-3)
    be = SimulatedBackend({("gsm8k", "q"): "18"}, population="grounded")
    assert be.model_id != SimulatedBackend({("gsm8k", "q"): "18"}).model_id


def test_bad_population_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown population 'nosuch'.*study"):
        pop.load("nosuch")
    data = Population("mine", SimParams(wrong_focus=0.5)).to_json()
    data["params"]["wrong_focus"] = 0.6  # edited by hand: the fingerprint no longer matches
    bad = tmp_path / "mine.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="fingerprint .* does not match"):
        pop.load(str(bad))
    good = Population("mine", SimParams(wrong_focus=0.5),
                      RevisionModel((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 0.5))
    path = good.write(tmp_path / "ok.json")
    back = pop.load(str(path))
    assert back.fingerprint == good.fingerprint and back.revision == good.revision
    with pytest.raises(ValueError, match="no such file"):
        pop.load(str(tmp_path / "missing.json"))


def test_shipped_study_file_is_what_the_code_writes():
    from pear.populations.corpus_fit import study_population
    assert pop.load("study").fingerprint == study_population().fingerprint


# ----------------------------------------------------------------- the revision model

def test_design_names_candidates_and_features():
    names, X = RevisionModel.design("4", ["5", "5", "4", ""], gold="7", round=2, skill=0.5)
    assert names == ["4", "5", RevisionModel.NEW_RIGHT, RevisionModel.NEW_WRONG]
    assert X.shape == (4, len(RevisionModel.COLUMNS)) and not X[:, len(FEATURES):].any()
    X = X[:, :len(FEATURES)]  # a free answer: the answer-space columns are 0
    np.testing.assert_allclose(X, [[1, 1 / 3, 0, 0, 0, 1, 0, 0, 0.5, 0, 0],  # own, 1 of 3 heard
                                   [0, 2 / 3, 0, 0, 0, 0, 0, 0, 0, 0, 0],   # heard twice
                                   [0, 0, 1, 0.5, 1, 0, 0, 1, 0, 0.5, 0],   # another, right
                                   [0, 0, 0, 0, 1, 0, 0, 0, 0, 0.5, 0]])   # another, wrong
    names, X = RevisionModel.design(None, ["5"], gold="5", round=1, skill=-1.0)
    assert names == ["5", RevisionModel.NEW_WRONG]  # one answer heard: share_x_single
    np.testing.assert_allclose(X[:, :len(FEATURES)], [[0, 1, 1, -1, 0, 0, 0, 0, 0, 0, 1],
                                   [0, 0, 0, 0, 1, 0, 0, 0, 0, -1, 0]])
    names, X = RevisionModel.design("5", ["5"], gold="5", round=3, skill=2.0)
    assert names == ["5", RevisionModel.NEW_WRONG]  # own right: own_x_right, own_x_skill
    np.testing.assert_allclose(X[:, :len(FEATURES)], [[1, 1, 1, 2, 0, 2, 1, 0, 2, 0, 1],
                                                      [0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0]])
    # a multiple-choice question: own, share, new, right, own x round, new x right again
    names, X = RevisionModel.design("B", ["A"], gold="C", round=2, skill=0.0, options=True)
    assert names == ["B", "A", RevisionModel.NEW_RIGHT, RevisionModel.NEW_WRONG]
    np.testing.assert_allclose(X[:, len(FEATURES):],
                               [[1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0],  # own, round 2
                                [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # heard
                                [0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0],  # another, right
                                [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]])  # another, wrong
    m = RevisionModel((1.0, -2.0), features=("own", "own_x_options"))
    assert m.vector[RevisionModel.COLUMNS.index("own_x_options")] == -2.0
    assert m.probabilities(X)[0] == pytest.approx(
        np.exp(-1) / (np.exp(-1) + 3))  # own 1 - 2, the other three 0
    alone, agree = (RevisionModel.COLUMNS.index(f) for f in RevisionModel.HEARD_FEATURES)
    _, X = RevisionModel.design("B", [], gold="C", round=1, skill=0.0)  # heard nothing
    assert X[:, alone].tolist() == [1, 0, 0] and not X[:, agree].any()
    _, X = RevisionModel.design("B", ["B", "B"], gold="C", round=1, skill=0.0)  # unanimous
    assert X[:, agree].tolist() == [1, 0, 0] and not X[:, alone].any()
    _, X = RevisionModel.design("B", ["B", "A"], gold="C", round=1, skill=0.0)  # not unanimous
    assert not X[:, agree].any()
    # new_x_right_x_agree: another answer, right, after several answers heard, all its own
    several = RevisionModel.COLUMNS.index("new_x_right_x_agree")
    names, X = RevisionModel.design("B", ["B", "B"], gold="C", round=1, skill=0.0)
    assert names[1] == RevisionModel.NEW_RIGHT and X[:, several].tolist() == [0, 1, 0]
    for heard in (["B"], ["B", "A"], []):  # one heard alone, a split, nothing heard
        assert not RevisionModel.design("B", heard, gold="C", round=1, skill=0.0)[1][
            :, several].any()
    # fresh: the share of the answers heard that are j and were given in this round
    fresh = RevisionModel.COLUMNS.index("fresh")
    names, X = RevisionModel.design("4", ["5", "6", "5"], gold="7", round=1, skill=0.0,
                                    fresh=[True, True, False])
    assert names == ["4", "5", "6", RevisionModel.NEW_RIGHT, RevisionModel.NEW_WRONG]
    np.testing.assert_allclose(X[:, fresh], [0, 1 / 3, 1 / 3, 0, 0])
    np.testing.assert_allclose(X[:, RevisionModel.COLUMNS.index("share")], [0, 2 / 3, 1 / 3, 0, 0])
    assert not X[:, fresh + 1].any()  # fresh_x_single: several answers heard
    _, stale = RevisionModel.design("4", ["5", "6", "5"], gold="7", round=1, skill=0.0)
    assert not stale[:, fresh].any()  # flags not given: nothing heard is fresh
    np.testing.assert_array_equal(np.delete(X, fresh, 1), np.delete(stale, fresh, 1))
    _, X = RevisionModel.design("4", ["5"], gold="7", round=2, skill=0.0, fresh=[True])
    assert X[:, fresh].tolist() == X[:, fresh + 1].tolist() == [0, 1, 0, 0]  # heard alone


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_backend_draws_revisions_with_the_models_probabilities(weight):
    """The simulator draws from the fitted model's probabilities on the same choice set (one
    definition of the candidates, of "heard" and of skill); a critique weight below 1
    discounts ``share`` (PEAR's protocol as an assumption) and nothing else.  A heard answer
    given in this round (``fresh``, a protocol whose agents answer in turn) counts as the fit
    counts it."""
    feats = FEATURES + ("fresh",)
    model = RevisionModel((1.0, 2.0, 0.5, 0.3, -1.0, 0.0, 1.2, -2.0, -0.2, -0.3, -0.8, -1.5),
                          weight, feats)
    p = Population("t", SimParams(), model)
    be = SimulatedBackend({("gsm8k", "q"): "18"}, population=p)
    q = be.question({"dataset": "gsm8k", "question_id": "q"})
    meta = {"dataset": "gsm8k", "question_id": "q", "agent": 0, "round": 1,
            "own": {"canonical": "19", "answer": "19", "confidence": 3},
            "critiques": [{"source_answer": "18", "fresh": True}, {"source_answer": "18"},
                          {"source_answer": "17"}]}
    names, X = model.design("19", ["18", "18", "17"], "18", 1, be.population_skill("gsm8k"),
                            fresh=[True, False, False])
    X[:, FEATURES.index("share")] *= weight
    want = dict(zip(names, RevisionModel(model.coef, features=feats).probabilities(X)))
    stale = dict(zip(names, model.probabilities(RevisionModel.design(
        "19", ["18", "18", "17"], "18", 1, be.population_skill("gsm8k"))[1])))
    assert want["18"] < stale["18"] - 0.05  # its fresh term (-1.5 here) counts
    if weight != 1:
        assert want["18"] < dict(zip(names, model.probabilities(
            RevisionModel.design("19", ["18", "18", "17"], "18", 1,
                                 be.population_skill("gsm8k"), fresh=[True, False, False])[1]
        )))["18"]
    rng = np.random.default_rng(0)
    n = 20000
    got: dict[str, int] = {}
    for _ in range(n):
        answer, _conf = be.revise_choice(q, meta, rng.random(3))
        got[answer] = got.get(answer, 0) + 1
    assert set(got) - {"19", "18", "17"} <= set(q.wrong)  # another wrong answer is a wrong one
    for name in ("19", "18", "17"):
        assert got.get(name, 0) / n == pytest.approx(want[name], abs=0.01)
    other = n - sum(got.get(a, 0) for a in ("19", "18", "17"))
    assert other / n == pytest.approx(want[RevisionModel.NEW_WRONG], abs=0.01)


def test_erring_agents_of_a_multiple_choice_question_agree_with_wrong_focus_options():
    """A population with ``wrong_focus_options`` gives the attractive wrong letter with that
    probability on a question with options, and ``wrong_focus`` on a free answer; unset, it
    changes neither the fingerprint nor the model id."""
    from pear.sim.backend import _Question
    p = dataclasses.replace(SimParams(), wrong_focus=0.1, wrong_focus_options=0.9)
    be = SimulatedBackend({("mmlu", "q"): "A"}, population=pop.Population("p", p))
    q = _Question("A", 0.0, ("B", "C", "D"))
    u = np.random.default_rng(0).random((4000, 2))
    u[:, 0] = 1.0  # every solve fails
    for meta, focus in (({"n_choices": 4}, 0.9), ({"n_choices": 0}, 0.1)):
        got = [be.solve(q, {"dataset": "mmlu", "question_id": "q", "agent": 0, **meta}, x)[0]
               for x in u]
        assert got.count("B") / len(got) == pytest.approx(focus, abs=0.02)
    many = pop.Population("p", dataclasses.replace(p, wrong_focus_many=0.5))
    be = SimulatedBackend({("mmlu", "q"): "A"}, population=many)
    q = _Question("A", 0.0, tuple("BCDEFGHIJ"))
    for meta, focus in (({"n_choices": 10}, 0.5), ({"n_choices": 4}, 0.9)):
        got = [be.solve(q, {"dataset": "mmlu", "question_id": "q", "agent": 0, **meta}, x)[0]
               for x in u]
        assert got.count("B") / len(got) == pytest.approx(focus, abs=0.02)
    assert many.fingerprint != pop.Population("p", p).fingerprint
    unset = pop.Population("s", SimParams())
    assert unset.fingerprint == pop.load("study").fingerprint
    assert dataclasses.replace(p, wrong_focus_options=None) != p
    assert pop.Population("p", p).fingerprint != pop.Population(
        "p", dataclasses.replace(p, wrong_focus_options=None)).fingerprint


def _synthetic(seed: int, n_sets: int = 1500) -> revision.Transitions:
    rng = np.random.default_rng(seed)
    X, chosen, group = [], [], []
    beta = np.array([1.5, 2.0, 0.8, 0.4, -1.0, 0.3, 1.0, -1.0, -0.2, -0.3, -0.8])
    for g in range(n_sets):
        heard = list(rng.choice(["a", "b", "c"], size=rng.integers(1, 5)))
        _, x = RevisionModel.design(str(rng.choice(["a", "b"])), heard,
                                    str(rng.choice(["a", "d"])), int(rng.integers(1, 4)), float(rng.normal()))
        v = x[:, :len(beta)] @ beta  # the columns of RevisionModel.FEATURES
        p = np.exp(v - v.max())
        p /= p.sum()
        y = np.zeros(len(x), bool)
        y[rng.choice(len(x), p=p)] = True
        X.append(x)
        chosen.append(y)
        group += [g] * len(x)
    return revision.Transitions(np.vstack(X), np.concatenate(chosen), np.asarray(group),
                                np.arange(n_sets) // 3, ["s"] * n_sets,
                                [str(i) for i in range(n_sets // 3 + 1)])


def test_fit_is_the_conditional_logit_mle_of_statsmodels():
    from statsmodels.discrete.conditional_models import ConditionalLogit
    tr = _synthetic(1, n_sets=400)
    ours = revision.fit(tr)
    ref = ConditionalLogit(tr.chosen.astype(float), tr.X[:, :len(FEATURES)], groups=tr.group).fit(
        method="newton", maxiter=100, disp=0)
    np.testing.assert_allclose(ours.model.coef, ref.params, atol=1e-6)
    np.testing.assert_allclose(ours.se, ref.bse, rtol=1e-5)
    assert ours.converged and ours.loglik == pytest.approx(ref.llf, abs=1e-6)


def test_bootstrap_is_seeded_and_spreads_like_the_standard_errors():
    tr = _synthetic(2)
    a = revision.bootstrap(tr, k=60, seed=7)
    b = revision.bootstrap(tr, k=60, seed=7)
    assert [f.model.coef for f in a] == [f.model.coef for f in b]
    assert a[0].model.coef != a[1].model.coef
    sd = np.std([f.model.coef for f in a], axis=0)
    se = np.asarray(revision.fit(tr).se)
    assert np.all(sd / se > 0.65) and np.all(sd / se < 1.45)


def _record(rounds, qset="Algebra", did="d"):
    """A record in the shape of an imported debate: ``rounds`` lists per round the agents'
    (answer, correct); everyone hears everyone."""
    n = len(rounds[0])
    out = []
    for r, agents in enumerate(rounds):
        edges = [[s, t] for t in range(n) for s in range(n) if s != t] if r else []
        out.append({"agents": [{"agent": i, "answer": a, "canonical": a, "correct": c}
                               for i, (a, c) in enumerate(agents)],
                    "edges": edges, "critiques": []})
    return {"debate_id": did, "model": "m", "dataset": "math", "rounds_data": out,
            "imported": {"extra": {"subject": qset}}}


def test_transitions_from_records():
    rec = _record([[("1", True), ("2", False), ("3", False)],
                   [("1", True), ("1", True), ("4", False)]])
    tr = revision.transitions([rec])
    assert tr.n_choices == 3 and tr.accuracy == {"m/math/Algebra": pytest.approx(1 / 3)}
    skill = pop.skill_of(1 / 3)
    starts = list(tr.starts) + [len(tr.group)]
    sets = [(tr.X[a:b, :len(FEATURES)], tr.chosen[a:b]) for a, b in zip(starts, starts[1:])]
    # agent 0 keeps its right answer; heard 2 and 3
    X0, y0 = sets[0]
    np.testing.assert_allclose(X0[0], [1, 0, 1, skill, 0, 0, 1, 0, skill, 0, 0])
    assert y0.tolist() == [True, False, False, False]
    # agent 1 adopts 1 (right, heard once of two)
    X1, y1 = sets[1]
    np.testing.assert_allclose(X1[y1][0], [0, 0.5, 1, skill, 0, 0, 0, 0, 0, 0, 0])
    # agent 2 produces another wrong answer
    X2, y2 = sets[2]
    np.testing.assert_allclose(X2[y2][0], [0, 0, 0, 0, 1, 0, 0, 0, 0, skill, 0])


def test_same_wrong_answer_share():
    recs = [_record([[("1", True), ("2", False), ("2", False), ("3", False)]], did="a"),
            _record([[("5", False), ("6", False)]], did="b")]
    share, pairs = revision.same_wrong_answer(recs)
    assert pairs == 4 and share == pytest.approx(1 / 4)  # (2,2) of (2,2),(2,3),(2,3),(5,6)
    assert pop.same_wrong_share(pop.wrong_focus_for(0.6, 8), 8) == pytest.approx(0.6)
    focus, n = pop.wrong_answers_for(0.08, 8)  # below 1/8: more wrong answers, alike
    assert n == 13 and pop.same_wrong_share(focus, n) == pytest.approx(0.08)


def test_fit_recovers_the_simulated_populations_revision_model():
    """PEAR debates of a population with a known revision model: the fit on their records
    finds its coefficients (the fit and the simulation share one definition of the
    features, and "heard" = the sources of the critiques received)."""
    from pear.core.engine import Engine
    from pear.runs.grid import answer_key, preset
    from pear.runs.jobs import jobs
    from pear.tasks import grading
    truth = RevisionModel((2.0, 2.5, 1.0, 0.5, -2.0, 0.5, 1.0, -1.0, -0.3, 0.3, -1.0))
    exp = preset("sim", datasets=("gsm8k", "math500"), methods=("clique",), n_questions=60,
                 seeds=(0,), rounds=3, full_datasets=())
    recs = []
    for n in (3, 2):  # 2 agents: each hears a single answer (share_x_single)
        e = dataclasses.replace(exp, debate=dataclasses.replace(
            exp.debate, json_mode=False, n_agents=n, k=min(exp.debate.k, n - 1)))
        be = SimulatedBackend(answer_key(e), population=Population("t", SimParams(), truth),
                              n_agents=n)
        recs += list(Engine(be, e.debate, task_for=grading.get).run(jobs(e)))
    acc = {f"simulated/{d}": pop.expected_accuracy(be.params, d) for d in ("gsm8k", "math500")}
    for r in recs:
        r["model"] = "simulated"
    tr = revision.transitions(recs, accuracy=acc)
    f = revision.fit(tr)
    z = (np.asarray(f.model.coef) - truth.coef) / np.asarray(f.se)
    assert f.n_choices > 1500 and np.all(np.abs(z) < 4), dict(zip(FEATURES, z.round(2)))


# ----------------------------------------------------------------- the corpus in a .tgz

def test_dylan_reader_reads_a_tgz_of_json_files(tmp_path):
    from pear.store.readers import reader
    chat = [{"role": "user", "content": "Problem: 1+1?\nAnswer:"},
            {"role": "assistant", "content": "The answer is $\\boxed{2}$."}]
    docs = {"dylan/b.json": {"Problem: What is $2+2$?\nAnswer:": [[chat, chat], "4", 1, "Algebra"]},
            "dylan/a.json": {"Problem: What is $3+3$?\nAnswer:": [[chat], "6", 2, "Geometry"]},
            "dylan/notes.txt": "not JSON"}
    path = tmp_path / "corpus.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, doc in docs.items():
            raw = doc.encode() if isinstance(doc, str) else json.dumps(doc).encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    got = list(reader("dylan").read(path))
    assert [d.question for d in got] == ["What is $3+3$?", "What is $2+2$?"]  # name order
    assert [d.extra["subject"] for d in got] == ["Geometry", "Algebra"]
    junk = tmp_path / "junk.tgz"
    junk.write_bytes(b"not an archive")
    bad = list(reader("dylan").read(junk))
    assert len(bad) == 1 and "cannot read it as a .tgz archive" in bad[0].reason


def test_check_names_what_differs_from_the_shipped_files():
    """The reproducibility check (``pear population shipped check``, run by CI on the shipped corpus)
    reports a grounded population fitted on other debates and each of the ensemble's bootstrap
    draws refitted on them, and passes study."""
    from pear.populations import checks, corpus_fit, draws
    tr = _synthetic(3, n_sets=300)
    g = corpus_fit.CorpusFit(revision.fit(tr), 0.3, 40, tr, (), 0.0)
    problems = checks.check(g, g_math=g)
    assert len(problems) == 2 + draws.ENSEMBLE_K
    assert problems[0].startswith("grounded: fingerprint") and "own: shipped" in problems[0]
    assert problems[1].startswith("grounded-math: fingerprint") and "own: shipped" in problems[1]
    problems = problems[:1] + problems[2:]
    assert [p.split(":")[0] for p in problems[1:]] == \
        [f"ensemble/grounded-b{i}" for i in range(draws.ENSEMBLE_K)]
    assert all("own: shipped" in p for p in problems[1:])


def test_shipped_draws_are_the_ensembles_populations(tmp_path):
    """The shipped bootstrap draws (data/populations/ensemble/) are what the ensemble uses
    without a refit: the first k of seed 0 from the shipped grounded; another seed, more
    than are shipped or another point: none (a refit); a file edited by hand: an error."""
    from pear.populations import checks, corpus_fit, draws
    k, seed = draws.ENSEMBLE_K, draws.ENSEMBLE_SEED
    shipped = draws.shipped_draws(k, seed)
    assert [p.name for p in shipped] == [f"grounded-b{i}" for i in range(k)]
    assert len({p.fingerprint for p in shipped}) == k
    point = pop.load("grounded")
    for p in shipped:  # grounded with its revision model redrawn, nothing else
        assert p.params == point.params and p.revision != point.revision
        assert p.info["diagnostics"]["bootstrap"] == {"seed": seed, "draw": int(p.name[10:])}
    assert [p.fingerprint for p in draws.shipped_draws(3, seed)] == \
        [p.fingerprint for p in shipped[:3]]
    assert [p.fingerprint for p in draws.bootstrap_populations(3, seed)] == \
        [p.fingerprint for p in shipped[:3]]
    assert draws.shipped_draws(k + 1, seed) is None
    assert draws.shipped_draws(k, seed + 1) is None
    # written elsewhere from another point: not the shipped grounded's draws
    other = point.with_params(wrong_focus=0.5)
    draws.write_draws(shipped[:2], seed, other, where=tmp_path)
    assert draws.shipped_draws(2, seed, where=tmp_path) is None
    draws.write_draws(shipped[:2], seed, point, where=tmp_path)
    assert [p.fingerprint for p in draws.shipped_draws(2, seed, where=tmp_path)] == \
        [p.fingerprint for p in shipped[:2]]
    record = json.loads((tmp_path / "ensemble.json").read_text())
    record["populations"]["grounded-b1"] = shipped[2].fingerprint
    (tmp_path / "ensemble.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="grounded-b1.json'?: fingerprint .*ensemble.json says"):
        draws.shipped_draws(2, seed, where=tmp_path)


def test_fit_says_when_the_data_do_not_identify_the_model():
    # every agent keeps a right answer and the wrong ones always move: separated data
    recs = [_record([[("1", True), ("2", False), ("2", False)],
                     [("1", True), ("1", True), ("1", True)]], did=str(i)) for i in range(5)]
    f = revision.fit(revision.transitions(recs))
    assert not f.converged


def test_clustered_standard_errors_match_the_bootstrap_over_debates():
    """Choice sets of one debate share a random effect: the bootstrap over debates spreads like
    the clustered standard errors, wider than the model-based ones."""
    rng = np.random.default_rng(5)
    base = _synthetic(4, n_sets=1800)
    X = base.X.copy()
    debate = np.arange(base.n_choices) // 9  # 200 debates of 9 choice sets
    shift = rng.normal(0, 3.0, debate.max() + 1)[debate][base.group]  # a debate's own stickiness
    chosen = np.zeros_like(base.chosen)
    beta = np.array([1.5, 2.0, 0.8, 0.4, -1.0, 0.3, 1.0, -1.0, -0.2, -0.3, -0.8])
    for a, b in zip(base.starts, list(base.starts[1:]) + [len(base.group)]):
        v = X[a:b, :len(beta)] @ beta + shift[a:b] * X[a:b, 0]
        p = np.exp(v - v.max())
        chosen[a + rng.choice(b - a, p=p / p.sum())] = True
    tr = revision.Transitions(X, chosen, base.group, debate, base.qset,
                              [str(i) for i in range(debate.max() + 1)])
    f = revision.fit(tr)
    sd = np.std([b.model.coef for b in revision.bootstrap(tr, k=60, seed=1)], axis=0)
    own = FEATURES.index("own")
    assert f.se_cluster[own] > 1.3 * f.se[own], (f.se_cluster[own], f.se[own], sd[own])
    assert 0.7 < sd[own] / f.se_cluster[own] < 1.4, (f.se_cluster[own], f.se[own], sd[own])


def test_docs_say_where_every_parameter_came_from():
    from pear.paths import REPO_ROOT
    text = (REPO_ROOT / "docs" / "populations.md").read_text()
    grounded = pop.load("grounded")
    for f in dataclasses.fields(SimParams):
        name = f.name if not f.name.startswith("ease_") else "ease_*"
        assert f"`{name}`" in text, f.name
        assert f.name in grounded.info["sources"]
    for f in grounded.revision.features:
        assert f"`{f}` | {grounded.revision.as_dict()['coef'][f]:+.3f}" in text, f


def test_sequential_agents_hear_this_rounds_answers_of_those_before_them():
    rec = _record([[("1", True), ("2", False)], [("2", False), ("2", False)]])
    simultaneous = revision.transitions([rec])
    sequential = revision.transitions([rec], sequential=True)
    # agent 1 in round 1: heard agent 0's round-0 answer 1 (simultaneous) or its round-1
    # answer 2 (in turn), and kept its own 2
    last = simultaneous.starts[1]
    assert simultaneous.X[last:][simultaneous.chosen[last:]][0].tolist()[:2] == [1, 0]
    last = sequential.starts[1]
    assert sequential.X[last:][sequential.chosen[last:]][0].tolist()[:2] == [1, 1]
    fresh = RevisionModel.COLUMNS.index("fresh")  # what it heard was given in this round
    assert sequential.X[last:][sequential.chosen[last:]][0][fresh] == 1
    assert not simultaneous.X[:, fresh].any() and not sequential.X[:last, fresh].any()
    both = revision.concat([simultaneous, sequential])
    assert both.n_choices == 4 and both.group.tolist() == sorted(both.group.tolist())
    assert both.debate.tolist() == [0, 0, 1, 1]


def test_transitions_read_the_answers_a_prompt_quoted():
    """An import's ``heard`` entries (DyLAN quotes agents a ranker dropped) are the heard set:
    three answers, one of them from an agent the record does not keep."""
    def agent(i, canon, ok, heard=None):
        a = {"agent": i, "answer": canon, "canonical": canon, "correct": ok}
        if heard is not None:
            a["heard"] = [{"canonical": c, "correct": k} for c, k in heard]
        return a
    rec = {"debate_id": "d", "model": "m", "dataset": "math", "rounds_data": [
        {"agents": [agent(0, "3", False), agent(1, "4", True)], "edges": []},
        {"agents": [agent(0, "4", True, [("4", True), ("5", False), ("5", False)]),
                    agent(1, "4", True, [("3", False), ("5", False), ("5", False)])],
         "edges": [[1, 0], [0, 1]]}]}
    tr = revision.transitions([rec], accuracy={"m/math": 0.5})
    assert tr.n_choices == 2
    first = tr.X[tr.group == 0]
    # agent 0: own 3 (wrong), heard 4 (right) once and 5 twice, another wrong
    np.testing.assert_allclose(first[:, FEATURES.index("share")], [0, 1 / 3, 2 / 3, 0])
    np.testing.assert_allclose(first[:, FEATURES.index("right")], [0, 1, 0, 0])
    assert first[tr.chosen[tr.group == 0], FEATURES.index("right")].tolist() == [1]
    # in turn: the quotes are the other agents in index order (agent 1 heard 0, 2 and 3, the
    # last two not in the record), and agent 0 had answered this round before agent 1
    fresh = RevisionModel.COLUMNS.index("fresh")
    in_turn = revision.transitions([rec], accuracy={"m/math": 0.5}, sequential=True)
    assert not in_turn.X[in_turn.group == 0][:, fresh].any()  # agent 0 hears nobody's new one
    np.testing.assert_allclose(in_turn.X[in_turn.group == 1][:, fresh], [0, 1 / 3, 0, 0])
    del rec["rounds_data"][1]["agents"][0]["heard"], rec["rounds_data"][1]["agents"][1]["heard"]
    edges_only = revision.transitions([rec], accuracy={"m/math": 0.5})
    assert edges_only.X[edges_only.group == 0][:, FEATURES.index("share")].tolist() == [0, 1, 0]


def test_predictive_table_holds_a_model_against_data_drawn_from_it():
    """On choice sets whose choices the model itself drew, every situation's predicted
    shares are the real ones within sampling error; a model without ``own_x_right`` is
    caught keeping a right answer too rarely."""
    tr = _synthetic(3, 6000)
    beta = np.array([1.5, 2.0, 0.8, 0.4, -1.0, 0.3, 1.0, -1.0, -0.2, -0.3, -0.8])
    table = revision.predictive_table(tr, RevisionModel(tuple(beta)))
    assert table["n"].sum() == 6000
    shares = table[["keep", "adopt", "another"]].sum(axis=1)
    np.testing.assert_allclose(shares, 1.0)
    np.testing.assert_allclose(table[["keep_pred", "adopt_pred", "another_pred"]].sum(axis=1), 1.0)
    assert table["z_right"].abs().max() < 4, table
    wrong = revision.predictive_table(tr, RevisionModel(tuple(np.r_[beta[:6], 0, beta[7:]])))
    gap = wrong.loc[("free", "right"), "keep"] - wrong.loc[("free", "right"), "keep_pred"]
    assert gap["other"] > 0.05 and gap["split"] > 0.05, gap
