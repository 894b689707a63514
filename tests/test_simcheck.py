"""``pear population sim-check``: a simulated population held against a recorded run in its setting — an
imported Du et al. file (no stop), a slice of DyLAN's shipped debates (sequential order, quorum
stop, judge's drop), one of our own simulated runs (the engine), a dataset we do not ship, bad
input, determinism; and the source's protocol honoured by the simulated debates."""
from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pear import cli
from pear.populations import debate_statistics, simcheck
from pear.sim.backend import SimulatedBackend
from pear.store.readers.protocols import Drop, Protocol, Quorum
from pear.paths import REAL_DEBATES_DIR
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
from pear.store import manifest
from pear.store.importing import import_files
from pear.store.readers.dylan import PROTOCOL as DYLAN
from pear.tasks.benchmarks import load as load_questions
from record_factory import du_chat

GSM = load_questions("gsm8k")[:6]
KEYS = ["statistic", "real", "lo", "hi", "debates", "simulated", "inside", "predictive"]


def _du_file(path: Path, debates: dict[str, tuple[list[list[str]], str]]) -> Path:
    path.write_text(json.dumps({q: [[du_chat(q, a) for a in answers], gold]
                                for q, (answers, gold) in debates.items()}))
    return path


@pytest.fixture(scope="module")
def du_run(tmp_path_factory) -> Path:
    """3 agents x 3 rounds on six GSM8K questions (Du et al.'s protocol: no stop)."""
    tmp = tmp_path_factory.mktemp("du")
    rows = {}
    for i, q in enumerate(GSM):
        g = q.gold
        wrong = str(int(float(g)) + 1)
        rows[q.question] = ([[g, g, g], [wrong, g, g], [wrong, wrong, g if i % 2 else wrong]],
                            f"#### {g}")
    f = _du_file(tmp / "gsm_3_3.json", rows)
    import_files("du", [f], tmp / "run", dataset="gsm8k", model="m")
    return tmp / "run"


