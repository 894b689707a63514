"""``pear import du FILE --dataset NAME --grading KIND`` on datasets we do not ship: Du et al.'s
arithmetic task (numbers), AQuA-style questions of five options (letters over the options the
question lists), StrategyQA-style yes/no questions (yesno); golds no grader reads, and gold
letters beyond a question's options, are one error naming the file, the entry and the gold."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pear import cli
from pear.cli import importing as cli_importing
from pear.store import manifest
from pear.store.importing import import_files
from pear.store.readers import BadInput
from pear.store.readers.answers import final_answer
from pear.store.readers.base import short
from pear.store.records import read_records
from pear.store.validate import validate
from pear.tasks.grading import GRADING_KINDS, for_kind
from record_factory import du_chat


def _du_file(path: Path, debates: dict[str, tuple[list[list[str]], object]]) -> Path:
    """A Du et al. file ``{question: [agent_contexts, gold]}`` from answers[agent][round]."""
    path.write_text(json.dumps({q: [[du_chat(q, a) for a in answers], gold]
                                for q, (answers, gold) in debates.items()}))
    return path


def _by_question(run: Path, questions) -> list[dict]:
    """The run's records of ``questions`` (their texts, the entries the file names them by),
    in that order."""
    recs = {r["imported"]["entry"]: r for r in read_records(run)}
    return [recs[short(q, 200)] for q in questions]


def _canonicals(rec: dict) -> list[list[str]]:
    """Per round, each agent's canonical answer."""
    return [[a["canonical"] for a in rd["agents"]] for rd in rec["rounds_data"]]


def _round0_accuracy(recs) -> float:
    """The share of right answers among all agents' answers of round 0."""
    first = [a["correct"] for r in recs for a in r["rounds_data"][0]["agents"]]
    return sum(first) / len(first)


# ----------------------------------------------------------------- Du et al.'s arithmetic

ASK = "Make sure to state your answer at the end of the response."
ARITHMETIC = {  # the prompt of Du et al.'s math/gen_math.py; golds as their script computes them
    f"What is the result of 12+7*3-5*2+1? {ASK}": ([
        ["First the products: 7*3 = 21 and 5*2 = 10. Then 12 + 21 - 10 + 1 = 24. "
         "Therefore, the result of 12+7*3-5*2+1 is 24.",
         "I agree with the other agents: the answer is 24."],
        ["Using PEMDAS, 12+7*3-5*2+1 = 12 + 21 - 10 + 1 = 23.",
         "After checking again, 12 + 21 = 33, 33 - 10 = 23, 23 + 1 = 24. The result is 24."],
        ["The result of 12+7*3-5*2+1 is 24.", "My answer is still 24."]], 24),
    f"What is the result of 3+25*14+9-28*17? {ASK}": ([
        ["25*14 = 350 and 28*17 = 476, so 3 + 350 + 9 - 476 = -114. The answer is -114.",
         "The answer is -114."],
        ["3 + 350 + 9 - 476 = -104", "I made a subtraction error; the result is -114."],
        ["3 + 350 + 9 - 476 equals -114.", "-114"]], -114),
    f"What is the result of 0+6*29+13-4*8? {ASK}": ([
        ["6*29 = 174, 4*8 = 32: 0 + 174 + 13 - 32 = 155. So the result is 155.",
         "The result is 155."],
        ["The answer is 165.", "Having seen the other solutions, the answer is 155."],
        ["I cannot compute this.", "0 + 174 + 13 - 32 = 155"]], 155),
}


def test_du_arithmetic_imports_graded_by_numbers(tmp_path):
    f = _du_file(tmp_path / "math_agents3_rounds2.json", ARITHMETIC)
    s = import_files("du", [f], tmp_path / "run", dataset="arithmetic", grading="numbers",
                     model="gpt-3.5-turbo-0301")
    assert (s.debates, s.matched, s.bad) == (3, 0, [])
    recs = _by_question(tmp_path / "run", ARITHMETIC)
    first, second, third = recs
    assert [r["gold"] for r in (first, second, third)] == ["24", "-114", "155"]
    assert [r["imported"]["file_gold"] for r in (first, second, third)] == ["24", "-114", "155"]
    assert _canonicals(first) == [["24", "23", "24"], ["24", "24", "24"]]
    assert _canonicals(second) == [["-114", "-104", "-114"], ["-114", "-114", "-114"]]
    assert _canonicals(third) == [["155", "165", ""], ["155", "155", "155"]]
    assert third["parse_failures"] == 1
    assert _round0_accuracy(recs) == pytest.approx(5 / 9)
    assert all(r["correct"] for r in recs)
    man = manifest.read(tmp_path / "run")["imported"]
    assert man["grading"] == "numbers" and man["datasets"] == ["arithmetic"]
    assert validate(tmp_path / "run").findings.ok


