"""``pear import``: other frameworks' debate records (Du et al.'s, DyLAN's) as PEAR runs —
hand-made files with known answers, the shipped DyLAN debates, bad input, validation, the
view and the analysis on imported runs."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pear import cli
from pear.populations import debate_statistics
from pear.core.graphs import fixed_topology
from pear.paper import site
from pear.paths import REAL_DEBATES_DIR
from pear.store import manifest
from pear.store.importing import import_files
from pear.store.readers import BadInput
from pear.store.records import read_records
from pear.store.validate import validate
from pear.store.view import load
from pear.tasks.benchmarks import load as load_questions
from record_factory import du_chat

GSM = load_questions("gsm8k")[:3]  # golds 18, 3, 70000
DYLAN = REAL_DEBATES_DIR / "dylan-math500-gpt35.json.gz"


def _du(debates: dict[str, tuple[list[list[str]], str]]) -> dict:
    """{question: [agent_contexts, gold]} from answers[agent][round]."""
    return {q: [[du_chat(q, a) for a in answers], gold] for q, (answers, gold) in debates.items()}


def _write(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def du_gsm(tmp_path) -> Path:
    """3 agents x 2 rounds on three GSM8K questions (two of ours, matched by text with extra
    whitespace, one not ours with its own gold)."""
    return _write(tmp_path / "gsm_3_2.json", _du({
        GSM[0].question + "  ": ([["She makes $18 a day. The answer is 18.", "so 18"],
                                  ["The answer is 16.", "I agree: \\boxed{18}"],
                                  ["Total: 20", "The answer is 20."]],
                                 "She sells 16 - 3 - 4 = 9 eggs ... #### 18"),
        GSM[1].question: ([["It takes 3 bolts.", "3"], ["2 + 1 = 3 bolts", "3 bolts"],
                           ["4", "3"]], "#### 3"),
        "Tom has 3 apples and buys 4 more. How many apples does he have?": (
            [["7", "7"], ["I think 12", "7"], ["no idea", "7 apples"]], "He has 3 + 4 = 7. #### 7"),
    }))


# ----------------------------------------------------------------- Du et al.'s format

def test_du_import_writes_graded_records_of_the_schema(du_gsm, tmp_path):
    s = import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k", model="qwen-3b")
    assert (s.debates, s.matched, s.gold_disagree, s.bad) == (3, 2, 0, [])
    recs = {r["question_id"]: r for r in read_records(tmp_path / "run")}
    r0 = recs[GSM[0].id]
    assert r0["gold"] == "18" and r0["model"] == "qwen-3b" and r0["method"] == "clique"
    assert (r0["n_agents"], r0["rounds"], r0["calls"]) == (3, 1, 6)
    first, last = r0["rounds_data"]
    assert [a["canonical"] for a in first["agents"]] == ["18", "16", "20"]
    assert [a["correct"] for a in first["agents"]] == [True, False, False]
    assert [a["canonical"] for a in last["agents"]] == ["18", "18", "20"]
    assert last["vote"] == "18" and last["vote_correct"] and r0["correct"]
    assert first["edges"] == [] and last["edges"] == fixed_topology("clique", 3).tolist()
    # absent, not invented: no confidence, critique, router or influence
    assert all(a["confidence"] is None for a in first["agents"] + last["agents"])
    assert last["critiques"] == [] and last["router"] is None and last["influence"] == []
    # the full text is kept; the answer is what our grader read
    assert last["agents"][1]["reasoning"] == "I agree: \\boxed{18}"
    assert r0["imported"]["matched"] and r0["imported"]["gold_agrees"] is True
    other = next(r for q, r in recs.items() if q.startswith("du-"))
    assert other["gold"] == "7" and not other["imported"]["matched"]
    assert other["imported"]["gold_agrees"] is None
    assert [a["parse_error"] is not None for a in other["rounds_data"][0]["agents"]] == \
        [False, False, True]
    assert other["parse_failures"] == 1 and other["correct"]
    man = manifest.read(tmp_path / "run")["imported"]
    assert man["format"] == "du" and man["model"] == "qwen-3b" and man["grading"] == "numbers"
    assert man["files"][0]["sha256"] == __import__("hashlib").sha256(
        du_gsm.read_bytes()).hexdigest()
    assert (man["debates"], man["matched"], man["gold_disagree"]) == (3, 2, 0)
    # what is known of what they cost: their calls; the machine and time are not in the file
    whole = manifest.read(tmp_path / "run")
    assert whole["hardware"] == [] and whole["compute"]["wall_s"] is None
    assert whole["compute"]["calls"] == sum(r["calls"] for r in recs.values())
    assert whole["compute"]["debates"] == 3 and whole["versions"]["math-verify"]


def test_imported_run_validates_and_loads_into_the_view(du_gsm, tmp_path):
    import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k")
    v = validate(tmp_path / "run")
    assert v.findings.ok and v.debates == 3, v.report()
    view = load(tmp_path / "run")
    assert len(view.debates) == 3 and len(view.agent_rounds) == 18 and len(view.edges) == 0
    assert view.agent_rounds["confidence"].isna().all()
    assert view.agent_rounds["influence"].isna().all()
    assert view.rounds["n_edges"].tolist() == [0, 6] * 3


def test_du_letters_for_a_dataset_we_do_not_ship(tmp_path):
    q = ("Can you answer the following question? Which is a noble gas: A) iron, B) neon, "
         "C) salt, D) water Explain your answer, putting the answer in the form (X).")
    f = _write(tmp_path / "mmlu_2_2.json", _du({q: (
        [["The answer is (A).", "(B)"], ["It is (B)", "Final: (B)"]], "B")}))
    with pytest.raises(ValueError, match="--grading numbers\\|letters\\|math"):
        import_files("du", [f], tmp_path / "no", dataset="mmlu")
    with pytest.raises(ValueError, match="does not fit dataset 'gsm8k'"):
        import_files("du", [f], tmp_path / "no", dataset="gsm8k", grading="letters")
    s = import_files("du", [f], tmp_path / "run", dataset="mmlu", grading="letters",
                     model="Qwen/Qwen2.5-3B-Instruct")
    assert (s.debates, s.matched) == (1, 0)
    (rec,) = read_records(tmp_path / "run")
    assert rec["dataset"] == "mmlu" and rec["gold"] == "B"
    assert rec["model"] == "Qwen/Qwen2.5-3B-Instruct"
    assert [[a["canonical"] for a in rd["agents"]] for rd in rec["rounds_data"]] == \
        [["A", "B"], ["B", "B"]]
    assert rec["correct"] and validate(tmp_path / "run").findings.ok
    assert not (tmp_path / "no").exists()


def test_the_same_question_twice_is_two_samples(tmp_path):
    a = _write(tmp_path / "a.json", _du({GSM[1].question: ([["3", "3"], ["3", "3"]], "3")}))
    b = _write(tmp_path / "b.json", _du({GSM[1].question: ([["4", "3"], ["3", "3"]], "3")}))
    import_files("du", [a, b], tmp_path / "run", dataset="gsm8k")
    recs = read_records(tmp_path / "run")
    assert sorted(r["seed"] for r in recs) == [0, 1] and len({r["debate_id"] for r in recs}) == 2


# ----------------------------------------------------------------- DyLAN's format

def test_dylan_reader_reads_varying_shapes_and_extras(tmp_path):
    data = json.loads(gzip.decompress(DYLAN.read_bytes()))
    keys = list(data)[:12]
    f = _write(tmp_path / "few.json", {k: data[k] for k in keys})
    s = import_files("dylan", [f], tmp_path / "run", dataset="math500")
    assert (s.debates, s.matched) == (12, 12)
    recs = read_records(tmp_path / "run")
    for k, rec in zip(keys, recs):
        contexts = data[k][0]
        assert rec["n_agents"] == len(contexts)
        assert rec["rounds"] == sum(m["role"] == "assistant" for m in contexts[0]) - 1
        assert rec["imported"]["extra"] == {"level": data[k][2], "subject": data[k][3]}
        assert rec["imported"]["file_gold"] == data[k][1]
    assert validate(tmp_path / "run").findings.ok


@pytest.mark.slow
def test_the_shipped_dylan_debates(tmp_path):
    """All 477 of DyLAN's MATH-500 debates: matched, golds, and the dynamics measured."""
    s = import_files("dylan", [DYLAN], tmp_path / "run", dataset="math500",
                     model="gpt-3.5-turbo-0301")
    assert (s.debates, s.matched, s.gold_disagree) == (477, 477, 7)
    assert validate(tmp_path / "run").findings.ok
    v = load(tmp_path / "run")
    per = debate_statistics.per_debate(v.debates, v.agent_rounds, v.rounds)
    out = debate_statistics.summarize(per, rng=np.random.default_rng(0), n_resamples=500)
    got = dict(zip(out["statistic"], out["value"]))
    assert got["agent_acc_first"] == pytest.approx(0.3730, abs=5e-4)
    assert got["agent_acc_last"] == pytest.approx(0.3962, abs=5e-4)
    assert got["vote_acc_first"] == pytest.approx(198 / 477)
    assert got["w2r"] == pytest.approx(0.1867, abs=5e-4)
    assert got["r2w"] == pytest.approx(0.4879, abs=5e-4)
    assert dict(zip(out["statistic"], out["n"]))["w2r"] == 324