def _json(capsys, *args: str) -> dict:
    assert cli.main(["population", "sim-check", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_du_run_json_has_exactly_the_keys_and_the_real_values(du_run, capsys):
    out = _json(capsys, str(du_run), "--replicates", "3")
    assert list(out) == ["run", "population", "setting", "statistics"]
    assert out["population"]["name"] == "grounded" and len(out["population"]["fingerprint"]) == 64
    assert [s["statistic"] for s in out["statistics"]] == list(debate_statistics.STATISTICS)
    assert "vote_gain" in debate_statistics.STATISTICS
    assert all(list(s) == KEYS for s in out["statistics"])
    st = {s["statistic"]: s for s in out["statistics"]}
    # round 0: agent 0 alone right; the last round: agents 0, 1 and, on the odd ones, 2
    assert st["agent_acc_first"]["real"] == pytest.approx(1 / 3)
    assert st["agent_acc_first"]["debates"] == 6
    assert st["vote_gain"]["real"] == pytest.approx(
        st["vote_acc_last"]["real"] - st["vote_acc_first"]["real"])
    assert st["agent_acc_last"]["real"] == pytest.approx((1 * 3 + 2 / 3 * 3) / 6)
    # the right minority of round 0 wins every final vote of its 6 debates: no resample
    # differs, so the interval is the exact bound on how many of 6 could (not zero-width)
    assert (st["minority_won"]["real"], st["minority_won"]["hi"]) == (1.0, 1.0)
    assert st["minority_won"]["lo"] == pytest.approx(0.025 ** (1 / 6), abs=1e-4)
    assert st["w2r"]["debates"] == 6 and st["r2w"]["real"] == 0.0
    assert st["r2w"]["lo"] == 0.0 and st["r2w"]["hi"] == pytest.approx(1 - 0.025 ** (1 / 6),
                                                                      abs=1e-4)
    for s in out["statistics"]:
        if s["inside"] is not None:
            assert s["inside"] == (s["lo"] <= s["simulated"] <= s["hi"])
    setting = out["setting"]
    assert setting["kind"] == "protocol" and setting["replicates"] == 3
    assert setting["protocol"]["name"] == "du" and setting["protocol"]["stop"] is None
    assert setting["debates"] == 6 and setting["judge"] is None


def test_only_the_skill_is_matched_and_every_du_debate_runs_every_round(du_run):
    c = simcheck.check(du_run, "study", replicates=4, seed=1)
    target = c.setting["round0_accuracy"]["m/gsm8k"]
    assert target == pytest.approx(1 / 3)
    ar = c.simulated_agent_rounds
    # Du et al.'s protocol: 3 agents answer in each of the 3 rounds of every debate
    assert len(ar) == 4 * 6 * 3 * 3
    assert ar.groupby("debate").size().eq(9).all() and set(ar["round"]) == {0, 1, 2}
    # the matched population's round-0 accuracy is the run's, up to the draws of 72 agents
    assert ar[ar["round"] == 0]["correct"].mean() == pytest.approx(target, abs=0.12)
    sim = c.simulated.set_index("statistic")
    assert sim.loc["agent_acc_first", "n"] == 4


def test_same_seed_same_output_other_seed_other_draws(du_run, capsys):
    a = _json(capsys, str(du_run), "--replicates", "2", "--population", "study")
    b = _json(capsys, str(du_run), "--replicates", "2", "--population", "study")
    c = _json(capsys, str(du_run), "--replicates", "2", "--population", "study", "--seed", "5")
    assert a == b
    assert [s["simulated"] for s in a["statistics"]] != [s["simulated"] for s in c["statistics"]]


def test_readable_table(du_run, capsys):
    assert cli.main(["population", "sim-check", str(du_run), "--replicates", "2"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith(f"sim-check of {du_run}: population grounded (")
    assert lines[1].split() == ["statistic", "real", "[95%", "CI]", "debates", "simulated",
                                "inside", "replicates", "95%"]
    row = next(line for line in lines if line.startswith("agent_acc_first"))
    # every debate has one right agent of three: the exact bound, not a zero-width interval
    assert row.split()[1:5] == ["0.333", "[0.000,", "0.793]", "6"]
    assert row.split()[-2].startswith("[") and row.split()[-1].endswith("]")
    assert lines[-1].endswith("simulated values inside the real 95% interval")


# ----------------------------------------------------------------- the source's protocol

def _backend(n: int, population: str = "grounded", seed: int = 0) -> SimulatedBackend:
    key = {("math500", f"q{i}"): str(10 + i) for i in range(n)}
    return SimulatedBackend(key, population=population, seed=seed, n_agents=4)


@pytest.mark.parametrize("population", ["grounded", "study"])
def test_quorum_and_drop_are_honoured(population):
    be = _backend(300, population)
    shapes = Counter()
    for i in range(300):
        meta = {"dataset": "math500", "question_id": f"q{i}", "n_choices": 0}
        rounds = simcheck.simulate_protocol(be, DYLAN, meta, np.random.default_rng(i))
        n, r = len(rounds[0]), len(rounds)
        shapes[f"{n}x{r}"] += 1
        assert all(len(rd) == n for rd in rounds)  # the record keeps the same agents
        answers = [[a for _, a, _ in rd] for rd in rounds]
        top = Counter(answers[-1]).most_common(1)[0][1]
        if r < 3 and n >= 3:  # stopped by the quorum after the n-th answer of its last round
            assert top > math.floor(2 / 3 * n)
            assert n == 3 or Counter(answers[-1][:3]).most_common(1)[0][1] < 3
        for rd in answers[:-1] if n >= 3 else answers[:1]:
            # earlier complete rounds of 4 had no quorum at the 3rd or the 4th answer
            assert Counter(rd[:3]).most_common(1)[0][1] < 3
            assert Counter(rd).most_common(1)[0][1] <= 2
        if n == 2:  # the judge kept 2 of 4 before round 2
            if r == 2:
                assert answers[1][0] == answers[1][1]  # they agreed: the debate ended
            else:
                assert r == 3 and answers[1][0] != answers[1][1]
    assert set(shapes) <= {"4x1", "3x1", "4x2", "3x2", "2x2", "2x3"}
    assert {"3x1", "2x3"} <= set(shapes), shapes  # both ends of the protocol occur


def test_no_stop_no_drop_and_simultaneous_hearing():
    be = _backend(50)
    proto = Protocol(name="du", agents=3, rounds=4)
    for i in range(50):
        meta = {"dataset": "math500", "question_id": f"q{i}", "n_choices": 0}
        rounds = simcheck.simulate_protocol(be, proto, meta, np.random.default_rng(i))
        assert [len(rd) for rd in rounds] == [3, 3, 3, 3]
        assert all([a for a, _, _ in rd] == [0, 1, 2] for rd in rounds)


def test_the_judge_keeps_the_most_confident_agents_ties_at_random():
    latest = {0: ("1", 2), 1: ("2", 5), 2: ("3", 4), 3: ("4", 4)}
    kept = [tuple(simcheck._judge([0, 1, 2, 3], latest, 2, np.random.default_rng(s),
                                  "confidence")) for s in range(40)]
    assert set(kept) == {(1, 2), (1, 3)}  # 5 always, one of the two 4s
    latest = {0: ("1", 1), 1: ("2", 5), 2: ("3", 4), 3: ("4", 3)}
    rand = {tuple(simcheck._judge([0, 1, 2, 3], latest, 2, np.random.default_rng(s), "random"))
            for s in range(200)}
    assert len(rand) == 6  # every pair


def test_by_default_the_ranker_keeps_agents_as_right_as_those_it_drops():
    """DyLAN's ranker, simulated by default, keeps agents at random: the kept agents' round-0
    answers are right as often as every agent's (the same draws), where keeping the most
    confident (the population's signal of being right) keeps right ones more often."""
    be = _backend(400)
    proto = Protocol(name="drop", agents=4, rounds=2, drop=Drop(before_round=1, keep=2))
    whole = Protocol(name="whole", agents=4, rounds=1)
    acc = {"all": [], "random": [], "confidence": [], "default": []}
    for i in range(400):
        meta = {"dataset": "math500", "question_id": f"q{i}", "n_choices": 0}
        acc["all"] += [ok for _, _, ok in simcheck.simulate_protocol(
            be, whole, meta, np.random.default_rng(i))[0]]
        for judge in ("random", "confidence"):
            acc[judge] += [ok for _, _, ok in simcheck.simulate_protocol(
                be, proto, meta, np.random.default_rng(i), judge)[0]]
        acc["default"] += [ok for _, _, ok in simcheck.simulate_protocol(
            be, proto, meta, np.random.default_rng(i))[0]]
    rate = {k: float(np.mean(v)) for k, v in acc.items()}
    assert acc["default"] == acc["random"]
    assert abs(rate["random"] - rate["all"]) < 0.04, rate
    assert rate["confidence"] > rate["random"] + 0.03, rate


def test_a_quorum_after_the_first_answers_keeps_only_those_agents():
    # a protocol whose quorum is reachable from the 2nd answer: agents that had not answered
    # are not in the record
    be = _backend(100, "study")
    proto = Protocol(name="x", agents=5, rounds=2, stop=Quorum(share=0.5, after=2))
    sizes = Counter()
    for i in range(100):
        meta = {"dataset": "math500", "question_id": f"q{i}", "n_choices": 0}
        rounds = simcheck.simulate_protocol(be, proto, meta, np.random.default_rng(i))
        sizes[len(rounds[0])] += 1
        last = [a for _, a, _ in rounds[-1]]
        if len(rounds) == 1 or len(last) < 5:
            assert Counter(last).most_common(1)[0][1] > math.floor(0.5 * len(last))
    assert sizes[2] > 0 and min(sizes) >= 2


def test_a_source_that_misses_quorums_has_a_simulated_twin_missing_as_often():
    """``Quorum.miss``: the simulated debate goes on past a quorum as often as the source's
    check missed one, and quorum_misses counts on the records what the twin does."""
    from pear.store.readers.protocols import quorum_misses
    be = _backend(400, "study")
    out = {}
    for miss, miss_right in ((0.0, None), (0.5, None), (0.0, 0.5)):
        proto = Protocol(name="x", agents=3, rounds=3, stop=Quorum(
            share=0.5, after=2, miss=miss, miss_right=miss_right))
        recs = []
        for i in range(400):
            meta = {"dataset": "math500", "question_id": f"q{i}", "n_choices": 0}
            rounds = simcheck.simulate_protocol(be, proto, meta, np.random.default_rng(i))
            recs.append({"rounds_data": [{"agents": [{"canonical": a, "correct": ok}
                                                     for _, a, ok in rd]} for rd in rounds]})
        out[miss, miss_right] = [quorum_misses(recs, proto.stop, right=r)
                                 for r in (None, False, True)]
    assert out[0.0, None][0][0] > 300 and out[0.0, None][0][1] == 0  # never missed
    seen, missed = out[0.5, None][0]
    assert missed / seen == pytest.approx(0.5, abs=0.06), (seen, missed)
    # miss_right: only quorums on the right answer are missed, half of them
    (_, wrong_missed), (right_seen, right_missed) = out[0.0, 0.5][1:]
    assert wrong_missed == 0 and right_seen > 100
    assert right_missed / right_seen == pytest.approx(0.5, abs=0.08), (right_seen, right_missed)
    assert sum(out[0.5, None][0]) == sum(map(sum, out[0.5, None][1:]))  # right + wrong = all


# ----------------------------------------------------------------- DyLAN, a slice

@pytest.fixture(scope="module")
def dylan_slice(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("dylan")
    with gzip.open(REAL_DEBATES_DIR / "dylan-math500-gpt35.json.gz", "rt") as f:
        data = json.load(f)
    part = dict(list(data.items())[::20][:24])  # every 20th: the file is ordered by subject
    (tmp / "slice.json").write_text(json.dumps(part))
    import_files("dylan", [tmp / "slice.json"], tmp / "run", dataset="math500",
                 model="gpt-3.5-turbo-0301")
    return tmp / "run"


def test_dylan_slice_under_its_protocol(dylan_slice, capsys):
    out = _json(capsys, str(dylan_slice), "--replicates", "4", "--population", "study")
    st = out["setting"]
    assert st["kind"] == "protocol" and st["protocol"]["name"] == "dylan-cot"
    assert st["protocol"]["order"] == "sequential" and st["judge"] == simcheck.JUDGE
    assert st["protocol"]["drop"]["keep"] == 2 and st["debates"] == 24
    # the import measured how often DyLAN's own check missed a quorum our grader sees
    from pear.store.readers.protocols import quorum_misses
    from pear.store.records import read_records
    for key, right in (("miss", False), ("miss_right", True)):
        seen, missed = quorum_misses(read_records(dylan_slice), DYLAN.stop, right=right)
        assert seen > 0 and st["protocol"]["stop"][key] == pytest.approx(missed / seen,
                                                                          abs=1e-4)
    assert all(list(s) == KEYS for s in out["statistics"])
    c = simcheck.check(dylan_slice, "study", replicates=4)
    assert [s["simulated"] for s in c.statistics] == [s["simulated"] for s in out["statistics"]]
    shapes = c.simulated_agent_rounds.groupby("debate").agg(
        n=("agent", "nunique"), r=("round", "nunique"))
    assert {f"{n}x{r}" for n, r in shapes.itertuples(index=False)} <= \
        {"4x1", "3x1", "4x2", "3x2", "2x2", "2x3"}
    # a part of the run (e.g. one subject): only its debates, real and simulated
    part = [r for r in read_records(dylan_slice)
            if r["imported"]["extra"]["subject"] == "Algebra"]
    sub = simcheck.check(dylan_slice, "study", replicates=2, records=part)
    assert 0 < len(part) < 24 and sub.setting["debates"] == len(part)
    assert sub.statistics[0]["debates"] == len(part)
    assert sub.simulated_agent_rounds["debate"].nunique() == 2 * len(part)


# ----------------------------------------------------------------- our own run: the engine

@pytest.fixture(scope="module")
def own_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("own")
    exp = preset("sim", datasets=("gsm8k",), methods=("random", "cot_sc"), seeds=(0,),
                 n_questions=40, full_datasets=(), rounds=2)
    run(exp, SimulatedBackend(answer_key(exp), population="study", seed=7), out,
        progress=False)
    return out


def test_own_run_through_the_engine(own_run):
    c = simcheck.check(own_run, "study", replicates=3)
    man = manifest.read(own_run)
    assert c.setting["kind"] == "engine" and c.setting["methods"] == ["cot_sc", "random"]
    recorded = man["protocol"]["debate"]
    assert {k: c.setting["debate"][k] for k in recorded} == recorded
    assert recorded["rounds"] == 2 and c.setting["debate"]["n_agents"] == 5
    st = {s["statistic"]: s for s in c.statistics}
    assert st["agent_acc_first"]["debates"] == 80
    # the population that made the run, matched on its round-0 accuracy, lands close to it
    assert abs(st["agent_acc_first"]["simulated"] - st["agent_acc_first"]["real"]) < 0.06
    ar = c.simulated_agent_rounds
    assert ar["round"].max() <= 2 and len(ar.groupby("debate")) == 3 * 80


# ----------------------------------------------------------------- a dataset we do not ship

def test_a_dataset_we_do_not_ship_with_five_options(tmp_path, capsys):
    q = ("Which is a noble gas? A) iron, B) salt, C) water, D) sugar, E) neon. "
         "Answer in the form (X).")
    rows = {f"{q} (variant {i})": ([["(E)", "(E)"], ["(A)", "(E)"], ["(B)", "(B)"]], "E")
            for i in range(8)}
    f = _du_file(tmp_path / "quiz_3_2.json", rows)
    import_files("du", [f], tmp_path / "run", dataset="quiz", grading="letters")
    c = simcheck.check(tmp_path / "run", "study", replicates=3)
    assert c.setting["grading"] == "letters"
    st = {s["statistic"]: s for s in c.statistics}
    assert st["agent_acc_first"]["real"] == pytest.approx(1 / 3)
    answers = set(c.simulated_agent_rounds["canonical"])
    assert answers <= set("ABCDE") and "E" in answers and len(answers) >= 4
    # the gold is E: a simulated agent is right exactly when it answers E
    ar = c.simulated_agent_rounds
    assert (ar["correct"] == (ar["canonical"] == "E")).all()


# ----------------------------------------------------------------- bad input

def test_bad_input_is_one_line_naming_it(du_run, tmp_path, capsys):
    one = tmp_path / "one"
    exp = preset("sim", datasets=("gsm8k",), methods=("cot",), seeds=(0,), n_questions=2,
                 full_datasets=())
    run(exp, SimulatedBackend(answer_key(exp)), one, progress=False)
    cases = [([str(tmp_path / "none")], f"not a run directory: '{tmp_path / 'none'}'"),
             ([str(one)], f"run '{one}' has one agent per debate"),
             ([str(du_run), "--population", "nosuch"], "unknown population 'nosuch'"),
             ([str(du_run), "--replicates", "0"], "invalid replicates=0")]
    for args, message in cases:
        assert cli.main(["population", "sim-check", *args]) == 2
        out = capsys.readouterr()
        assert out.out == "" and len(out.err.strip().splitlines()) == 1, out.err
        assert out.err.startswith(f"pear: error: {message}"), out.err


# ----------------------------------------------------------------- many runs at once

def test_summary_of_several_runs_agrees_with_each_runs_check(du_run, dylan_slice, capsys):
    runs = [str(du_run), str(dylan_slice)]
    assert cli.main(["population", "sim-check", *runs, "--replicates", "2", "--population", "study",
                     "--summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sim-check summary: population study (") and \
        lines[0].endswith("2 runs")
    total_in = total_defined = 0
    for run in runs:
        one = _json(capsys, run, "--replicates", "2", "--population", "study")
        defined = [s for s in one["statistics"] if s["inside"] is not None]
        inside = sum(s["inside"] for s in defined)
        total_in, total_defined = total_in + inside, total_defined + len(defined)
        row = next(line for line in lines if line.startswith(run + " "))
        cells = row[len(run):].split()
        assert cells[:2] == [str(one["setting"]["debates"]), f"{inside}/{len(defined)}"]
        # every statistic outside is named with the side the simulation falls on
        want = [s["statistic"] + ("+" if s["simulated"] > s["hi"] else "-")
                for s in defined if not s["inside"]]
        assert cells[2:] == (want or ["-"])
    assert f"total: {total_in} of {total_defined} statistics inside" in "\n".join(lines)


def test_several_runs_one_bad_is_one_error_before_anything_runs(du_run, tmp_path, capsys):
    bad = tmp_path / "nothing-here"
    assert cli.main(["population", "sim-check", str(du_run), str(bad), "--summary"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.strip() == f"pear: error: not a run directory: '{bad}' " \
        "(no manifest.json)"