@pytest.mark.parametrize("text, value", [
    # the value is stated after the expression, in the same sentence
    ("3 + 350 + 9 - 476 equals -114.", "-114"),
    ("So the result is 3+350+9-476 = -114.", "-114"),
    ("The result of 3+25*14+9-28*17 is -114.", "-114"),
    ("12+7*3-5*2+1 = 24", "24"),
    # an unevaluated expression stated as the answer, its value only after it
    pytest.param("We get 3+350+9-476 which equals -114.", "-114", marks=pytest.mark.xfail(
        strict=True, reason="final_answer takes the math right after 'get' (the expression "
                            "3+350+9-476) as the statement, whose last number is 476")),
    pytest.param("Therefore the answer is 3 + 350 + 9 - 476, which is -114.", "-114",
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "final_answer reads the expression after 'the answer is' as the answer "
                     "(-476: its last number, the minus read as a sign)"))),
])
def test_arithmetic_answers_as_the_import_reads_them(text, value):
    task = for_kind("numbers", "arithmetic")
    assert task.canonical(final_answer(text) or text) == value


def test_du_arithmetic_from_the_command_line(tmp_path, capsys):
    f = _du_file(tmp_path / "math_agents3_rounds2.json", ARITHMETIC)
    assert cli.main(["import", "du", str(f), "--out", str(tmp_path / "run"), "--dataset",
                     "arithmetic", "--grading", "numbers"]) == 0
    assert "imported 3 debates" in capsys.readouterr().out


# ----------------------------------------------------------------- letters: the options offered

AQUA = ("A car travels 90 km in 1.5 hours and then 60 km in 1 hour. What is its average "
        "speed in km/h? Options: A)50 B)55 C)58 D)60 E)62")
LISTED = ("Which planet is largest?\nA. Mercury\nB. Venus\nC. Earth\nD. Mars\nE. Jupiter\n"
          "Explain your answer, putting the answer in the form (X) at the end of your response.")


def test_letters_are_graded_over_the_options_the_question_offers(tmp_path):
    f = _du_file(tmp_path / "aqua_3_2.json", {
        AQUA: ([["150 km in 2.5 h is 60 km/h. The answer is (D).", "(D)"],
                ["The average speed is 62 km/h. The answer is E.",
                 "I now agree: the answer is D)60."],
                ["Answer: B", "(D)"]], "D"),
        LISTED: ([["Jupiter is the largest planet. (E)", "(E)"],
                  ["The answer is (E).", "(E)"],
                  ["Earth is our home. (C)", "The answer is E."]], "E")})
    s = import_files("du", [f], tmp_path / "run", dataset="aqua", grading="letters")
    assert (s.debates, s.bad) == (2, [])
    recs = _by_question(tmp_path / "run", [AQUA, LISTED])
    aqua, listed = recs
    assert (aqua["gold"], listed["gold"]) == ("D", "E")
    assert _canonicals(aqua) == [["D", "E", "B"], ["D", "D", "D"]]
    assert _canonicals(listed) == [["E", "E", "C"], ["E", "E", "E"]]
    assert _round0_accuracy(recs) == pytest.approx(3 / 6)
    assert aqua["correct"] and listed["correct"]
    assert validate(tmp_path / "run").findings.ok
    # the options offered are recorded, and sim-check simulates that many (not A-D)
    from pear.populations.simcheck import n_choices
    assert [r["imported"]["extra"]["options"] for r in recs] == [5, 5]
    assert [n_choices(r, "letters") for r in recs] == [5, 5]


@pytest.mark.parametrize("text, letter", [
    # the letter stated, with or without the option's text
    ("The average speed is 62 km/h. The answer is E.", "E"),
    ("Since 150/2.5 = 60, the answer is D)60.", "D"),
    ("E) 62", "E"),
    # a number stated before the letter: the statement read is the number, which holds none
    pytest.param("Total time 2.5 h, so the speed is 60 km/h, which is choice (D).", "D",
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "final_answer reads '60' (the value after 'is'), and the letter reader "
                     "reads only that statement, not the whole text"))),
    pytest.param("The average speed is 62 km/h, so E.", "E", marks=pytest.mark.xfail(
        strict=True, reason="final_answer reads '62'; the letter after it is not read")),
])
def test_letter_answers_as_the_import_reads_them(text, letter):
    task = for_kind("letters", "aqua")
    assert task.canonical(final_answer(text) or text) == letter


