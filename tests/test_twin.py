"""``pear population fit``: a planted twin recovered (debates simulated with known run-level effects,
imported as Du et al.'s files, fitted again), the split-half check on that run, the prior's
pooling (a small run moves less), bad input, and ``pear population sim-check --population family``."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pear import cli
from pear.populations.simcheck import simulate_protocol
from pear.populations import family, split_half, twin
from pear.sim.backend import SimulatedBackend
from pear.sim.population import Population, load as load_population
from pear.store.importing import import_files
from pear.store.readers.protocols import Protocol
from pear.tasks.benchmarks import load as load_questions
from record_factory import du_chat

PLANTED = {"keep": -0.6, "keep_right": 0.0, "follow": 0.8, "follow_right": 0.7, "invent": 0.0,
           "find_right": 0.0}
WIDE = twin.Prior({k: 5.0 for k in twin.EFFECTS})  # a prior that barely pulls
DU = Protocol(name="du", agents=3, rounds=3, order="simultaneous")


def _planted() -> Population:
    base = load_population("grounded")
    return Population("planted", base.params, twin.shifted(base.revision, PLANTED)
                      ).with_params(skill_mean=-2.5)


def _du_run(tmp: Path, pop: Population, n: int, name: str, seed: int = 0) -> Path:
    """``n`` GSM8K debates of ``pop``'s agents under Du et al.'s protocol, written as Du's file
    and imported."""
    qs = load_questions("gsm8k")[:n]
    backend = SimulatedBackend({("gsm8k", q.id): q.gold for q in qs}, seed=seed, n_agents=3,
                               population=pop)
    rows = {}
    for i, q in enumerate(qs):
        meta = {"dataset": "gsm8k", "question_id": q.id, "n_choices": 0}
        history = simulate_protocol(backend, DU, meta, np.random.default_rng([seed, i]))
        per_agent = [[dict((a, ans) for a, ans, _ in rd)[k] for rd in history]
                     for k in range(3)]
        rows[q.question] = ([du_chat(q.question, [f"The answer is {x}." for x in answers])
                             for answers in per_agent], f"#### {q.gold}")
    f = tmp / f"{name}.json"
    f.write_text(json.dumps(rows))
    import_files("du", [f], tmp / name, dataset="gsm8k", model="planted")
    return tmp / name


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory) -> Path:
    return _du_run(tmp_path_factory.mktemp("planted"), _planted(), 400, "run")


def test_planted_effects_are_recovered_within_their_standard_errors(planted_run):
    tw = twin.fit_twin([planted_run], prior=WIDE, name="recovered")
    eff = tw.population.info["diagnostics"]["effects"]
    for k, truth in PLANTED.items():
        est, se = eff[k]["estimate"], eff[k]["se"]
        assert 0 < se < 0.5, (k, se)
        assert abs(est - truth) < 3 * se, (k, est, truth, se)
    assert tw.effects.converged and tw.seconds < 30
    # the fit explains the debates better than the corpus fit it started from
    d = tw.population.info["diagnostics"]
    assert d["log_likelihood"] > d["base_log_likelihood"] + 20
    # the initial answers: the run's strength and how correlated its agents' errors are
    acc = d["round0_accuracy"]["gsm8k"]
    assert 0.2 < acc < 0.8
    assert twin.round0_moments(tw.population.params, "gsm8k")[0] == pytest.approx(acc, abs=0.01)
    assert tw.population.params.difficulty_sd > 0


def test_the_prior_pools_a_small_run_toward_the_corpus_fit(planted_run):
    recs = twin.reading.records([planted_run])
    few = {r["question_id"] for r in recs[:40]}
    tight = twin.Prior({k: 0.2 for k in twin.EFFECTS})
    small = twin.fit_twin([planted_run], prior=tight, keep=lambda r: r["question_id"] in few)
    wide = twin.fit_twin([planted_run], prior=WIDE, keep=lambda r: r["question_id"] in few)
    for k in ("keep", "follow"):
        s = small.population.info["diagnostics"]["effects"][k]
        w = wide.population.info["diagnostics"]["effects"][k]
        assert abs(s["estimate"]) < abs(w["estimate"])  # shrunk toward 0 (the corpus fit)
        assert s["se"] < w["se"]


def test_split_half_on_the_planted_run(planted_run):
    sh = split_half.split_half(planted_run, prior=WIDE, replicates=4, base="grounded")
    row = sh.row()
    assert row["fit_debates"] + row["check_debates"] == 400
    assert 150 < row["fit_debates"] < 250
    inside, defined = map(int, row["twin"].split("/"))
    assert defined >= 8 and inside >= defined - 1
    assert row["gain_inside"] is True
    # the corpus fit, whose agents follow less and keep more, misses this run's debates
    base_inside = int(row["base"].split("/")[0])
    assert base_inside < inside


def test_cli_fit_writes_a_loadable_population_with_its_sources(planted_run, tmp_path, capsys):
    out = tmp_path / "twin.json"
    assert cli.main(["population", "fit", str(planted_run), "--out", str(out), "--name", "mine"]) == 0
    said = capsys.readouterr().out
    assert "mine:" in said and "follow" in said and f"wrote {out}" in said
    p = load_population(out)
    assert p.name == "mine" and p.revision is not None
    fitted = p.info["fitted_on"]
    assert fitted and fitted[0]["file"] == "run.json" and len(fitted[0]["sha256"]) == 64
    assert p.info["diagnostics"]["prior"]["sd"] == pytest.approx(
        {k: round(v, 4) for k, v in twin.load_prior().sd.items()})


def _bad_run(tmp: Path, rows: dict, name: str) -> Path:
    f = tmp / f"{name}.json"
    f.write_text(json.dumps(rows))
    import_files("du", [f], tmp / name, dataset="gsm8k", model="m")
    return tmp / name


def test_bad_input_is_one_error_and_nothing_written(tmp_path, capsys):
    q = load_questions("gsm8k")[0]
    one_round = _bad_run(tmp_path, {q.question: ([du_chat(q.question, [q.gold])] * 3,
                                                 f"#### {q.gold}")}, "one_round")
    one_agent = _bad_run(tmp_path, {q.question: ([du_chat(q.question, [q.gold, q.gold])],
                                                 f"#### {q.gold}")}, "one_agent")
    out = tmp_path / "t.json"
    for run, said in ((one_round, "no debate has a revision round"),
                      (one_agent, "one agent per debate"),
                      (tmp_path / "nothing", "not a run directory")):
        assert cli.main(["population", "fit", str(run), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1
        assert not out.exists()
    assert cli.main(["population", "fit", str(one_round), "--out", str(tmp_path / "t.txt")]) == 2
    assert "a population file ends in .json" in capsys.readouterr().err
    ungraded = [{"n_agents": 2, "gold": "", "rounds_data": [
        {"agents": [{"agent": i, "canonical": "3", "correct": False} for i in range(2)]}] * 2}]
    with pytest.raises(ValueError, match="nothing graded"):
        twin.check_records(ungraded, "x")


def test_shipped_family_names_its_sources_and_loads():
    members = family.load()
    dylan = [p.name for p in members if p.name.startswith("dylan-")]
    published = [p for p in members if p.name.startswith("published-")]
    ledger = [p for p in members if p.name.startswith("ledger-")]
    assert len(dylan) == 11 and "dylan-math-geometry" in dylan and "dylan-mmlu7" in dylan
    assert len(dylan) + len(published) + len(ledger) == len(members) and len(published) >= 10
    assert len(ledger) >= 8  # DebateLedger's models matched on collapse and recovery at once
    for p in ledger:
        d, row = p.info["diagnostics"], p.info["fitted_on"][0]
        assert d["inside"] and row["table"] == "DebateLedger"
        assert abs(d["simulated_collapse"] - row["collapse"]) < 0.05
        assert abs(d["simulated_recover"] - row["recover"]) < 0.05
    # every member's dynamics under Du et al.'s protocol, beside its source (pear population family list)
    du = {p.name: p.info["diagnostics"]["du_protocol"] for p in members}
    assert all(set(v) == {"change_rate", "w2r", "r2w", "vote_gain"} for v in du.values())
    # the family now reaches a stubborn strong model and a strong recoverer
    assert min(v["change_rate"] for v in du.values()) < 0.06
    assert max(v["w2r"] for v in du.values()) > 0.6
    for p in members:
        assert ("DyLAN" in p.info["describes"] or "published" in p.info["describes"])
        assert p.info["fitted_on"]
        assert set(p.info["diagnostics"]["effects"]) == set(twin.EFFECTS)
    for p in published:  # each reaches its published final vote within the tolerance
        row = p.info["fitted_on"][0]
        assert abs(p.info["diagnostics"]["simulated_debate"] - row["debate"]) \
            <= family.MATCH_TOLERANCE
    prior = twin.load_prior()
    assert all(v >= twin.PRIOR_SD_FLOOR for v in prior.sd.values())
    assert set(prior.info["runs"]) == set(dylan)
    assert set(prior.info["heterogeneity"]) == set(twin.EFFECTS)
    assert set(prior.info["matched"]) == {p.name for p in published + ledger}
    assert prior.info["components"]["keep"]["matched_members"] == len(ledger)


def test_sim_check_family_reports_every_member_and_the_range(planted_run, capsys):
    fam = family.load()[:3]
    fc = family.check(planted_run, fam, replicates=2)
    stats = fc.statistics
    assert len(fc.checks) == 3
    for k, s in enumerate(stats):
        sims = [c.statistics[k]["simulated"] for c in fc.checks
                if c.statistics[k]["simulated"] is not None]
        if sims:
            assert s["range"] == [min(sims), max(sims)]
            assert s["meets"] == (s["range"][0] <= s["hi"] and s["range"][1] >= s["lo"])
    assert "family range" in fc.table()
    assert cli.main(["population", "sim-check", str(planted_run), "--population", "family",
                     "--replicates", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["population"] == "family" and len(out["members"]) == len(family.load())
    assert all("range" in s for s in out["statistics"])


def test_a_yes_no_run_is_simulated_and_fitted_as_two_options(tmp_path):
    """StrategyQA-like debates graded yes/no: sim-check simulates two answers (A, B), never a
    third, and a twin's fit reads them as a closed answer space."""
    from pear.populations import simcheck
    rows = {}
    for i in range(40):
        gold = "yes" if i % 2 else "no"
        other = "no" if gold == "yes" else "yes"
        per_agent = [[gold, gold], [other, gold], [other, other if i % 3 else gold]]
        q = f"Question {i}: could a person of era {i} have done thing {i}?"
        rows[q] = ([du_chat(q, [f"So the answer is {a}." for a in answers])
                    for answers in per_agent], gold)
    f = tmp_path / "sqa.json"
    f.write_text(json.dumps(rows))
    import_files("du", [f], tmp_path / "run", dataset="strategyqa", grading="yesno", model="m")
    recs = twin.reading.records([tmp_path / "run"])
    assert {r["gold"] for r in recs} == {"yes", "no"}
    assert {simcheck.n_choices(r, "yesno") for r in recs} == {2}
    c = simcheck.check(tmp_path / "run", "grounded", replicates=2)
    assert set(c.simulated_agent_rounds["canonical"]) <= {"A", "B"}
    st = {s["statistic"]: s for s in c.statistics}
    assert st["agent_acc_first"]["real"] == pytest.approx(1 / 3)
    assert twin.reading.options(tmp_path / "run")
    tw = twin.fit_twin([tmp_path / "run"], prior=WIDE)
    assert tw.population.info["diagnostics"]["options"] == 2
    assert tw.population.params.wrong_focus_options == 1.0  # one wrong answer: all agree
    # measured on its own options, it governs every option count: the base's ten-option
    # value, pinned on published figures, gives way
    assert load_population("grounded").params.wrong_focus_many is not None
    assert tw.population.params.wrong_focus_many is None
    assert tw.population.info["sources"]["wrong_focus_many"].startswith("measured")


