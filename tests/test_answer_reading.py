"""Reading real agents' free-text answers as a person does: the labelled table of DyLAN's
gpt-3.5 answers (tests/data/dylan_answers_labelled.jsonl, how it was drawn and labelled:
tests/data/README.md) read by :func:`pear.store.readers.answers.final_answer` and graded by
our MATH-500 grader, and the reading on its own for every grading kind."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from pear.store.readers.answers import final_answer
from pear.paths import REAL_DEBATES_DIR
from pear.store.readers import reader
from pear.store.readers.dylan import problem_text
from pear.tasks import mathgrade
from pear.tasks.benchmarks import match_question
from pear.tasks.grading import get

TABLE = Path(__file__).parent / "data" / "dylan_answers_labelled.jsonl"
ROWS = [json.loads(line) for line in TABLE.read_text().splitlines()]
MATH = get("math500")


def _read(text: str) -> str:
    """What `pear import` grades: our grader's reading of the answer the text states."""
    return MATH.canonical(final_answer(text) or text)


def test_the_table_is_every_answer_of_the_seeded_samples_of_dylans_debates():
    data = json.loads(gzip.decompress((REAL_DEBATES_DIR / "dylan-math500-gpt35.json.gz")
                                      .read_bytes()))
    keys = sorted(data)
    dev = random.Random(35).sample(keys, 30)
    held = random.Random(36).sample([k for k in keys if k not in set(dev)], 8)
    texts = {}
    for k in keys:
        qid = match_question("math500", problem_text(k)).id
        for a, chat in enumerate(data[k][0]):
            said = [m["content"] for m in chat if m["role"] == "assistant"]
            texts.update({(qid, a, r): t for r, t in enumerate(said)})
    for sample, drawn in (("seed35", dev), ("seed36-heldout", held)):
        want = set()
        for k in drawn:
            qid = match_question("math500", problem_text(k)).id
            want |= {(qid, a, r) for (q, a, r) in texts if q == qid}
        got = {(x["question_id"], x["agent"], x["round"]) for x in ROWS if x["sample"] == sample}
        assert got == want
    assert sum(x["sample"] == "seed35" for x in ROWS) == 173
    assert len(ROWS) >= 150
    for x in ROWS:  # each tail is the end of that agent's answer in that round
        assert texts[(x["question_id"], x["agent"], x["round"])].endswith(x["text_tail"])


@pytest.mark.parametrize("row", ROWS, ids=lambda x: f"{x['sample']}-{x['question_id']}-"
                                                   f"a{x['agent']}r{x['round']}")
def test_each_labelled_answer_is_read_as_labelled(row):
    got = _read(row["text_tail"])
    if row["label"] is None:  # the text states no single answer: it cannot be graded right
        assert mathgrade.verify(row["gold"], got) != ("ok", True), got
    else:
        assert MATH.equivalent(got, row["label"]), (got, row["label"], row["note"])


def test_the_misreads_the_issue_cites_are_read_right_now():
    cited = [x for x in ROWS if x["sample"] == "cited"]
    assert len(cited) == 2
    for x in cited:
        assert MATH.canonical(x["text_tail"]) in ("2500", "x")  # what the whole text gave
        assert mathgrade.verify(x["gold"], _read(x["text_tail"])) == ("ok", True)


