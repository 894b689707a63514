"""The forms real debate logs write options and final answers in (issue 72, item 4): the option
listings :func:`pear.tasks.grading.offered_letters` reads from a question's text, the final
answers :func:`pear.store.readers.answers.final_answer` reads from an agent's text as
``pear import`` grades them, and an import of a Du et al.-format file whose question lists its
options as a quoted Python list and whose gold is "E".

Every row is written for this file, after the shapes public forks of Du et al.'s
multi-agent-debate scripts (and ReConcile's data) use; none is copied from a real log.
"""
from __future__ import annotations

import json
import string
from pathlib import Path

import pytest

from pear.store.importing import import_files
from pear.store.readers.answers import final_answer
from pear.store.records import read_records
from pear.store.validate import validate
from pear.tasks.benchmarks import Question
from pear.tasks.grading import for_kind, get, offered_letters
from record_factory import du_chat

FIVE = "ABCDE"
TEN = "ABCDEFGHIJ"


def _quoted(options: list[str], quote: str = "'", space: bool = False) -> str:
    """A Python list of options as the forks print it: ``['A)10%', 'B)25%']``."""
    gap = " " if space else ""
    items = (f"{quote}{ch}){gap}{o}{quote}" for ch, o in zip(string.ascii_uppercase, options))
    return "[" + ", ".join(items) + "]"


PRICES = ["12%", "15%", "18%", "20%", "24%"]
ASK = "Choose one of the following options: "
STEM = "A shop raises a price from 50 to 60 dollars. By what percent did it rise? "

# ----------------------------------------------------------------- option listings

OPTION_CASES = [
    # the quoted Python list after the question (AQuA in the Du forks, ReConcile's data):
    # no space after the letter's parenthesis, and with one
    pytest.param(STEM + ASK + _quoted(PRICES), FIVE, id="quoted-list"),
    pytest.param(STEM + ASK + _quoted(PRICES, space=True), FIVE, id="quoted-list-space"),
    # double quotes (json.dumps of the list), and the mixed quotes Python's repr writes when
    # an option holds an apostrophe
    pytest.param(STEM + ASK + _quoted(PRICES, quote='"'), FIVE, id="double-quotes"),
    pytest.param("Whose bag is it? Options: ['A)Ana', \"B)Ben's\", 'C)Cal', 'D)Dee']", "ABCD",
                 id="mixed-quotes"),
    # five options, ten (MMLU-Pro's), and more than ten
    pytest.param(STEM + ASK + _quoted([str(i) for i in range(10)]), TEN, id="ten-options"),
    pytest.param(STEM + ASK + _quoted([str(i) for i in range(12)]), "ABCDEFGHIJKL",
                 id="twelve-options"),
    # a quoted list of "A. x" items
    pytest.param("Pick one: ['A. 3', 'B. 4', 'C. 5']", "ABC", id="quoted-dot"),
    # the forms read before this change still read: inline "(A) ... (B) ...", Du's MMLU
    # "A) x, B) y", one option a line
    pytest.param("Which gas is inert? (A) oxygen (B) argon (C) hydrogen (D) chlorine "
                 "(E) fluorine", FIVE, id="inline-parens"),
    pytest.param("Which gas is inert?: A) oxygen, B) argon, C) hydrogen, D) chlorine "
                 "Explain your answer, putting the answer in the form (X).", "ABCD",
                 id="du-mmlu-inline"),
    pytest.param("Which gas is inert?\nA. oxygen\nB. argon\nC. hydrogen\nD. chlorine\n"
                 "E. fluorine", FIVE, id="line-per-option"),
    # quotes and brackets that are no listing: one item, a quoted remark
    pytest.param("Pick one: ['A) the only one']", "", id="one-item"),
    pytest.param("She said 'B) is wrong' and left. Answer in the form (X).", "",
                 id="quoted-remark"),
]


@pytest.mark.parametrize("text, letters", OPTION_CASES)
def test_option_listings(text, letters):
    assert offered_letters(text) == letters


def test_a_quoted_list_offers_e_and_beyond():
    """The letters a quoted list offers are the ones the letter grader reads: E of five, H of
    ten; a letter past the list is none."""
    task = for_kind("letters", "aqua")
    for options, gold in ((PRICES, "E"), ([str(i) for i in range(10)], "H")):
        text = STEM + ASK + _quoted(options)
        q = Question(id="t", dataset="aqua", question=text, choices=tuple(offered_letters(text)),
                     gold=gold, gold_raw=gold, permutation=None)
        judged = task.judge([f"The answer is ({gold}).", "The answer is (K)."], q)
        assert judged.classes == (gold, "")
        assert judged.correct == (True, False)