def test_unread_wrong_answers_are_simulated_and_measured(tmp_path):
    """A population whose erring agents give no readable answer 40% of the time in round 0:
    the simulator writes those answers as "" (none right, no vote counts them), and a twin
    fitted on its imported debates measures the share back (and sets it; 0 stays unset)."""
    pop = _planted().with_params(unread_wrong=0.4)
    run = _du_run(tmp_path, pop, 150, "unread", seed=3)
    recs = twin.reading.records([run])
    first = [a for r in recs for a in r["rounds_data"][0]["agents"]]
    wrong = [a for a in first if not a["correct"]]
    unread = [a for a in wrong if not a["canonical"]]
    assert len(wrong) > 150  # skill_mean -2.5: most round-0 answers are wrong
    assert abs(len(unread) / len(wrong) - 0.4) < 4 * (0.24 / len(wrong)) ** 0.5
    assert not any(not a["canonical"] for a in first if a["correct"])
    later = [a for r in recs for rd in r["rounds_data"][1:] for a in rd["agents"]]
    assert all(a["canonical"] for a in later)  # revisions are always read
    tw = twin.fit_twin([run], prior=WIDE)
    got = tw.population.params.unread_wrong
    assert got == pytest.approx(len(unread) / len(wrong), abs=1e-3)
    assert tw.population.info["diagnostics"]["unread_wrong"] == pytest.approx(got, abs=1e-3)
    assert "measured" in tw.population.info["sources"]["unread_wrong"]
    assert twin.fit_twin([_du_run(tmp_path, _planted(), 30, "read")],
                         prior=WIDE).population.params.unread_wrong is None
    with pytest.raises(ValueError, match="unread_wrong"):
        pop.with_params(unread_wrong=1.0)
