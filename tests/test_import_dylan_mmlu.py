"""DyLAN's MMLU records (``pear import dylan-mmlu``): JSON Lines debates in a .tgz, question and
gold from the key TSV beside it (data/real-debates/README.md)."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from pear import cli
from pear.store import manifest
from pear.store.importing import import_files
from pear.store.readers import BadEntry, BadInput, RawDebate, reader
from pear.store.readers.dylan_mmlu import (KEY_COLUMNS, DylanMmluReader, _debate,
                                           dylan_choice, load_key, protocol_for)
from pear.store.records import read_records
from pear.store.validate import validate

N2 = "exp/MMLU/mmlu_optimal7_2/anatomy_test_23.json"
N4 = "exp/MMLU/mmlu_optimal7_4/college_physics_test_43.json"  # holds conceptual_physics

# line 0: agreement in round 1 (1 round); line 1: 3 rounds, agent 0 wrong then right;
# line 2: no key row
ANATOMY = [
    [["The ileum is part of the small intestine, so the answer is (B).", None, None],
     ["(A) is the stomach, which is not part of it. The correct answer is (B) Ileum.",
      None, None]],
    [["I believe the answer is (A).",
      "Agent solution 2 is convincing: the updated answer is (C).",
      "The answer is (C)."],
     ["The answer is (D).", "Having read both, the answer is (C).", "So (C)."]],
    [["The answer is (A).", None, None], ["The answer is (A).", None, None]],
]
# one line of 4 agents: agent 3 never speaks (the round-1 quorum stopped the debate)
PHYSICS = [
    [["Mass stays the same, the answer is (D).", None, None],
     ["Weight changes but mass does not: (D).", None, None],
     ["As a lawyer I am not sure, but the answer is (D).", None, None],
     [None, None, None]],
]
KEY = [
    ("mmlu_optimal7_2", "anatomy_test_23.json", 0, "anatomy", 0, 17, "B", "order", ""),
    ("mmlu_optimal7_2", "anatomy_test_23.json", 1, "anatomy", 1, 4, "C", "order", ""),
    ("mmlu_optimal7_4", "college_physics_test_43.json", 0, "conceptual_physics", 5, 88, "D",
     "order", "mislabelled file"),
]


def _tgz(path: Path, files: dict[str, list]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, lines in files.items():
            raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
        note = b"[1, 0]\n0.5\n"  # DyLAN's .txt beside each file: skipped
        info = tarfile.TarInfo(name.replace(".json", ".txt"))
        info.size = len(note)
        tar.addfile(info, io.BytesIO(note))
    return path


def _key(path: Path, rows=KEY) -> Path:
    path.write_text("\t".join(KEY_COLUMNS) + "\n"
                    + "".join("\t".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    _key(tmp_path / "mmlu-key.tsv")
    return _tgz(tmp_path / "mmlu.tgz", {N2: ANATOMY, N4: PHYSICS})


def test_dylan_choice_is_the_last_parenthesised_letter():
    assert dylan_choice("(A) is wrong ... the answer is (B)") == "B"
    assert dylan_choice("the answer is option D) Prone.") == "D"
    assert dylan_choice("I cannot answer this.") is None and dylan_choice(None) is None


def test_the_reader_reads_lines_with_the_key_beside_the_archive(corpus):
    items = list(reader("dylan-mmlu").read(corpus))
    debates = [i for i in items if isinstance(i, RawDebate)]
    bad = [i for i in items if isinstance(i, BadEntry)]
    assert [d.n_agents for d in debates] == [2, 2, 3]  # physics' agent 3 never spoke
    assert [d.n_rounds for d in debates] == [1, 3, 1]
    first, second, physics = debates
    assert first.question == "MMLU anatomy test row 17" and first.gold == "B"
    assert first.texts[0] == (ANATOMY[0][0][0],)
    assert second.texts[1] == tuple(ANATOMY[1][1])
    assert physics.texts == tuple((a[0],) for a in PHYSICS[0][:3])
    assert physics.extra["subject"] == "conceptual_physics"  # the key's, not the file name's
    assert physics.extra | {"dylan_answers": None} == {
        "subject": "conceptual_physics", "team": 4, "folder": "mmlu_optimal7_4",
        "file": "college_physics_test_43.json", "line": 0, "align": "order",
        "sample_pos": 5, "mmlu_test_row": 88, "slots": [0, 1, 2], "dylan_answers": None}
    assert second.extra["dylan_answers"] == [["A", "C", "C"], ["D", "C", "C"]]
    assert physics.extra["dylan_answers"] == [["D"], ["D"], ["D"]]
    assert len(bad) == 1 and bad[0].file.endswith(N2) and bad[0].entry == "line 2"
    assert "no key row" in bad[0].reason and "anatomy_test_23.json line 2" in bad[0].reason


def test_the_key_can_be_given_and_must_exist(tmp_path):
    f = _tgz(tmp_path / "elsewhere.tgz", {N4: PHYSICS})
    with pytest.raises(FileNotFoundError, match="elsewhere-key.tsv"):
        list(DylanMmluReader().read(f))
    key = _key(tmp_path / "any-name.tsv")
    items = list(DylanMmluReader(key).read(f))
    assert len(items) == 1 and items[0].gold == "D"


def test_a_run_holds_one_team_size(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"several source protocols \(dylan-mmlu-2: 2, "
                                         r"dylan-mmlu-4: 1 debates.*--protocol NAME"):
        import_files("dylan-mmlu", [corpus], tmp_path / "run", dataset="mmlu",
                     grading="letters", skip_bad=True)
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match=r"with protocol 'dylan-mmlu-3' \(found "
                                         r"dylan-mmlu-2: 2, dylan-mmlu-4: 1\)"):
        import_files("dylan-mmlu", [corpus], tmp_path / "run", dataset="mmlu",
                     grading="letters", skip_bad=True, protocol="dylan-mmlu-3")
    assert not (tmp_path / "run").exists()


def test_import_grades_against_the_key(corpus, tmp_path):
    recs = []
    for team, n in (("dylan-mmlu-2", 2), ("dylan-mmlu-4", 1)):
        out = tmp_path / team
        s = import_files("dylan-mmlu", [corpus], out, dataset="mmlu", grading="letters",
                         model="gpt-3.5-turbo-0301", skip_bad=True, protocol=team)
        assert s.debates == n and s.matched == 0 and len(s.bad) == 1
        assert manifest.read(out)["imported"]["protocol"]["name"] == team
        recs += read_records(out)
    out = tmp_path / "dylan-mmlu-2"
    recs = sorted(recs, key=lambda r: r["imported"]["entry"])
    first, second, physics = recs
    assert [r["n_agents"] for r in recs] == [2, 2, 3]
    assert [r["rounds"] for r in recs] == [0, 2, 0]
    answers = [[a["canonical"] for a in rd["agents"]] for rd in second["rounds_data"]]
    assert answers == [["A", "D"], ["C", "C"], ["C", "C"]]
    correct = [[a["correct"] for a in rd["agents"]] for rd in second["rounds_data"]]
    assert correct == [[False, False], [True, True], [True, True]]
    assert second["gold"] == "C" and second["correct"] and second["final_answer"] == "C"
    assert [a["canonical"] for a in first["rounds_data"][0]["agents"]] == ["B", "B"]
    assert first["correct"] and first["imported"]["file_gold"] == "B"
    assert [a["correct"] for a in physics["rounds_data"][0]["agents"]] == [True] * 3
    assert physics["imported"]["extra"]["subject"] == "conceptual_physics"
    # the same MMLU question in another team size would get the same id
    assert first["question_id"] != second["question_id"]
    man = manifest.read(out)["imported"]
    assert man["format"] == "dylan-mmlu" and man["bad_count"] == 1
    assert man["bad_entries"][0]["entry"] == "line 2"
    assert man["protocol"]["name"] == "dylan-mmlu-2"
    v = validate(out)
    assert v.findings.ok and v.debates == 2, v.report()


def test_a_line_without_key_row_is_an_error_naming_file_and_line(corpus, tmp_path, capsys):
    with pytest.raises(BadInput, match=r"anatomy_test_23\.json: entry 'line 2': no key row"):
        import_files("dylan-mmlu", [corpus], tmp_path / "run", dataset="mmlu",
                     grading="letters")
    out = tmp_path / "run2"
    assert cli.main(["import", "dylan-mmlu", str(corpus), "--out", str(out), "--dataset",
                     "mmlu", "--grading", "letters", "--skip-bad", "--protocol",
                     "dylan-mmlu-2"]) == 0
    assert "imported 2 debates" in capsys.readouterr().out


def test_protocol_by_team_size():
    two, four, seven = protocol_for(2), protocol_for(4), protocol_for(7)
    assert two.rounds == four.rounds == seven.rounds == 3
    assert (two.stop.after, four.stop.after, seven.stop.after) == (2, 3, 5)
    assert two.drop is None and protocol_for(3).drop is None
    assert (seven.drop.before_round, seven.drop.keep) == (2, 2) and seven.agents == 7
    assert seven.order == "simultaneous" and seven.hears == "all_answered"


def test_agents_not_there_at_the_end_leave_the_record(tmp_path):
    """As DyLAN's MATH records keep them: an agent the ranker dropped before round 3, or that
    the quorum came before in the last round, is not in the debate (its nulls would count as
    wrong answers)."""
    row = load_key(_key(tmp_path / "k.tsv"))[("mmlu_optimal7_4", "college_physics_test_43.json",
                                              0)]
    value = [["(A)", "(B)", "(B)"], ["(B)", "(B)", "(B)"], ["(C)", "(C)", None],
             ["(B)", None, None]]
    d = _debate(Path("f.json"), "line 0", value, row, 4)
    assert d.extra["slots"] == [0, 1] and d.n_agents == 2 and d.n_rounds == 3
    assert d.texts == (("(A)", "(B)", "(B)"), ("(B)", "(B)", "(B)"))
    gone = _debate(Path("f.json"), "line 0", [["(A)", None], [None, "(B)"], [None, None],
                                              [None, None]], row, 4)
    assert isinstance(gone, BadEntry) and "no agent speaks in all 2 rounds" in gone.reason
