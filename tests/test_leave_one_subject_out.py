"""Notebook 17's leave-one-out (pear.populations.leave_one_subject_out): a population fitted without one subject of
DyLAN's corpus, held against that subject's debates."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pear.sim import revision
from pear.populations import corpus_fit, leave_one_subject_out


def _chat(question: str, answers: list[str]) -> list[dict[str, str]]:
    chat = [{"role": "user", "content": f"Problem: {question}\nAnswer:"}]
    for r, a in enumerate(answers):
        if r:
            chat.append({"role": "user", "content": "These are the other agents' answers."})
        chat.append({"role": "assistant", "content": f"The answer is $\\boxed{{{a}}}$."})
    return chat


def _corpus(path, n: int = 30) -> dict[str, int]:
    """A DyLAN-format file of two subjects with opposite dynamics: in Algebra the agents keep
    their answers (mostly), in Geometry they give another answer (mostly); Geometry's erring
    agents give one wrong answer in round 0, Algebra's each another."""
    rng = np.random.default_rng(0)
    data = {}
    for subject, stubborn in (("Algebra", True), ("Geometry", False)):
        for i in range(n):
            gold = str(10 * i + (1 if stubborn else 2))
            wrong = ([str(900 + i), str(800 + i)] if stubborn else [str(700 + i)] * 2)
            first = [gold if rng.random() < 0.5 else wrong[0], wrong[0], wrong[1]]
            if stubborn:
                second = [a if rng.random() < 0.85 else first[(k + 1) % 3]
                          for k, a in enumerate(first)]
            else:
                second = [str(600 + 3 * i + k) if rng.random() < 0.85 else a
                          for k, a in enumerate(first)]
            question = f"What is {subject} problem {i}?"
            data[f"Problem: {question}\nAnswer:"] = [
                [_chat(question, [first[k], second[k]]) for k in range(3)], gold, 1, subject]
    path.write_text(json.dumps(data))
    return {"Algebra": n, "Geometry": n}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from pear.store.importing import import_files
    root = tmp_path_factory.mktemp("loo")
    counts = _corpus(root / "corpus.json")
    import_files("dylan", [root / "corpus.json"], root / "run", dataset="math", grading="math",
                 model="m")
    return root / "run", counts


def test_the_fit_without_a_subject_never_sees_its_debates(corpus):
    from pear.store.records import read_records
    run, counts = corpus
    recs = read_records(run)
    kept = [r for r in recs if revision.subject(r) == "Algebra"]
    pop, g = leave_one_subject_out.fit_without("Geometry", [run])
    assert pop.name == "grounded-without-geometry" and g.left_out == counts["Geometry"]
    assert pop.info["diagnostics"]["left_out"] == {"subject": "Geometry", "debates": 30}
    # the choice sets, the question sets' skills and the same-wrong share: Algebra's alone
    assert set(g.transitions.qset) == {"m/math/Algebra"} and set(g.transitions.accuracy) == \
        {"m/math/Algebra"}
    assert sorted(g.transitions.debates) == sorted(r["debate_id"] for r in kept)
    assert (g.same_wrong, g.wrong_pairs) == revision.same_wrong_answer(kept)
    alone = revision.fit(revision.transitions(kept, sequential=True))
    np.testing.assert_allclose(g.fit.model.coef, alone.model.coef, atol=1e-6)
    # and it is another fit than the one on both subjects: Geometry's agents give new answers
    both = corpus_fit.fit_corpus([run])
    tr = both.transitions
    F = revision.RevisionModel.FEATURES
    new = F.index("new")
    # the fit on Algebra alone (one skill: its skill interactions are not separable from the
    # main terms) asked at Algebra's skill about Geometry's situations
    at_algebra = g.transitions.skill["m/math/Algebra"]
    starts = list(tr.starts) + [len(tr.group)]
    real, fitted, alone_p = [], [], []
    for k, (a, b) in enumerate(zip(starts, starts[1:])):
        if tr.qset[k] == "m/math/Geometry":
            is_new = tr.X[a:b, new] == 1
            real.append(tr.chosen[a:b][is_new].any())
            fitted.append(both.fit.model.probabilities(tr.X[a:b])[is_new].sum())
            X = tr.X[a:b].copy()
            for term, base in (("right_x_skill", "right"), ("own_x_skill", "own"),
                               ("new_x_skill", "new")):
                X[:, F.index(term)] = X[:, F.index(base)] * at_algebra
            alone_p.append(g.fit.model.probabilities(X)[is_new].sum())
    assert np.mean(fitted) == pytest.approx(np.mean(real), abs=0.02) and np.mean(real) > 0.5
    assert np.mean(alone_p) < np.mean(real) - 0.3
    assert g.same_wrong < both.same_wrong
    with pytest.raises(ValueError, match="no debate of subject 'Calculus'"):
        leave_one_subject_out.fit_without("Calculus", [run])


def test_leave_one_out_table_has_every_subject_and_statistic(corpus, tmp_path):
    from pear.populations import debate_statistics
    run, counts = corpus
    loo = leave_one_subject_out.leave_one_out(run, replicates=2, seed=0, n_resamples=200,
                                cache=tmp_path / "cache", workers=2)
    assert list(loo.folds["subject"]) == ["Algebra", "Geometry"]
    assert list(loo.folds["debates"]) == [30, 30]
    # each fold fitted on the other subject's debates only
    assert list(loo.folds["fitted_debates"]) == [30, 30]
    tab = leave_one_subject_out.table(loo)
    stats = list(debate_statistics.STATISTICS.values())
    assert tab.index.get_level_values(0).unique().tolist() == ["Algebra", "Geometry"]
    assert tab.loc["Algebra"].index.tolist() == stats
    assert list(tab.columns) == ["real [95% CI]", "debates",
                                 "grounded without it: simulated", "grounded without it: inside",
                                 "study: simulated", "study: inside"]
    # the held-out real values are the subject's own: agents keep (Algebra) or move (Geometry)
    rows = loo.rows.set_index(["subject", "population", "statistic"])
    change = rows.loc[("Algebra", leave_one_subject_out.HELDOUT, "change_rate"), "real"]
    assert change < rows.loc[("Geometry", leave_one_subject_out.HELDOUT, "change_rate"), "real"]
    s = leave_one_subject_out.summary(loo)
    assert s.index.tolist() == ["Algebra", "Geometry", "all subjects"]
    assert s.loc["all subjects", "debates"] == 60
    n = loo.rows[(loo.rows["population"] == "study") & loo.rows["inside"].notna()]
    assert s.loc["all subjects", "study: inside"] == f"{int(n['inside'].sum())} of {len(n)}"
    # one process or two: the same outcome
    alone = leave_one_subject_out.leave_one_out(run, replicates=2, seed=0, n_resamples=200, cache=None,
                                  workers=1)
    assert (alone.setting["workers"], loo.setting["workers"]) == (1, 2)
    assert alone.rows.equals(loo.rows)
    # a second call reads the cache: the same outcome, said so
    again = leave_one_subject_out.leave_one_out(run, replicates=2, seed=0, n_resamples=200,
                                  cache=tmp_path / "cache")
    assert again.setting["cached"] and not loo.setting["cached"]
    # a notebook's words name the cache without the builder's folders
    assert str(tmp_path) not in leave_one_subject_out.describe(again)
    assert "read from the cache …/" in leave_one_subject_out.describe(again)
    assert leave_one_subject_out.table(again).equals(tab)
    with pytest.raises(ValueError, match="unknown subject 'Calculus'"):
        leave_one_subject_out.leave_one_out(run, replicates=2, subjects_=["Calculus"], cache=None)