# ----------------------------------------------------------------- final answers

GSM = get("gsm8k")

ANSWER_CASES = [
    # a final answer fenced after a label: the fence on the label's line, with a label
    # repeated inside; a fence on the lines below (with a language tag, too); an inline fence
    pytest.param("There are 20 boxes of 35 apples each.\nFinal Answer: ```Answer: 700```",
                 "700", id="fenced-label-inside"),
    pytest.param("Each of the 20 boxes holds 35.\nFinal answer:\n```\n700\n```\n"
                 "I checked 20 x 35 twice.", "700", id="fenced-block"),
    pytest.param("Each of the 20 boxes holds 35.\nFinal Answer:\n```text\n700\n```", "700",
                 id="fenced-block-language"),
    pytest.param("20 boxes of 35: the answer is ```700``` apples, 12 of them green.", "700",
                 id="fenced-after-answer-is"),
    pytest.param("20 boxes of 35. My answer: `700`. The others said 680.", "700",
                 id="inline-code"),
    # a labelled final answer after earlier numbers: mid-line after a sentence, in capitals, a
    # heading alone on its line, the label's value followed by a parenthesis or a new line
    pytest.param("So 12 people came with 20 boxes. Final answer: 700", "700",
                 id="label-after-sentence"),
    pytest.param("We had 35 and 20.\nFINAL ANSWER: 700 apples", "700", id="label-capitals"),
    pytest.param("We had 35 and 20.\n### Final Answer\n700\n", "700", id="label-heading"),
    pytest.param("We had 35 and 20. Final answer: 700 (20 boxes of 35)", "700",
                 id="label-then-parenthesis"),
    pytest.param("Answer: 700\n\n20 boxes of 35 make it.", "700", id="label-then-paragraph"),
    pytest.param("We had 35 and 20.\nFinal Answer: The final answer is 700. I hope it is "
                 "correct.", "700", id="label-minerva"),
    # a bold label, a bold value, a bullet
    pytest.param("We had 35 and 20.\n**Final Answer:** `700`", "700", id="bold-label-code"),
    pytest.param("We had 35 and 20.\n**Final Answer**: 700", "700", id="bold-label-colon-out"),
    pytest.param("So 12 people came. Final answer: **700**", "700", id="bold-value"),
    pytest.param("* 20 boxes\n* **Answer:** 700\n\n20 boxes of 35.", "700", id="bold-bullet"),
    # a boxed answer after an earlier number (after a label, and in a closing sentence)
    pytest.param("First 35 * 20 = 700, minus 12 eaten.\nAnswer: \\boxed{688}", "688",
                 id="boxed-after-label"),
    pytest.param("We start with 12 boxes. So the total is \\boxed{700}. The others said 35.",
                 "700", id="boxed-then-prose"),
    # the forms read before still read
    pytest.param("She sells 9 eggs for 2 dollars each.\n#### 18", "18", id="gsm-marker"),
    pytest.param("9 eggs at 2 dollars: the answer is 18.", "18", id="answer-is"),
    # known limitations
    pytest.param("Final answer - 700\nfrom 20 boxes", "700", id="label-dash",
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "a label is followed by a colon or a line end; 'Final answer - 700' is "
                     "no label, and the whole text's last number (20) is read"))),
]


@pytest.mark.parametrize("text, number", ANSWER_CASES)
def test_final_answer_forms(text, number):
    """What ``pear import`` grades of a GSM8K answer: the stated final answer, as read."""
    assert GSM.canonical(final_answer(text) or text) == number


LETTER_CASES = [
    # a letter fenced or bold after a label wins over a letter named earlier
    pytest.param("I first thought (B).\nFinal Answer: ```E```", "E", id="fenced-letter"),
    pytest.param("Not (B): the rise is 20%.\n**Final Answer:** (E)", "E", id="bold-letter"),
    pytest.param("The rise is 10/50 = 20%, not (C).\nAnswer: E", "E", id="label-letter"),
    pytest.param("Not (B). The answer is option G.", "G", id="option-word-ten"),
    pytest.param("I agree with the others.\nFinal Answer: `H) 7`", "H", id="letter-with-text"),
    # known limitations
    pytest.param("The rise is 10 on 50, which is 20%, so option G.", "G", id="number-first",
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "the concluding sentence states the number (10) before the option; the "
                     "letter after it is not read"))),
]