@pytest.mark.parametrize("text, stated", [
    ("Therefore, the answer is 9 customers would buy a television that costs $\\$2500$.", "9"),
    ("the product is $16 \\times (-8) = -128$, which is our final answer. In summary, the "
     "solutions are $x=16$ and $x=-8$, and their product is -128.", "-128"),
    ("Therefore, there are 540 ways for the 8 people to sit around the table.", "540"),
    ("Therefore, the fraction of 2 feet that is 3 inches is 1/8.", "1/8"),
    ("So the value of $x$ is 4. Note that 6 is not a solution.", "4"),
    ("The answer is 0.4 or 40%.", "0.4"),
    ("so the answer is $\\boxed{\\textbf{(D)}\\ 3(1+\\sqrt{r})^x=7}$.", "(D)"),
    ("I agree with the second agent: option C.\n\nThe answer is (C).", "(C)"),
    ("Therefore, the two solutions are $x=16$ and $x=-8$.", "16, -8"),
    ("Therefore, we can write $\\sum_{k} \\frac{1}{k^3} = q^2 - q.$", "q^2 - q"),
    ("Thus, the line is $y = 2x + 3$.", "$y = 2x + 3$"),  # an equation answer: kept
    ("$\\boxed{4.41}$. The others' incorrect answer of 3.21 came from an error.", "\\boxed{4.41}"),
    ("Therefore, the answer is 12th grade.", "12"),
    ("I can confirm that $x=3$ is the correct answer. Therefore, I confirm my answer.", "3"),
    ("She sells 9 eggs a day and makes 9 * 2 = 18 dollars.\n#### 18", "18"),
])
def test_final_answer_reads_the_stated_answer(text, stated):
    assert final_answer(text) == stated


@pytest.mark.parametrize("text", [
    "Sorry, this problem does not have enough information to provide an answer.",
    "Therefore, the greatest number of pencils left over is the remainder when the number "
    "is divided by 3.",
    "However, the second solution is incorrect in stating that the answer is the remainder.",
    "Therefore, $A$ can be either $6$ or $-2$.",
    "",
])
def test_final_answer_is_empty_when_no_answer_is_stated(text):
    assert final_answer(text) == ""


def test_the_reading_serves_every_grading_kind():
    gsm = get("gsm8k")
    assert gsm.canonical(final_answer("The answer is 9 customers at $\\$2500$ each.")) == "9"
    assert gsm.canonical("The answer is 9 customers at $\\$2500$ each.") == "2500"  # unread
    letters = get("mmlu_pro")
    assert letters.canonical(final_answer("Not (A). The answer is option B.")) == "B"


def test_import_grades_the_stated_answers(tmp_path):
    from pear.store.importing import import_files
    from pear.store.records import read_records
    cited = {x["gold"]: x for x in ROWS if x["sample"] == "cited"}
    data = json.loads(gzip.decompress((REAL_DEBATES_DIR / "dylan-math500-gpt35.json.gz")
                                      .read_bytes()))
    keys = [k for k in data for x in cited.values()
            if match_question("math500", problem_text(k)).id == x["question_id"]]
    f = tmp_path / "two.json"
    f.write_text(json.dumps({k: data[k] for k in keys}))
    import_files("dylan", [f], tmp_path / "run", dataset="math500")
    recs = {r["question_id"]: r for r in read_records(tmp_path / "run")}
    for x in cited.values():
        agent = recs[x["question_id"]]["rounds_data"][x["round"]]["agents"][x["agent"]]
        assert agent["correct"] and agent["reasoning"].endswith(x["text_tail"])
    assert {r.entry for r in reader("dylan").read(f)} == {problem_text(k) for k in keys}


def test_scans_split_at_every_kind_of_whitespace_and_only_there():
    """The token and sentence scans jump to the next character that can matter; every
    character ``str.isspace`` calls whitespace (no-break and em spaces, line separators) still
    ends a token, and a sentence still ends only at ``.!?`` before whitespace, or a line end,
    never inside math."""
    from pear.store.readers import answers
    spaces = [c for c in map(chr, range(0x3000 + 1)) if c.isspace()]
    assert len(spaces) > 20
    for c in spaces:
        assert answers._tokens(f"x{c}$a b${c}{{c d}},{c}7,") == \
            ["x", "$a b$", "{c d}", ",", "7", ","]
        assert [s for _, s in answers._sentences(f"So $x. y$ is 4.{c}Then 5! ok")] == \
            ["So $x. y$ is 4.", ("" if c == "\n" else c) + "Then 5!", " ok"]  # "\n": its own
    assert answers._sentences("a\\$. b") == [(0, "a\\$."), (4, " b")]
    assert answers._tokens("\\(1, 2\\) and \\begin{x}p q\\end{x}") == \
        ["\\(1, 2\\)", "and", "\\begin{x}p q\\end{x}"]
