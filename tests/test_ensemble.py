"""The ensemble of plausible simulated populations (pear.paper.ensemble): a tiny grid under a
revision fit's bootstrap draws, its ranges and shares recomputed from each population's own
run, resume, seeds, and bad input."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pear.analysis import metrics
from pear.catalog.labels import dataset_label, method_label
from pear.claims.evaluate import ledger
from pear.paper import ensemble
from pear.populations import corpus_fit
from pear.paper.study import load_results
from pear.paths import beside
from pear.runs.grid import preset
from pear.sim import revision
from pear.sim.population import RevisionModel
from pear.store import manifest
from pear.store.records import iter_records


def _grounding(seed: int = 0, n_sets: int = 600) -> corpus_fit.CorpusFit:
    """A revision fit on synthetic choice sets (three per debate): a stand-in for DyLAN's
    corpus, so that no corpus is imported here."""
    rng = np.random.default_rng(seed)
    beta = np.array([1.5, 2.0, 0.8, 0.4, -1.0, 0.3, 1.0, -1.0, -0.2, -0.3, -0.8])
    X, chosen, group = [], [], []
    for g in range(n_sets):
        heard = list(rng.choice(["a", "b", "c"], size=rng.integers(1, 5)))
        _, x = RevisionModel.design(str(rng.choice(["a", "b"])), heard,
                                    str(rng.choice(["a", "d"])), int(rng.integers(1, 4)), float(rng.normal()))
        v = x[:, :len(beta)] @ beta  # the columns of RevisionModel.FEATURES
        p = np.exp(v - v.max()) / np.exp(v - v.max()).sum()
        y = np.zeros(len(x), bool)
        y[rng.choice(len(x), p=p)] = True
        X.append(x)
        chosen.append(y)
        group += [g] * len(x)
    tr = revision.Transitions(np.vstack(X), np.concatenate(chosen), np.asarray(group),
                              np.arange(n_sets) // 3, ["s"] * n_sets,
                              [str(i) for i in range(n_sets // 3 + 1)])
    return corpus_fit.CorpusFit(revision.fit(tr), 0.2, 50, tr, (), 0.0)


GROUNDING = _grounding()
EXP = ensemble.grid(base=preset("sim", datasets=("gsm8k", "math500"), n_questions=3,
                                seeds=(0,)), n_questions=3, methods=ensemble.MAIN)


def _run(root, k, seed=0):
    return ensemble.run(EXP, root, k, seed, grounding=GROUNDING, workers=1, say=None)


@pytest.fixture(scope="module")
def ens(tmp_path_factory):
    """K = 2, then K = 3 in the same folder (a resume that adds one population), then the
    same again (a resume with nothing to run)."""
    root = tmp_path_factory.mktemp("ens") / "e"
    first = _run(root, 2)
    grown = _run(root, 3)
    again = _run(root, 3)
    return root, first, grown, again


def _own(root, name):
    """One population's accuracy, recomputed from its own run directory."""
    acc = metrics.accuracy(load_results(root / name, EXP, "subset").debates)
    return acc.set_index(["dataset", "method"])["accuracy"]


def test_ranges_hold_every_population_and_shares_are_the_counted_fractions(ens):
    root, _, e, _ = ens
    own = {n: _own(root, n) for n in (ensemble.POINT, *e.members)}
    main = ensemble.table_main(e)
    assert len(main) == len(EXP.datasets) * len(ensemble.MAIN)
    for d in EXP.datasets:
        for m in ensemble.MAIN:
            row = main.loc[(dataset_label(d), method_label(m))]
            values = [own[n][(d, m)] for n in e.members]
            assert row["Grounded"] == own[ensemble.POINT][(d, m)]
            assert row["Min"] == min(values) and row["Max"] == max(values)
            assert row["Min"] <= row["5 %"] <= row["95 %"] <= row["Max"]
    gains = ensemble.table_gains(e)
    for b in ensemble.BASELINES:
        per = {n: {d: 100 * (own[n][(d, "pear")] - own[n][(d, b)]) for d in EXP.datasets}
               for n in own}
        for d in (*EXP.datasets, ensemble.POOLED):
            g = {n: np.mean(list(v.values())) if d == ensemble.POOLED else v[d]
                 for n, v in per.items()}
            row = gains.loc[(method_label(b), "Pooled" if d == ensemble.POOLED
                             else dataset_label(d))]
            ahead = sum(g[n] > 0 for n in e.members)
            assert row["Grounded"] == pytest.approx(g[ensemble.POINT])
            assert row["Min"] == pytest.approx(min(g[n] for n in e.members))
            assert row["Max"] == pytest.approx(max(g[n] for n in e.members))
            assert row["PEAR ahead in"] == f"{ahead}/3" and row["Share"] == ahead / 3