@pytest.mark.parametrize("text, letter", LETTER_CASES)
def test_final_letter_forms(text, letter):
    """Letters as ``pear import`` reads them, among the ten options a quoted list offers."""
    task = for_kind("letters", "aqua")
    question = STEM + ASK + _quoted([str(i) for i in range(10)])
    q = Question(id="t", dataset="aqua", question=question,
                 choices=tuple(offered_letters(question)), gold=letter, gold_raw=letter,
                 permutation=None)
    assert task.judge([final_answer(text) or text], q).classes == (letter,)


# ----------------------------------------------------------------- an import, end to end

def _du_file(path: Path, debates: dict[str, tuple[list[list[str]], str]]) -> Path:
    """A Du et al. file ``{question: [agent_contexts, gold]}`` from answers[agent][round]."""
    path.write_text(json.dumps({q: [[du_chat(q, a) for a in answers], gold]
                                for q, (answers, gold) in debates.items()}))
    return path


def test_import_of_a_quoted_list_file_with_gold_e(tmp_path):
    """A Du-format file whose questions list their options as quoted lists (five options,
    gold E; ten, gold H) imports whole, and the agents' E and H answers, in the forms above,
    grade right."""
    five = STEM + ASK + _quoted(PRICES) + " Explain your answer, putting the answer in the " \
        "form (X) at the end of your response."
    ten = "Which is 7? " + ASK + _quoted([str(i) for i in range(10)], quote='"', space=True)
    f = _du_file(tmp_path / "aqua_3_2.json", {
        five: ([["The rise is 10 on 50, that is 20%. The answer is (E).",
                 "I keep my answer.\nFinal Answer: ```Answer: E```"],
                ["The rise is 10 on 60, about 17%. The answer is (C).",
                 "The others are right: 10/50 = 20%.\n**Final Answer:** (E)"],
                ["20 dollars? No, 10 on 50 is 20%.\nAnswer: E", "Answer: E"]], "E"),
        ten: ([["Counting from 0, 7 is the eighth option. Final Answer: `H`", "(H)"],
               ["(G)", "Not (G): the answer is option H."],
               ["It is the eighth: H.", "**Final Answer:** H"]], "H"),
    })
    s = import_files("du", [f], tmp_path / "run", dataset="aqua", grading="letters")
    assert (s.debates, s.bad) == (2, [])
    recs = {r["gold"]: r for r in read_records(tmp_path / "run")}
    assert sorted(recs) == ["E", "H"]
    e, h = recs["E"], recs["H"]
    assert e["imported"]["extra"]["options"] == 5 and h["imported"]["extra"]["options"] == 10
    assert [[a["canonical"] for a in rd["agents"]] for rd in e["rounds_data"]] == \
        [["E", "C", "E"], ["E", "E", "E"]]
    assert [[a["correct"] for a in rd["agents"]] for rd in e["rounds_data"]] == \
        [[True, False, True], [True, True, True]]
    assert [[a["canonical"] for a in rd["agents"]] for rd in h["rounds_data"]] == \
        [["H", "G", "H"], ["H", "H", "H"]]
    assert e["correct"] and h["correct"]
    assert validate(tmp_path / "run").findings.ok


def test_import_of_fenced_final_answers(tmp_path):
    """A Du-format arithmetic file whose agents fence or label their final answers after
    earlier numbers grades those answers, not the earlier numbers."""
    q = "A crate holds 20 boxes of 35 apples. How many apples? Make sure to state your " \
        "answer at the end of the response."
    f = _du_file(tmp_path / "math_agents2_rounds2.json", {
        q: ([["20 boxes of 35 each.\nFinal Answer: ```Answer: 700```",
              "Still 700. Final answer: **700** (not 12)."],
             ["I count 12 boxes of 35, so 420.\n**Final Answer:** `420`",
              "20 x 35, so Answer: \\boxed{700}"]], "700")})
    s = import_files("du", [f], tmp_path / "run", dataset="crates", grading="numbers")
    assert (s.debates, s.bad) == (1, [])
    (rec,) = read_records(tmp_path / "run")
    assert [[a["canonical"] for a in rd["agents"]] for rd in rec["rounds_data"]] == \
        [["700", "420"], ["700", "700"]]
    assert rec["correct"]