@pytest.mark.parametrize("question, gold, says", [
    # the text lists A-D: an "E" is none of them
    ("Which is a noble gas? A) iron, B) neon, C) salt, D) water. Answer in the form (X).",
     "E", "the gold letter 'E' (the file gives 'E') is not one of the options the question "
          "offers, A-D (its text lists them)"),
    # the text lists no options: A-D assumed (MMLU's four), and said so
    ("Which is a noble gas? Answer in the form (X).", "(E)",
     "the gold letter 'E' (the file gives '(E)') is not one of the options the question "
     "offers, A-D (its text lists none: A-D assumed)"),
])
def test_a_gold_letter_beyond_the_options_is_one_error(tmp_path, capsys, question, gold, says):
    f = _du_file(tmp_path / "quiz.json", {question: ([["(B)"], ["(B)"]], gold)})
    out = tmp_path / "run"
    assert cli.main(["import", "du", str(f), "--out", str(out), "--dataset", "quiz",
                     "--grading", "letters"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and "entry 'Which is a noble gas?" in err, err
    assert says in err and "nothing was written" in err, err
    assert not out.exists()


# ----------------------------------------------------------------- yes/no: StrategyQA

STRATEGY = {  # Du et al.'s prompt shape; golds as StrategyQA gives them (JSON booleans) or words
    "Could Aristotle have used a laptop? Answer yes or no at the end of your response.": ([
        ["Aristotle lived from 384 to 322 BC; laptops appeared in the 1980s. So the answer "
         "is no.", "No, because laptops were invented some 2,300 years after his death."],
        ["Aristotle was a great thinker who could have learned anything. (yes)",
         "I agree with the other agents. The answer is (no)."],
        ["Is it yes or no? It depends on what we mean by 'used'.",
         '{"answer": "no", "reasoning": "laptops did not exist in ancient Greece"}']], False),
    "Is the Great Wall of China longer than 1,000 km? Answer yes or no at the end of your "
    "response.": ([
        ["The wall, with all its branches, runs over 21,000 km. Answer: Yes",
         "Therefore, yes."],
        ["Yes. It is about 21,196 km long in total.", "\\boxed{\\text{yes}}"],
        ["It is about 800 km long, so no.", "Having read the others, my final answer is "
                                            "yes."]], True),
    "Do hamsters provide food for any animals? Answer yes or no at the end of your "
    "response.": ([
        ["Hamsters are prey for owls, snakes and foxes. The answer is: yes.", "yes"],
        ["There is no evidence that anything eats hamsters.", "The answer is yes."],
        ["Yes or no: hard to say.", "**Yes**"]], "yes"),
}


def test_yes_no_answers_are_graded_by_yesno(tmp_path):
    f = _du_file(tmp_path / "strategyqa_3_2.json", STRATEGY)
    s = import_files("du", [f], tmp_path / "run", dataset="strategyqa", grading="yesno")
    assert (s.debates, s.bad) == (3, [])
    recs = _by_question(tmp_path / "run", STRATEGY)
    laptop, wall, hamster = recs
    assert [r["gold"] for r in (laptop, wall, hamster)] == ["no", "yes", "yes"]
    assert [r["imported"]["file_gold"] for r in (laptop, wall, hamster)] == \
        ["false", "true", "yes"]
    # "Is it yes or no?" gives both: no answer, never a right one
    assert _canonicals(laptop) == [["no", "yes", ""], ["no", "no", "no"]]
    assert _canonicals(wall) == [["yes", "yes", "no"], ["yes", "yes", "yes"]]
    assert _canonicals(hamster) == [["yes", "", ""], ["yes", "yes", "yes"]]
    assert [a["parse_error"] is not None for a in laptop["rounds_data"][0]["agents"]] == \
        [False, False, True]
    assert _round0_accuracy(recs) == pytest.approx(4 / 9)
    assert all(r["correct"] and r["final_answer"] == r["gold"] for r in recs)
    assert manifest.read(tmp_path / "run")["imported"]["grading"] == "yesno"
    assert validate(tmp_path / "run").findings.ok


def test_yes_no_from_the_command_line(tmp_path, capsys):
    f = _du_file(tmp_path / "strategyqa_3_2.json", STRATEGY)
    assert cli.main(["import", "du", str(f), "--out", str(tmp_path / "run"), "--dataset",
                     "strategyqa", "--grading", "yesno"]) == 0
    assert "imported 3 debates" in capsys.readouterr().out
    assert cli.main(["import", "du", str(f), "--out", str(tmp_path / "no"), "--dataset",
                     "strategyqa"]) == 2
    assert "--grading numbers|letters|math|yesno" in capsys.readouterr().err


def test_the_command_line_offers_every_grading_kind():
    sub = argparse.ArgumentParser().add_subparsers()
    cli_importing.add_import(sub)
    (im,) = sub.choices.values()
    (grading,) = [a for a in im._actions if a.dest == "grading"]
    assert tuple(grading.choices) == tuple(GRADING_KINDS)


# ----------------------------------------------------------------- golds no grader reads

@pytest.mark.parametrize("name, grading, gold", [
    ("arithmetic", "numbers", "unknown"),
    ("strategyqa", "yesno", "maybe"),
    ("strategyqa", "yesno", "yes or no"),   # both answers: none
    ("strategyqa", "yesno", 1),              # a number is no yes/no answer
    ("aqua", "letters", "none of these"),
])
def test_a_gold_no_grader_reads_is_one_error(tmp_path, capsys, name, grading, gold):
    question = "What is the result of 1+2*3+4-5*6? Answer at the end."
    f = _du_file(tmp_path / "bad.json", {question: ([["7"], ["7"]], gold)})
    out = tmp_path / "run"
    assert cli.main(["import", "du", str(f), "--out", str(out), "--dataset", name,
                     "--grading", grading]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and repr(question) in err, err
    assert f"the gold answer {str(gold)!r} holds no answer our {grading} grader can read" in err
    assert "nothing was written" in err and not out.exists()
    with pytest.raises(BadInput, match="holds no answer"):
        import_files("du", [f], out, dataset=name, grading=grading)
