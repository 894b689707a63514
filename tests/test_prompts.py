"""Prompts: the paper style sends the study's printed templates (pear/core/templates/prompts.md) as
printed; the compact style is only for tiny CPU models; schemas follow the study's key order."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pear.tasks import benchmarks as data
from pear.core import prompts
from pear.core.parsing import parse_answer, parse_critique, parse_revision

SHIPPED = prompts.TEMPLATES_FILE.read_text(encoding="utf-8")


def shipped_blocks() -> list[str]:
    """Every ```text block of the shipped file, in order (read independently of pear.core.prompts)."""
    return [b.split("\n```", 1)[0] for b in SHIPPED.split("```text\n")[1:]]


BLOCKS = shipped_blocks()
SYSTEM, RUBRIC, INITIAL, UPDATE, CRITIQUE, GSM8K, MMLU, MATH, TQA = BLOCKS


def test_the_shipped_file_is_the_studys_nine_templates():
    assert len(BLOCKS) == 9
    assert SYSTEM.startswith("You are a careful reasoner") and "majority pressure" in SYSTEM
    assert "do not default to 4 or 5" in RUBRIC
    assert INITIAL.startswith("You are Agent {agent_id}.")
    assert prompts.templates("paper") == {
        "system": SYSTEM, "rubric": RUBRIC, "initial": INITIAL, "revision": UPDATE,
        "critique": CRITIQUE, "gsm8k": GSM8K, "mmlu_pro": MMLU, "math500": MATH,
        "truthfulqa": TQA}


@pytest.mark.parametrize("name", ["initial", "revision", "critique", "gsm8k", "mmlu_pro",
                                  "math500", "truthfulqa"])
def test_rendering_with_its_own_placeholders_gives_the_shipped_text_back(name):
    tpl = prompts.templates()[name]
    names = set(re.findall(r"\{([A-Za-z_][A-Za-z_ ]*)\}", tpl))
    assert names, name
    assert prompts.render(tpl, {k: "{" + k + "}" for k in names}) == tpl


@pytest.mark.parametrize("name", ["initial", "revision", "critique", "gsm8k", "math500"])
def test_rendering_fills_the_given_placeholders_once_and_leaves_the_rest(name):
    """Each subset of a template's placeholders, filled with text holding braces and
    placeholders of its own: the text as replacing each placeholder in one left-to-right pass
    gives it (JSON braces kept, inserted text never re-scanned, unfilled ones left)."""
    tpl = prompts.templates()[name]
    pieces = re.split(r"\{([A-Za-z_][A-Za-z_ ]*)\}", tpl)
    names = sorted(set(pieces[1::2]))
    for k in range(len(names) + 1):
        values = {n: (f"{{{names[0]}}} }}{{ {n}" if i % 2 else i) for i, n in enumerate(names[:k])}
        expected = "".join(str(values.get(p, "{" + p + "}")) if i % 2 else p
                           for i, p in enumerate(pieces))
        assert prompts.render(tpl, values) == expected
    with pytest.raises(ValueError, match=r"no placeholder \{nowhere\}"):
        prompts.render(tpl, {"nowhere": 1})


def _q(dataset, n=1, seed=0):
    return data.load(dataset, n=n, seed=seed)[0]


@pytest.mark.parametrize("dataset, shipped", [("gsm8k", GSM8K), ("math500", MATH),
                                              ("mmlu_pro", MMLU), ("truthfulqa", TQA)])
def test_problem_block_per_dataset_is_the_shipped_task_template(dataset, shipped):
    q = _q(dataset)
    expected = shipped.replace("{question}", q.question.strip())
    if q.choices:
        opts = "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(q.choices))
        expected = expected.replace("{options}", opts)
    assert prompts.problem_block(q) == expected


def test_initial_prompt_is_the_shipped_text_with_the_agent_and_problem():
    q = _q("gsm8k")
    system, user = prompts.initial_messages(q, 2)
    assert system == {"role": "system", "content": SYSTEM}
    expected = (INITIAL.replace("{agent_id}", "3").replace("{question}", prompts.problem_block(q))
                .replace("{CONFIDENCE RUBRIC}", RUBRIC))
    assert user == {"role": "user", "content": expected}
    others = {prompts.initial_messages(q, i)[1]["content"] for i in range(5)}
    assert len(others) == 5  # "You are Agent {agent_id}": the five prompts differ


def test_critique_prompt_shows_participants_with_answer_confidence_reasoning():
    q = _q("truthfulqa")
    own = {"agent": 0, "answer": "A", "confidence": 4, "reasoning": "mine"}
    targets = [{"agent": 2, "answer": "B", "confidence": 2, "reasoning": "because"},
               {"agent": 4, "answer": "C", "confidence": 5, "reasoning": "sure"}]
    _, user = prompts.critique_messages(q, own, targets)
    shown = ("[Participant 3]\nAnswer: B\nConfidence: 2\nReasoning: because\n\n"
             "[Participant 5]\nAnswer: C\nConfidence: 5\nReasoning: sure")
    expected = (CRITIQUE.replace("{agent_id}", "1").replace("{question}", prompts.problem_block(q))
                .replace("{own_answer}", "A").replace("{own_confidence}", "4")
                .replace("{own_reasoning}", "mine").replace("{targets}", shown))
    assert user["content"] == expected
    assert RUBRIC not in user["content"]  # the rubric is not in the critique prompt


def test_revision_prompt_lists_critiques_without_the_critics_confidence():
    q = _q("math500")
    own = {"agent": 1, "answer": "5", "confidence": 3, "reasoning": "r"}
    crit = [{"source": 3, "step_loc": "step 2", "correction": "it is 6", "assessment": "Flawed"}]
    _, user = prompts.revision_messages(q, own, crit)
    listed = "[Critique from Agent 4]\nstep_loc: step 2\ncorrection: it is 6\nassessment: Flawed"
    expected = (UPDATE.replace("{agent_id}", "2").replace("{question}", prompts.problem_block(q))
                .replace("{CONFIDENCE RUBRIC}", RUBRIC).replace("{previous_answer}", "5")
                .replace("{previous_confidence}", "3").replace("{previous_reasoning}", "r")
                .replace("{critiques}", listed))
    assert user["content"] == expected
    _, none = prompts.revision_messages(q, own, [])
    assert "CRITIQUES YOU RECEIVED\nNone.\n" in none["content"]


def test_question_text_with_braces_is_never_reinterpreted():
    q = SimpleNamespace(dataset="math500", question="Find {agent_id} and {x}.", choices=None)
    user = prompts.initial_messages(q, 0)[1]["content"]
    assert "Find {agent_id} and {x}." in user and "You are Agent 1." in user


def test_paper_schemas_are_answer_first_and_uncapped():
    init = prompts.schema_for("initial")
    upd = prompts.schema_for("revision", sources=[0, 3])
    crit = prompts.schema_for("critique", targets=[1, 4])
    assert list(init["properties"]) == ["answer", "confidence", "reasoning"]
    assert list(upd["properties"]) == ["answer", "confidence", "reasoning", "critique_response"]
    assert upd["properties"]["critique_response"]["required"] == ["1", "4"]
    item = crit["properties"]["reviews"]["items"]
    assert list(item["properties"]) == ["target", "step_loc", "correction", "assessment"]
    assert item["properties"]["target"]["enum"] == [2, 5]
    assert item["properties"]["assessment"]["enum"] == ["Strong", "Acceptable", "Flawed"]
    assert crit["properties"]["reviews"]["minItems"] == crit["properties"]["reviews"]["maxItems"] == 2
    assert "maxLength" not in json.dumps([init, upd, crit])  # only the token budget caps output


def test_compact_schemas_cap_text_to_the_budget_and_reason_first():
    init = prompts.schema_for("initial", "compact", 112)
    assert list(init["properties"]) == ["reasoning", "answer", "confidence"]
    one = prompts.schema_for("critique", "compact", 112, targets=[1])
    four = prompts.schema_for("critique", "compact", 112, targets=[0, 1, 2, 3])
    cap = lambda s: s["properties"]["reviews"]["items"]["properties"]["correction"]["maxLength"]
    assert cap(one) > cap(four) > 0


def test_styles_and_phases_are_checked():
    with pytest.raises(ValueError, match="'fancy'"):
        prompts.templates("fancy")
    with pytest.raises(ValueError, match="'revise'"):
        prompts.schema_for("revise")


def test_replies_in_the_paper_shapes_parse():
    a = parse_answer('{"answer": "7", "confidence": 2, "reasoning": "3 + 4"}')
    assert (a.answer, a.confidence, a.parse_error) == ("7", 2, None)
    c = parse_critique('{"reviews": [{"target": 2, "step_loc": "No error identified", '
                       '"correction": "", "assessment": "Strong"}]}', [1])
    assert c.reviews == {1: {"step_loc": "No error identified", "correction": "",
                             "assessment": "Strong"}}
    u = parse_revision('{"answer": "8", "confidence": 4, "reasoning": "fixed", '
                       '"critique_response": {"2": {"decision": "ACCEPT", "reason": "right"}}}', [1])
    assert (u.answer, u.decisions, u.reasons) == ("8", {1: "ACCEPT"}, {1: "right"})


_PIECES = st.sampled_from(["{a}", "{b c}", "{z}", "{", "}", "{{", '{"answer": "x"}', "text ",
                           "\n", "{a", "a}", "{1}"])


@given(st.lists(_PIECES, max_size=12).map("".join),
       st.dictionaries(st.sampled_from(["a", "b c"]),
                       st.one_of(st.integers(-9, 99), st.text(max_size=6),
                                 st.sampled_from(["{a}", "{z}", "}{"])), max_size=2))
@settings(max_examples=300, deadline=None)
def test_render_is_one_pass_substitution(template, values):
    # render's cut-and-join is what one pass of substitution gives: each placeholder of a
    # given name replaced by str(value), nothing inserted scanned again, every other
    # brace left as written; a value without a placeholder is an error
    if any("{" + k + "}" not in template for k in values):
        with pytest.raises(ValueError, match="no placeholder"):
            prompts.render(template, values)
        return
    want = re.sub(r"\{([A-Za-z_][A-Za-z_ ]*)\}",
                  lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0),
                  template)
    assert prompts.render(template, values) == want