def test_claims_share_counts_the_populations_whose_point_ledger_supports_them(ens):
    root, _, e, _ = ens
    points = {n: ledger(load_results(root / n, EXP, "subset"), None, rng=0, n_boot=0)
              .set_index("id")["finding"] for n in e.members}
    table = ensemble.table_claims(e)
    assert list(table.index) == list(e.ledger["id"])
    judged = table[table["Share"].notna()]
    assert len(judged) > 10
    for cid, row in judged.iterrows():
        found = [points[n][cid] for n in e.members if points[n][cid] != "not covered"]
        held = sum(f == "supported" for f in found)
        assert row["Holds in"] == f"{held}/{len(found)}"
        assert row["Share"] == held / len(found)
    # a claim naming methods this grid does not run is marked, not evaluated on fewer
    row = table.loc["intro-beats-fixed-all-settings"]
    assert np.isnan(row["Share"]) and "Star" in row["Holds in"] and "Ring" in row["Holds in"]
    # with n_boot=0 every interval is its point value
    one = ledger(load_results(root / e.members[0], EXP, "subset"), None, rng=0, n_boot=0)
    parts = [p for ps in one["parts"] for p in ps if np.isfinite(p.value)]
    assert parts and all(p.low == p.value == p.high for p in parts)


def test_resume_runs_nothing_twice_and_each_run_names_its_population_file(ens):
    root, first, grown, again = ens
    size = len(EXP.datasets) * EXP.n_questions * len(EXP.methods)
    assert first.written == {"grounded": size, "grounded-b0": size, "grounded-b1": size}
    assert grown.written == {"grounded": 0, "grounded-b0": 0, "grounded-b1": 0,
                             "grounded-b2": size}
    assert set(again.written.values()) == {0}
    record = json.loads((root / "ensemble.json").read_text())
    for name in (ensemble.POINT, *grown.members):
        ids = [r["debate_id"] for r in iter_records(root / name)]
        assert len(ids) == len(set(ids)) == size
        file = json.loads((root / "populations" / f"{name}.json").read_text())
        named = manifest.read(root / name)["backend_settings"][0]["population"]
        assert named == {"name": name, "fingerprint": file["fingerprint"]}
        assert name == ensemble.POINT or record["populations"][name] == file["fingerprint"]
    pd.testing.assert_frame_equal(ensemble.table_claims(grown), ensemble.table_claims(again))


def test_the_ensemble_is_determined_by_its_seed(ens, tmp_path):
    root, _, e, _ = ens
    same = _run(tmp_path / "same", 3)
    for table in (ensemble.table_main, ensemble.table_gains, ensemble.table_claims):
        pd.testing.assert_frame_equal(table(e), table(same))
    files = ensemble.write_populations(tmp_path / "other", 3, seed=1, grounding=GROUNDING)
    prints = {n: json.loads(p.read_text())["fingerprint"] for n, p in files.items()}
    mine = json.loads((root / "ensemble.json").read_text())["populations"]
    assert prints["grounded"] == json.loads(
        (root / "populations" / "grounded.json").read_text())["fingerprint"]
    assert all(prints[n] != mine[n] for n in e.members)
    with pytest.raises(ValueError, match="seed 0 .* not seed 1"):
        ensemble.write_populations(root, 3, seed=1, grounding=GROUNDING)