# ----------------------------------------------------------------- bad input

def _unequal(q):
    return {q: [[du_chat(q, ["1", "2"]), du_chat(q, ["1"])], "#### 3"]}


@pytest.mark.parametrize("fmt, content, message", [
    ("du", json.dumps(["a", "list"]), "not Du et al.'s format"),
    ("du", '{"q": [[[{"role": "assistant", "content": "1"}]], "#### 1"]', "not valid JSON"),
    ("du", json.dumps(_unequal("What is 1 + 2?")), "agents with different round counts"),
    ("du", json.dumps(_du({"What is 1 + 2?": ([["3"]], "no number here")})), "holds no answer"),
    ("du", json.dumps(_du({"What is 1 + 2?": ([["3"]], "")})), "the gold answer is empty"),
    ("dylan", json.dumps(_du({"What is 1 + 2?": ([["3"]], "3")})), "not DyLAN's format"),
    ("du", "\n".join(json.dumps({"q": i}) for i in range(2)), "not valid JSON"),
])
def test_bad_input_is_one_error_naming_file_and_entry_and_writes_nothing(
        tmp_path, capsys, fmt, content, message):
    f = tmp_path / "bad.json"
    f.write_text(content)
    out = tmp_path / "run"
    assert cli.main(["import", fmt, str(f), "--out", str(out), "--dataset", "gsm8k"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(f) in err and "nothing was written" in err, err
    assert err.count("\n") == 1
    if "What is 1 + 2?" in content:
        assert "'What is 1 + 2?'" in err
    assert not out.exists() and not list(tmp_path.glob(".run*"))


def test_du_needs_every_debate_alike(tmp_path):
    f = _write(tmp_path / "x.json", _du({
        GSM[0].question: ([["18", "18"], ["18", "18"]], "18"),
        GSM[1].question: ([["3", "3", "3"], ["3", "3", "3"]], "3")}))
    with pytest.raises(BadInput, match="2 agents x 3 rounds, but this format needs every "
                                       "debate of a file alike"):
        import_files("du", [f], tmp_path / "run", dataset="gsm8k")


def test_skip_bad_lists_and_counts_bad_entries_in_the_manifest(tmp_path, capsys):
    good = _du({GSM[1].question: ([["3", "3"], ["3", "3"]], "#### 3")})
    bad = _unequal("What is 1 + 2?")
    f = _write(tmp_path / "mixed.json", {**good, **bad})
    truncated = tmp_path / "cut.json"
    truncated.write_text(json.dumps(good)[:-20])
    out = tmp_path / "run"
    assert cli.main(["import", "du", str(f), str(truncated), "--out", str(out),
                     "--dataset", "gsm8k", "--skip-bad"]) == 0
    assert "skipped 2 bad entries" in capsys.readouterr().out
    man = manifest.read(out)["imported"]
    assert man["bad_count"] == 2 and man["debates"] == 1
    assert [b["entry"] for b in man["bad_entries"]] == ["What is 1 + 2?", ""]
    assert "different round counts" in man["bad_entries"][0]["reason"]
    assert "truncated" in man["bad_entries"][1]["reason"]


def test_out_must_be_new(du_gsm, tmp_path):
    import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k")
    with pytest.raises(ValueError, match="exists and is not empty"):
        import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k")
    with pytest.raises(ValueError, match="unknown import format 'xyz'"):
        import_files("xyz", [du_gsm], tmp_path / "new", dataset="gsm8k")


# ----------------------------------------------------------------- the analysis

def test_dynamics_of_an_imported_run(du_gsm, tmp_path):
    import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k")
    v = load(tmp_path / "run")
    per = debate_statistics.per_debate(v.debates, v.agent_rounds, v.rounds).set_index(
        v.debates["question_id"])
    q0 = per.loc[GSM[0].id]
    # round 0: 18 16 20 (1 right); round 1: 18 18 20 (2 right); one of two wrong ones turned
    assert (q0["agent_acc_first"], q0["agent_acc_last"]) == (1 / 3, 2 / 3)
    assert (q0["w2r"], q0["r2w"], q0["change_rate"]) == (0.5, 0.0, 1 / 3)
    assert q0["minority_won"] == 1.0  # 18 held by one of three agents in round 0, wins
    q1 = per.loc[GSM[1].id]  # 3, 3, 4 -> 3, 3, 3: a right majority: no minority
    assert math.isnan(q1["minority_won"]) and math.isnan(q1["r2w"]) is False
    out = debate_statistics.summarize(per.reset_index(drop=True), rng=np.random.default_rng(0),
                             n_resamples=200)
    row = out.set_index("statistic").loc["w2r"]
    assert row["n"] == 3 and row["low"] <= row["value"] <= row["high"]
    test, note = debate_statistics.first_last_mcnemar(per)
    # every final vote is right; round 0's ties (18/16/20, 7/12) went to a seeded draw
    wrong_first = int((per["vote_acc_first"] == 0).sum())
    assert (test.b, test.c) == (wrong_first, 0) and wrong_first >= 1 and note == ""


def test_statistics_that_cannot_be_computed_say_why(tmp_path):
    f = _write(tmp_path / "gsm_3_1.json", _du({GSM[0].question: ([["18"], ["18"], ["3"]], "18"),
                                               GSM[1].question: ([["3"], ["3"], ["3"]], "3")}))
    import_files("du", [f], tmp_path / "run", dataset="gsm8k")
    v = load(tmp_path / "run")
    per = debate_statistics.per_debate(v.debates, v.agent_rounds, v.rounds)
    out = debate_statistics.summarize(per, rng=np.random.default_rng(0)).set_index("statistic")
    for stat in ("w2r", "r2w", "change_rate", "minority_won"):
        assert out.loc[stat, "n"] == 0 and math.isnan(out.loc[stat, "value"])
        assert out.loc[stat, "note"]
    assert out.loc["agent_acc_first", "value"] == pytest.approx((2 / 3 + 1) / 2)
    test, note = debate_statistics.first_last_mcnemar(per)
    assert test is None and "fewer than two debates" in note


def test_notebook_17_sets_the_simulated_population_beside_the_run(du_gsm, tmp_path):
    """Notebook 17's own cells (its describe, summary_table and verdict) on a Du et al. run."""
    from notebook_cells import notebook_functions
    from pear.populations import simcheck
    import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k")
    nb = notebook_functions("17_real_debates", runs={"du-gsm": tmp_path / "run"})
    c = simcheck.check(tmp_path / "run", "grounded", 3, 0, n_resamples=200)
    assert c.setting["protocol"]["name"] == "du" and c.setting["replicates"] == 3
    table = nb["summary_table"]({"du-gsm": c})
    assert list(table.index.get_level_values("statistic")) == \
        list(debate_statistics.STATISTICS.values())
    row = table.loc[("du-gsm", "agent accuracy, round 0")]
    assert row["real [95% CI]"].startswith("0.444 [") and row["debates"] == 3
    lines = [nb["verdict"]("du-gsm", c, s) for s in c.statistics]
    assert len(lines) == len(debate_statistics.STATISTICS)
    assert lines[0].startswith("du-gsm: agent accuracy, round 0: simulated ")
    assert any("cannot be compared" in line or "inside" in line for line in lines)
    text = nb["describe"]("du-gsm", c)
    assert "not refitted" in text and "under the source's protocol (du), 3 replicates" in text
    assert text.startswith("**du-gsm** (du, model ")


# ----------------------------------------------------------------- notebook 17

@pytest.mark.slow
@pytest.mark.timeout(900)  # a first run imports DyLAN's corpus (~3.5 min) for the leave-one-out
def test_notebook_17_on_the_shipped_dylan_debates(tmp_path, capsys):
    from pear.paper import build, registry
    figures = tmp_path / "figures"
    rc = build.build(backend="simulated", preset="sim", only="17", runs=str(tmp_path / "runs"),
                     figures=figures, build_dir=tmp_path / "build")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert registry.check_outputs(figures, ["17_real_debates"]) == []
    table = (figures / "real_debates.md").read_text()
    assert "| dylan-math500 | agent accuracy, round 0 | 0.373 [" in table
    assert "| dylan-math500 | R2W (per query) | 0.488 [" in table
    executed = (tmp_path / "build" / "17_real_debates.ipynb").read_text()
    assert "R2W (per query): simulated" in executed and "not refitted" in executed
    # the leave-one-out: the seven subjects of DyLAN's corpus, each held out of its own fit
    loo = (figures / "leave_one_out.md").read_text()
    assert "| Algebra | agent accuracy, round 0 | 0.536 [0.512, 0.559] | 1187 |" in loo
    assert "| Precalculus | correct minority won | 0.459 [" in loo
    summary = (figures / "leave_one_out_summary.md").read_text()
    # each fold is fitted as grounded is: the other six subjects (10,233 choice sets without
    # Geometry) and DyLAN's four MMLU teams (15,688)
    assert "| Geometry | 479 | 25921 |" in summary and "| all subjects | 4799 | -- |" in summary
    assert "| all subjects | 4799 | -- | 58 of 63 | 36 of 63 |" in summary


def test_imported_model_text_is_escaped_in_transcripts(tmp_path):
    from pear.analysis.transcript import render_transcript, render_transcript_html
    evil = "<script>alert(1)</script> so the answer is 3"
    f = _write(tmp_path / "x.json", _du({GSM[1].question: ([[evil, "3"], ["3", "3"]], "3")}))
    import_files("du", [f], tmp_path / "run", dataset="gsm8k")
    (rec,) = read_records(tmp_path / "run")
    assert rec["rounds_data"][0]["agents"][0]["reasoning"] == evil  # kept as written
    page = render_transcript_html(rec)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = render_transcript(rec)
    assert "<script>" not in md and "Imported from du records" in md
    assert "| 1 | 3 | – | ✓ | – |" in md  # no confidence, no influence: shown as absent
    v = validate(tmp_path / "run")
    assert v.findings.ok and v.findings.counts.get("markup") == 1  # a warning, not damage


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_replay_build_on_an_imported_run(du_gsm, tmp_path, capsys):
    """`make paper BACKEND=replay RUNS=<imported run>`: every notebook runs or says why not."""
    from pear.paper import build, registry
    run = tmp_path / "imported"
    import_files("du", [du_gsm], run, dataset="gsm8k", model="qwen-3b")
    figures = tmp_path / "figures"
    rc = build.build(backend="replay", runs=str(run), figures=figures,
                     build_dir=tmp_path / "build", site_dir=tmp_path / "site")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert registry.check_outputs(figures) == []
    assert site.check_site(tmp_path / "site") == []  # every page and link
    for name in registry.NOT_FOR_IMPORTED:
        assert f"skipped {name}:" in out
    assert "cannot speak to imported debates" in (figures / "robustness.md").read_text()
    diag = (figures / "diagnostics.md").read_text()
    assert "| Acceptance | -- |" in diag and "| Influence entropy | -- |" in diag
    claims = (figures / "claims.md").read_text()
    assert "0 contradicted" in claims and "imported debates (another framework's protocol" \
        in claims
    assert "imported debates, not run here" in (figures / "main_results.md").read_text()


def test_a_cached_import_by_another_importer_version_is_imported_again(du_gsm, tmp_path):
    from pear.store.import_cache import imported_run
    from pear.store.importing import IMPORT_VERSION
    run = imported_run("du", du_gsm, tmp_path / "run", dataset="gsm8k")
    first = manifest.read(run)["imported"]
    assert first["version"] == IMPORT_VERSION
    assert imported_run("du", du_gsm, run, dataset="gsm8k") == run  # the same: kept
    assert manifest.read(run)["imported"]["imported_at"] == first["imported_at"]
    old = json.loads((run / "manifest.json").read_text())
    old["imported"]["version"] = IMPORT_VERSION - 1  # an import by the reader before
    old["imported"]["imported_at"] = "2000-01-01T00:00:00+00:00"
    (run / "manifest.json").write_text(json.dumps(old))
    imported_run("du", du_gsm, run, dataset="gsm8k")
    again = manifest.read(run)["imported"]
    assert again["version"] == IMPORT_VERSION and again["imported_at"] != old["imported"][
        "imported_at"]


# ----------------------------------------------------------------- what DyLAN's agents heard

_DYLAN_SYSTEM = ("It's a debate. Explain your reasons at each round thoroughly.\n Follow the "
                 "given examples and answer the mathematics problem.")
_DYLAN_ASK = ("Using the reasoning from other agents as additional advice with critical "
              "thinking, can you give an updated answer? Examine your solution and that other "
              "agents step by step. Notice that the former answers might be all wrong.")


def _dylan_quotes(solutions: list[str]) -> str:
    """A DyLAN message of round 1..: the other agents' answers quoted as DyLAN writes them."""
    return ("These are the solutions to the problem from other agents: "
            + "".join(f"\n\nOne agent solution: ```{s}```" for s in solutions)
            + f"\n\n{_DYLAN_ASK}")


def _dylan_chat(prompt: str, answers: list[str], heard: list[list[str]]) -> list[dict]:
    """One agent's agent_context as DyLAN writes it (``heard[r - 1]``: what round r quotes)."""
    out = [{"role": "system", "content": _DYLAN_SYSTEM}, {"role": "user", "content": prompt}]
    for r, a in enumerate(answers):
        if r:
            out.append({"role": "user", "content": _dylan_quotes(heard[r - 1])})
        out.append({"role": "assistant", "content": a})
    return out


@pytest.fixture
def dylan_heard(tmp_path) -> Path:
    """A DyLAN debate of 4 agents of which the ranker kept 2 (the record's agents 0 and 1):
    in round 1 each kept agent quotes 3 answers, 2 of them by the dropped agents; one of
    these is 10/2 (right, written as the kept agents' 5 is not), one wrong and fenced."""
    prompt = "Problem: What is $1+1$?\nAnswer: $2$\n###\nProblem: What is $2+3$?\nAnswer:"
    a0 = ["2 + 3 = 5, so the answer is $\\boxed{5}$.", "I keep $\\boxed{5}$."]
    a1 = ["2 + 3 = 6. The answer is $\\boxed{6}$.", "Agreed, it is $\\boxed{5}$."]
    d2 = "Half of 10: the answer is $\\boxed{\\frac{10}{2}}$."  # dropped before round 2
    d3 = "```\n2 + 3 = 7\n```\nThe answer is $\\boxed{7}$."  # dropped, with a code fence
    contexts = [_dylan_chat(prompt, a0, [[a1[0], d2, d3]]),
                _dylan_chat(prompt, a1, [[a0[1], d2, d3]])]
    return _write(tmp_path / "dylan_heard.json", {prompt: [contexts, "5", "Level 1",
                                                           "Prealgebra"]})


def test_dylan_reader_reads_the_answers_each_message_quotes(dylan_heard):
    from pear.store.readers.dylan import DylanReader, quoted_solutions
    (raw,) = DylanReader().read(dylan_heard)
    assert raw.n_agents == 2 and raw.n_rounds == 2
    assert raw.heard[0][0] == raw.heard[1][0] == ()
    assert raw.heard[0][1] == (raw.texts[1][0], "Half of 10: the answer is "
                               "$\\boxed{\\frac{10}{2}}$.",
                               "```\n2 + 3 = 7\n```\nThe answer is $\\boxed{7}$.")
    assert raw.heard[1][1][0] == raw.texts[0][1] and raw.heard[1][1][1:] == raw.heard[0][1][1:]
    assert quoted_solutions("Problem: What is $2+3$?\nAnswer:") == ()


def _lines(run: Path) -> list[dict]:
    """The records as written, every field kept (:func:`read_records` keeps only the fields
    :class:`pear.core.record.DebateRecord` declares)."""
    return [json.loads(x) for x in (run / "debates.jsonl").read_text().splitlines() if x]


def test_dylan_import_grades_what_each_agent_heard(dylan_heard, tmp_path):
    s = import_files("dylan", [dylan_heard], tmp_path / "run", dataset="math", grading="math")
    assert s.debates == 1
    (rec,) = _lines(tmp_path / "run")
    r0, r1 = rec["rounds_data"]
    assert [a["canonical"] for a in r0["agents"]] == ["5", "6"]
    assert [a["canonical"] for a in r1["agents"]] == ["5", "5"]
    assert all("heard" not in a for a in r0["agents"])
    assert r1["edges"] == [[0, 1], [1, 0]]  # the clique of the kept agents: 1 of 3 heard
    # 3 heard each, in prompt order: the other kept agent's latest, then the dropped two's
    assert r1["agents"][0]["heard"] == [{"canonical": "6", "correct": False},
                                        {"canonical": "5", "correct": True},
                                        {"canonical": "7", "correct": False}]
    assert r1["agents"][1]["heard"] == [{"canonical": "5", "correct": True},
                                        {"canonical": "5", "correct": True},
                                        {"canonical": "7", "correct": False}]
    v = validate(tmp_path / "run")
    assert v.findings.ok and v.debates == 1, v.report()
    assert manifest.read(tmp_path / "run")["imported"]["version"] == 4


def test_du_import_has_no_heard(du_gsm, tmp_path):
    import_files("du", [du_gsm], tmp_path / "run", dataset="gsm8k")
    recs = _lines(tmp_path / "run")
    assert len(recs) == 3
    assert not any("heard" in a for rec in recs for rd in rec["rounds_data"]
                   for a in rd["agents"])


def test_dylan_import_measures_the_quorums_its_check_missed(tmp_path):
    """DyLAN compares answer strings: 3 agents agreeing in round 0 as our grader reads them
    (5, 5.0, 10/2) went on; the import records that share (the protocol's ``stop.miss_right``:
    every quorum here is on the right answer, so ``stop.miss``, on a wrong one, is 0)."""
    prompt = "Problem: What is $1+1$?\nAnswer: $2$\n###\nProblem: What is $2+3$?\nAnswer:"
    said = {k: f"The answer is $\\boxed{{{k}}}$." for k in ("5", "5.0", "\\frac{10}{2}", "6",
                                                             "7")}
    missed = [[said["5"], said["5"]], [said["5.0"], said["5"]], [said["\\frac{10}{2}"],
                                                                 said["5"]]]
    stopped = [[said["5"], said["5"]], [said["6"], said["5"]], [said["7"], said["5"]]]
    data = {}
    for q, answers in ((prompt, missed), (prompt.replace("2+3", "3+2"), stopped)):
        contexts = [_dylan_chat(q, a, [[o[0] for j, o in enumerate(answers) if j != i]])
                    for i, a in enumerate(answers)]
        data[q] = [contexts, "5", "Level 1", "Prealgebra"]
    run = tmp_path / "run"
    import_files("dylan", [_write(tmp_path / "q.json", data)], run, dataset="math",
                 grading="math")
    stop = manifest.read(run)["imported"]["protocol"]["stop"]
    # quorums: the first debate's rounds 0 (missed) and 1, the second's round 1
    assert stop["miss_right"] == pytest.approx(1 / 3, abs=1e-4) and stop["miss"] == 0.0