@pytest.mark.parametrize("k", [0, -2])
def test_bad_k_is_one_clear_error_and_writes_nothing(k, tmp_path, capsys):
    with pytest.raises(ValueError, match=rf"invalid k={k}: an ensemble needs at least one"):
        _run(tmp_path / "e", k)
    assert not (tmp_path / "e").exists()
    from pear.cli import main
    assert main(["ensemble", "--k", str(k), "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert err == f"pear: error: invalid k={k}: an ensemble needs at least one population " \
                  "(k >= 1)\n"
    assert not (tmp_path / "e").exists()


def test_a_build_without_a_population_to_vary_says_so(tmp_path):
    run = tmp_path / "run"
    root = beside(run, "ensemble")
    note = ensemble.unvaried("llamacpp", run, root)
    e = ensemble.Ensemble.empty(EXP, root, note)
    assert "real model (backend llamacpp)" in ensemble.table_main(e)["note"].iloc[0]
    note = ensemble.unvaried("replay", run, root)
    e = ensemble.Ensemble.empty(EXP, root, note)
    assert "no ensemble was run" in ensemble.table_claims(e)["note"].iloc[0]
    assert "no ensemble was run" in ensemble.caption_gains(e)
    assert "no family was run" in ensemble.unvaried("replay", run, beside(run, "family"),
                                                    family=True)
    assert ensemble.unvaried("simulated", run, root) == ""  # a simulated build runs it
    root.mkdir()
    (root / ensemble.RECORD).write_text("{}")
    assert ensemble.unvaried("replay", run, root) == ""  # a replay reads what is there


def test_a_grid_under_a_population_file_keeps_or_replaces_the_file_by_fingerprint(tmp_path):
    from pear.sim import population as pop
    p = pop.load(ensemble.POINT)
    file = ensemble.population_file(p, tmp_path)
    assert file == tmp_path / "populations" / "grounded.json"
    assert pop.load(file).fingerprint == p.fingerprint
    stamp = file.stat().st_mtime_ns
    assert ensemble.population_file(p, tmp_path) == file and file.stat().st_mtime_ns == stamp
    other = pop.load("study")
    there = tmp_path / "populations" / f"{other.name}.json"
    there.write_text(file.read_text())  # another population under its name: replaced
    assert ensemble.population_file(other, tmp_path) == there
    assert pop.load(there).fingerprint == other.fingerprint != p.fingerprint
    exp = ensemble.grid(base=preset("sim", datasets=("gsm8k",), n_questions=2, seeds=(0,)),
                        n_questions=2, methods=ensemble.MAIN)
    s = ensemble.run_under(exp, file, tmp_path / "g", workers=1)
    assert s.written == 4 * 2 and s.complete
    named = manifest.read(tmp_path / "g")["backend_settings"][0]["population"]
    assert named == {"name": p.name, "fingerprint": p.fingerprint}
    assert ensemble.run_under(exp, file, tmp_path / "g", workers=1).written == 0  # resumed


def test_populations_run_two_at_a_time_find_what_one_at_a_time_finds(ens, tmp_path):
    _, first, _, _ = ens  # K = 2, one population at a time
    two = ensemble.run(EXP, tmp_path / "e", 2, 0, grounding=GROUNDING, workers=2, say=None)
    assert two.members == first.members and sum(two.written.values()) == 3 * len(
        list(iter_records(tmp_path / "e" / ensemble.POINT)))
    for key in ("accuracy", "gains", "findings"):
        pd.testing.assert_frame_equal(getattr(two, key), getattr(first, key))
    # the ledger's parts are objects holding NaN (never equal to itself): the rest is the table
    parts = [c for c in first.ledger.columns if c.endswith("parts")]
    pd.testing.assert_frame_equal(two.ledger.drop(columns=parts), first.ledger.drop(columns=parts))
    assert two.wall_s > 0 and set(two.seconds) == {ensemble.POINT, *two.members}


def test_the_family_runs_every_member_and_states_each_claim_per_member(tmp_path):
    from pear.populations import family
    members = [p.name for p in family.load()]
    exp = ensemble.grid(base=preset("sim", datasets=("gsm8k",), n_questions=2, seeds=(0,)),
                        n_questions=2, methods=ensemble.MAIN)
    root = tmp_path / "fam"
    fam = ensemble.run(exp, root, family=True, workers=1, say=None)
    assert fam.family and list(fam.members) == members
    size = len(exp.methods) * exp.n_questions
    assert fam.written == {ensemble.POINT: size, **{m: size for m in members}}
    record = json.loads((root / "ensemble.json").read_text())
    assert record["family"] == {p.name: p.fingerprint for p in family.load()}
    table = ensemble.table_claims(fam)
    judged = table[table["Share"].notna()]
    assert len(judged) and all(r.endswith(f"/{len(members)}") for r in judged["Holds in"])
    # each claim per member, and in words which members: the traits come from the files
    traits = ensemble.member_traits(fam)
    assert list(traits.index) == members and list(traits.columns) == list(ensemble.TRAITS)
    assert traits["strength"].between(0, 1).all() and traits["follow_right"].std() > 0.5
    assert traits.loc[[m for m in members if m.startswith("published")],
                      ["follow", "keep", "invent"]].eq(0).all().all()  # they free follow_right
    held = ensemble.held_by_member(fam)
    for cid, h in held.items():
        assert list(h.index) == members
        assert f"/{len(members)}" in table.loc[cid, "Holds in"]
        assert int(table.loc[cid, "Holds in"].split("/")[0]) == int(h.sum())
        words = ensemble.where_it_holds(h, traits)
        assert words.startswith(f"holds in {int(h.sum())} of {len(members)} members")
        where = table.loc[cid, "Where it holds"]
        assert where == "–" or where in words
    assert "Where it holds" in table.columns
    assert "family of" in ensemble.caption_claims(fam)
    assert "family members" in ensemble.describe_times(fam)
    again = ensemble.run(exp, root, family=True, workers=1, say=None, replay=True)
    pd.testing.assert_frame_equal(ensemble.table_claims(fam), ensemble.table_claims(again))
    with pytest.raises(FileNotFoundError, match="holds no family"):
        ensemble.run(exp, tmp_path / "empty", family=True, workers=1, say=None, replay=True)
